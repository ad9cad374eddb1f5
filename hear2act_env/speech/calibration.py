"""Calibration of ``prosody_strength``: reference-perceiver accuracy against strength.

The set: ``CALIBRATION_LINES`` (12 short accepting lines, the same words whatever the state)
spoken by the 6 persona voices for training and by their 6 held-out twins for testing
(``protocol.speakers``). Each (line, voice, repetition) gets one variation seed and is spoken
twice with it: once with a resolved label and once with an unresolved one (reluctant or
concern), each drawn uniformly. Lines are split into ``folds`` groups; each fold trains on
the other lines and tests on its held-out lines, with fresh variation seeds: held-out lines,
in voices the classifier never heard. At strength 0
both members of a pair are the same waveform, so accuracy is exactly 0.5.

Run ``python -m hear2act_env.speech.calibration`` to print the curve.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hear2act_env.protocol.delivery import DELIVERY_LABELS, State
from hear2act_env.protocol.scenario import PERSONAS
from hear2act_env.protocol.speakers import HELD_OUT_SPEAKERS
from hear2act_env.speech.cache import AudioCache
from hear2act_env.speech.perception import LogisticModel, features_of
from hear2act_env.speech.utterance import Renderer, Utterance

#: Short accepting lines used only for calibration (not the environment's reply pool).
CALIBRATION_LINES: tuple[str, ...] = (
    "Okay, that could work.",
    "Alright, sounds good.",
    "Sure, that works for me.",
    "Yeah, that seems fine.",
    "Okay, I think that's the one.",
    "Fine, let's go with that.",
    "Right, that should do it.",
    "Sounds good to me.",
    "Yes, that one is okay.",
    "Alright, I can live with that.",
    "Okay then, that's settled.",
    "Sure, let's do that one.",
)

RESOLVED_LABELS = DELIVERY_LABELS[State.RESOLVED]
UNRESOLVED_LABELS = DELIVERY_LABELS[State.RELUCTANT] + DELIVERY_LABELS[State.CONCERN]
DEFAULT_STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)


@dataclass(frozen=True)
class CalibrationPoint:
    """Cross-validated accuracy at one strength."""

    strength: float
    accuracy: float
    n_test: int
    per_persona: dict[str, float]
    per_delivery: dict[str, float]


def paired_set(
    lines: Sequence[str],
    strength: float,
    reps: int,
    seed: int,
    voices: Sequence[str] = PERSONAS,
) -> list[tuple[Utterance, bool]]:
    """Resolved/unresolved pairs sharing a variation seed, for each line, voice, repetition."""
    rng = np.random.default_rng(seed)
    pairs: list[tuple[Utterance, bool]] = []
    for line in lines:
        for persona in voices:
            for _ in range(reps):
                variation = int(rng.integers(0, 2**31 - 1))
                good = RESOLVED_LABELS[int(rng.integers(len(RESOLVED_LABELS)))]
                bad = UNRESOLVED_LABELS[int(rng.integers(len(UNRESOLVED_LABELS)))]
                pairs.append((Utterance(line, good, persona, variation, strength), True))
                pairs.append((Utterance(line, bad, persona, variation, strength), False))
    return pairs


def calibrate(
    strengths: Sequence[float] = DEFAULT_STRENGTHS,
    *,
    renderer: Renderer | None = None,
    cache: AudioCache | None = None,
    folds: int = 3,
    train_reps: int = 4,
    test_reps: int = 4,
    seed: int = 0,
    l2: float = 1.0,
) -> list[CalibrationPoint]:
    """Held-out-line accuracy of the reference perceiver at each strength."""
    if renderer is None:
        from hear2act_env.speech.espeak import EspeakRenderer

        renderer = EspeakRenderer()
    if cache is None:
        cache = AudioCache(disk=False, memory_items=0)
    lines = list(CALIBRATION_LINES)
    groups = [lines[i::folds] for i in range(folds)]
    points = []
    for strength in strengths:
        correct: list[np.ndarray] = []
        personas: list[str] = []
        labels: list[str] = []
        for k, held_out in enumerate(groups):
            train_lines = [ln for ln in lines if ln not in held_out]
            train = paired_set(train_lines, strength, train_reps, seed * 1000 + 2 * k)
            test = paired_set(
                held_out, strength, test_reps, seed * 1000 + 2 * k + 1, HELD_OUT_SPEAKERS
            )
            x_tr = features_of([u for u, _ in train], renderer, cache)
            x_te = features_of([u for u, _ in test], renderer, cache)
            model = LogisticModel.fit(x_tr, np.array([y for _, y in train]), l2=l2)
            correct.append(model.predict(x_te) == np.array([y for _, y in test]))
            personas.extend(u.persona for u, _ in test)
            labels.extend(u.delivery for u, _ in test)
        hits = np.concatenate(correct)
        keys, kinds = np.array(personas), np.array(labels)
        points.append(
            CalibrationPoint(
                strength=float(strength),
                accuracy=float(hits.mean()),
                n_test=len(hits),
                per_persona={p: float(hits[keys == p].mean()) for p in HELD_OUT_SPEAKERS},
                per_delivery={
                    d: float(hits[kinds == d].mean())
                    for d in RESOLVED_LABELS + UNRESOLVED_LABELS
                    if (kinds == d).any()
                },
            )
        )
    return points


def main(argv: Sequence[str] | None = None) -> None:
    """Print the accuracy-vs-strength curve."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strengths", type=float, nargs="+", default=list(DEFAULT_STRENGTHS))
    parser.add_argument("--reps", type=int, default=4, help="repetitions per line and persona")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-delivery", action="store_true", help="also print per label")
    args = parser.parse_args(argv)
    print("strength  accuracy  n_test  " + "  ".join(f"{p:>7}" for p in HELD_OUT_SPEAKERS))
    points = calibrate(args.strengths, train_reps=args.reps, test_reps=args.reps, seed=args.seed)
    for pt in points:
        per = "  ".join(f"{pt.per_persona[p]:7.3f}" for p in HELD_OUT_SPEAKERS)
        print(f"{pt.strength:8.2f}  {pt.accuracy:8.3f}  {pt.n_test:6d}  {per}", flush=True)
    if args.per_delivery:
        for pt in points:
            per = ", ".join(f"{d} {a:.2f}" for d, a in pt.per_delivery.items())
            print(f"strength {pt.strength:.2f}: {per}")


if __name__ == "__main__":
    main()
