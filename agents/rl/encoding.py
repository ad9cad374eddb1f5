"""The flat RL observation: one float32 vector built from the numeric structured view.

``encode`` turns a numeric observation (the keys of ``StructuredObservation``, plus ``state``
with S and ``prosody``/``prosody_delta`` from ``ProsodyFeatures`` with A) into a vector:

| part | size | what |
| --- | --- | --- |
| fit | 44 | per option: meets requirement, L1, L2, L3 (1 / -1 / 0 not said) |
| favored | 11 | standing on the favored attribute |
| current | 11 | one-hot: the option under discussion |
| surface | 7 | one-hot: surface class of the latest reply (``lexical.SURFACES``) |
| revealed, asked, turn | 3 + 9 + 1 | needs said, topics asked, actions / budget |
| derived (``derived=True``) | 29 | per option "meets everything said" (11), the current option's fit row (4) and whether it meets everything said (1), one-hot of the best known fit (``baselines.best_known_fit``, 11), whether that is the current option (1), share of options still consistent (1) |
| state (with S) | 5 | one-hot of the state tag (0 withheld .. 4 rejection) |
| prosody (with A, ``audio_encoder="features"``) | 16 | ``prosody`` and ``prosody_delta``, standardized with the run's scaler, clipped to +-5 |

With ``audio_encoder="learned"`` the vector has no prosody part: the observation is a ``Dict``
of ``vector`` (the parts above) and ``logmel`` (``LogMelObservation``: the latest user turn's
and the first user turn's log-mel spectrograms), read by ``audio_encoder.AudioTextExtractor``.

The derived part is a deterministic function of the other parts (what the words said); it only
spares the network from learning an argmax over options. Nothing here reads the env.
``RLObservation`` is the wrapper form (``Box`` observation, plus ``action_masks()`` for
MaskablePPO).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hear2act_agents.baselines import best_known_fit
from hear2act_agents.rl.actions import action_mask
from hear2act_env.conditions import Access
from hear2act_env.errors import ConfigError
from hear2act_env.lexical import SURFACES
from hear2act_env.protocol.engine import N_OPTIONS, N_TOPICS
from hear2act_env.wrappers.prosody import N_PROSODY

__all__ = ["AUDIO_ENCODERS", "AudioEncoder", "EncoderSpec", "RLObservation", "encode"]

N_STATES = 5
CLIP = 5.0

#: How a policy with audio hears it: the 8 handcrafted prosodic features, or a convolutional
#: encoder over the log-mel spectrogram trained with the policy.
AudioEncoder = Literal["features", "learned"]
AUDIO_ENCODERS: tuple[str, ...] = ("features", "learned")


@dataclass(frozen=True)
class EncoderSpec:
    """What the vector contains; saved with every trained model."""

    with_state: bool = False
    with_audio: bool = False
    derived: bool = True
    prosody_mean: tuple[float, ...] | None = None  # 2 * N_PROSODY values (prosody, delta)
    prosody_scale: tuple[float, ...] | None = None
    audio_encoder: AudioEncoder = "features"
    logmel: dict[str, Any] | None = None  # LogMelSettings.to_dict() of a learned encoder

    def __post_init__(self) -> None:
        if self.audio_encoder not in AUDIO_ENCODERS:
            raise ConfigError(
                f"audio_encoder: got {self.audio_encoder!r}, expected one of {list(AUDIO_ENCODERS)}"
            )
        if self.learned and not self.with_audio:
            raise ConfigError(
                "audio_encoder: 'learned' needs an access condition with audio (A+T or A+T+S)"
            )

    @property
    def learned(self) -> bool:
        """Whether the audio is read by a learned encoder (a ``Dict`` observation)."""
        return self.audio_encoder == "learned"

    @classmethod
    def for_access(cls, access: str | Access, derived: bool = True, **kw: Any) -> EncoderSpec:
        """The spec of an access condition (S -> state, A -> prosody)."""
        channels = Access.parse(access)
        return cls(with_state=channels.state, with_audio=channels.audio, derived=derived, **kw)

    def layout(self) -> list[tuple[str, int]]:
        """The parts of the vector in order, with their sizes."""
        parts = [("base", N_OPTIONS * 4 + N_OPTIONS + N_OPTIONS + len(SURFACES) + 3 + N_TOPICS + 1)]
        if self.derived:
            parts.append(("derived", N_OPTIONS + 4 + 1 + N_OPTIONS + 1 + 1))
        if self.with_state:
            parts.append(("state", N_STATES))
        if self.with_audio and not self.learned:
            parts.append(("prosody", 2 * N_PROSODY))
        return parts

    @property
    def size(self) -> int:
        """Length of the vector."""
        return sum(n for _, n in self.layout())

    def extends(self, other: EncoderSpec) -> bool:
        """Whether ``other``'s vector is a prefix of this one (e.g. T of A+T or of T+S)."""
        mine, theirs = self.layout(), other.layout()
        return mine[: len(theirs)] == theirs

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        data = asdict(self)
        for k in ("prosody_mean", "prosody_scale"):
            data[k] = None if data[k] is None else [float(v) for v in data[k]]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EncoderSpec:
        """Inverse of ``to_dict``."""
        kw = dict(data)
        for k in ("prosody_mean", "prosody_scale"):
            kw[k] = None if kw.get(k) is None else tuple(float(v) for v in kw[k])
        return cls(**kw)


def _one_hot(index: Any, n: int) -> np.ndarray:
    out = np.zeros(n, np.float32)
    out[int(np.asarray(index))] = 1.0
    return out


def encode(obs: dict[str, Any], spec: EncoderSpec) -> np.ndarray:
    """The flat float32 vector of a numeric observation (see the module table)."""
    fit = np.asarray(obs["fit"], np.float32)
    current = int(np.asarray(obs["current"]))
    parts = [
        fit.reshape(-1),
        np.asarray(obs["favored"], np.float32),
        _one_hot(current, N_OPTIONS),
        _one_hot(obs["surface"], len(SURFACES)),
        np.asarray(obs["revealed"], np.float32),
        np.asarray(obs["asked"], np.float32),
        np.asarray(obs["turn"], np.float32).reshape(-1),
    ]
    if spec.derived:
        consistent = (fit >= 0).all(axis=1).astype(np.float32)
        target = best_known_fit({"fit": fit, "favored": np.asarray(obs["favored"])})
        parts += [
            consistent,
            fit[current],
            consistent[current : current + 1],
            _one_hot(target, N_OPTIONS),
            np.array([target == current], np.float32),
            np.array([consistent.mean()], np.float32),
        ]
    if spec.with_state:
        parts.append(_one_hot(obs.get("state", 0), N_STATES))
    if spec.with_audio and not spec.learned:
        raw = np.concatenate(
            [np.asarray(obs["prosody"], np.float32), np.asarray(obs["prosody_delta"], np.float32)]
        )
        if spec.prosody_mean is not None and spec.prosody_scale is not None:
            raw = (raw - np.asarray(spec.prosody_mean, np.float32)) / np.asarray(
                spec.prosody_scale, np.float32
            )
        parts.append(np.clip(raw, -CLIP, CLIP))
    return np.clip(np.concatenate(parts), -CLIP, CLIP).astype(np.float32)


class RLObservation(gym.ObservationWrapper):
    """Numeric ``Dict`` (structured view, state, prosody) -> flat ``Box`` via ``encode``; with a
    learned audio encoder, ``Dict(vector=Box, logmel=Box)`` (the spectrograms pass through).

    ``action_masks()`` gives ``actions.action_mask`` of the latest observation (MaskablePPO reads
    it through the vector env), so stack ``FactoredActions`` on top of this wrapper.
    """

    def __init__(self, env: gym.Env, spec: EncoderSpec, prune: bool = True) -> None:
        super().__init__(env)
        self.encoder_spec = spec
        self.prune = prune
        vector = spaces.Box(-CLIP, CLIP, (spec.size,), np.float32)
        self.observation_space: spaces.Space[Any] = vector
        if spec.learned:
            inner = env.observation_space
            if not isinstance(inner, spaces.Dict) or "logmel" not in inner.spaces:
                raise ConfigError(
                    "RLObservation: a learned audio encoder needs a 'logmel' observation "
                    "(wrap the env in LogMelObservation)"
                )
            self.observation_space = spaces.Dict(
                {"vector": vector, "logmel": inner.spaces["logmel"]}
            )
        self._last: dict[str, Any] | None = None

    def observation(self, observation: dict[str, Any]) -> Any:
        self._last = observation
        x = encode(observation, self.encoder_spec)
        if self.encoder_spec.learned:
            return {"vector": x, "logmel": np.asarray(observation["logmel"], np.float32)}
        return x

    def action_masks(self) -> np.ndarray:
        """Which of the 22 factored actions are allowed now."""
        if self._last is None:
            raise RuntimeError("call reset() before action_masks()")
        allow = bool(getattr(self.env.unwrapped, "allow_clarify", True))
        return action_mask(self._last, allow_clarify=allow, prune=self.prune)
