"""Write 16-bit PCM WAV files with the standard library."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np

from hear2act_env import safewrite


def write_wav(path: str | Path, audio: np.ndarray, sample_rate: int = 16_000) -> Path:
    """Save float audio in [-1, 1] as mono 16-bit PCM (through ``safewrite``)."""
    pcm = (np.clip(audio, -1.0, 1.0) * 32767.0).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as fh:
        fh.setnchannels(1)
        fh.setsampwidth(2)
        fh.setframerate(sample_rate)
        fh.writeframes(pcm.tobytes())
    return safewrite.write_atomic(path, buf.getvalue())
