"""Vectorized polyphase windowed-sinc resampling in numpy (no scipy).

``resample(x, 22050, 16000)`` reduces the ratio to ``up/down = 320/441``. Output sample ``n``
is the Kaiser-windowed sinc interpolation of the input at time ``n * down / up`` (in input
samples): one of ``up`` filter phases, each normalized to unit DC gain, applied to the input
samples around that time. The low-pass cutoff is ``ROLLOFF`` times the lower Nyquist
frequency (7.6 kHz for 16 kHz output), so the band that would alias is removed. The output
has ``ceil(len(x) * up / down)`` samples and is time-aligned with the input (no delay).

Computation: the input is viewed (stride tricks) as one row per period of ``down`` input
samples; each group of ``GROUP`` adjacent phases touches a narrow band of that row, so the
outputs are a few small dense matrix products per block of rows. The products are kept small
so that BLAS runs them on the calling thread (no thread oversubscription in worker pools).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from hear2act_env.errors import ConfigError

#: One-sided filter half-width, in samples of the slower of the two rates.
HALF_WIDTH = 16
#: Cutoff as a fraction of the lower Nyquist frequency.
ROLLOFF = 0.95
#: Kaiser window shape (about 80 dB stop-band attenuation).
KAISER_BETA = 8.6
#: Phases per matrix product, and rows (periods) per product.
GROUP = 32
ROWS = 64


@lru_cache(maxsize=16)
def _filter_bank(up: int, down: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Taps ``(up, taps)``, each phase's first input offset ``(up,)``, and the left padding.

    Phase ``p`` is the output at input time ``p * down / up``; its tap ``j`` weighs input
    sample ``base[p] - left + j``.
    """
    scale = min(1.0, up / down)  # cutoff relative to the input Nyquist frequency
    cutoff = ROLLOFF * scale
    half = int(math.ceil(HALF_WIDTH / scale))  # half-width in input samples
    taps = 2 * half
    p = np.arange(up, dtype=np.int64)
    base = (p * down) // up
    frac = (p * down - base * up) / up
    j = np.arange(taps, dtype=np.float64)
    dist = frac[:, None] + (half - 1) - j[None, :]  # output instant minus tap position
    h = cutoff * np.sinc(cutoff * dist)
    arg = np.clip(1.0 - (dist / half) ** 2, 0.0, None)
    h *= np.i0(KAISER_BETA * np.sqrt(arg)) / np.i0(KAISER_BETA)
    h /= h.sum(axis=1, keepdims=True)
    h.setflags(write=False)
    base.setflags(write=False)
    return h, base, half - 1


@lru_cache(maxsize=16)
def _group_matrices(up: int, down: int) -> tuple[tuple[int, int, int, int, np.ndarray], ...]:
    """For each group of phases ``g0:g1``: the input rows ``r0:r1`` it reads and its matrix."""
    h, base, _ = _filter_bank(up, down)
    taps = h.shape[1]
    groups = []
    for g0 in range(0, up, GROUP):
        g1 = min(up, g0 + GROUP)
        r0, r1 = int(base[g0]), int(base[g1 - 1]) + taps
        m = np.zeros((r1 - r0, g1 - g0))
        rows = (base[g0:g1] - r0)[:, None] + np.arange(taps)[None, :]
        m[rows, np.arange(g1 - g0)[:, None]] = h[g0:g1]
        m.setflags(write=False)
        groups.append((g0, g1, r0, r1, m))
    return tuple(groups)


def resample(x: np.ndarray, orig_sr: int, target_sr: int) -> np.ndarray:
    """Resample a 1-D signal from ``orig_sr`` to ``target_sr`` Hz; returns float32.

    The output length is ``ceil(len(x) * target_sr / orig_sr)``.
    """
    if orig_sr <= 0 or target_sr <= 0:
        raise ConfigError(f"sample rates must be positive, got {orig_sr} and {target_sr}")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ConfigError(f"resample expects a 1-D signal, got shape {x.shape}")
    g = math.gcd(int(orig_sr), int(target_sr))
    up, down = int(target_sr) // g, int(orig_sr) // g
    if up == down:
        return x.astype(np.float32)
    n_out = -(-len(x) * up // down)
    if n_out == 0:
        return np.zeros(0, dtype=np.float32)
    h, base, left = _filter_bank(up, down)
    width = int(base[-1]) + h.shape[1]
    n_blocks = -(-n_out // up)
    padded = np.zeros((n_blocks - 1) * down + width, dtype=np.float64)
    n_in = min(len(x), len(padded) - left)
    padded[left : left + n_in] = x[:n_in]
    step = padded.strides[0]
    # row b holds the input samples that output block b (outputs b*up ... b*up+up-1) reads
    rows = np.lib.stride_tricks.as_strided(
        padded, shape=(n_blocks, width), strides=(down * step, step), writeable=False
    )
    out = np.empty((n_blocks, up), dtype=np.float64)
    for g0, g1, r0, r1, m in _group_matrices(up, down):
        for b0 in range(0, n_blocks, ROWS):
            out[b0 : b0 + ROWS, g0:g1] = rows[b0 : b0 + ROWS, r0:r1] @ m
    return out.reshape(-1)[:n_out].astype(np.float32)
