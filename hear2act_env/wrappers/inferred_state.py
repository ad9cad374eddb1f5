"""``InferredState``: the state read from the voice by the reference perceiver (T+S-hat).

Adds ``state`` to the observation from the latest user audio: 1 if the reference prosody
classifier hears a resolved reaction, 2 (unresolved) otherwise; by default the raw audio is
then removed, so the decision stage sees transcript + inferred state, as in the paper's
two-stage condition. Any policy that reads ``state`` runs on it unchanged.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hear2act_env.protocol.delivery import State

REFERENCE_MODEL = (
    Path(__file__).resolve().parents[1] / "speech" / "data" / "reference_perceiver.json"
)


class InferredState(gym.ObservationWrapper):
    """Replace the audio by the reference perceiver's state reading."""

    def __init__(
        self, env: gym.Env, model_path: str | Path | None = None, keep_audio: bool = False
    ) -> None:
        super().__init__(env)
        from hear2act_env.speech.features import prosodic_features
        from hear2act_env.speech.perception import LogisticModel

        base = env.observation_space
        if not isinstance(base, spaces.Dict) or "audio" not in base.spaces:
            raise gym.error.Error(
                "InferredState needs an env with audio observations (access A, A+T or A+T+S)"
            )
        self.model = LogisticModel.load(model_path or REFERENCE_MODEL)
        self._features = prosodic_features
        self.keep_audio = keep_audio
        obs = {
            k: v for k, v in base.spaces.items() if keep_audio or k not in ("audio", "audio_length")
        }
        obs["state"] = spaces.Discrete(5)
        self.observation_space = spaces.Dict(obs)
        self._memo: OrderedDict[bytes, int] = OrderedDict()

    def infer(self, audio: np.ndarray) -> int:
        """1 (resolved) or 2 (unresolved) for one waveform; memoized by content."""
        key = hashlib.blake2b(audio.tobytes(), digest_size=16).digest()
        hit = self._memo.get(key)
        if hit is None:
            resolved = bool(self.model.predict(self._features(audio)[None, :])[0])
            hit = int(State.RESOLVED) if resolved else int(State.RELUCTANT)
            self._memo[key] = hit
            if len(self._memo) > 4096:
                self._memo.popitem(last=False)
        return hit

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        audio = observation["audio"][: int(observation["audio_length"])]
        out = {
            k: v
            for k, v in observation.items()
            if self.keep_audio or k not in ("audio", "audio_length")
        }
        out["state"] = self.infer(audio)
        return out
