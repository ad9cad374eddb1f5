"""Speech throughput: real-time factors of rendering and of prosodic feature extraction.

Prints, for the same texts in one run:

- the full path: ``EspeakRenderer.render`` (prosody, SSML, resampling to 16 kHz, level and
  fade; no cache), in audio seconds per wall second;
- bare espeak-ng synthesis of the same texts at default settings (en-us, 175 wpm, plain text,
  22,050 Hz, no resampling);
- their ratio (goal: at least 0.5);
- ``prosodic_features`` on the rendered audio (goal: at least 200x real time on one core);
- the pitch tracker alone (``features.pitch_track``) against Praat's autocorrelation tracker
  (``praat-parselmouth``, ``to_pitch_ac``) at the same time step, floor and ceiling: the
  Voice v2 issue asked to prefer Praat's if it is at least as fast;
- with the ``voice-neural`` extra installed, the Piper rows: the full ``PiperRenderer.render``
  (Piper on one onnxruntime thread, PSOLA, resampling, level and fade) and bare Piper synthesis
  (the voice's defaults, noise off, 22,050 Hz) of the same utterances, and the real-time factor
  of the full Piper path against the full espeak-ng path measured above.

Usage: ``python benchmarks/speech_throughput.py [--repeats N] [--piper-repeats N]``
(``--piper-repeats 0`` skips the Piper rows).
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
    parser.add_argument(
        "--piper-repeats",
        type=int,
        default=1,
        help="repeats of the (slower) Piper rows; 0 skips them (default: 1)",
    )
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
    _pitch_rows(waves, args.repeats)
    if args.piper_repeats > 0:
        _piper_rows(utts, args.piper_repeats, full_rtf)


def _pitch_rows(waves: list[np.ndarray], repeats: int) -> None:
    """Our pitch tracker against Praat's (same 10 ms step, F0 range) on the same clips."""
    from hear2act_env.constants import SAMPLE_RATE
    from hear2act_env.speech.features import F0_MAX, F0_MIN, HOP, pitch_track

    try:
        import parselmouth
    except ImportError as exc:
        print(f"Praat rows skipped: {exc}")
        return

    def praat(w: np.ndarray) -> object:
        sound = parselmouth.Sound(w.astype(np.float64), SAMPLE_RATE)
        return sound.to_pitch_ac(
            time_step=HOP / SAMPLE_RATE, pitch_floor=F0_MIN, pitch_ceiling=F0_MAX
        )

    audio = sum(len(w) for w in waves) / SAMPLE_RATE * repeats
    for label, track in (("pitch_track (ours)", pitch_track), ("Praat to_pitch_ac", praat)):
        track(waves[0])
        t0 = time.perf_counter()
        for _ in range(repeats):
            for w in waves:
                track(w)
        wall = time.perf_counter() - t0
        print(f"{label:<34}{audio:10.1f}{wall:10.3f}{audio / wall:10.0f}")


def _piper_rows(utts: list[Utterance], repeats: int, espeak_rtf: float) -> None:
    """The Piper rows: the same utterances through ``PiperRenderer``."""
    from hear2act_env.errors import MissingExtraError

    try:
        from hear2act_env.speech.piper import PiperRenderer

        piper = PiperRenderer()
    except MissingExtraError as exc:
        print(f"Piper rows skipped: {exc}")
        return
    piper.render(utts[0])  # load the voice (onnxruntime session, reference pitch)
    piper.synthesize_plain(utts[0].text)
    native = piper.native_rate
    full_audio = full_wall = bare_audio = bare_wall = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        waves = [piper.render(u) for u in utts]
        full_wall += time.perf_counter() - t0
        full_audio += sum(len(w) for w in waves) / piper.sample_rate
        t0 = time.perf_counter()
        raw = [piper.synthesize_plain(u.text) for u in utts]
        bare_wall += time.perf_counter() - t0
        bare_audio += sum(len(r) for r in raw) / native
    full_rtf, bare_rtf = full_audio / full_wall, bare_audio / bare_wall
    print(f"\nPiper: {len(utts)} x {repeats} repeats, renderer {piper.version}")
    print(f"{'path':<34}{'audio s':>10}{'wall s':>10}{'RTF (x)':>10}")
    print(f"{'full PiperRenderer (16 kHz)':<34}{full_audio:10.1f}{full_wall:10.3f}{full_rtf:10.1f}")
    bare_label = f"bare Piper ({native / 1000:g} kHz)"
    print(f"{bare_label:<34}{bare_audio:10.1f}{bare_wall:10.3f}{bare_rtf:10.1f}")
    n = len(utts) * repeats
    print(
        f"wall time per utterance: full Piper {1000 * full_wall / n:.0f} ms; "
        f"full Piper / bare Piper RTF: {full_rtf / bare_rtf:.2f}"
    )
    print(
        f"Piper vs espeak-ng (full paths, same utterances): RTF {full_rtf:.1f}x vs "
        f"{espeak_rtf:.0f}x real time; espeak-ng is {espeak_rtf / full_rtf:.0f}x faster"
    )


if __name__ == "__main__":
    main()
