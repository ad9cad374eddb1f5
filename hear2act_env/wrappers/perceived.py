"""``PerceivedState``: add a perceiver's sentence about the latest user audio to observations.

Textualized perception conditions (audio-inferred state T+S-hat, generic affect labels) are
wrappers, not env options (docs/protocol.md#access-conditions): run an env whose access includes audio, wrap it with a
perceiver, and any decision agent reads the sentence in ``observation["perceived"]``. Decision
agents treat a ``perceived`` sentence as the audio channel: LLM policies then decide from the
transcript and the sentence without the raw audio (two-stage T+S-hat). Pass
``keep_audio=False`` to drop the ``audio``/``audio_length`` keys altogether.

The perceiver is any object with ``perceive(audio, sample_rate, context) -> str`` (see
``hear2act_agents.perceivers``); it gets ``obs["audio"][:obs["audio_length"]]`` at 16 kHz and the
transcript as context. This module imports nothing from ``agents``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import ConfigError
from hear2act_env.protocol.validator import TEXT_CHARSET

__all__ = ["PERCEIVED_MAX", "PerceivedState"]

PERCEIVED_MAX = 1024
NO_AUDIO = "No recording of the user's latest turn is available."


def _clean(sentence: str) -> str:
    """One line of printable ASCII (the Text spaces' charset), at most ``PERCEIVED_MAX``."""
    text = " ".join(str(sentence).split())
    text = "".join(ch if ch in TEXT_CHARSET else "?" for ch in text)
    return (text or NO_AUDIO)[:PERCEIVED_MAX]


class PerceivedState(gym.ObservationWrapper):
    """Add ``perceived`` (Text): ``perceiver``'s sentence about the latest user audio."""

    def __init__(self, env: gym.Env, perceiver: Any, keep_audio: bool = True) -> None:
        super().__init__(env)
        if not callable(getattr(perceiver, "perceive", None)):
            raise ConfigError(
                "perceiver: expected an object with perceive(audio, sample_rate, context)"
            )
        base = env.observation_space
        if not isinstance(base, spaces.Dict) or "audio" not in base.spaces:
            raise ConfigError(
                "PerceivedState needs an env whose observations include 'audio' and "
                "'audio_length' (an access condition with A)"
            )
        self.perceiver = perceiver
        self.keep_audio = keep_audio
        obs = {
            k: v for k, v in base.spaces.items() if keep_audio or k not in ("audio", "audio_length")
        }
        obs["perceived"] = spaces.Text(PERCEIVED_MAX, min_length=1, charset=TEXT_CHARSET)
        self.observation_space = spaces.Dict(obs)

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        audio = np.asarray(observation["audio"], dtype=np.float32).reshape(-1)
        n = int(np.asarray(observation.get("audio_length", audio.size)).reshape(-1)[0])
        clip = audio[: max(0, min(n, audio.size))]
        if clip.size == 0:
            sentence = NO_AUDIO
        else:
            sentence = self.perceiver.perceive(
                clip, SAMPLE_RATE, str(observation.get("transcript", ""))
            )
        out = dict(observation)
        if not self.keep_audio:
            out.pop("audio", None)
            out.pop("audio_length", None)
        out["perceived"] = _clean(sentence)
        return out
