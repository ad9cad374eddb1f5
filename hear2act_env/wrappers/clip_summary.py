"""The shared machinery of wrappers that replace a turn's waveform by a summary of it.

``ClipTracker`` computes a fixed-shape summary of a clip (prosodic features, a log-mel
spectrogram) with an LRU cache keyed by the waveform's samples and, optionally, the on-disk
``FeatureCache`` behind it; ``ClipSummaryWrapper`` is the ``gym.Wrapper`` around it: it checks
the observation has audio, drops the audio (and the ``Text`` keys) from the observation space,
lets the env skip rendering a clip whose summary is already on disk under its utterance key
(``Hear2ActEnv.skip_render``, only during the wrapper's own calls), and keeps the first user
turn's summary as the episode's reference (the speaker's baseline).

Subclasses say what the summary is (``compute``, ``shape``) and how it enters the observation.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hear2act_env.errors import ConfigError
from hear2act_env.speech.feature_cache import SkipIfCached, utterance_digest, waveform_key

__all__ = ["AUDIO_KEYS", "ClipSummaryWrapper", "ClipTracker", "disk_cache_of"]

AUDIO_KEYS = ("audio", "audio_length")


def disk_cache_of(value: Any, default_dir: Callable[[], Path]) -> Any:
    """A ``FeatureCache`` from a ``disk_cache`` argument: False/None (none), True (the
    ``default_dir()`` folder), a folder path, or a ``FeatureCache``."""
    from hear2act_env.speech.feature_cache import FeatureCache

    if value is None or value is False:
        return None
    if value is True:
        return FeatureCache(default_dir())
    if isinstance(value, FeatureCache):
        return value
    if isinstance(value, str | Path):
        return FeatureCache(value)
    raise ConfigError(
        f"feature_cache: got {value!r}, expected True, False, a folder path or a FeatureCache"
    )


class ClipTracker:
    """Per-clip summaries, cached, plus the episode's reference (its first user turn).

    Args:
        compute: ``compute(wave) -> array of shape`` for a non-empty clip (16 kHz float32).
        shape: the summary's shape; ``empty`` is returned for a silent or empty turn.
        cache_size: how many clips' summaries the LRU cache keeps (0: none).
        disk: a ``FeatureCache`` or None.
        salt: names the computation in the disk cache's keys ("" for prosodic features).
    """

    def __init__(
        self,
        compute: Callable[[np.ndarray], np.ndarray],
        shape: tuple[int, ...],
        empty: np.ndarray,
        cache_size: int,
        disk: Any,
        salt: str = "",
    ) -> None:
        if cache_size < 0:
            raise ConfigError(f"cache_size: got {cache_size}, expected >= 0")
        self.compute = compute
        self.shape = tuple(shape)
        self.empty = np.asarray(empty, np.float32).reshape(self.shape)
        self.cache_size = int(cache_size)
        self.disk = disk
        self.salt = salt
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self.reference = self.empty.copy()
        self.hits = 0
        self.misses = 0

    def summary(self, audio: np.ndarray, length: Any) -> np.ndarray:
        """The (cached) summary of ``audio[:length]`` (float32, of ``shape``)."""
        n = int(np.asarray(length))
        wave = np.ascontiguousarray(np.asarray(audio, dtype=np.float32).reshape(-1)[:n])
        if n <= 0 or not np.any(wave):
            return self.empty.copy()
        key = waveform_key(wave, self.salt)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            self.hits += 1
            return hit.copy()
        self.misses += 1
        values = self.disk.get(key) if self.disk is not None else None
        if values is not None and values.size == self.empty.size:
            values = values.reshape(self.shape)
        else:
            values = np.asarray(self.compute(wave), np.float32).reshape(self.shape)
            if self.disk is not None:
                self.disk.put(key, values)
        if self.cache_size:
            self._cache[key] = values
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return values.copy()

    def stored(self, utterance_key: str, values: np.ndarray) -> None:
        """Keep ``values`` on disk under a clip's utterance key (found later without rendering)."""
        if self.disk is not None:
            self.disk.put(utterance_digest(utterance_key, self.salt), values)


class ClipSummaryWrapper(gym.Wrapper):
    """Base of ``ProsodyFeatures`` and ``LogMelObservation`` (see the module docstring).

    Subclasses set ``self.tracker`` (a ``ClipTracker``) before calling ``_setup`` and implement
    ``_added_spaces`` and ``_summaries``.
    """

    def _setup(self, drop_text: bool, keep_audio: bool) -> None:
        base = self.env.observation_space
        if not isinstance(base, spaces.Dict) or any(k not in base.spaces for k in AUDIO_KEYS):
            raise ConfigError(
                f"{type(self).__name__} needs an observation with 'audio' and 'audio_length' "
                "(an access condition with audio: 'A', 'A+T' or 'A+T+S')"
            )
        self.drop_text = bool(drop_text)
        self.keep_audio = bool(keep_audio)
        self._skip: SkipIfCached | None = None
        if not keep_audio and self.tracker.disk is not None:
            # summaries only: a clip whose summary is cached is not even rendered
            self._skip = SkipIfCached(self.tracker.disk, self.tracker.salt)
        obs: dict[str, spaces.Space[Any]] = {}
        for key, space in base.spaces.items():
            if key in AUDIO_KEYS and not keep_audio:
                continue
            if drop_text and isinstance(space, spaces.Text):
                continue
            obs[key] = space
        obs.update(self._added_spaces())
        self.observation_space = spaces.Dict(obs)

    tracker: ClipTracker

    def _added_spaces(self) -> dict[str, spaces.Space[Any]]:
        raise NotImplementedError

    def _summaries(self, current: np.ndarray, first: bool) -> dict[str, np.ndarray]:
        """The added keys from the latest clip's summary (``first``: it is the reference)."""
        raise NotImplementedError

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        with self._skipping():
            obs, info = self.env.reset(seed=seed, options=options)
        return self._out(obs, self._summaries(self._latest(obs), first=True)), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        with self._skipping():
            obs, reward, terminated, truncated, info = self.env.step(action)
        added = self._summaries(self._latest(obs), first=False)
        return self._out(obs, added), reward, terminated, truncated, info

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

    def _latest(self, obs: dict[str, Any]) -> np.ndarray:
        """The latest clip's summary: from the cache when the env skipped rendering it, else
        computed (or found) from the waveform and stored under its utterance key."""
        key = getattr(self.env.unwrapped, "utterance_key", None)
        if self._skip is not None and self._skip.last is not None and self._skip.last[0] == key:
            # kept: a turn without a new clip shows it again
            return self._skip.last[1].reshape(self.tracker.shape).copy()
        values = self.tracker.summary(obs["audio"], obs["audio_length"])
        if self._skip is not None and key is not None and int(obs["audio_length"]) > 0:
            self.tracker.stored(key, values)
        return values

    def _out(self, obs: dict[str, Any], added: dict[str, np.ndarray]) -> dict[str, Any]:
        out = {k: obs[k] for k in self.observation_space.spaces if k in obs}
        out.update(added)
        return out
