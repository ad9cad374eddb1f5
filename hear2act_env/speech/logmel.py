"""Log-mel spectrograms of clips: the input of a learned audio encoder.

``LogMelSettings`` fixes every parameter (so a trained model and its observations agree, and
the settings enter cache keys); ``LogMelTransform`` computes a clip's fixed-size spectrogram
with torchaudio's ``MelSpectrogram`` on the CPU (torch is imported when the first clip is
transformed, never by ``import hear2act_env``).

The defaults, for 16 kHz speech:

| setting | value | why |
| --- | --- | --- |
| window | 1024 samples (64 ms), Hann | resolves the first harmonics of a low voice |
| hop | 800 samples (50 ms) | 20 frames per second: syllables, pauses and the final fall are several frames long |
| mel bands | 32, 50-8000 Hz, HTK scale, power 2 | the speech band; a small input keeps PPO fast on a CPU |
| frames | 200 (10.0 s) | longer than 99% of user turns; later frames are cut, shorter clips padded with silence |
| values | ``(log10(power + 1e-6) + 3) / 3``, clipped to [-2, 3] | silence (padding included) is -1, loud speech about +1 |

``center=False``: frame ``t`` covers samples ``[800 t, 800 t + 1024)``, so the number of
non-silent frames follows the clip's duration and padding never leaks into a frame.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import ConfigError, MissingExtraError

__all__ = ["LOGMEL_VERSION", "LogMelSettings", "LogMelTransform"]

#: Bumped when the computation changes (it is part of every cache key).
LOGMEL_VERSION = "1"

#: Bounds of the normalised values.
LOW, HIGH = -2.0, 3.0


@dataclass(frozen=True)
class LogMelSettings:
    """Parameters of the spectrogram (see the module table)."""

    n_fft: int = 1024
    hop: int = 800
    n_mels: int = 32
    f_min: float = 50.0
    f_max: float = 8000.0
    frames: int = 200
    floor: float = 1e-6

    def __post_init__(self) -> None:
        for name in ("n_fft", "hop", "n_mels", "frames"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"logmel {name}: got {value!r}, expected an integer >= 1")
        if not 0 <= self.f_min < self.f_max <= SAMPLE_RATE / 2:
            raise ConfigError(
                f"logmel f_min/f_max: got {self.f_min}/{self.f_max}, expected "
                f"0 <= f_min < f_max <= {SAMPLE_RATE / 2}"
            )
        if not self.floor > 0:
            raise ConfigError(f"logmel floor: got {self.floor!r}, expected > 0")

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_mels, frames)`` of one clip's spectrogram."""
        return (self.n_mels, self.frames)

    @property
    def seconds(self) -> float:
        """The span of audio the frames cover."""
        return ((self.frames - 1) * self.hop + self.n_fft) / SAMPLE_RATE

    def key(self) -> str:
        """A string naming the computation (version and settings), for cache keys."""
        fields = ",".join(f"{k}={v}" for k, v in sorted(asdict(self).items()))
        return f"logmel{LOGMEL_VERSION}[{fields}]"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> LogMelSettings:
        """Inverse of ``to_dict`` (None: the defaults)."""
        if data is None:
            return cls()
        unknown = sorted(set(data) - set(asdict(cls())))
        if unknown:
            raise ConfigError(f"logmel settings: unknown fields {unknown}")
        return cls(**data)


class LogMelTransform:
    """``transform(wave) -> (n_mels, frames)`` float32, values in ``[LOW, HIGH]``.

    Picklable (the torchaudio module is rebuilt lazily in each process). ``threads``: when the
    first clip is transformed, the process's torch intra-op threads are set to this (default 1:
    env processes run side by side, and a spectrogram is too small to gain from more; measured
    on 2 busy cores, 2 threads took 14 ms per clip, 1 thread 7 ms); None leaves them alone.
    """

    def __init__(self, settings: LogMelSettings | None = None, threads: int | None = 1) -> None:
        self.settings = settings or LogMelSettings()
        self.threads = threads
        self._mel: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self.settings, "threads": self.threads, "_mel": None}

    def _module(self) -> Any:
        if self._mel is None:
            try:
                import torch
                import torchaudio
            except ImportError as exc:
                raise MissingExtraError("rl", exc.name or "torchaudio") from None
            if self.threads is not None:
                torch.set_num_threads(self.threads)
            s = self.settings
            self._mel = torchaudio.transforms.MelSpectrogram(
                sample_rate=SAMPLE_RATE,
                n_fft=s.n_fft,
                win_length=s.n_fft,
                hop_length=s.hop,
                f_min=s.f_min,
                f_max=s.f_max,
                n_mels=s.n_mels,
                power=2.0,
                center=False,
                mel_scale="htk",
            )
        return self._mel

    def silence(self) -> np.ndarray:
        """The spectrogram of no audio (every value the silence level)."""
        return np.full(self.settings.shape, self._normalise(0.0), np.float32)

    def _normalise(self, power: Any) -> Any:
        return np.clip((np.log10(power + self.settings.floor) + 3.0) / 3.0, LOW, HIGH)

    def __call__(self, wave: np.ndarray) -> np.ndarray:
        """The spectrogram of a mono 16 kHz clip (any length; empty gives ``silence()``)."""
        import torch

        s = self.settings
        x = np.asarray(wave, dtype=np.float32).reshape(-1)
        span = (s.frames - 1) * s.hop + s.n_fft
        if x.size < span:
            x = np.concatenate([x, np.zeros(span - x.size, np.float32)])
        else:
            x = x[:span]
        with torch.no_grad():
            power = self._module()(torch.from_numpy(np.ascontiguousarray(x))).numpy()
        out = self._normalise(power.astype(np.float64)).astype(np.float32)
        assert out.shape == s.shape, out.shape
        return out
