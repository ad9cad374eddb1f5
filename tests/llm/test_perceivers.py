"""Perceivers and the ``PerceivedState`` wrapper."""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import hear2act_env  # noqa: F401
from hear2act_agents.llm.perceiver import AudioLLMPerceiver
from hear2act_agents.perceivers import (
    AudioClassifierPerceiver,
    Perceiver,
    ReferenceProsodyPerceiver,
    make_perceiver,
)
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.rollout import run_episode
from hear2act_env.protocol.validator import TEXT_CHARSET
from hear2act_env.wrappers.perceived import PERCEIVED_MAX, PerceivedState

from .conftest import FakeAudio, server_stats
from .tiny import tone


class TinyAudioEnv(gym.Env):
    """A small fake env with the audio keys the real env will have."""

    metadata = {"render_modes": []}

    def __init__(self, lengths=(8000, 0, 4000)):
        self.lengths = list(lengths)
        self.observation_space = spaces.Dict(
            {
                "transcript": spaces.Text(200, charset=TEXT_CHARSET),
                "audio": spaces.Box(-1.0, 1.0, (16000,), np.float32),
                "audio_length": spaces.Discrete(16001),
            }
        )
        self.action_space = spaces.MultiDiscrete([4, 11, 9])

    def _obs(self):
        n = self.lengths[self.t]
        audio = np.zeros(16000, np.float32)
        audio[:n] = tone(n / 16000, seed=self.t)[:n]
        return {"transcript": f"User: turn {self.t}", "audio": audio, "audio_length": n}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        done = self.t == len(self.lengths) - 1
        return self._obs(), 0.0, done, False, {}


class Recorder:
    name = "recorder"

    def __init__(self, sentence="The speaker sounds calm (0.90).\nSecond line \u2014 odd char."):
        self.sentence, self.calls = sentence, []

    def perceive(self, audio, sample_rate, context):
        self.calls.append((audio.copy(), sample_rate, context))
        return self.sentence


def test_wrapper_adds_the_perceived_sentence():
    rec = Recorder()
    env = PerceivedState(TinyAudioEnv(), rec)
    assert isinstance(rec, Perceiver)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["perceived"] == "The speaker sounds calm (0.90). Second line ? odd char."
    audio, sr, context = rec.calls[0]
    assert audio.shape == (8000,) and sr == 16000 and context == "User: turn 0"
    assert np.array_equal(audio, obs["audio"][:8000])
    obs, *_ = env.step([0, 0, 0])  # an empty clip: no perceiver call, a fixed sentence
    assert len(rec.calls) == 1 and "No recording" in obs["perceived"]
    obs, *_ = env.step([0, 0, 0])
    assert rec.calls[-1][0].shape == (4000,)


def test_wrapper_can_drop_the_audio_and_caps_length():
    env = PerceivedState(TinyAudioEnv(), Recorder("x" * 5000), keep_audio=False)
    obs, _ = env.reset()
    assert set(obs) == {"transcript", "perceived"} and len(obs["perceived"]) == PERCEIVED_MAX
    assert set(env.observation_space.spaces) == {"transcript", "perceived"}
    assert env.observation_space.contains(obs)


def test_wrapper_needs_audio_and_a_perceiver():
    with pytest.raises(ConfigError):
        PerceivedState(gym.make("Hear2Act-Prosody-Text-v0"), Recorder())
    with pytest.raises(ConfigError):
        PerceivedState(TinyAudioEnv(), object())


def test_wrapper_works_with_a_rule_agent():
    from hear2act_agents.baselines import RandomPolicy

    rec = Recorder()
    env = PerceivedState(FakeAudio(gym.make("Hear2Act-Prosody-Text-v0", max_actions=3)), rec)
    out = run_episode(env, RandomPolicy(), seed=0)
    assert len(rec.calls) == len(out.infos) >= 2


@pytest.fixture(scope="module")
def affect(tiny_affect):
    return AudioClassifierPerceiver(tiny_affect, device="cpu")


def test_affect_perceiver_sentence(affect):
    sentence = affect.perceive(tone(0.6), 16000, "")
    assert re.fullmatch(r"The speaker sounds (neutral|happy|angry|sad) \(0\.\d\d\)\.", sentence)
    scores = affect.scores(tone(0.6), 16000)
    assert len(scores) == 4 and abs(sum(p for _, p in scores) - 1) < 1e-4
    assert affect.perceive(np.zeros(0, np.float32), 16000, "").startswith("No recording")
    top2 = AudioClassifierPerceiver(affect.path, device="cpu", top_k=2).perceive(
        tone(0.6), 16000, ""
    )
    assert "; next: " in top2


def test_affect_perceiver_resamples(affect):
    a = affect.scores(tone(0.5), 16000)
    b = affect.scores(tone(0.5)[::2].copy(), 8000)
    assert [w for w, _ in a] and len(b) == len(a)


def test_generic_affect_condition_end_to_end(affect, server):
    """FakeAudio env + PerceivedState(affect) + an HTTP decision agent."""
    from hear2act_agents.llm import make_llm_agent

    env = PerceivedState(
        FakeAudio(gym.make("Hear2Act-Prosody-Text-v0", allow_clarify=False)), affect
    )
    agent = make_llm_agent("openai:scripted", base_url=server, allow_clarify=False)
    out = run_episode(env, agent, seed=5)
    assert out.terminated or out.truncated
    content = server_stats(server)["last"]["scripted"]["messages"][1]["content"]
    assert re.search(
        r"inferred from the voice of the user's latest turn: The speaker sounds \w+ \(0\.\d\d\)\.",
        content,
    )


class FakeAudioBackend:
    name = "fake-audio"
    supports_audio = True

    def __init__(self, reply):
        self.reply, self.calls = reply, []

    def complete(self, messages, *, audio=None, seed=None, run=0):
        self.calls.append((messages, audio))
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_audio_llm_perceiver_keeps_one_sentence():
    from hear2act_agents.llm.backends.base import BackendError

    backend = FakeAudioBackend("<think>hmm</think>The user sounds unsure about it. They hesitate.")
    p = AudioLLMPerceiver(backend, domain="city hotels")
    assert p.perceive(tone(0.3), 16000, "User: hi") == "The user sounds unsure about it."
    messages, audio = backend.calls[0]
    assert audio.shape == (4800,) and "User: hi" in messages[1]["content"]
    assert "city hotels" in messages[0]["content"]
    assert (
        AudioLLMPerceiver(FakeAudioBackend("")).perceive(tone(0.1), 16000, "")
        == AudioLLMPerceiver.FAILED
    )
    failing = AudioLLMPerceiver(FakeAudioBackend(BackendError("down")))
    assert (
        failing.perceive(tone(0.1), 16000, "") == AudioLLMPerceiver.FAILED and failing.errors == 1
    )


def test_reference_prosody_perceiver():
    class Model:
        def predict_proba(self, x: Any):
            assert x.ndim == 2
            return np.array([0.8])

    assert "(resolved, 0.80)" in ReferenceProsodyPerceiver(Model()).perceive(tone(0.5), 16000, "")


def test_make_perceiver_specs(tiny_affect):
    rec = Recorder()
    assert make_perceiver(rec) is rec and make_perceiver(None) is None
    assert isinstance(
        make_perceiver(f"affect:{tiny_affect}", device="cpu"), AudioClassifierPerceiver
    )
    for bad in ("self", "emotion:x", "affect:", 42):
        with pytest.raises(ConfigError):
            make_perceiver(bad)
    with pytest.raises(ConfigError):
        AudioLLMPerceiver(type("B", (), {"supports_audio": False, "name": "t"})())
