"""``ProsodyFeatures``: the latest user turn's audio as a fixed-length prosodic feature vector.

For access conditions with audio (``A``, ``A+T``, ``A+T+S``) the env's observation carries the
latest user turn as ``audio`` (float32, 16 kHz, zero-padded) and ``audio_length``. This wrapper
replaces them by numeric keys that stable-baselines3 can take:

- ``prosody`` (``len(FEATURE_NAMES)``,): ``speech.features.prosodic_features`` of the latest
  user turn (F0 level, range and final slope, energy and its range, speaking rate, pauses,
  voicing), in the units of ``FEATURE_NAMES``.
- ``prosody_delta`` (same shape, with ``reference=True``): ``prosody`` minus the features of the
  episode's first user turn (the reaction to the opening recommendation). The voice (persona) is
  fixed within an episode, so the difference removes the speaker's baseline; it is computed from
  audio the agent has heard, nothing else.

Features are computed only from the waveform in the observation, never from the env's state or
delivery label, and are cached per utterance (keyed by a hash of the samples), so a waveform seen
again is never analysed twice. Utterances repeat a lot: each user turn draws one of
``protocol.realizer.N_VARIATIONS`` voice variations, and the acceptance lines are shared by every
scenario with the same voice, so during training most turns are cache hits (the terminal
observation, a policy adapter reading the same observation as the wrapper, and repeated
evaluation seeds are hits too); 65,536 entries take about 10 MB.

With ``drop_text=True`` (default) the Text keys are removed as well, so
``ProsodyFeatures(StructuredObservation(env, keep_text=True))`` is a numeric ``Dict`` ready for
``MultiInputPolicy``.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import ConfigError
from hear2act_env.speech.feature_cache import SkipIfCached, utterance_digest, waveform_key
from hear2act_env.speech.features import FEATURE_BOUND, FEATURE_NAMES, bounded_features

__all__ = ["FEATURE_NAMES", "ProsodyFeatures", "ProsodyTracker", "N_PROSODY"]

N_PROSODY = len(FEATURE_NAMES)
AUDIO_KEYS = ("audio", "audio_length")
#: Features are clipped to this magnitude (their natural ranges are far inside it).
BOUND = FEATURE_BOUND


def _feature_cache(value: Any) -> Any:
    """A ``FeatureCache`` from ``disk_cache``: False/None (none), True (the default folder), a
    folder path, or a ``FeatureCache``."""
    from hear2act_env.speech.feature_cache import FeatureCache

    if value is None or value is False:
        return None
    if value is True:
        return FeatureCache()
    if isinstance(value, FeatureCache):
        return value
    if isinstance(value, str | Path):
        return FeatureCache(value)
    raise ConfigError(
        f"feature_cache: got {value!r}, expected True, False, a folder path or a FeatureCache"
    )


class ProsodyTracker:
    """Per-episode prosodic features with an LRU cache keyed by the waveform's samples, and
    optionally the on-disk ``FeatureCache`` behind it (shared by processes and runs).

    ``reset(audio, length)`` starts an episode (the first user turn is the reference);
    ``update(audio, length)`` returns ``(features, features - reference)`` of a later turn.
    Used by ``ProsodyFeatures`` and by policy adapters that read the runner's raw observations.
    """

    def __init__(self, cache_size: int = 65536, disk_cache: Any = False) -> None:
        if cache_size < 0:
            raise ConfigError(f"cache_size: got {cache_size}, expected >= 0")
        self.cache_size = int(cache_size)
        self.disk = _feature_cache(disk_cache)
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._reference = np.zeros(N_PROSODY, np.float32)
        self.hits = 0
        self.misses = 0

    def features(self, audio: np.ndarray, length: Any) -> np.ndarray:
        """The (cached) feature vector of ``audio[:length]`` (float32, finite)."""
        n = int(np.asarray(length))
        wave = np.ascontiguousarray(np.asarray(audio, dtype=np.float32).reshape(-1)[:n])
        if n <= 0 or not np.any(wave):
            return np.zeros(N_PROSODY, np.float32)
        key = waveform_key(wave)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            self.hits += 1
            return hit.copy()
        self.misses += 1
        feats = self.disk.get(key) if self.disk is not None else None
        if feats is None or feats.shape != (N_PROSODY,):
            feats = bounded_features(wave, SAMPLE_RATE)
            if self.disk is not None:
                self.disk.put(key, feats)
        if self.cache_size:
            self._cache[key] = feats
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return feats.copy()

    def reset(self, audio: np.ndarray, length: Any) -> tuple[np.ndarray, np.ndarray]:
        """Features of an episode's first user turn (also the new reference) and a zero delta."""
        return self.reset_with(self.features(audio, length))

    def update(self, audio: np.ndarray, length: Any) -> tuple[np.ndarray, np.ndarray]:
        """Features of a later user turn and their difference to the reference."""
        return self.update_with(self.features(audio, length))

    def reset_with(self, feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``reset`` from features already at hand."""
        self._reference = np.asarray(feats, np.float32).copy()
        return self._reference.copy(), np.zeros(N_PROSODY, np.float32)

    def update_with(self, feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``update`` from features already at hand."""
        feats = np.asarray(feats, np.float32)
        return feats, np.clip(feats - self._reference, -BOUND, BOUND).astype(np.float32)


class ProsodyFeatures(gym.Wrapper):
    """Add ``prosody`` (and ``prosody_delta``) computed from the observation's ``audio``.

    Args:
        env: an env whose ``Dict`` observation has ``audio`` and ``audio_length`` (access with
            A), possibly wrapped (e.g. ``StructuredObservation(env, keep_text=True)``).
        reference: also add ``prosody_delta`` (features minus the episode's first user turn).
        drop_text: remove the ``Text`` keys (needed for stable-baselines3).
        keep_audio: keep ``audio`` and ``audio_length`` (not for stable-baselines3: large).
        cache_size: how many utterances' features the LRU cache keeps.
        feature_cache: the on-disk feature cache behind it: True (default: ``features/`` in
            the audio cache folder), False, a folder path, or a ``FeatureCache``. Features are
            a pure function of the waveform, so it changes no observation, only the time.
    """

    def __init__(
        self,
        env: gym.Env,
        reference: bool = True,
        drop_text: bool = True,
        keep_audio: bool = False,
        cache_size: int = 65536,
        feature_cache: Any = True,
    ) -> None:
        super().__init__(env)
        base = env.observation_space
        if not isinstance(base, spaces.Dict) or any(k not in base.spaces for k in AUDIO_KEYS):
            raise ConfigError(
                "ProsodyFeatures needs an observation with 'audio' and 'audio_length' "
                "(an access condition with audio: 'A', 'A+T' or 'A+T+S')"
            )
        self.reference = bool(reference)
        self.drop_text = bool(drop_text)
        self.keep_audio = bool(keep_audio)
        self.tracker = ProsodyTracker(cache_size, feature_cache)
        self._skip: SkipIfCached | None = None
        if not keep_audio and self.tracker.disk is not None:
            # features only: a clip whose features are cached is not even rendered
            self._skip = SkipIfCached(self.tracker.disk)
        obs: dict[str, spaces.Space[Any]] = {}
        for key, space in base.spaces.items():
            if key in AUDIO_KEYS and not keep_audio:
                continue
            if drop_text and isinstance(space, spaces.Text):
                continue
            obs[key] = space
        box = spaces.Box(-BOUND, BOUND, (N_PROSODY,), np.float32)
        obs["prosody"] = box
        if self.reference:
            obs["prosody_delta"] = spaces.Box(-BOUND, BOUND, (N_PROSODY,), np.float32)
        self.observation_space = spaces.Dict(obs)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        with self._skipping():
            obs, info = self.env.reset(seed=seed, options=options)
        feats = self._features(obs)
        feats, delta = self.tracker.reset_with(feats)
        return self._out(obs, feats, delta), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        with self._skipping():
            obs, reward, terminated, truncated, info = self.env.step(action)
        feats, delta = self.tracker.update_with(self._features(obs))
        return self._out(obs, feats, delta), reward, terminated, truncated, info

    @contextlib.contextmanager
    def _skipping(self) -> Iterator[None]:
        """Let the env skip rendering cached clips for this call only (the base env, used
        without this wrapper, always renders)."""
        base = self.env.unwrapped
        if self._skip is None or not hasattr(base, "skip_render"):
            yield
            return
        base.skip_render = self._skip
        try:
            yield
        finally:
            base.skip_render = None

    def _features(self, obs: dict[str, Any]) -> np.ndarray:
        """The latest clip's features: from the cache when the env skipped rendering it,
        else computed (or found) from the waveform and stored under its utterance key."""
        key = getattr(self.env.unwrapped, "utterance_key", None)
        if self._skip is not None and self._skip.last is not None and self._skip.last[0] == key:
            return self._skip.last[1].copy()  # kept: a turn without a new clip shows it again
        feats = self.tracker.features(obs["audio"], obs["audio_length"])
        if self._skip is not None and key is not None and int(obs["audio_length"]) > 0:
            self.tracker.disk.put(utterance_digest(key), feats)
        return feats

    def _out(self, obs: dict[str, Any], feats: np.ndarray, delta: np.ndarray) -> dict[str, Any]:
        out = {k: obs[k] for k in self.observation_space.spaces if k in obs}
        out["prosody"] = feats
        if self.reference:
            out["prosody_delta"] = delta
        return out
