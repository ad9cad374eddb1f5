"""``LLMPolicy`` with stub backends: re-asks, fallbacks, counters, evidence routing."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hear2act_env  # noqa: F401
from hear2act_agents.llm.backends.base import BackendError, BackendTimeout
from hear2act_agents.llm.parsing import KeywordTopicMatcher
from hear2act_agents.llm.policy import STAT_KEYS, LLMPolicy, latest_audio
from hear2act_env.errors import ConfigError, InfrastructureError
from hear2act_env.evaluation.rollout import run_episode
from hear2act_env.policy import Policy


class Stub:
    """Replies from a list (or raises the exceptions in it); records every call."""

    def __init__(self, replies, supports_audio=False):
        self.replies = list(replies)
        self.calls: list[dict] = []
        self.name = "stub"
        self.supports_audio = supports_audio

    def complete(self, messages, *, audio=None, seed=None, run=0):
        self.calls.append({"messages": messages, "audio": audio, "seed": seed, "run": run})
        item = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(item, BaseException):
            raise item
        return item


def _policy(replies, **kw):
    return LLMPolicy(
        Stub(replies, kw.pop("supports_audio", False)), topic_matcher=KeywordTopicMatcher(), **kw
    )


def _obs(env_id="Hear2Act-Prosody-Text-v0", seed=0):
    env = gym.make(env_id)
    obs, _ = env.reset(seed=seed)
    return env, obs


def test_is_a_policy_and_counts_calls():
    p = _policy(["[ACTION: RECOMMEND] [OPTION: 2] Try 2."])
    assert isinstance(p, Policy) and p.observation_kind == "text"
    _, obs = _obs()
    p.reset(obs, seed=5)
    assert p.act(obs).tolist() == [2, 1, 0]
    assert p.stats()["calls"] == 1 and set(p.stats()) == set(STAT_KEYS)
    assert p.backend.calls[0]["seed"] == 5


@pytest.mark.parametrize(
    ("replies", "action", "counts"),
    [
        (["no idea", "[ACTION: CONFIRM] ok"], [3, 0, 0], {"reasks": 1, "calls": 2}),
        (
            ["no idea", "still nothing"],
            [0, 0, 0],
            {"reasks": 1, "format_errors": 1, "calls": 2, "fallbacks": 1},
        ),
        (
            ["[ACTION: RECOMMEND] cheaper one", "[ACTION: RECOMMEND] [OPTION: 5]"],
            [2, 4, 0],
            {"reasks": 1},
        ),
        (
            ["[ACTION: RECOMMEND] [OPTION: 42]"],
            [0, 0, 0],
            {"invalid_options": 1, "calls": 1, "fallbacks": 1},
        ),
        (
            ["nothing", "[ACTION: RECOMMEND] [OPTION: 99]"],
            [0, 0, 0],
            {"reasks": 1, "invalid_options": 1},
        ),
        ([""], [0, 0, 0], {"empty_replies": 1, "calls": 1, "fallbacks": 1}),
        (["   \n"], [0, 0, 0], {"empty_replies": 1}),
    ],
)
def test_fallbacks_and_counters(replies, action, counts):
    p = _policy(replies)
    _, obs = _obs()
    p.reset(obs, seed=0)
    assert p.act(obs).tolist() == action
    stats = p.stats()
    for key, value in counts.items():
        assert stats[key] == value, (key, stats)


def test_reask_sends_the_reply_and_a_reminder():
    p = _policy(["I would like to help.", "[ACTION: ASK] [TOPIC: OPEN] Anything else?"])
    _, obs = _obs()
    p.reset(obs)
    p.act(obs)
    second = p.backend.calls[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "I would like to help."}
    assert second[-1]["role"] == "user" and "[ACTION:" in second[-1]["content"]
    assert p.log[-1].replies == [
        "I would like to help.",
        "[ACTION: ASK] [TOPIC: OPEN] Anything else?",
    ]


def test_configuration_errors_escape_act():
    p = _policy([ConfigError("bad key")])
    _, obs = _obs()
    p.reset(obs)
    with pytest.raises(ConfigError):
        p.act(obs)


def test_stats_reset_per_episode():
    p = _policy([""])
    _, obs = _obs()
    p.reset(obs)
    p.act(obs)
    assert p.stats()["empty_replies"] == 1
    p.reset(obs)
    assert all(v == 0 for v in p.stats().values()) and p.log == []


def test_spoken_assistant_reads_clarify_as_an_open_question():
    p = _policy(["[ACTION: CLARIFY] Tell me more."], allow_clarify=False)
    _, obs = _obs()
    p.reset(obs)
    assert p.act(obs).tolist() == [0, 0, 0]
    assert "CLARIFY" not in p.backend.calls[0]["messages"][0]["content"]


def test_full_episode_of_bad_answers_never_raises():
    p = _policy(["junk", "[ACTION: RECOMMEND] [OPTION: 77]", "", "no idea"])
    env = gym.make("Hear2Act-Prosody-Text-v0")
    out = run_episode(env, p, seed=1)
    assert out.truncated and len(out.infos) == 21
    assert p.stats()["fallbacks"] > 0


@pytest.mark.parametrize(
    ("replies", "counter", "match"),
    [
        ([BackendTimeout("slow")], "timeouts", "timed out"),
        ([BackendError("500")], "api_errors", "failed after retries"),
        (["hm", BackendTimeout("slow")], "timeouts", "timed out"),  # on the re-ask
    ],
)
def test_no_answer_from_the_model_is_an_infrastructure_error(replies, counter, match):
    p = _policy(replies)
    obs, _ = gym.make("Hear2Act-Prosody-Text-v0").reset(seed=0)
    p.reset(obs)
    with pytest.raises(InfrastructureError, match=match):
        p.act(obs)
    assert p.stats()[counter] == 1


def _audio_obs(obs, n=8000, total=16000):
    audio = np.zeros(total, np.float32)
    audio[:n] = 0.1
    return {**obs, "audio": audio, "audio_length": n}


def test_latest_audio_slices_to_length():
    _, obs = _obs()
    assert latest_audio(obs) is None
    assert latest_audio(_audio_obs(obs)).shape == (8000,)
    assert latest_audio(_audio_obs(obs, n=0)).shape == (0,)


def test_audio_goes_to_audio_backends_only():
    _, obs = _obs()
    audio_obs = _audio_obs(obs)
    p = _policy(["[ACTION: CONFIRM]"], supports_audio=True)
    p.reset(audio_obs)
    p.act(audio_obs)
    call = p.backend.calls[0]
    assert call["audio"].shape == (8000,)
    assert "recording of the user's latest turn is attached" in call["messages"][1]["content"]
    # a backend that takes no audio is refused in an audio condition (it would run deaf)
    text_only = _policy(["[ACTION: CONFIRM]"])
    with pytest.raises(ConfigError, match="takes no audio"):
        text_only.reset(audio_obs)
    deafened = _policy(["[ACTION: CONFIRM]"], supports_audio=True, use_audio=False)
    with pytest.raises(ConfigError, match="use_audio is off"):
        deafened.reset(audio_obs)
    # ...but runs there with a perceiver (T+S-hat), and in text conditions
    text_only.reset(obs)
    text_only.act(obs)
    assert text_only.backend.calls[0]["audio"] is None


def test_perceived_key_replaces_the_audio():
    _, obs = _obs()
    audio_obs = {**_audio_obs(obs), "perceived": "The user sounds hesitant (0.80)."}
    p = _policy(["[ACTION: CONFIRM]"], supports_audio=True)
    p.reset(audio_obs)
    p.act(audio_obs)
    call = p.backend.calls[0]
    assert call["audio"] is None
    assert "The user sounds hesitant (0.80)." in call["messages"][1]["content"]


class RecordingPerceiver:
    name = "rec"

    def __init__(self, sentence="The user sounds unsure.", fail=False):
        self.sentence, self.fail, self.calls = sentence, fail, []

    def perceive(self, audio, sample_rate, context):
        self.calls.append((audio.size, sample_rate, context))
        if self.fail:
            raise RuntimeError("model crashed")
        return self.sentence


def test_policy_runs_its_own_first_stage():
    _, obs = _obs()
    perceiver = RecordingPerceiver()
    p = LLMPolicy(Stub(["[ACTION: CONFIRM]"], True), perceiver=perceiver)
    audio_obs = _audio_obs(obs)
    p.reset(audio_obs)
    p.act(audio_obs)
    assert perceiver.calls == [(8000, 16000, obs["transcript"])]
    call = p.backend.calls[0]
    assert call["audio"] is None and "The user sounds unsure." in call["messages"][1]["content"]
    assert p.log[0].perceived == "The user sounds unsure."


def test_failing_perceiver_is_counted_not_raised():
    _, obs = _obs()
    p = LLMPolicy(Stub(["[ACTION: CONFIRM]"]), perceiver=RecordingPerceiver(fail=True))
    audio_obs = _audio_obs(obs)
    p.reset(audio_obs)
    assert p.act(audio_obs).tolist() == [3, 0, 0]
    assert p.stats()["perception_errors"] == 1


def test_bad_perceiver_is_a_config_error():
    with pytest.raises(ConfigError):
        LLMPolicy(Stub(["x"]), perceiver=object())


def test_transcript_log_is_readable():
    p = _policy(["[ACTION: RECOMMEND] [OPTION: 3] Three.", "nope", "nope"])
    _, obs = _obs()
    p.reset(obs)
    p.act(obs)
    p.act(obs)
    text = p.transcript()
    assert "turn 1: RECOMMEND option 3" in text and "[format_error]" in text
