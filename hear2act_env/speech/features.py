"""Prosodic features of a 16 kHz waveform, vectorized with numpy.

Frames are 40 ms long with a 10 ms hop (``numpy.lib.stride_tricks``). F0 comes from a
frame-wise autocorrelation pitch tracker: the FFT autocorrelation of each Hann-windowed
frame is normalized by its zero lag and by the window's own autocorrelation; the best lag
between 2 ms and 18 ms (55-500 Hz, with a small octave cost that favours shorter lags) is
refined by parabolic interpolation; a frame is voiced when its normalized peak exceeds 0.5
and its level is within 40 dB of the loudest frame; voiced F0 values more than 8 semitones
from the utterance's median (octave errors) are dropped.

The *speech span* runs from the first to the last frame within 40 dB of the loudest frame;
every rate and ratio below is measured inside it, so leading and trailing silence don't count.

| name | unit | what |
| --- | --- | --- |
| f0_median_st | semitones re 100 Hz | median F0 of voiced frames (``12*log2(f0/100)``) |
| f0_range_st | semitones | 90th minus 10th percentile of voiced F0 |
| f0_final_slope_st_per_s | semitones per second | least-squares slope of F0 over the last 30% of voiced frames |
| energy_db | dB re full scale | RMS level over the speech span |
| energy_range_db | dB | 95th minus 10th percentile of frame levels in the speech span (levels floored 60 dB below the loudest) |
| rate_peaks_per_s | peaks per second | syllable-like peaks (voiced, rising 2 dB above the lowest level 100 ms before and after) of the 50 ms-smoothed level contour per second of non-pause time |
| pause_ratio | fraction | share of span frames in pauses: runs of at least 60 ms more than 30 dB below the loudest frame |
| voicing_ratio | fraction | share of span frames that are voiced |

A waveform without any voiced frame gets F0 features of 0.
"""

from __future__ import annotations

import numpy as np

from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import ConfigError

#: The feature code's version: part of the on-disk feature cache's key (``feature_cache``).
#: Bump it with any change to what ``prosodic_features`` returns.
FEATURES_VERSION = "1"
FRAME = 640  # 40 ms
HOP = 160  # 10 ms
NFFT = 1024
F0_MIN, F0_MAX = 55.0, 500.0
VOICING_THRESHOLD = 0.5
OCTAVE_COST = 0.04  # score penalty per octave of lag above the shortest lag
ACTIVE_DB = 40.0  # frames within this many dB of the loudest frame are speech
PAUSE_DB = 30.0  # a pause frame is this many dB below the loudest frame
PAUSE_MIN_FRAMES = 6  # 60 ms
FLOOR_DB = 60.0  # frame levels are floored this far below the loudest frame
PEAK_DB = 25.0  # syllable peaks lie within this many dB of the loudest frame
PROMINENCE_DB = 2.0  # ... and rise this much above the lowest level within 100 ms
FINAL_SHARE = 0.3

FEATURE_NAMES: tuple[str, ...] = (
    "f0_median_st",
    "f0_range_st",
    "f0_final_slope_st_per_s",
    "energy_db",
    "energy_range_db",
    "rate_peaks_per_s",
    "pause_ratio",
    "voicing_ratio",
)

_WINDOW = np.hanning(FRAME)
_WINDOW_AC = np.fft.irfft(np.abs(np.fft.rfft(_WINDOW, NFFT)) ** 2, NFFT)[: NFFT // 2]
_WINDOW_AC = _WINDOW_AC / _WINDOW_AC[0]
_LAG_MIN = int(np.floor(SAMPLE_RATE / F0_MAX))
_LAG_MAX = int(np.ceil(SAMPLE_RATE / F0_MIN))
_LAGS = np.arange(_LAG_MIN, _LAG_MAX + 1)
_LAG_PENALTY = OCTAVE_COST * np.log2(_LAGS / _LAG_MIN)


def frames(x: np.ndarray, frame: int = FRAME, hop: int = HOP) -> np.ndarray:
    """A read-only ``(n_frames, frame)`` view of ``x`` (zero-padded to a whole frame)."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) < frame:
        x = np.concatenate([x, np.zeros(frame - len(x))])
    n = 1 + (len(x) - frame) // hop
    return np.lib.stride_tricks.sliding_window_view(x, frame)[: n * hop : hop]


def pitch_track(x: np.ndarray, sr: int = SAMPLE_RATE) -> tuple[np.ndarray, np.ndarray]:
    """Frame-wise F0 in Hz (NaN when unvoiced) and frame level in dB re full scale."""
    _check_rate(sr)
    fr = frames(x)
    level_db = 10.0 * np.log10(np.mean(fr * fr, axis=1) + 1e-12)
    w = (fr - fr.mean(axis=1, keepdims=True)) * _WINDOW
    spec = np.fft.rfft(w, NFFT, axis=1)
    ac = np.fft.irfft(spec.real**2 + spec.imag**2, NFFT, axis=1)
    r0 = ac[:, :1]
    norm = ac[:, : _LAG_MAX + 2] / np.maximum(r0, 1e-20) / _WINDOW_AC[: _LAG_MAX + 2]
    cand = norm[:, _LAG_MIN : _LAG_MAX + 1]
    best = np.argmax(cand - _LAG_PENALTY, axis=1)
    peak = cand[np.arange(len(cand)), best]
    lag = best + _LAG_MIN
    # parabolic refinement around the chosen lag
    rows = np.arange(len(norm))
    left, mid, right = norm[rows, lag - 1], norm[rows, lag], norm[rows, lag + 1]
    denom = left - 2.0 * mid + right
    safe = np.abs(denom) > 1e-12
    shift = np.where(safe, 0.5 * (left - right) / np.where(safe, denom, 1.0), 0.0)
    f0 = sr / (lag + np.clip(shift, -0.5, 0.5))
    loud = level_db > level_db.max() - ACTIVE_DB
    voiced = (peak > VOICING_THRESHOLD) & loud & (r0[:, 0] > 1e-10)
    f0 = np.where(voiced, f0, np.nan)
    if voiced.any():
        st = 12.0 * np.log2(f0 / 100.0)
        med = np.nanmedian(st)
        f0 = np.where(np.abs(st - med) <= 8.0, f0, np.nan)
    return f0, level_db


def prosodic_features(x: np.ndarray, sr: int = SAMPLE_RATE) -> np.ndarray:
    """The feature vector of one waveform: float32, in the order of ``FEATURE_NAMES``."""
    f0, level = pitch_track(x, sr)
    n = len(level)
    hop_s = HOP / sr
    active = np.flatnonzero(level > level.max() - ACTIVE_DB)
    first, last = (int(active[0]), int(active[-1]) + 1) if len(active) else (0, n)
    span = slice(first, last)
    span_level, span_f0 = level[span], f0[span]
    voiced = ~np.isnan(span_f0)
    st = 12.0 * np.log2(span_f0[voiced] / 100.0)
    if len(st):
        f0_median = float(np.median(st))
        p10, p90 = np.percentile(st, [10, 90])
        f0_range = float(p90 - p10)
        k = max(3, int(np.ceil(FINAL_SHARE * len(st))))
        t = np.flatnonzero(voiced)[-k:] * hop_s
        y = st[-k:]
        if len(y) >= 3 and np.ptp(t) > 0:
            tc = t - t.mean()
            slope = float(np.dot(tc, y - y.mean()) / np.dot(tc, tc))
        else:
            slope = 0.0
    else:
        f0_median = f0_range = slope = 0.0
    seg = np.asarray(x, dtype=np.float64)[first * HOP : min(len(x), (last - 1) * HOP + FRAME)]
    energy_db = float(10.0 * np.log10(np.mean(seg * seg) + 1e-12)) if len(seg) else -120.0
    e10, e95 = np.percentile(np.maximum(span_level, level.max() - FLOOR_DB), [10, 95])
    pauses = _pause_mask(span_level, level.max() - PAUSE_DB)
    pause_ratio = float(pauses.mean())
    speaking_s = max(hop_s, float((~pauses).sum()) * hop_s)
    rate = _envelope_peaks(span_level, voiced, level.max()) / speaking_s
    voicing_ratio = float(voiced.mean()) if len(voiced) else 0.0
    return np.array(
        [f0_median, f0_range, slope, energy_db, e95 - e10, rate, pause_ratio, voicing_ratio],
        dtype=np.float32,
    )


def feature_vector(x: np.ndarray, sr: int = SAMPLE_RATE) -> tuple[np.ndarray, tuple[str, ...]]:
    """``prosodic_features(x)`` together with ``FEATURE_NAMES`` (its column names)."""
    return prosodic_features(x, sr), FEATURE_NAMES


def feature_matrix(waves: list[np.ndarray], sr: int = SAMPLE_RATE) -> np.ndarray:
    """``(len(waves), len(FEATURE_NAMES))`` float32 matrix of ``prosodic_features``."""
    if not waves:
        return np.zeros((0, len(FEATURE_NAMES)), dtype=np.float32)
    return np.stack([prosodic_features(w, sr) for w in waves])


def _pause_mask(level: np.ndarray, threshold: float) -> np.ndarray:
    """Frames in runs of at least ``PAUSE_MIN_FRAMES`` below ``threshold``."""
    low = np.concatenate([[False], level < threshold, [False]])
    edges = np.flatnonzero(np.diff(low.astype(np.int8)))
    starts, ends = edges[::2], edges[1::2]
    keep = (ends - starts) >= PAUSE_MIN_FRAMES
    mask = np.zeros(len(level) + 1, dtype=np.int32)
    np.add.at(mask, starts[keep], 1)
    np.add.at(mask, ends[keep], -1)
    return np.cumsum(mask)[:-1] > 0


def _envelope_peaks(level: np.ndarray, voiced: np.ndarray, top: float) -> int:
    """Syllable-like peaks of the 50 ms-smoothed level contour.

    A peak is a voiced local maximum within ±50 ms, within ``PEAK_DB`` of the loudest
    frame, that rises ``PROMINENCE_DB`` above the lowest level both in the 100 ms before it
    and in the 100 ms after it.
    """
    if len(level) < 3:
        return 0
    floored = np.pad(np.maximum(level, top - FLOOR_DB), 2, mode="edge")
    env = np.convolve(floored, np.ones(5) / 5.0, mode="valid")
    env = env + np.arange(len(env)) * 1e-9  # break ties on plateaus
    hi = np.concatenate([np.full(5, -np.inf), env, np.full(5, -np.inf)])
    lo = np.pad(env, 10, mode="edge")
    local_max = np.lib.stride_tricks.sliding_window_view(hi, 11).max(axis=1) == env
    mins = np.lib.stride_tricks.sliding_window_view(lo, 11).min(axis=1)
    left, right = mins[: len(env)], mins[10:]  # lowest level 100 ms before / after
    prominent = (env - left >= PROMINENCE_DB) & (env - right >= PROMINENCE_DB)
    peaks = local_max & voiced & (env > top - PEAK_DB) & prominent
    return int(np.count_nonzero(peaks))


def _check_rate(sr: int) -> None:
    if sr != SAMPLE_RATE:
        raise ConfigError(f"features expect {SAMPLE_RATE} Hz audio, got sr={sr}")


#: Feature values are clipped to this magnitude (their natural ranges are far inside it).
FEATURE_BOUND = 1.0e4


def bounded_features(wave: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """``prosodic_features`` as float32 with NaN set to 0 and every value within
    ``FEATURE_BOUND`` (what observations and the feature cache hold); zeros for silence."""
    wave = np.asarray(wave, dtype=np.float32).reshape(-1)
    if wave.size == 0 or not np.any(wave):
        return np.zeros(len(FEATURE_NAMES), np.float32)
    feats = prosodic_features(wave, sample_rate)
    feats = np.nan_to_num(feats, nan=0.0, posinf=FEATURE_BOUND, neginf=-FEATURE_BOUND)
    return np.clip(feats, -FEATURE_BOUND, FEATURE_BOUND).astype(np.float32)
