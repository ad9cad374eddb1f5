"""The cue ablation: per-group classifiers, the duration ratio, CIs and ``perceive --ablation``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hear2act_cli import main
from hear2act_env.errors import ConfigError
from hear2act_env.protocol.delivery import DELIVERIES
from hear2act_env.protocol.scenario import PERSONAS
from hear2act_env.speech.ablation import (
    COLUMNS,
    FEATURE_GROUPS,
    FEATURE_SETS,
    ClipTable,
    ablate,
    clip_table,
    lead_silence_s,
)
from hear2act_env.speech.cache import AudioCache
from hear2act_env.speech.features import FEATURE_NAMES
from hear2act_env.speech.perception import evaluate_perception, is_resolved
from hear2act_env.speech.utterance import Utterance

SR = 16000


def _table(n: int, seed: int, signal: tuple[str, ...], shift: float = 3.0) -> ClipTable:
    """Noise in every column; only the ``signal`` columns move with the label."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2 == 0
    x = rng.standard_normal((n, len(COLUMNS)))
    for c in signal:
        x[:, COLUMNS.index(c)] += np.where(y, shift, -shift)
    personas = tuple(PERSONAS[(i // 4) % 3] for i in range(n))  # one voice per scenario
    groups = tuple(f"s{i // 4}" for i in range(n))  # 4 clips per "scenario"
    return ClipTable(x.astype(np.float32), y, personas, ("warm",) * n, groups)


def test_groups_split_the_features_and_voicing_is_timing():
    assert sorted(c for g in FEATURE_GROUPS.values() for c in g) == sorted(FEATURE_NAMES)
    assert "voicing_ratio" in FEATURE_GROUPS["timing"]
    assert FEATURE_SETS["all"] == FEATURE_NAMES
    assert COLUMNS[: len(FEATURE_NAMES)] == FEATURE_NAMES


def test_a_group_sees_only_its_own_columns():
    signal = FEATURE_GROUPS["energy"]
    report = ablate(_table(240, 0, signal), _table(240, 1, signal), resamples=200)
    acc = {name: r.accuracy.value for name, r in report.results.items()}
    assert acc["all"] > 0.97 and acc["energy"] > 0.97
    for name in ("pitch", "timing", "duration_ratio", "duration", "lead_silence"):
        assert 0.35 < acc[name] < 0.65, (name, acc[name])
    holds = {c.target.split()[0] + c.target.split()[1]: c.holds for c in report.checks()}
    assert holds == {"fullclassifier": False, "everygroup": False, "nogroup": False}
    gap = report.results["pitch"].gap
    assert (
        gap.value == pytest.approx(acc["all"] - acc["pitch"]) and gap.low <= gap.value <= gap.high
    )


def test_the_full_set_ignores_the_duration_columns():
    report = ablate(_table(200, 0, ("duration_ratio",)), _table(200, 1, ("duration_ratio",)))
    acc = {name: r.accuracy.value for name, r in report.results.items()}
    assert acc["duration_ratio"] > 0.97 and 0.35 < acc["all"] < 0.65


def test_intervals_are_scenario_level_and_per_voice():
    report = ablate(_table(120, 0, ("pause_ratio",), 1.0), _table(120, 1, ("pause_ratio",), 1.0))
    assert report.n_test_groups == 30 and set(report.voice_clips) == set(PERSONAS[:3])
    for r in report.results.values():
        e = r.accuracy
        assert e.low <= e.value <= e.high and e.n == 30
        assert set(r.per_voice) == set(PERSONAS[:3])
        assert all(v.n == 10 for v in r.per_voice.values())  # 40 clips, 10 scenarios each
    assert report.results["all"].gap.value == 0.0
    data = json.loads(json.dumps(report.to_dict()))
    assert set(data["sets"]) == set(FEATURE_SETS) and len(data["checks"]) == 3
    again = ablate(_table(120, 0, ("pause_ratio",), 1.0), _table(120, 1, ("pause_ratio",), 1.0))
    assert again.to_dict() == report.to_dict()  # seeded


def test_ablate_validates():
    t = _table(20, 0, ())
    with pytest.raises(ConfigError, match="unknown"):
        ablate(t, t, {"bogus": ("no_such_feature",)})
    with pytest.raises(ConfigError):
        ablate(t, t, {})
    with pytest.raises(ConfigError):
        ClipTable(
            np.zeros((3, 2), np.float32),
            np.zeros(3, bool),
            ("amber",) * 3,
            ("warm",) * 3,
            ("a",) * 3,
        )


class StretchRenderer:
    """A tone whose length follows the words and the variation seed; unresolved labels add
    30% x strength, so only the ratio to the neutral rendering removes the words' length."""

    name = "stretch"
    version = "1"
    sample_rate = SR

    def __init__(self) -> None:
        self.calls: list[Utterance] = []

    def render(self, utt: Utterance) -> np.ndarray:
        self.calls.append(utt)
        rng = np.random.default_rng(utt.variation)
        seconds = 0.12 * len(utt.text.split()) * (1.0 + 0.1 * rng.standard_normal())
        if not is_resolved(utt):
            seconds *= 1.0 + 0.3 * utt.prosody_strength
        n = int(seconds * SR)
        t = np.arange(n) / SR
        wave = 0.3 * np.sin(2 * np.pi * 150.0 * t)
        return np.concatenate([np.zeros(1600), wave, np.zeros(1600)]).astype(np.float32)


def _clips(n: int, seed: int) -> list[tuple[Utterance, bool]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = DELIVERIES[int(rng.integers(9))]  # resolved, reluctant and concern labels
        words = " ".join(["word"] * int(rng.integers(2, 12)))
        utt = Utterance(words, label, PERSONAS[i % 6], int(rng.integers(1 << 30)))
        out.append((utt, is_resolved(utt)))
    return out


def test_duration_ratio_divides_by_the_neutral_rendering_of_the_same_line():
    renderer = StretchRenderer()
    clips = _clips(30, 0)
    table = clip_table(clips, renderer)
    spoken, neutral = renderer.calls[0::2], renderer.calls[1::2]
    for (utt, _), a, b in zip(clips, spoken, neutral):
        assert a == utt
        assert (b.text, b.persona, b.variation, b.delivery) == (
            utt.text,
            utt.persona,
            utt.variation,
            utt.delivery,
        )
        assert b.prosody_strength == 0.0
    ratio = table.columns(["duration_ratio"])[:, 0]
    want = np.array(
        [len(renderer.render(u)) / len(renderer.render(n)) for u, n in zip(spoken, neutral)]
    )
    np.testing.assert_allclose(ratio, want, rtol=1e-6)
    np.testing.assert_allclose(ratio[table.y], 1.0, atol=1e-6)
    assert np.all(ratio[~table.y] > 1.1)  # 30% of the speech, 0.2 s of silence unchanged
    np.testing.assert_allclose(
        table.columns(["duration_s"])[:, 0], [len(renderer.render(u)) / SR for u, _ in clips]
    )
    report = ablate(clip_table(_clips(120, 1), renderer), clip_table(_clips(120, 2), renderer))
    assert report.results["duration_ratio"].accuracy.value == 1.0
    assert report.results["duration"].accuracy.value < 0.85  # the words' length hides it


def test_lead_silence():
    wave = np.concatenate([np.zeros(4800), 0.5 * np.sin(np.arange(8000) * 0.06), np.zeros(800)])
    assert lead_silence_s(wave, SR) == pytest.approx(0.3, abs=0.03)
    assert lead_silence_s(np.zeros(4000), SR) == 0.0


class ToyRenderer:
    """Resolved: a higher, louder tone; unresolved: lower and softer (as in the perceiver
    tests)."""

    name = "toy"
    version = "1"
    sample_rate = SR

    def render(self, utt: Utterance) -> np.ndarray:
        rng = np.random.default_rng(utt.variation)
        up = is_resolved(utt) or utt.prosody_strength == 0
        f0 = (180 if up else 140) * 2 ** (rng.normal(0, 1.5) / 12)
        amp = (0.5 if up else 0.3) * 10 ** (rng.normal(0, 2) / 20)
        t = np.arange(12000) / SR
        return (amp * np.sin(2 * np.pi * f0 * t)).astype(np.float32)


def test_the_full_set_is_the_reference_perceiver(tmp_path):
    train, test = _clips(120, 3), _clips(60, 4)
    cache = AudioCache(tmp_path, memory_items=0)
    ref = evaluate_perception(train, test, ToyRenderer(), cache)
    report = ablate(clip_table(train, ToyRenderer(), cache), clip_table(test, ToyRenderer(), cache))
    full = report.results["all"]
    assert full.accuracy.value == ref.accuracy
    assert full.train_accuracy == ref.train_accuracy
    assert {v: e.value for v, e in full.per_voice.items()} == ref.per_persona
    assert full.per_delivery == ref.per_delivery


def test_perceive_rejects_bad_flag_combinations(capsys):
    assert main(["perceive", "--json"]) == 2
    assert "--json: only with --ablation" in capsys.readouterr().err
    assert main(["perceive", "--ablation", "--save-perceiver", "m.json"]) == 2
    assert "--save-perceiver: not with --ablation" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["perceive", "--ablation", "--per-scenario", "0"])


def test_perceive_ablation_prints_the_table_and_json(tmp_path, capsys, monkeypatch):
    pytest.importorskip("espeakng_loader")
    from hear2act_env.scenarios import bank

    full = bank.load_bank()
    small = [s for s in full if s.split == "train"][:12] + [s for s in full if s.split == "test"][
        :6
    ]
    monkeypatch.setattr(bank, "load_bank", lambda: small)
    flags = ["--per-scenario", "2", "--train-stride", "1", "--audio-cache", str(tmp_path / "c")]
    assert main(["perceive", "--ablation", *flags]) == 0
    out = capsys.readouterr().out
    assert "Cue ablation" in out and "Voice v2 targets" in out and "95% CI" in out
    for name in FEATURE_SETS:
        assert f"\n{name} " in out
    assert "prosody realization" in out and "explicit realization" in out
    assert main(["perceive", "--ablation", "--json", *flags]) == 0
    data = json.loads(capsys.readouterr().out)
    prosody = data["realizations"]["prosody"]
    assert set(prosody["sets"]) == set(FEATURE_SETS) and prosody["targets_judged"]
    assert not data["realizations"]["explicit"]["targets_judged"]
    acc = prosody["sets"]["all"]["accuracy"]
    assert acc["low"] <= acc["value"] <= acc["high"]
    path = tmp_path / "out" / "ablation.json"
    assert main(["perceive", "--ablation", "--json", str(path), *flags]) == 0
    assert "Voice v2 targets" in capsys.readouterr().out
    assert json.loads(path.read_text()) == data


def test_the_duration_ratio_is_held_to_the_gap_as_well():
    # every feature a little, and the one-number timing shortcut as much as all of them
    def table(seed: int) -> ClipTable:
        t = _table(600, seed, FEATURE_NAMES, shift=0.45)
        y = np.where(t.y, 1.0, -1.0)
        rng = np.random.default_rng(seed + 7)
        t.x[:, COLUMNS.index("duration_ratio")] = 2.0 * y + rng.standard_normal(len(y))
        return t

    report = ablate(table(0), table(1), resamples=100)
    acc = {name: r.accuracy.value for name, r in report.results.items()}
    assert all(acc["all"] - acc[g] >= 0.05 for g in FEATURE_GROUPS), acc
    assert acc["all"] - acc["duration_ratio"] < 0.05, acc
    (gap_check,) = [c for c in report.checks() if c.target.startswith("no group")]
    assert not gap_check.holds and "duration_ratio" in gap_check.detail
