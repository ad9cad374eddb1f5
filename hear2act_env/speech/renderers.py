"""Renderers by name: ``espeak`` (the default), ``piper`` (the neural voice) or ``MODULE:NAME``.

One spec string names a renderer wherever a command line or a JSON configuration needs one
(``hear2act perceive/render/audit --renderer``, ``gym.make(..., renderer="piper")``, the
``benchmark`` runner's manifest), so that a run records which voice it heard.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from hear2act_env.errors import ConfigError

__all__ = ["RENDERERS", "SHIPPED_PERCEIVERS", "make_renderer", "shipped_perceiver"]

#: Short names of the shipped renderers -> ``module:class``.
RENDERERS: dict[str, str] = {
    "espeak": "hear2act_env.speech.espeak:EspeakRenderer",
    "piper": "hear2act_env.speech.piper:PiperRenderer",
}


_DATA = Path(__file__).resolve().parent / "data"
#: Reference perceivers fit on each shipped renderer's train-split clips (``hear2act perceive
#: --renderer NAME --save-perceiver``): the voice-inferred conditions read that renderer's voice with them.
SHIPPED_PERCEIVERS: dict[str, Path] = {
    "espeak": _DATA / "reference_perceiver.json",
    "piper": _DATA / "reference_perceiver_piper.json",
}


def shipped_perceiver(spec: str) -> Path | None:
    """The shipped reference perceiver of the renderer named ``spec`` (None: none ships)."""
    return SHIPPED_PERCEIVERS.get(spec)


def make_renderer(spec: str, field: str = "--renderer") -> Any:
    """The renderer named by ``spec``: a short name of ``RENDERERS``, or ``MODULE:NAME`` (a
    renderer object, or a class or function that makes one when called without arguments).

    ``field`` names the argument in error messages.
    """
    if not isinstance(spec, str):
        raise ConfigError(f"{field}: expected a renderer name, got {spec!r}")
    target_spec = RENDERERS.get(spec, spec)
    module, _, name = target_spec.partition(":")
    if not module or not name:
        raise ConfigError(
            f"{field}: expected {' or '.join(repr(n) for n in RENDERERS)} or MODULE:NAME (an "
            f"importable renderer, or a class or function making one), got {spec!r}"
        )
    try:
        target = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise ConfigError(f"{field}: cannot import {module!r} ({exc})") from None
    except AttributeError:
        raise ConfigError(f"{field}: module {module!r} has no {name!r}") from None
    try:
        renderer = (
            target if hasattr(target, "render") and not isinstance(target, type) else target()
        )
    except TypeError as exc:
        raise ConfigError(f"{field}: {spec} cannot be made without arguments ({exc})") from None
    from hear2act_env.speech.utterance import check_renderer

    check_renderer(renderer, field, spec)
    return renderer
