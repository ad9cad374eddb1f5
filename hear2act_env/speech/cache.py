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
so a corrupt or truncated entry is detected, re-rendered and rewritten, never served. An entry
is read only when it is a regular file (opened without following links, through fan-out folders
that are not links either, so never from outside the cache folder) of at most
``MAX_ENTRY_BYTES``: a link, FIFO, device or oversized file in its place is a miss, re-rendered
and replaced atomically; a folder in its place (or at its fan-out folder) is a miss that is not
stored (``CacheStats.unstored``). A cache that cannot be written (read-only, not a folder, a full
disk) warns once and renders on without storing new entries; what it already holds is still read.

The default folder is ``$HEAR2ACT_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/hear2act-env/audio``,
else ``~/.cache/hear2act-env/audio``; an explicit ``root`` argument wins over all of them.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import struct
import threading
import warnings
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hear2act_env.boundedio import UnreadableFile, read_regular_fd
from hear2act_env.errors import ConfigError
from hear2act_env.safewrite import write_atomic
from hear2act_env.speech.utterance import Renderer, Utterance

__all__ = [
    "MAX_ENTRY_BYTES",
    "AudioCache",
    "CacheEntryError",
    "CacheStats",
    "CachedRenderer",
    "cache_key",
    "default_cache_dir",
    "pcm16_roundtrip",
    "read_entry",
    "slot_problem",
    "speak",
]

_MAGIC = b"H2AWAV3\n"
_HEADER = struct.Struct("<8s32sQII")  # magic, key, n_samples, sample_rate, crc32(payload)
_FORMAT = 2  # 2: 16-bit PCM entries (1: float32)
#: Full scale of the 16-bit entries: a sample ``x`` is stored as ``round(x * PCM_SCALE)``.
PCM_SCALE = 32767.0
#: The largest entry read (over half an hour of 16 kHz audio); a larger file is not an entry.
MAX_ENTRY_BYTES = 64 << 20


class CacheEntryError(OSError):
    """Something other than a regular file of bounded size sits where a cache entry goes."""


_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO opens at once (and is then refused), never blocks
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_WALK_AT = (
    os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
)


def _check_parts(parts: tuple[str, ...]) -> None:
    for part in parts:
        if not part or part in (".", "..") or "/" in part or os.sep in part:
            raise ValueError(f"cache entry name {part!r} is not a plain file name")


def _open_entry(root: Path, parts: tuple[str, ...]) -> int:
    """A read-only descriptor of ``root/parts...``, following no link below ``root``."""
    if _WALK_AT:
        dir_fd = os.open(root, _DIR_FLAGS)
        try:
            for part in parts[:-1]:
                inner = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
                os.close(dir_fd)
                dir_fd = inner
            return os.open(parts[-1], _READ_FLAGS, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
    path = root
    for part in parts[:-1]:  # no openat here: refuse linked fan-out folders by lstat
        path = path / part
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise CacheEntryError(errno.ENOTDIR, "not a plain folder", str(path))
    path = path / parts[-1]
    if stat.S_ISLNK(os.lstat(path).st_mode):
        raise CacheEntryError(errno.ELOOP, "a link in place of a cache entry", str(path))
    return os.open(path, _READ_FLAGS)


def read_entry(
    root: str | os.PathLike[str], parts: tuple[str, ...], max_bytes: int
) -> bytes | None:
    """The bytes of the cache entry ``root/parts...``, or None when there is none.

    The entry must be a regular file of at most ``max_bytes``, reached through plain folders
    (no link below ``root``; ``root`` itself is the user's choice); anything else raises
    ``CacheEntryError`` (an ``OSError``) at once, without reading it: a link (to ``/dev/zero``
    or out of the cache), a FIFO, a device, a folder, an oversized file.
    """
    _check_parts(parts)
    where = str(Path(root, *parts))
    try:
        fd = _open_entry(Path(root), parts)
    except FileNotFoundError:
        return None
    except CacheEntryError:
        raise
    except OSError as exc:  # ELOOP (a link), ENOTDIR (a file as fan-out folder), EISDIR, EACCES
        raise CacheEntryError(exc.errno, exc.strerror or "cannot be opened", where) from None
    try:
        return read_regular_fd(fd, max_bytes)
    except UnreadableFile as exc:
        raise CacheEntryError(errno.EINVAL, str(exc), where) from None
    finally:
        os.close(fd)


def slot_problem(root: str | os.PathLike[str], parts: tuple[str, ...]) -> str | None:
    """Why an entry cannot be written at ``root/parts...`` (None: it can be tried): a fan-out
    folder that is a link or not a folder, or a folder where the entry goes. A link, FIFO or
    file at the entry itself is no problem: the atomic write replaces it; nor is a cache folder
    that cannot be used at all (the write fails and says so)."""
    _check_parts(parts)
    path = Path(root)
    for part in parts[:-1]:
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except OSError:  # missing: made by the write; else (root a file...) the write fails
            return None
        if not stat.S_ISDIR(mode):
            return f"{path} is not a plain folder"
    try:
        mode = os.lstat(path / parts[-1]).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return f"{path / parts[-1]} is a folder"
    return None


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
    corrupt: int = 0  # entries refused (bad header or CRC, or not a regular file): re-rendered
    unstored: int = 0  # renders not stored: a folder (or a linked folder) holds their place


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
        return self.root.joinpath(*self._parts(key))

    @staticmethod
    def _parts(key: str) -> tuple[str, str]:
        return key[:2], f"{key}.h2a"

    def entry_problem(self, key: str, sample_rate: int) -> str | None:
        """Why the disk holds no usable entry for ``key`` (None: it does): ``missing``,
        ``not a regular file`` (a link, folder, FIFO or oversized file in its place) or
        ``corrupt``. Reads the header only (the sizes must agree; the CRC is checked on use)."""
        try:
            fd = _open_entry(self.root, self._parts(key))
        except FileNotFoundError:
            return "missing"
        except OSError:
            return "not a regular file"
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
                return "not a regular file"
            head = os.read(fd, _HEADER.size)
        except OSError:
            return "not a regular file"
        finally:
            os.close(fd)
        if len(head) < _HEADER.size:
            return "corrupt"
        magic, stored_key, n, rate, _ = _HEADER.unpack(head)
        if (
            magic != _MAGIC
            or stored_key != bytes.fromhex(key)
            or rate != sample_rate
            or info.st_size != _HEADER.size + 2 * n
        ):
            return "corrupt"
        return None

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
        try:
            blob = read_entry(self.root, self._parts(key), MAX_ENTRY_BYTES)
        except OSError:  # CacheEntryError included: not a regular file, too large, unreadable
            return self._corrupt()
        if blob is None:
            return None
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
        if slot_problem(self.root, self._parts(key)) is not None:
            with self._lock:
                self.stats.unstored += 1
            return
        try:
            write_atomic(path, header + payload)
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
