"""Fixtures for the LLM agent tests: a local OpenAI-compatible server, tiny models, an env
with audio observation keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SERVER = Path(__file__).with_name("fake_openai_server.py")
AUDIO_MAX = 16_000 * 4


@pytest.fixture(scope="session")
def fake_server():
    """Start the fake server as a subprocess on a free port; yields its /v1 base URL."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            proc.kill()
            raise RuntimeError(f"fake server did not start: {line!r} {proc.stderr.read()}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def server_stats(base_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base_url}/stats", timeout=5) as resp:
        return json.loads(resp.read())


def server_reset(base_url: str) -> None:
    req = urllib.request.Request(f"{base_url}/reset", data=b"{}", method="POST")
    with urllib.request.urlopen(req, timeout=5):
        pass


@pytest.fixture
def server(fake_server):
    """The server's base URL, with its statistics cleared."""
    server_reset(fake_server)
    return fake_server


class FakeAudio(gym.ObservationWrapper):
    """Adds ``audio`` (float32, 16 kHz, zero-padded) and ``audio_length`` to observations, as
    the env will for access conditions with A: a tone whose pitch follows the true state of
    the latest user turn (this test stand-in reads the env's private log)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        obs = dict(env.observation_space.spaces)
        obs["audio"] = spaces.Box(-1.0, 1.0, (AUDIO_MAX,), np.float32)
        obs["audio_length"] = spaces.Discrete(AUDIO_MAX + 1)
        self.observation_space = spaces.Dict(obs)
        self.lengths: list[int] = []

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        from .tiny import tone

        states = self.env.unwrapped._true_states
        state = states[-1] if states else 1
        turn = len(states)
        clip = tone(0.5 + 0.1 * (turn % 3), freq=140.0 + 30.0 * state, seed=turn)
        audio = np.zeros(AUDIO_MAX, np.float32)
        audio[: clip.size] = clip
        self.lengths.append(clip.size)
        return {**observation, "audio": audio, "audio_length": clip.size}


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tiny-models")


@pytest.fixture(scope="session")
def tiny_chat(tiny_dir):
    from .tiny import build_chat_model

    return build_chat_model(tiny_dir / "chat")


@pytest.fixture(scope="session")
def tiny_qwen2_audio(tiny_dir):
    from .tiny import build_qwen2_audio

    return build_qwen2_audio(tiny_dir / "qwen2-audio")


@pytest.fixture(scope="session")
def tiny_omni(tiny_dir):
    from .tiny import build_omni_thinker

    return build_omni_thinker(tiny_dir / "omni-thinker")


@pytest.fixture(scope="session")
def tiny_affect(tiny_dir):
    from .tiny import build_affect_model

    return build_affect_model(tiny_dir / "affect")
