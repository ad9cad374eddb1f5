"""Audio can never be silently lost: deaf agents are refused, processors that drop the audio
fail loudly, and under access A every user recording goes with the call."""

from __future__ import annotations

import json
import shutil

import gymnasium as gym
import numpy as np
import pytest

import hear2act_env  # noqa: F401
from hear2act_agents.llm.backends.base import Request, clips_of
from hear2act_agents.llm.cache import audio_digest
from hear2act_agents.llm.policy import LLMPolicy
from hear2act_env.env import AUDIO_PLACEHOLDER
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.rollout import run_episode

from .tiny import tone


class AudioStub:
    """An audio-capable backend that records what each call carried."""

    name = "audio-stub"
    supports_audio = True

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def complete(self, messages, *, audio=None, seed=None, run=0):
        self.calls.append({"messages": messages, "clips": clips_of(audio)})
        return "[ACTION: ASK] [TOPIC: OPEN] anything else?"


def test_clips_of_and_digest_of_several_recordings():
    a, b = tone(0.3, seed=1), tone(0.4, seed=2)
    assert clips_of(None) == [] and len(clips_of(a)) == 1 and len(clips_of([a, b])) == 2
    assert clips_of([a, np.zeros(0, np.float32)])[0] is not None
    assert len(clips_of([a, np.zeros(0, np.float32)])) == 1
    assert audio_digest([a]) == audio_digest(a)  # one clip keeps its old cache key
    assert audio_digest([a, b]) != audio_digest([b, a]) != audio_digest(a)


def test_access_a_attaches_every_user_recording_in_order():
    pytest.importorskip("espeakng_loader")
    env = gym.make("Hear2Act-Prosody-v0", access="A", max_actions=4)
    backend = AudioStub()
    policy = LLMPolicy(backend, topic_matcher=None, max_audio_clips=8)
    out = run_episode(env, policy, seed=3)
    counts = [len(c["clips"]) for c in backend.calls]
    assert counts == list(range(1, len(counts) + 1))  # the request, then one more per turn
    # the clips are the recordings the env gave, oldest first
    assert all(
        np.array_equal(backend.calls[-1]["clips"][i], backend.calls[i]["clips"][i])
        for i in range(len(counts))
    )
    assert out.infos[-1]["actions"] == 4
    assert AUDIO_PLACEHOLDER in backend.calls[-1]["messages"][1]["content"]


def test_access_a_keeps_the_latest_clips_and_logs_what_it_left_out():
    pytest.importorskip("espeakng_loader")
    env = gym.make("Hear2Act-Prosody-v0", access="A", max_actions=4)
    backend = AudioStub()
    policy = LLMPolicy(backend, topic_matcher=None, max_audio_clips=2)
    run_episode(env, policy, seed=3)
    assert [len(c["clips"]) for c in backend.calls] == [1, 2, 2, 2]
    turns = policy.episode_log()["turns"]
    assert [t.get("audio_clips_dropped", 0) for t in turns] == [0, 0, 1, 2]


def test_access_a_plus_t_attaches_the_latest_recording_only():
    pytest.importorskip("espeakng_loader")
    env = gym.make("Hear2Act-Prosody-v0", access="A+T", max_actions=3)
    backend = AudioStub()
    run_episode(env, LLMPolicy(backend, topic_matcher=None), seed=3)
    assert [len(c["clips"]) for c in backend.calls] == [1, 1, 1]


def test_a_text_only_agent_is_refused_under_audio_conditions():
    pytest.importorskip("espeakng_loader")
    from .test_policy import Stub

    env = gym.make("Hear2Act-Prosody-v0", access="A+T", max_actions=3)
    with pytest.raises(ConfigError, match="takes no audio"):
        run_episode(env, LLMPolicy(Stub(["[ACTION: CONFIRM]"]), topic_matcher=None), seed=0)


def _strip_processor_class(src, dst):
    shutil.copytree(src, dst)
    for f in dst.glob("*.json"):
        data = json.loads(f.read_text())
        if isinstance(data, dict) and "processor_class" in data:
            data.pop("processor_class")
            f.write_text(json.dumps(data))
    return dst


def test_omni_folder_without_processor_class_still_hears(tiny_omni, tmp_path):
    pytest.importorskip("torch")
    from hear2act_agents.llm.backends.audio import Qwen25OmniBackend

    folder = _strip_processor_class(tiny_omni, tmp_path / "omni-no-class")
    backend = Qwen25OmniBackend(str(folder), max_new_tokens=3, device="cpu")
    assert getattr(backend._m.processor, "feature_extractor", None) is not None
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    inputs = backend._inputs([Request(msgs, [tone(0.5, seed=1), tone(0.6, seed=2)])])
    assert int(inputs["input_features"].shape[0]) == 2
    assert isinstance(backend.complete(msgs, audio=[tone(0.5), tone(0.3)]), str)
    assert backend.last_call is not None and backend.last_call.usage.prompt_tokens > 0


def test_a_processor_that_drops_the_audio_fails_loudly(tiny_qwen2_audio):
    pytest.importorskip("torch")
    from hear2act_agents.llm.backends.audio import Qwen2AudioBackend

    backend = Qwen2AudioBackend(str(tiny_qwen2_audio), max_new_tokens=3, device="cpu")
    real = backend._m.processor

    class Deaf:
        tokenizer = real.tokenizer

        def apply_chat_template(self, *a, **k):
            return real.apply_chat_template(*a, **k)

        def __call__(self, text, **kwargs):  # a bare tokenizer: audio ignored
            return real.tokenizer(text, return_tensors="pt", padding=True)

        def batch_decode(self, *a, **k):
            return real.batch_decode(*a, **k)

    backend._m.processor = Deaf()
    try:
        msgs = [{"role": "user", "content": "hi"}]
        with pytest.raises(ConfigError, match="produced audio features for none of 1"):
            backend.complete(msgs, audio=tone(0.5))
    finally:
        backend._m.processor = real
