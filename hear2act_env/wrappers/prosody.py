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

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.speech.features import FEATURE_BOUND, FEATURE_NAMES, bounded_features
from hear2act_env.wrappers.clip_summary import ClipSummaryWrapper, ClipTracker, disk_cache_of

__all__ = ["FEATURE_NAMES", "ProsodyFeatures", "ProsodyTracker", "N_PROSODY"]

N_PROSODY = len(FEATURE_NAMES)
#: Features are clipped to this magnitude (their natural ranges are far inside it).
BOUND = FEATURE_BOUND


def _default_feature_dir() -> Any:
    from hear2act_env.speech.feature_cache import default_feature_dir

    return default_feature_dir()


def _features_of(wave: np.ndarray) -> np.ndarray:
    return bounded_features(wave, SAMPLE_RATE)


class ProsodyTracker(ClipTracker):
    """Per-episode prosodic features with an LRU cache keyed by the waveform's samples, and
    optionally the on-disk ``FeatureCache`` behind it (shared by processes and runs).

    ``reset(audio, length)`` starts an episode (the first user turn is the reference);
    ``update(audio, length)`` returns ``(features, features - reference)`` of a later turn.
    Used by ``ProsodyFeatures`` and by policy adapters that read the runner's raw observations.
    """

    def __init__(self, cache_size: int = 65536, disk_cache: Any = False) -> None:
        super().__init__(
            _features_of,
            (N_PROSODY,),
            np.zeros(N_PROSODY, np.float32),
            cache_size,
            disk_cache_of(disk_cache, _default_feature_dir),
        )

    def features(self, audio: np.ndarray, length: Any) -> np.ndarray:
        """The (cached) feature vector of ``audio[:length]`` (float32, finite)."""
        return self.summary(audio, length)

    def reset(self, audio: np.ndarray, length: Any) -> tuple[np.ndarray, np.ndarray]:
        """Features of an episode's first user turn (also the new reference) and a zero delta."""
        return self.reset_with(self.features(audio, length))

    def update(self, audio: np.ndarray, length: Any) -> tuple[np.ndarray, np.ndarray]:
        """Features of a later user turn and their difference to the reference."""
        return self.update_with(self.features(audio, length))

    def reset_with(self, feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``reset`` from features already at hand."""
        self.reference = np.asarray(feats, np.float32).copy()
        return self.reference.copy(), np.zeros(N_PROSODY, np.float32)

    def update_with(self, feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``update`` from features already at hand."""
        feats = np.asarray(feats, np.float32)
        return feats, np.clip(feats - self.reference, -BOUND, BOUND).astype(np.float32)


class ProsodyFeatures(ClipSummaryWrapper):
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
        self.reference = bool(reference)
        self.tracker = ProsodyTracker(cache_size, feature_cache)
        self._setup(drop_text, keep_audio)

    def _added_spaces(self) -> dict[str, spaces.Space[Any]]:
        box = spaces.Box(-BOUND, BOUND, (N_PROSODY,), np.float32)
        added: dict[str, spaces.Space[Any]] = {"prosody": box}
        if self.reference:
            added["prosody_delta"] = spaces.Box(-BOUND, BOUND, (N_PROSODY,), np.float32)
        return added

    def _summaries(self, current: np.ndarray, first: bool) -> dict[str, np.ndarray]:
        track = self.tracker.reset_with if first else self.tracker.update_with
        feats, delta = track(current)
        added = {"prosody": feats}
        if self.reference:
            added["prosody_delta"] = delta
        return added
