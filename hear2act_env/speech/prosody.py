"""Delivery labels as prosody: the label table, seeded variation and ``prosody_strength``.

Every setting is a *deviation from the neutral voice* (all zeros), so ``prosody_strength``
scales it linearly: ``value = strength * DELIVERY_PROSODY[label] + jitter``. At strength 0
every label gets the neutral settings, so the labels become indistinguishable (the same text,
persona and variation give the same waveform for every label); at 1 the table below applies;
at 2 every deviation doubles.

The jitter is the speaker's natural variation from one utterance to the next. It is drawn
from ``numpy.random.default_rng(utterance.variation)`` in a fixed order that does not depend
on the label or the strength, with the standard deviations of ``JITTER`` (truncated at 2.5
sigma). Pause, word-gap and fade jitter is relative (a share of the value), so it keeps a
zero setting at zero. The jitter sizes and this table were calibrated so that the reference
perceiver tells resolved from unresolved at about 0.9 at strength 1 on voices it never heard,
at chance at 0, and so that no cue group carries the state alone (see "Calibration" below,
``hear2act_env.speech.calibration`` and ``hear2act_env.speech.ablation``).

Hesitation is acoustic only: pauses, slower rate, pitch and level. No word or filler is ever
added to the text.

Settings and units:

- ``pitch``: base pitch shift, semitones.
- ``range``: pitch-range (intonation excursion) change, percent (-100 = monotone).
- ``rate``: speaking-rate change, percent of the persona's words per minute.
- ``gain``: level change, dB.
- ``lead``: extra silence before the first word (response latency), ms; the neutral lead is
  ``NEUTRAL_LEAD_MS``.
- ``early``: a pause after the first word group (after the first comma-ended word in the
  first half of the reply, else after the first word), ms.
- ``late``: a pause before the last word, ms.
- ``gap``: extra silence between all words, ms.
- ``f.rate``: rate change of the last word, percent (negative = final lengthening).
- ``f.pitch``: pitch shift of the last word, semitones (negative = a drop; positive = a lift,
  an unsure or questioning ending).
- ``fade``: trailing off: the level falls linearly (in dB) over the last third of the
  speech, by this much at the end, dB.

``DELIVERY_PROSODY`` at strength 1:

| label | state | pitch | range | rate | gain | lead | early | late | gap | f.rate | f.pitch | fade |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| satisfied | resolved | +0.6 | +15 | +8 | +3 | -30 | 0 | 0 | 0 | +5 | -0.5 | 0 |
| warm | resolved | +0.8 | +20 | -8 | +3 | +60 | 0 | 0 | 0 | -15 | 0 | 0 |
| enthusiastic | resolved | +1.2 | +30 | +12 | +3.5 | -50 | 0 | 0 | 0 | +5 | +1 | 0 |
| relieved | resolved | +0.6 | +20 | -8 | +3 | +80 | 0 | 0 | 0 | -15 | -1 | 0 |
| underwhelmed | reluctant | +0.3 | 0 | -10 | -5.5 | +140 | 0 | +170 | 0 | -15 | -0.5 | +6 |
| lukewarm | reluctant | -2.8 | -60 | 0 | -3.5 | 0 | 0 | 0 | 0 | 0 | -2 | +2 |
| hesitant | reluctant | -0.5 | -15 | -20 | 0 | +300 | +250 | +150 | +15 | -20 | +0.5 | 0 |
| flat | reluctant | -2.2 | -80 | 0 | -4.5 | 0 | 0 | 0 | 0 | 0 | 0 | +3 |
| concerned | concern | +0.5 | -25 | -12 | -0.5 | +220 | +280 | 0 | +10 | -15 | +3.5 | 0 |
| frustrated | rejection | +2 | +40 | +10 | +4 | -40 | 0 | 0 | 0 | -5 | -2 | 0 |
| disappointed | rejection | -2 | -40 | -15 | -4 | +150 | +200 | 0 | 0 | -20 | -2 | +5 |
| impatient | rejection | +1 | -10 | +25 | +2 | -60 | 0 | 0 | 0 | +10 | -1 | 0 |
| firm | rejection | -1 | -20 | -8 | +3 | 0 | +120 | 0 | 0 | -10 | -2.5 | 0 |

In words: resolved replies are a little higher and wider in pitch and louder than neutral,
with no pauses; two of them are quicker (satisfied, enthusiastic) and two slower and relaxed,
with a breath before speaking (warm, relieved). Each unresolved label is carried mainly by one or
two of the three cue groups (pitch, energy, timing), a different mix each, so no single group
gives the state away: underwhelmed
is soft and trails off, slower, with a pause before the last word (energy and timing);
lukewarm is low, narrow and quieter (pitch and energy); hesitant is slow, with a long wait
before speaking and pauses, at a level near the neutral one (timing); flat is monotone, low and
quiet (pitch and energy); concern is slow, with a wait and a pause, and ends on a rise (timing
and pitch). Rejection is either heated (frustrated, impatient: louder, faster) or low and
heavy (disappointed, firm).

Calibration (Voice v2) aims at: the reference perceiver, trained on train-split clips and
tested on the held-out voices of the test split, within 0.88-0.96; pitch, energy and timing
alone at least 0.65 each; and neither one group nor the privileged duration ratio (a clip's
length over the same line's neutral length) within 0.05 of the full classifier (resolved
labels are both quicker and slower than neutral, so length alone says little). What the
shipped bank measures, per renderer, is written by ``hear2act perceive --ablation --json``
into ``docs/data/ablation_espeak.json`` and ``docs/data/ablation_piper.json`` and quoted from
there in the speech guide (``docs/speech.md``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import astuple, dataclass, fields

import numpy as np

from hear2act_env.protocol.delivery import DELIVERIES
from hear2act_env.speech.utterance import Utterance


@dataclass(frozen=True)
class Prosody:
    """Prosodic settings as deviations from the neutral voice (see the module docstring)."""

    pitch_st: float = 0.0
    range_pct: float = 0.0
    rate_pct: float = 0.0
    gain_db: float = 0.0
    lead_ms: float = 0.0
    pause_early_ms: float = 0.0
    pause_late_ms: float = 0.0
    word_gap_ms: float = 0.0
    final_rate_pct: float = 0.0
    final_pitch_st: float = 0.0
    fade_db: float = 0.0

    def scaled(self, strength: float) -> Prosody:
        """Every deviation times ``strength``."""
        return Prosody(*(v * strength for v in astuple(self)))


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Prosody))

#: label -> deviation from neutral at ``prosody_strength`` 1 (columns as in the docstring).
DELIVERY_PROSODY: dict[str, Prosody] = {
    # pitch, range, rate, gain, lead, early, late, gap, f.rate, f.pitch, fade
    "satisfied": Prosody(0.6, 15, 8, 3.0, -30, 0, 0, 0, 5, -0.5, 0),
    "warm": Prosody(0.8, 20, -8, 3.0, 60, 0, 0, 0, -15, 0.0, 0),
    "enthusiastic": Prosody(1.2, 30, 12, 3.5, -50, 0, 0, 0, 5, 1.0, 0),
    "relieved": Prosody(0.6, 20, -8, 3.0, 80, 0, 0, 0, -15, -1.0, 0),
    "underwhelmed": Prosody(0.3, 0, -10, -5.5, 140, 0, 170, 0, -15, -0.5, 6.0),
    "lukewarm": Prosody(-2.8, -60, 0, -3.5, 0, 0, 0, 0, 0, -2.0, 2.0),
    "hesitant": Prosody(-0.5, -15, -20, 0.0, 300, 250, 150, 15, -20, 0.5, 0.0),
    "flat": Prosody(-2.2, -80, 0, -4.5, 0, 0, 0, 0, 0, 0.0, 3.0),
    "concerned": Prosody(0.5, -25, -12, -0.5, 220, 280, 0, 10, -15, 3.5, 0.0),
    "frustrated": Prosody(2.0, 40, 10, 4.0, -40, 0, 0, 0, -5, -2.0, 0.0),
    "disappointed": Prosody(-2.0, -40, -15, -4.0, 150, 200, 0, 0, -20, -2.0, 5.0),
    "impatient": Prosody(1.0, -10, 25, 2.0, -60, 0, 0, 0, 10, -1.0, 0.0),
    "firm": Prosody(-1.0, -20, -8, 3.0, 0, 120, 0, 0, -10, -2.5, 0.0),
}

#: Standard deviation of the per-utterance jitter of each setting (same units as the table;
#: pause, gap and fade entries are relative: a share of the value).
JITTER = Prosody(
    pitch_st=1.5,
    range_pct=24.0,
    rate_pct=12.0,
    gain_db=2.0,
    lead_ms=80.0,
    pause_early_ms=0.3,
    pause_late_ms=0.3,
    word_gap_ms=0.3,
    final_rate_pct=10.0,
    final_pitch_st=1.4,
    fade_db=0.3,
)
RELATIVE_JITTER = frozenset({"pause_early_ms", "pause_late_ms", "word_gap_ms", "fade_db"})
_RELATIVE_MASK = np.array([name in RELATIVE_JITTER for name in FIELDS])
#: Jitter is truncated at this many standard deviations.
JITTER_CLIP = 2.5

#: Silence before the first word of the neutral voice, ms (``lead`` adds to it).
NEUTRAL_LEAD_MS = 150.0
#: Silence after the last word, ms (fixed).
TAIL_MS = 150.0

if set(DELIVERY_PROSODY) != set(DELIVERIES):  # pragma: no cover - guards table edits
    raise RuntimeError("DELIVERY_PROSODY must have exactly one row per delivery label")


def jitter(variation: int) -> Prosody:
    """The seeded natural variation of one utterance (independent of label and strength)."""
    z = np.random.default_rng(variation).standard_normal(len(FIELDS))
    z = np.clip(z, -JITTER_CLIP, JITTER_CLIP)
    return Prosody(*(float(v) for v in np.asarray(astuple(JITTER)) * z))


def prosody_for(utt: Utterance) -> Prosody:
    """The settings an utterance is spoken with: the scaled label deviation plus jitter."""
    base = np.asarray(astuple(DELIVERY_PROSODY[utt.delivery]), dtype=np.float64)
    base = base * utt.prosody_strength
    noise = np.asarray(astuple(jitter(utt.variation)))
    values = np.where(_RELATIVE_MASK, base * (1.0 + noise), base + noise)
    return Prosody(*(float(v) for v in values))


def table_digest() -> str:
    """A short hash of the table, jitter and constants (part of the renderer version)."""
    payload = {
        "table": {k: astuple(v) for k, v in DELIVERY_PROSODY.items()},
        "jitter": astuple(JITTER),
        "relative": sorted(RELATIVE_JITTER),
        "clip": JITTER_CLIP,
        "lead": NEUTRAL_LEAD_MS,
        "tail": TAIL_MS,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]
