"""Waveforms as files a browser plays: Ogg Vorbis through ``soundfile`` (libsndfile) where it is
installed, else 16-bit PCM WAV. Vorbis, not Opus: libsndfile's Opus encoder took about 0.2 s per
clip here against 15-20 ms for Vorbis at a similar size (a 4 s clip: 18 KB).

``read_file_under`` and ``open_file_under`` are how the web apps open the files of a folder
(clips, labels, ``clips.json``): only a regular file inside the folder, never through a link as
its last part, never a FIFO or a device, never more than a size cap."""

from __future__ import annotations

import errno
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hear2act_env.boundedio import UnreadableFile, read_regular_fd
from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import ConfigError, MissingExtraError

__all__ = [
    "MAX_CLIP_BYTES",
    "EncodedClip",
    "compression_available",
    "encode_clip",
    "open_file_under",
    "read_file_under",
]

#: The largest audio file the apps serve (a 60 s 16 kHz WAV is under 2 MB).
MAX_CLIP_BYTES = 16 * 1024 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def open_file_under(
    path: str | Path, folder: str | Path, flags: int = os.O_RDONLY, max_bytes: int | None = None
) -> int:
    """A file descriptor of ``path`` opened with ``flags``, if it is a regular file inside
    ``folder`` (once links in its folders are resolved) that is not itself a link, and is at
    most ``max_bytes`` long; else a ``ConfigError`` naming it. Opening never blocks (a FIFO)."""
    path = Path(path)
    root = os.path.realpath(folder)
    if os.path.commonpath([os.path.realpath(path), root]) != root:
        raise ConfigError(f"{path}: not inside {folder}; refusing to open it")
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        why = "it is a link" if exc.errno == errno.ELOOP else exc.strerror
        raise ConfigError(f"{path}: cannot open it ({why})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: not a regular file; refusing to read it")
        if max_bytes is not None and info.st_size > max_bytes:
            raise ConfigError(f"{path}: over {max_bytes} bytes; refusing to read it")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file_under(path: str | Path, folder: str | Path, max_bytes: int) -> bytes:
    """The bytes of ``path``, opened as ``open_file_under`` does (a ``ConfigError`` when it is
    not a regular file inside ``folder``, or longer than ``max_bytes``)."""
    fd = open_file_under(path, folder, os.O_RDONLY, max_bytes)
    try:
        return read_regular_fd(fd, max_bytes)
    except UnreadableFile as exc:
        raise ConfigError(f"{path}: {exc}; refusing to read it") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror})") from None
    finally:
        os.close(fd)


@dataclass(frozen=True)
class EncodedClip:
    """One clip as bytes, with what a page needs to play it."""

    data: bytes
    extension: str  # "ogg" or "wav"
    mime: str  # "audio/ogg" or "audio/wav"
    seconds: float


def compression_available() -> bool:
    """Whether ``soundfile`` with Ogg Vorbis support is installed."""
    try:
        import soundfile
    except (ImportError, OSError):
        return False
    return "VORBIS" in soundfile.available_subtypes("OGG")


def encode_clip(
    wave: np.ndarray, sample_rate: int = SAMPLE_RATE, compress: bool = True
) -> EncodedClip:
    """``wave`` (float, -1..1) as Ogg Vorbis when ``compress`` and soundfile allow, else WAV."""
    samples = np.clip(np.asarray(wave, dtype=np.float32).reshape(-1), -1.0, 1.0)
    seconds = len(samples) / sample_rate
    if compress and compression_available():
        import soundfile

        buf = io.BytesIO()
        soundfile.write(buf, samples, sample_rate, format="OGG", subtype="VORBIS")
        return EncodedClip(buf.getvalue(), "ogg", "audio/ogg", seconds)
    return EncodedClip(_wav_bytes(samples, sample_rate), "wav", "audio/wav", seconds)


def _wav_bytes(samples: np.ndarray, sample_rate: int) -> bytes:
    import wave

    pcm = (samples * 32767.0).round().astype("<i2").tobytes()
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(pcm)
    return buf.getvalue()


def decode_clip(data: bytes, extension: str) -> tuple[np.ndarray, int]:
    """A clip file's samples (float32 mono, -1..1) and sample rate: WAV (16-bit mono, the form
    ``encode_clip`` writes) with the standard library, Ogg through ``soundfile`` (the ``listen``
    extra). An unreadable file is a ``ConfigError``."""
    if extension == "ogg":
        try:
            import soundfile
        except (ImportError, OSError) as exc:
            raise MissingExtraError("listen", getattr(exc, "name", None) or "soundfile") from None
        try:
            samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
        except (RuntimeError, ValueError, TypeError) as exc:  # soundfile's LibsndfileError
            raise ConfigError(f"not a readable Ogg clip ({exc})") from None
        return samples.mean(axis=1).astype(np.float32), int(rate)
    if extension != "wav":
        raise ConfigError(f"clip format: expected ogg or wav, got {extension!r}")
    import wave

    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            if w.getsampwidth() != 2 or w.getnchannels() != 1:
                raise ConfigError("expected a 16-bit mono WAV clip")
            rate, pcm = w.getframerate(), w.readframes(w.getnframes())
    except (wave.Error, EOFError) as exc:
        raise ConfigError(f"not a readable WAV clip ({exc})") from None
    return (np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32767.0), int(rate)
