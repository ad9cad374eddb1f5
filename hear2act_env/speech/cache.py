"""``AudioCache``: content-addressed on-disk cache of rendered audio, with an in-memory LRU.

The key is the SHA-256 of everything that determines a waveform: the renderer's name,
version and sample rate and the utterance's text, delivery, persona, variation and prosody
strength. Entries hold 16-bit PCM (2 bytes a sample, half of float32): every waveform the cache
returns, freshly rendered or read back, is the renderer's output rounded to that grid
(``pcm16_roundtrip``), so a clip is the same bit for bit whether it came from the disk, the
memory or the renderer, and ``speak`` gives the same waveform without a cache. Entries live at
``root/<key[:2]>/<key>.h2a``; each is written to a temporary file in
the same folder and moved into place with ``os.replace`` (atomic), and carries a header with
the key, the sample count and rate and a CRC-32 of the samples (cheap to check on every read),
so a corrupt or truncated entry is detected, re-rendered and rewritten, never served. A cache
that cannot be written (read-only, not a folder, a full disk) warns once and renders on without
storing new entries; what it already holds is still read.

The default folder is ``$HEAR2ACT_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/hear2act-env/audio``,
else ``~/.cache/hear2act-env/audio``; an explicit ``root`` argument wins over all of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import threading
import warnings
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hear2act_env.atomic import atomic_write
from hear2act_env.errors import ConfigError
from hear2act_env.speech.utterance import Renderer, Utterance

__all__ = [
    "AudioCache",
    "CacheStats",
    "CachedRenderer",
    "cache_key",
    "default_cache_dir",
    "pcm16_roundtrip",
    "speak",
]

_MAGIC = b"H2AWAV3\n"
_HEADER = struct.Struct("<8s32sQII")  # magic, key, n_samples, sample_rate, crc32(payload)
_FORMAT = 2  # 2: 16-bit PCM entries (1: float32)
#: Full scale of the 16-bit entries: a sample ``x`` is stored as ``round(x * PCM_SCALE)``.
PCM_SCALE = 32767.0


def _to_pcm16(wave: np.ndarray) -> np.ndarray:
    return np.round(np.clip(wave, -1.0, 1.0) * PCM_SCALE).astype("<i2")


def _from_pcm16(pcm: np.ndarray) -> np.ndarray:
    return pcm.astype(np.float32) / np.float32(PCM_SCALE)


def pcm16_roundtrip(wave: np.ndarray) -> np.ndarray:
    """``wave`` rounded to the 16-bit grid of the cache's entries (float32)."""
    return _from_pcm16(_to_pcm16(np.asarray(wave, dtype=np.float32)))


def speak(renderer: Renderer, utt: Utterance, cache: AudioCache | None = None) -> np.ndarray:
    """The waveform of ``utt`` as the env hears it: through ``cache``, or rendered and rounded."""
    if cache is not None:
        return cache.render(renderer, utt)
    return pcm16_roundtrip(renderer.render(utt))


def default_cache_dir() -> Path:
    """``$HEAR2ACT_CACHE_DIR``, else ``$XDG_CACHE_HOME/hear2act-env/audio``, else ``~/.cache/...``."""
    explicit = os.environ.get("HEAR2ACT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "hear2act-env" / "audio"


def cache_key(renderer: Renderer, utt: Utterance) -> str:
    """Hex SHA-256 of everything that determines the waveform of ``utt`` under ``renderer``."""
    payload = {
        "format": _FORMAT,
        "renderer": renderer.name,
        "version": renderer.version,
        "sample_rate": int(renderer.sample_rate),
        "text": utt.text,
        "delivery": utt.delivery,
        "persona": utt.persona,
        "variation": int(utt.variation),
        "prosody_strength": repr(float(utt.prosody_strength)),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


@dataclass
class CacheStats:
    """Counters of one cache's lookups."""

    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    corrupt: int = 0


class AudioCache:
    """Render through a renderer, caching on disk (content-addressed) and in memory (LRU).

    Args:
        root: the cache folder (``None``: ``default_cache_dir()``).
        memory_items: how many waveforms the in-memory LRU keeps (0 disables it).
        disk: whether to use the on-disk cache at all.
    """

    def __init__(
        self, root: Path | str | None = None, *, memory_items: int = 256, disk: bool = True
    ) -> None:
        if memory_items < 0:
            raise ConfigError(f"memory_items must be >= 0, got {memory_items}")
        self.root = Path(root).expanduser() if root is not None else default_cache_dir()
        self.memory_items = int(memory_items)
        self.disk = bool(disk)
        self.stats = CacheStats()
        self._writable = True  # False after a failed write (warned once): reads go on
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def path_for(self, key: str) -> Path:
        """Where the entry of ``key`` lives."""
        return self.root / key[:2] / f"{key}.h2a"

    def render(
        self, renderer: Renderer, utt: Utterance, copy: bool = True, key: str | None = None
    ) -> np.ndarray:
        """The waveform of ``utt``, rendering it only when needed.

        A fresh float32 array, or with ``copy=False`` a read-only one shared with the cache
        (for callers that only read it). ``key``: ``cache_key(renderer, utt)`` when the caller
        has it already.
        """
        key = key if key is not None else cache_key(renderer, utt)
        with self._lock:
            hit = self._memory.get(key)
            if hit is not None:
                self._memory.move_to_end(key)
                self.stats.memory_hits += 1
                return hit.copy() if copy else hit
        wave = self._read(key, renderer.sample_rate) if self.disk else None
        if wave is not None:
            with self._lock:
                self.stats.disk_hits += 1
        else:
            pcm = _to_pcm16(np.asarray(renderer.render(utt), dtype=np.float32))
            wave = _from_pcm16(pcm)
            with self._lock:
                self.stats.misses += 1
            if self.disk:
                self._write(key, pcm, renderer.sample_rate)
        stored = self._remember(key, wave)
        return wave.copy() if copy else stored

    def clear_memory(self) -> None:
        """Forget the in-memory entries (the disk entries stay)."""
        with self._lock:
            self._memory.clear()

    def _remember(self, key: str, wave: np.ndarray) -> np.ndarray:
        stored = wave if not wave.flags.writeable else wave.copy()
        stored.setflags(write=False)
        if self.memory_items == 0:
            return stored
        with self._lock:
            self._memory[key] = stored
            self._memory.move_to_end(key)
            while len(self._memory) > self.memory_items:
                self._memory.popitem(last=False)
        return stored

    def _read(self, key: str, sample_rate: int) -> np.ndarray | None:
        path = self.path_for(key)
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            return self._corrupt()
        if len(blob) < _HEADER.size:
            return self._corrupt()
        magic, stored_key, n, rate, digest = _HEADER.unpack_from(blob)
        payload = blob[_HEADER.size :]
        if (
            magic != _MAGIC
            or stored_key != bytes.fromhex(key)
            or rate != sample_rate
            or len(payload) != 2 * n
            or zlib.crc32(payload) != digest
        ):
            return self._corrupt()
        return _from_pcm16(np.frombuffer(payload, dtype="<i2"))  # little-endian on every platform

    def _corrupt(self) -> None:
        with self._lock:
            self.stats.corrupt += 1
        return None

    def _write(self, key: str, pcm: np.ndarray, sample_rate: int) -> None:
        path = self.path_for(key)
        payload = pcm.tobytes()
        header = _HEADER.pack(
            _MAGIC,
            bytes.fromhex(key),
            len(pcm),
            int(sample_rate),
            zlib.crc32(payload),
        )
        if not self._writable:
            return
        try:
            atomic_write(path, header + payload)
        except OSError as exc:  # read-only, not a folder, disk full: render on, uncached
            self._writable = False
            warnings.warn(
                f"audio cache {self.root} is not writable ({type(exc).__name__}: "
                f"{exc.strerror or exc}); rendering without caching new audio from now on",
                RuntimeWarning,
                stacklevel=4,
            )


class CachedRenderer:
    """A ``Renderer`` that renders through an ``AudioCache`` (same name, version and rate)."""

    def __init__(self, renderer: Renderer, cache: AudioCache) -> None:
        self.renderer = renderer
        self.cache = cache
        self.name = renderer.name
        self.sample_rate = renderer.sample_rate

    @property
    def version(self) -> str:
        """The wrapped renderer's version."""
        return self.renderer.version

    def render(self, utt: Utterance) -> np.ndarray:
        """The cached waveform of ``utt``."""
        return self.cache.render(self.renderer, utt)
