"""The polyphase windowed-sinc resampler."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hear2act_env.errors import ConfigError
from hear2act_env.speech.resample import resample


def _peak_hz(y: np.ndarray, sr: int) -> float:
    spec = np.abs(np.fft.rfft(y * np.hanning(len(y))))
    return float(np.fft.rfftfreq(len(y), 1.0 / sr)[np.argmax(spec)])


@pytest.mark.parametrize("n", [0, 1, 2, 440, 441, 442, 22050, 33333])
def test_output_length(n):
    y = resample(np.zeros(n), 22050, 16000)
    assert len(y) == math.ceil(n * 320 / 441)
    assert y.dtype == np.float32


@pytest.mark.parametrize("freq", [200.0, 1000.0, 3500.0, 6000.0])
def test_sine_frequency_and_amplitude_preserved(freq):
    t = np.arange(22050) / 22050
    y = resample(np.sin(2 * np.pi * freq * t), 22050, 16000)
    assert abs(_peak_hz(y, 16000) - freq) <= 1.0
    ty = np.arange(len(y)) / 16000
    mid = slice(400, -400)
    np.testing.assert_allclose(y[mid], np.sin(2 * np.pi * freq * ty[mid]), atol=2e-3)


def test_above_new_nyquist_is_removed():
    t = np.arange(22050) / 22050
    y = resample(np.sin(2 * np.pi * 9500.0 * t), 22050, 16000)
    assert np.abs(y[400:-400]).max() < 1e-3


def test_matches_direct_windowed_sinc_formula():
    from hear2act_env.speech.resample import _filter_bank

    rng = np.random.default_rng(0)
    x = rng.standard_normal(3000)
    y = resample(x, 22050, 16000)
    h, base, left = _filter_bank(320, 441)
    for n in [0, 1, 7, 319, 320, 1000, len(y) - 1]:
        p = n % 320  # phase: output n sits at input time n * 441 / 320
        assert base[p] == (p * 441) // 320
        idx = (n // 320) * 441 + base[p] - left + np.arange(h.shape[1])
        ok = (idx >= 0) & (idx < len(x))
        expected = float(np.dot(h[p][ok], x[idx[ok]]))
        assert y[n] == pytest.approx(expected, abs=1e-5)
        # the taps are a Kaiser-windowed sinc centred on the output instant
        t = n * 441 / 320 - idx
        assert np.argmax(h[p]) == np.argmin(np.abs(t))


def test_other_ratios_and_identity():
    x = np.random.default_rng(1).standard_normal(1000)
    np.testing.assert_array_equal(resample(x, 16000, 16000), x.astype(np.float32))
    assert len(resample(x, 48000, 16000)) == 334
    assert len(resample(x, 8000, 16000)) == 2000


def test_rejects_bad_input():
    with pytest.raises(ConfigError):
        resample(np.zeros(10), 0, 16000)
    with pytest.raises(ConfigError):
        resample(np.zeros((2, 10)), 22050, 16000)


def test_deterministic():
    x = np.random.default_rng(2).standard_normal(50000)
    assert np.array_equal(resample(x, 22050, 16000), resample(x, 22050, 16000))
