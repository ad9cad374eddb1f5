"""Optional imports and local ``transformers`` model loading, shared by the LLM backends and the
audio perceivers (so neither imports the other)."""

from __future__ import annotations

import importlib
import os
import threading
from pathlib import Path
from typing import Any

from hear2act_env.errors import ConfigError, MissingExtraError

__all__ = [
    "dtype_kwargs",
    "generation_settings",
    "load_error",
    "pick_device",
    "require",
    "resolve_model_path",
    "shared",
    "transformers_version",
]

_SHARED: dict[tuple, Any] = {}
_SHARED_LOCK = threading.Lock()


def require(module: str, extra: str = "llm") -> Any:
    """Import ``module`` or raise ``MissingExtraError(extra, module)``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(extra, module) from exc


def transformers_version() -> tuple[int, int]:
    """(major, minor) of the installed transformers (raises MissingExtraError when absent)."""
    tf = require("transformers")
    parts = tf.__version__.split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)


def dtype_kwargs(dtype: str | None) -> dict[str, Any]:
    """The ``from_pretrained`` keyword for the weights' dtype.

    transformers 4.56 renamed ``torch_dtype`` to ``dtype`` (5.x warns on the old name and may
    drop it), while 4.50-4.55 only know ``torch_dtype``: pick by version.
    """
    if dtype is None:
        return {}
    torch = require("torch")
    value: Any = dtype
    if dtype != "auto":
        value = getattr(torch, dtype, None)
        if not isinstance(value, torch.dtype):
            raise ConfigError(f"dtype: {dtype!r} is not a torch dtype (e.g. 'bfloat16', 'auto')")
    name = "dtype" if transformers_version() >= (4, 56) else "torch_dtype"
    return {name: value}


def pick_device(device: str | None) -> str:
    """``device`` or, when None, ``cuda`` if available else ``cpu``."""
    if device:
        return device
    torch = require("torch")
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_model_path(path: str) -> str:
    """A local model folder (``~`` expanded). Hub ids are accepted only when already in the
    local Hugging Face cache (loading uses ``local_files_only``); nothing is downloaded."""
    if not path:
        raise ConfigError("model path is empty")
    expanded = os.path.expanduser(path)
    if Path(expanded).is_dir():
        return str(Path(expanded).resolve())
    if Path(expanded).exists():
        raise ConfigError(f"model path {path!r} is a file; expected the model's folder")
    return path  # maybe a hub id present in the local cache; from_pretrained will tell


def load_error(path: str, exc: Exception) -> ConfigError:
    return ConfigError(
        f"could not load a model from {path!r} ({type(exc).__name__}: {exc}); pass a local "
        "folder holding config.json, the weights and the tokenizer/processor files"
    )


def shared(key: tuple, factory) -> Any:
    """A process-wide object per ``key`` (models are loaded once and shared by policies)."""
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = factory()
        return _SHARED[key]


def generation_settings(backend: Any) -> dict[str, Any]:
    """The settings of a local ``transformers`` backend that determine its replies."""
    out = {
        "temperature": backend.temperature,
        "top_p": backend.top_p,
        "max_new_tokens": backend.max_new_tokens,
        "dtype": backend.dtype,
    }
    template_kwargs = getattr(backend, "chat_template_kwargs", None)
    if template_kwargs:  # only when set: earlier cache entries keep their keys
        out["chat_template_kwargs"] = template_kwargs
    return out
