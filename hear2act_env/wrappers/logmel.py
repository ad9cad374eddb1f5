"""``LogMelObservation``: the latest user turn's audio as a fixed-size log-mel spectrogram.

The input of a learned audio encoder (``hear2act_agents.rl.audio_encoder``), beside the
handcrafted ``ProsodyFeatures``. It replaces ``audio`` / ``audio_length`` by

- ``logmel`` (``(2 * n_mels, frames)`` float32 with ``reference=True``, else
  ``(n_mels, frames)``): rows ``[0, n_mels)`` are the latest user turn's spectrogram
  (``speech.logmel.LogMelTransform``, settings ``LogMelSettings``: by default 32 mel bands x
  200 frames of 50 ms, 10 s); rows ``[n_mels, 2 n_mels)`` are the episode's first user turn
  (the reaction to the opening recommendation), the speaker's baseline in the same voice, so
  an encoder can compare the two as ``prosody_delta`` does. (Two dimensions, not a
  ``(2, n_mels, frames)`` stack: stable-baselines3 would take a 3-D box for an image.)

Spectrograms are a pure function of the waveform and the settings. They are cached like the
prosodic features: an LRU cache keyed by the samples and, with ``feature_cache`` (default on),
on disk in ``logmel/`` inside the audio cache folder, under the waveform's digest and under the
clip's utterance key (the audio cache's content address), salted with the settings; a clip
whose spectrogram is on disk is not even rendered. The observation is the same either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hear2act_env.speech.logmel import HIGH, LOW, LogMelSettings, LogMelTransform
from hear2act_env.wrappers.clip_summary import ClipSummaryWrapper, ClipTracker, disk_cache_of

__all__ = ["LogMelObservation", "LogMelTracker", "default_logmel_dir"]


def default_logmel_dir() -> Path:
    """``logmel/`` inside the default audio cache folder."""
    from hear2act_env.speech.cache import default_cache_dir

    return default_cache_dir() / "logmel"


class LogMelTracker(ClipTracker):
    """Per-episode spectrograms: ``reset(audio, length)`` starts an episode (its first user turn
    is the reference), ``update(audio, length)`` gives ``current`` with the reference's rows
    below it."""

    def __init__(
        self,
        settings: LogMelSettings | None = None,
        reference: bool = True,
        cache_size: int = 4096,
        disk_cache: Any = False,
    ) -> None:
        self.transform = LogMelTransform(settings)
        self.settings = self.transform.settings
        self.with_reference = bool(reference)
        super().__init__(
            self.transform,
            self.settings.shape,
            self.transform.silence(),
            cache_size,
            disk_cache_of(disk_cache, default_logmel_dir),
            salt=self.settings.key(),
        )

    @property
    def channels(self) -> int:
        """1, or 2 with the reference."""
        return 2 if self.with_reference else 1

    def stack(self, current: np.ndarray) -> np.ndarray:
        """The observation value: ``current`` (and below it the reference)."""
        parts = [current, self.reference] if self.with_reference else [current]
        return np.concatenate(parts).astype(np.float32)

    def reset_with(self, current: np.ndarray) -> np.ndarray:
        """``reset`` from a spectrogram already at hand."""
        self.reference = np.asarray(current, np.float32).copy()
        return self.stack(self.reference)

    def update_with(self, current: np.ndarray) -> np.ndarray:
        """``update`` from a spectrogram already at hand."""
        return self.stack(np.asarray(current, np.float32))

    def reset(self, audio: np.ndarray, length: Any) -> np.ndarray:
        """The stacked spectrograms of an episode's first user turn (also the reference)."""
        return self.reset_with(self.summary(audio, length))

    def update(self, audio: np.ndarray, length: Any) -> np.ndarray:
        """The stacked spectrograms of a later user turn and the reference."""
        return self.update_with(self.summary(audio, length))


class LogMelObservation(ClipSummaryWrapper):
    """Replace ``audio`` / ``audio_length`` by ``logmel`` (see the module docstring).

    Args:
        env: an env whose ``Dict`` observation has ``audio`` and ``audio_length`` (access with
            A), possibly wrapped (e.g. ``StructuredObservation(env, keep_text=True)``).
        settings: the spectrogram's ``LogMelSettings`` (default: 32 mels x 200 frames of 50 ms).
        reference: add the episode's first user turn as a second channel.
        drop_text: remove the ``Text`` keys (needed for stable-baselines3).
        keep_audio: keep ``audio`` and ``audio_length`` (not for stable-baselines3: large).
        cache_size: how many clips' spectrograms the LRU cache keeps (25.6 KB each by default).
        feature_cache: the on-disk cache: True (default: ``logmel/`` in the audio cache folder),
            False, a folder path, or a ``FeatureCache``.
    """

    def __init__(
        self,
        env: gym.Env,
        settings: LogMelSettings | None = None,
        reference: bool = True,
        drop_text: bool = True,
        keep_audio: bool = False,
        cache_size: int = 4096,
        feature_cache: Any = True,
    ) -> None:
        super().__init__(env)
        self.tracker = LogMelTracker(settings, reference, cache_size, feature_cache)
        self.settings = self.tracker.settings
        self._setup(drop_text, keep_audio)

    def _added_spaces(self) -> dict[str, spaces.Space[Any]]:
        n_mels, frames = self.settings.shape
        shape = (self.tracker.channels * n_mels, frames)
        return {"logmel": spaces.Box(LOW, HIGH, shape, np.float32)}

    def _summaries(self, current: np.ndarray, first: bool) -> dict[str, np.ndarray]:
        track = self.tracker.reset_with if first else self.tracker.update_with
        return {"logmel": track(current)}
