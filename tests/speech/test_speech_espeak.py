"""EspeakRenderer: format, determinism, thread/process safety, voices, strength 0."""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pytest.importorskip("espeakng_loader")

from hear2act_env.protocol.delivery import DELIVERIES  # noqa: E402
from hear2act_env.protocol.scenario import PERSONAS  # noqa: E402
from hear2act_env.protocol.speakers import HELD_OUT, SPEAKERS  # noqa: E402
from hear2act_env.speech.espeak import EspeakRenderer  # noqa: E402
from hear2act_env.speech.features import pitch_track  # noqa: E402
from hear2act_env.speech.utterance import Renderer, Utterance  # noqa: E402
from hear2act_env.speech.voices import VOICES  # noqa: E402

LINES = ["Okay, that could work.", "Alright, sounds good.", "Sure, that works for me."]


@pytest.fixture(scope="module")
def renderer() -> EspeakRenderer:
    return EspeakRenderer()


def _utts(n: int = 12) -> list[Utterance]:
    return [
        Utterance(LINES[i % 3], DELIVERIES[i % len(DELIVERIES)], PERSONAS[i % 6], i, 0.5 * (i % 4))
        for i in range(n)
    ]


def test_is_a_renderer(renderer):
    assert isinstance(renderer, Renderer)
    assert renderer.sample_rate == 16000
    assert renderer.name == "espeak-ng"
    assert "espeak-ng" in renderer.version


@pytest.mark.parametrize("label", DELIVERIES)
def test_output_format(renderer, label):
    wave = renderer.render(Utterance("Okay, that could work.", label, "ember", 3, 2.0))
    assert wave.dtype == np.float32 and wave.ndim == 1
    assert 0.5 < len(wave) / 16000 < 10
    assert np.all(np.abs(wave) <= 1.0)
    assert np.abs(wave).max() > 0.05
    assert np.isfinite(wave).all()


def test_same_utterance_same_waveform_bit_for_bit(renderer):
    utts = _utts()
    first = [renderer.render(u) for u in utts]
    # interleave other utterances (different voices, params, pauses) and render again
    second = [renderer.render(u) for u in reversed(utts)][::-1]
    for a, b in zip(first, second):
        assert a.tobytes() == b.tobytes()


def test_no_stateful_overflow_gain(renderer):
    """The engine volume stays below clipping so espeak-ng's stateful gain control never acts."""
    from hear2act_env.speech import espeak

    for persona in PERSONAS:
        for label in ("enthusiastic", "frustrated", "impatient"):
            utt = Utterance("Wow, that is absolutely amazing!", label, persona, 1, 2.0)
            s = espeak.espeak_settings(utt)
            params = ((1, s.rate), (2, espeak._ENGINE_VOLUME), (3, s.pitch), (4, s.range))
            with espeak._lock:
                raw = espeak._engine_locked().synth(s.ssml, s.voice, params, ssml=True)
            assert np.abs(raw.astype(np.int32)).max() < 30000


def test_thread_safety(renderer):
    utts = _utts(16)
    serial = [renderer.render(u) for u in utts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(renderer.render, utts * 2))
    for a, b in zip(serial * 2, threaded):
        assert a.tobytes() == b.tobytes()


_POOL_CHECK = """
import multiprocessing as mp, sys
from hear2act_env.protocol.delivery import DELIVERIES
from hear2act_env.protocol.scenario import PERSONAS
from hear2act_env.speech.espeak import EspeakRenderer
from hear2act_env.speech.utterance import Utterance
lines = {lines!r}
utts = [Utterance(lines[i % 3], DELIVERIES[i % len(DELIVERIES)], PERSONAS[i % 6], i, 0.5 * (i % 4))
        for i in range(6)]
renderer = EspeakRenderer()
serial = [renderer.render(u) for u in utts]
if __name__ == "__main__":
    with mp.get_context({method!r}).Pool(2) as pool:
        pooled = pool.map(renderer.render, utts)
    sys.exit(0 if all(a.tobytes() == b.tobytes() for a, b in zip(serial, pooled)) else 1)
"""


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_process_pool(tmp_path, method):
    """Rendering in a process pool gives the serial bytes. Run in a fresh interpreter: forking
    the test process, which other tests leave with live threads, can deadlock a worker."""
    if method not in mp.get_all_start_methods():
        pytest.skip(f"no {method} start method")
    script = tmp_path / "pool_check.py"
    script.write_text(_POOL_CHECK.format(lines=list(LINES), method=method))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]


@pytest.mark.parametrize("variation", [0, 17])
def test_strength_zero_same_waveform_for_every_label(renderer, variation):
    waves = {
        renderer.render(
            Utterance("Okay, that could work.", label, "dune", variation, 0.0)
        ).tobytes()
        for label in DELIVERIES
    }
    assert len(waves) == 1


def test_labels_differ_at_default_strength(renderer):
    waves = {
        renderer.render(Utterance("Okay, that could work.", label, "dune", 4)).tobytes()
        for label in DELIVERIES
    }
    assert len(waves) == len(DELIVERIES)


def test_twelve_distinguishable_voices(renderer):
    # six persona voices (train split) and their six held-out twins (test split)
    assert set(VOICES) == set(SPEAKERS) and set(PERSONAS) < set(SPEAKERS)
    assert len({v.variant_file() for v in VOICES.values()}) == len(SPEAKERS) == 12
    assert all(VOICES[p].gender == VOICES[HELD_OUT[p]].gender for p in PERSONAS)
    medians = {}
    for persona in SPEAKERS:
        wave = renderer.render(Utterance("Okay, that could work.", "satisfied", persona, 0, 0.0))
        f0, _ = pitch_track(wave)
        medians[persona] = 12 * np.log2(np.nanmedian(f0) / 100)
    values = sorted(medians.values())
    assert values[-1] - values[0] > 10  # female and male voices, semitones apart
    assert min(np.diff(values)) > 0.5, medians


def test_plain_synthesis_baseline(renderer):
    raw = renderer.synthesize_plain("Okay, that could work.")
    assert raw.dtype == np.int16 and len(raw) > 22050 // 2
