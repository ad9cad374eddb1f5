"""Speech throughput: real-time factors of rendering and of prosodic feature extraction.

Prints, for the same texts in one run:

- the full path: ``EspeakRenderer.render`` (prosody, SSML, resampling to 16 kHz, level and
  fade; no cache), in audio seconds per wall second;
- bare espeak-ng synthesis of the same texts at default settings (en-us, 175 wpm, plain text,
  22,050 Hz, no resampling);
- their ratio (goal: at least 0.5);
- ``prosodic_features`` on the rendered audio (goal: at least 200x real time on one core).

Usage: ``python benchmarks/speech_throughput.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hear2act_env.protocol.delivery import DELIVERIES
from hear2act_env.protocol.scenario import PERSONAS
from hear2act_env.speech.calibration import CALIBRATION_LINES
from hear2act_env.speech.espeak import EspeakRenderer
from hear2act_env.speech.features import prosodic_features
from hear2act_env.speech.utterance import Utterance


def _utterances() -> list[Utterance]:
    utts = []
    for i, text in enumerate(CALIBRATION_LINES):
        for j, persona in enumerate(PERSONAS):
            delivery = DELIVERIES[(i + j) % len(DELIVERIES)]
            utts.append(Utterance(text, delivery, persona, variation=100 * i + j))
    return utts


def main() -> None:
    parser = argparse.ArgumentParser(description="speech throughput benchmark")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    renderer = EspeakRenderer()
    utts = _utterances()
    texts = [u.text for u in utts]
    renderer.render(utts[0])  # initialize the engine
    renderer.synthesize_plain(texts[0])

    full_audio = full_wall = bare_audio = bare_wall = 0.0
    waves: list[np.ndarray] = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        waves = [renderer.render(u) for u in utts]
        full_wall += time.perf_counter() - t0
        full_audio += sum(len(w) for w in waves) / renderer.sample_rate
        t0 = time.perf_counter()
        raw = [renderer.synthesize_plain(t) for t in texts]
        bare_wall += time.perf_counter() - t0
        bare_audio += sum(len(r) for r in raw) / 22050.0

    feat_audio = feat_wall = 0.0
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for w in waves:
            prosodic_features(w)
        feat_wall += time.perf_counter() - t0
        feat_audio += sum(len(w) for w in waves) / renderer.sample_rate

    full_rtf, bare_rtf = full_audio / full_wall, bare_audio / bare_wall
    print(f"utterances: {len(utts)} x {args.repeats} repeats, renderer {renderer.version}")
    print(f"{'path':<34}{'audio s':>10}{'wall s':>10}{'RTF (x)':>10}")
    print(
        f"{'full EspeakRenderer (16 kHz)':<34}{full_audio:10.1f}{full_wall:10.3f}{full_rtf:10.0f}"
    )
    print(f"{'bare espeak-ng (22.05 kHz)':<34}{bare_audio:10.1f}{bare_wall:10.3f}{bare_rtf:10.0f}")
    print(
        f"{'prosodic_features':<34}{feat_audio:10.1f}{feat_wall:10.3f}{feat_audio / feat_wall:10.0f}"
    )
    print(f"full/bare RTF ratio: {full_rtf / bare_rtf:.2f} (goal >= 0.5)")
    n = len(utts) * args.repeats
    print(
        f"wall time per utterance: full {1000 * full_wall / n:.2f} ms, "
        f"bare {1000 * bare_wall / n:.2f} ms (the full path's audio is longer: "
        "lead/tail silence and pauses)"
    )
    print(f"feature extraction: {feat_audio / feat_wall:.0f}x real time (goal >= 200x)")


if __name__ == "__main__":
    main()
