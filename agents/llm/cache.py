"""An on-disk response cache: reruns of an evaluation replay model replies for free.

Entries are keyed by the sha256 of a canonical JSON of everything that determines a reply
(backend kind, model, base URL, messages, generation settings, audio digest, seed, run index),
so two models or two settings never share an entry. Each entry is one small JSON file under a
two-character fan-out folder, written atomically (temporary file in the same folder, fsync,
``os.replace``), so concurrent writers and interrupted runs never leave a torn entry; an entry
that cannot be read is treated as a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env.atomic import atomic_write

__all__ = ["ResponseCache", "audio_digest", "cache_key"]


def audio_digest(audio: np.ndarray | None) -> str | None:
    """sha256 of a waveform's float32 bytes (None for no audio)."""
    if audio is None:
        return None
    data = np.ascontiguousarray(np.asarray(audio, dtype=np.float32))
    return hashlib.sha256(data.tobytes()).hexdigest()


def cache_key(material: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``material``."""
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Reply texts stored under ``root``, one JSON file per key."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        path = self._path(key)
        try:
            with open(path, encoding="utf-8") as fh:
                entry = json.load(fh)
            reply = entry["reply"]
            if not isinstance(reply, str):
                raise TypeError("reply is not a string")
        except (OSError, ValueError, KeyError, TypeError):
            self.misses += 1
            return None
        self.hits += 1
        return reply

    def put(self, key: str, reply: str, material: dict[str, Any] | None = None) -> None:
        path = self._path(key)
        entry = {"key": key, "reply": reply}
        if material is not None:
            entry["model"] = material.get("model")
        atomic_write(path, json.dumps(entry, ensure_ascii=False).encode("utf-8"), fsync=True)
