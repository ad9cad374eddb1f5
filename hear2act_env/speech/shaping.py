"""The synthesizer-independent half of label-driven rendering, shared by both voices.

``EspeakRenderer`` and ``PiperRenderer`` realize the same ``Prosody`` settings with different
engines, but two steps are the same in both and live here, so that the two voices cannot drift
apart:

- **where the pauses fall** (``pause_breaks``): the early pause after the first word group
  (the first word ending in ``,;:`` within the first half, else the first word) and the late
  pause before the last word. espeak-ng receives them as SSML ``<break>`` elements, Piper as
  silence between separately synthesized chunks.
- **finishing** (``finishing_settings`` and ``finish``): the level (a voice's base gain times
  the label's ``gain_db``), the trailing-off fade (the level falls by ``fade_db`` over the last
  ``FADE_SHARE`` of the audible speech and stays down after it), the lead and tail silence,
  and clipping to [-1, 1], applied to the 16 kHz speech.
"""

from __future__ import annotations

import re
from typing import Protocol

import numpy as np

from hear2act_env.speech.prosody import NEUTRAL_LEAD_MS, TAIL_MS, Prosody

__all__ = [
    "FADE_SHARE",
    "Finishing",
    "WORD",
    "finish",
    "finishing_settings",
    "pause_breaks",
    "speech_bounds",
]

#: A word: a run of non-space characters (the text's own spelling and punctuation).
WORD = re.compile(r"\S+")
#: Share of the speech, at its end, over which ``fade_db`` trails off.
FADE_SHARE = 1 / 3


def _ms(value: float) -> int:
    return max(0, int(round(value)))


def pause_breaks(words: list[str], prosody: Prosody) -> dict[int, int]:
    """Pauses to insert, in whole milliseconds, keyed by the index of the word they follow.

    The early pause (``pause_early_ms``, with two words or more) follows the first word among
    the first half that ends in ``,``, ``;`` or ``:`` (else the first word); the late pause
    (``pause_late_ms``, with three words or more) precedes the last word. Both may fall after
    the same word, in which case they add up. Zero-length pauses are left out.
    """
    n = len(words)
    early = _ms(prosody.pause_early_ms)
    late = _ms(prosody.pause_late_ms)
    breaks: dict[int, int] = {}
    if n >= 2 and early > 0:
        first = next((i for i, w in enumerate(words[: max(1, n // 2)]) if w[-1] in ",;:"), 0)
        breaks[first] = breaks.get(first, 0) + early
    if n >= 3 and late > 0:
        breaks[n - 2] = breaks.get(n - 2, 0) + late
    return breaks


class Finishing(Protocol):
    """The settings ``finish`` reads (both renderers' settings classes have them)."""

    @property
    def gain(self) -> float: ...

    @property
    def fade_db(self) -> float: ...

    @property
    def lead_s(self) -> float: ...

    @property
    def tail_s(self) -> float: ...


def finishing_settings(prosody: Prosody, base_gain: float) -> dict[str, float]:
    """``gain``, ``fade_db``, ``lead_s`` and ``tail_s`` for ``prosody`` under a voice whose
    neutral level is ``base_gain`` (keyword arguments for a renderer's settings class)."""
    return {
        "gain": base_gain * 10.0 ** (prosody.gain_db / 20.0),
        "fade_db": max(0.0, prosody.fade_db),
        "lead_s": max(0.0, NEUTRAL_LEAD_MS + prosody.lead_ms) / 1000.0,
        "tail_s": TAIL_MS / 1000.0,
    }


def speech_bounds(x: np.ndarray, sr: int) -> tuple[int, int]:
    """First and last sample of the audible speech (10 ms frames within 40 dB of the peak)."""
    hop = sr // 100
    n = len(x) // hop
    if n == 0:
        return 0, len(x)
    frames = x[: n * hop].reshape(n, hop)
    energy = np.einsum("ij,ij->i", frames, frames)
    active = np.flatnonzero(energy > energy.max() * 1e-4)
    if len(active) == 0:
        return 0, len(x)
    return int(active[0]) * hop, min(len(x), (int(active[-1]) + 1) * hop)


def finish(x: np.ndarray, s: Finishing, sr: int) -> np.ndarray:
    """Level, trailing-off fade, lead and tail silence, clipping to [-1, 1] (float32).

    ``x``: the speech at ``sr`` Hz (float64); the result is a new float32 array.
    """
    lead = int(round(s.lead_s * sr))
    tail = int(round(s.tail_s * sr))
    out = np.zeros(lead + len(x) + tail, dtype=np.float32)
    speech = out[lead : lead + len(x)]
    np.multiply(x, np.float32(s.gain), out=speech)
    if s.fade_db > 0.0:
        start, end = speech_bounds(x, sr)
        length = int((end - start) * FADE_SHARE)
        if length > 0:
            ramp = np.linspace(0.0, -s.fade_db / 20.0, length, dtype=np.float64)
            speech[end - length : end] *= np.power(10.0, ramp).astype(np.float32)
            speech[end:] *= np.float32(10.0 ** (-s.fade_db / 20.0))
    return np.clip(out, -1.0, 1.0, out=out)
