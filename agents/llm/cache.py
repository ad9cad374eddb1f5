"""An on-disk response cache: reruns of an evaluation replay model replies for free.

Entries are keyed by the sha256 of a canonical JSON of everything that determines a reply
(backend kind, model, base URL, messages, generation settings, audio digest, seed, run index),
so two models or two settings never share an entry. Each entry is one small JSON file under a
two-character fan-out folder, written atomically (temporary file in the same folder, fsync,
``os.replace``), so concurrent writers and interrupted runs never leave a torn entry. An entry is
data: it is read only when it is a regular file of at most ``MAX_ENTRY_BYTES`` below the cache
folder (no link followed, so never a FIFO, a device or a file outside), and parsed with a bounded
nesting depth; anything else, and an entry that cannot be read, is a miss. A reply whose place is
taken by a folder is not stored (``unstored``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env import jsonsafe, safewrite
from hear2act_env.safewrite import write_atomic
from hear2act_env.speech.cache import read_entry, slot_problem

__all__ = ["MAX_ENTRY_BYTES", "ResponseCache", "audio_digest", "cache_key"]

#: The largest entry read (a reply and its usage take a few kilobytes).
MAX_ENTRY_BYTES = 8 << 20


def audio_digest(audio: np.ndarray | list[np.ndarray] | None) -> str | None:
    """sha256 of a waveform's float32 bytes (None for no audio); for several recordings, the
    sha256 of their digests in order."""
    if audio is None:
        return None
    if not isinstance(audio, np.ndarray):
        clips = [audio_digest(a) or "" for a in audio]
        return clips[0] if len(clips) == 1 else hashlib.sha256("|".join(clips).encode()).hexdigest()
    data = np.ascontiguousarray(np.asarray(audio, dtype=np.float32))
    return hashlib.sha256(data.tobytes()).hexdigest()


def cache_key(material: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``material``."""
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Reply texts (and the tokens they took, when known) stored under ``root``, one JSON file
    per key."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        safewrite.ensure_folder(self.root)
        self.hits = 0
        self.misses = 0
        self.unstored = 0

    def _parts(self, key: str) -> tuple[str, str]:
        return key[:2], f"{key}.json"

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*self._parts(key))

    def get(self, key: str) -> str | None:
        """The stored reply text, or None (a miss, or an entry that cannot be read)."""
        entry = self.lookup(key)
        return entry[0] if entry is not None else None

    def lookup(self, key: str) -> tuple[str, dict[str, int] | None] | None:
        """(reply, usage) of the entry, or None. ``usage`` is the ``{"prompt_tokens",
        "completion_tokens"}`` the reply took when it was generated (None if unknown)."""
        try:
            blob = read_entry(self.root, self._parts(key), MAX_ENTRY_BYTES)
            if blob is None:
                raise FileNotFoundError(key)
            entry = jsonsafe.loads(blob.decode("utf-8"))  # UnicodeDecodeError: a ValueError
            reply = entry["reply"]
            if not isinstance(reply, str):
                raise TypeError("reply is not a string")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.misses += 1
            return None
        self.hits += 1
        usage = entry.get("usage")
        return reply, usage if isinstance(usage, dict) else None

    def put(
        self,
        key: str,
        reply: str,
        material: dict[str, Any] | None = None,
        usage: dict[str, int] | None = None,
    ) -> None:
        """Store ``reply`` (and its ``usage``) under ``key``; not stored when a folder holds
        the entry's place."""
        if slot_problem(self.root, self._parts(key)) is not None:
            self.unstored += 1
            return
        path = self._path(key)
        entry: dict[str, Any] = {"key": key, "reply": reply}
        if material is not None:
            entry["model"] = material.get("model")
        if usage is not None:
            entry["usage"] = usage
        write_atomic(path, json.dumps(entry, ensure_ascii=False).encode("utf-8"), fsync=True)
