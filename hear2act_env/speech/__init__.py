"""Speech: renderers (espeak-ng by default), the audio cache and prosodic features.

Nothing here is imported by ``hear2act_env`` itself; importing this package is light (numpy
only): the espeak-ng library is loaded on first synthesis, and torch is never needed.

Main entry points (imported lazily on first access):

- ``Utterance``, ``Renderer`` (``speech.utterance``), ``SAMPLE_RATE`` (``hear2act_env.constants``)
- ``EspeakRenderer`` (``speech.espeak``), ``PiperRenderer`` (``speech.piper``), ``make_renderer``
  (``speech.renderers``: a renderer by name)
- ``AudioCache``, ``CachedRenderer``, ``default_cache_dir``, ``speak`` (``speech.cache``)
- ``cross_split_check`` (``speech.split_check``: no test clip was heard in training)
- ``prosodic_features``, ``FEATURE_NAMES`` (``speech.features``)
- ``LogisticModel``, ``evaluate_perception`` (``speech.perception``)
- ``resample`` (``speech.resample``)
- ``DELIVERY_PROSODY``, ``prosody_for`` (``speech.prosody``); ``VOICES`` (``speech.voices``)
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> its module (within ``speech`` unless fully qualified).
_EXPORTS = {
    "Utterance": "utterance",
    "Renderer": "utterance",
    "SAMPLE_RATE": "hear2act_env.constants",
    "EspeakRenderer": "espeak",
    "PiperRenderer": "piper",
    "AudioCache": "cache",
    "CachedRenderer": "cache",
    "default_cache_dir": "cache",
    "speak": "cache",
    "make_renderer": "renderers",
    "cross_split_check": "split_check",
    "prosodic_features": "features",
    "FEATURE_NAMES": "features",
    "LogisticModel": "perception",
    "evaluate_perception": "perception",
    "resample": "resample",
    "DELIVERY_PROSODY": "prosody",
    "prosody_for": "prosody",
    "VOICES": "voices",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    path = module if module.startswith("hear2act_env.") else f"{__name__}.{module}"
    value = getattr(importlib.import_module(path), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
