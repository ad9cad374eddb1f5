"""``FeatureCache``: prosodic features on disk, content-addressed, beside the audio cache.

A waveform's features are stored under the BLAKE2b digest of its float32 samples and the
feature code's version (``features.FEATURES_VERSION``), so any process (a ``SubprocVecEnv``
worker, a later training run) that meets the same clip reads its features instead of
recomputing the pitch track. Entries live at ``root/<key[:2]>/<key>.h2f``: a header (magic,
key, feature count, CRC-32 of the values) and the float32 values, written atomically; a corrupt
entry is recomputed and rewritten, never served. An entry is read only as a regular file of at
most ``MAX_FEATURE_BYTES`` reached without a link below the root (``cache.read_entry``): a link
(to ``/dev/zero`` or out of the cache), a FIFO or a device in its place is a miss, and a new
entry replaces it, never written through it (``safewrite``). A folder that cannot be written warns once and
computation goes on uncached. The default folder is ``features/`` inside the audio cache's
(``cache.default_cache_dir()``).
"""

from __future__ import annotations

import hashlib
import struct
import warnings
import zlib
from pathlib import Path

import numpy as np

from hear2act_env.safewrite import UnsafeOutputError, write_atomic
from hear2act_env.speech.cache import default_cache_dir, read_entry
from hear2act_env.speech.features import FEATURES_VERSION

__all__ = [
    "MAX_FEATURE_BYTES",
    "FeatureCache",
    "SkipIfCached",
    "default_feature_dir",
    "utterance_digest",
    "waveform_key",
]

_MAGIC = b"H2AFEA1\n"
_HEADER = struct.Struct("<8s16sII")  # magic, key, n_values, crc32(payload)
#: The largest entry read (a log-mel spectrogram of a minute of audio is under 2 MB).
MAX_FEATURE_BYTES = 16 << 20


def default_feature_dir() -> Path:
    """``features/`` inside the default audio cache folder."""
    return default_cache_dir() / "features"


def waveform_key(wave: np.ndarray, salt: str = "") -> bytes:
    """16-byte BLAKE2b digest of the waveform's float32 samples and the feature version
    (``salt`` names another computation on the same clip, e.g. a log-mel spectrogram's)."""
    h = hashlib.blake2b(digest_size=16, person=b"h2a-feat" + FEATURES_VERSION.encode()[:8])
    if salt:
        h.update(salt.encode("utf-8") + b"\0")
    h.update(np.ascontiguousarray(wave, dtype=np.float32).tobytes())
    return h.digest()


def utterance_digest(utterance_key: str, salt: str = "") -> bytes:
    """16-byte digest of an env's ``utterance_key`` (renderer, utterance, buffer length) and the
    feature version: the features of a clip found without rendering it (``salt``: as in
    ``waveform_key``)."""
    h = hashlib.blake2b(digest_size=16, person=b"h2a-utt" + FEATURES_VERSION.encode()[:9])
    if salt:
        h.update(salt.encode("utf-8") + b"\0")
    h.update(utterance_key.encode("utf-8"))
    return h.digest()


class FeatureCache:
    """Feature vectors on disk by waveform digest (see the module docstring); any float32
    array is stored flat (a reader reshapes it)."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else default_feature_dir()
        self._writable = True
        self.hits = 0
        self.misses = 0
        self.corrupt = 0

    def path_for(self, key: bytes) -> Path:
        return self.root.joinpath(*self._parts(key))

    @staticmethod
    def _parts(key: bytes) -> tuple[str, str]:
        name = key.hex()
        return name[:2], f"{name}.h2f"

    def get(self, key: bytes) -> np.ndarray | None:
        """The stored vector, or None (missing or corrupt)."""
        try:
            blob = read_entry(self.root, self._parts(key), MAX_FEATURE_BYTES)
        except (OSError, ValueError):  # a link, FIFO, device, folder or oversized file
            blob = b""
        if blob is None:
            self.misses += 1
            return None
        if len(blob) >= _HEADER.size:
            magic, stored, n, crc = _HEADER.unpack_from(blob)
            payload = blob[_HEADER.size :]
            if magic == _MAGIC and stored == key and len(payload) == 4 * n:
                if zlib.crc32(payload) == crc:
                    self.hits += 1
                    return np.frombuffer(payload, dtype="<f4").astype(np.float32)
        self.corrupt += 1
        self.misses += 1
        return None

    def has(self, key: bytes) -> bool:
        """Whether a valid entry exists (it is read and checked)."""
        return self.get(key) is not None

    def put(self, key: bytes, values: np.ndarray) -> None:
        """Store ``values`` (float32) under ``key``; a folder that cannot be written warns once."""
        if not self._writable:
            return
        payload = np.ascontiguousarray(values, dtype="<f4").tobytes()
        header = _HEADER.pack(_MAGIC, key, len(payload) // 4, zlib.crc32(payload))
        try:
            write_atomic(self.path_for(key), header + payload, root=self.root)
        except UnsafeOutputError:  # a link or a file where the fan-out folder goes: not stored
            return
        except OSError as exc:
            self._writable = False
            warnings.warn(
                f"feature cache {self.root} is not writable ({type(exc).__name__}: "
                f"{exc.strerror or exc}); computing features without caching them",
                RuntimeWarning,
                stacklevel=3,
            )


class SkipIfCached:
    """``Hear2ActEnv.skip_render`` for a features-only reader: True when the clip's features
    are in ``cache`` under its utterance key (kept in ``last`` for the reader: one disk read)."""

    def __init__(self, cache: FeatureCache, salt: str = "") -> None:
        self.cache = cache
        self.salt = salt
        self.last: tuple[str, np.ndarray] | None = None

    def __call__(self, utterance_key: str) -> bool:
        values = self.cache.get(utterance_digest(utterance_key, self.salt))
        self.last = (utterance_key, values) if values is not None else None
        return values is not None
