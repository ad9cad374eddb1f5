"""The reference perceiver: logistic regression, persistence, evaluation, calibration."""

from __future__ import annotations

import numpy as np
import pytest

from hear2act_env.errors import ConfigError
from hear2act_env.protocol.delivery import DELIVERIES, STATE_OF_DELIVERY
from hear2act_env.protocol.scenario import PERSONAS
from hear2act_env.speech.cache import AudioCache
from hear2act_env.speech.features import FEATURE_NAMES
from hear2act_env.speech.perception import (
    LogisticModel,
    evaluate_perception,
    is_resolved,
)
from hear2act_env.speech.utterance import Utterance


def _blobs(n: int = 400, shift: float = 1.5, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n).astype(bool)
    x = rng.standard_normal((n, len(FEATURE_NAMES))) * np.arange(1, len(FEATURE_NAMES) + 1)
    x[:, 0] += np.where(y, shift, -shift)
    return x, y


def test_fit_separates_and_generalizes():
    x, y = _blobs()
    model = LogisticModel.fit(x, y)
    xt, yt = _blobs(seed=1)
    assert (model.predict(xt) == yt).mean() > 0.9
    p = model.predict_proba(xt)
    assert np.all((p > 0) & (p < 1))
    assert model.weights[0] > 0


def test_separable_data_stays_finite():
    x = np.array([[0.0] * 8, [1.0] * 8, [2.0] * 8, [3.0] * 8])
    y = np.array([0, 0, 1, 1])
    model = LogisticModel.fit(x, y)
    assert np.isfinite(model.weights).all()
    assert list(model.predict(x)) == [False, False, True, True]


def test_save_load_round_trip(tmp_path):
    x, y = _blobs()
    model = LogisticModel.fit(x, y)
    model.save(tmp_path / "m.json")
    loaded = LogisticModel.load(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.decision_function(x), model.decision_function(x))
    assert loaded.feature_names == FEATURE_NAMES


def test_fit_and_load_validate():
    with pytest.raises(ConfigError):
        LogisticModel.fit(np.zeros((3, 8)), np.array([0, 1, 2]))
    with pytest.raises(ConfigError):
        LogisticModel.fit(np.zeros((3, 2)), np.array([0, 1, 1]))
    with pytest.raises(ConfigError):
        LogisticModel.from_dict({"kind": "other"})


def test_is_resolved_follows_the_state_table():
    for label in DELIVERIES:
        utt = Utterance("Okay.", label, "amber", 0)
        assert is_resolved(utt) == STATE_OF_DELIVERY[label].resolved


class ToyRenderer:
    """Resolved labels: a higher, louder tone; unresolved: lower and softer (fast)."""

    name = "toy"
    version = "1"
    sample_rate = 16000

    def render(self, utt: Utterance) -> np.ndarray:
        rng = np.random.default_rng(utt.variation)
        up = is_resolved(utt)
        f0 = (180 if up else 140) * 2 ** (rng.normal(0, 1.5) / 12)
        amp = (0.5 if up else 0.3) * 10 ** (rng.normal(0, 2) / 20)
        t = np.arange(12000) / 16000
        return (amp * np.sin(2 * np.pi * f0 * t)).astype(np.float32)


def _pairs(n: int, seed: int) -> list[tuple[Utterance, bool]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = DELIVERIES[int(rng.integers(9))]  # resolved, reluctant and concern labels
        utt = Utterance("Okay.", label, PERSONAS[i % 6], int(rng.integers(1 << 30)))
        out.append((utt, is_resolved(utt)))
    return out


def test_evaluate_perception_reports_overall_and_per_group(tmp_path):
    report = evaluate_perception(
        _pairs(120, 0), _pairs(60, 1), ToyRenderer(), AudioCache(tmp_path, memory_items=0)
    )
    assert report.accuracy > 0.9
    assert report.n_test == 60 and report.n_train == 120
    assert set(report.per_persona) == set(PERSONAS)
    assert set(report.per_delivery) <= set(DELIVERIES[:9])
    assert report.to_dict()["model"]["kind"] == "hear2act-logistic-v1"
    # second run is served from the disk cache
    cache = AudioCache(tmp_path)
    evaluate_perception(_pairs(120, 0), _pairs(60, 1), ToyRenderer(), cache)
    assert cache.stats.misses == 0 and cache.stats.disk_hits == 180


def test_evaluate_perception_needs_data(tmp_path):
    with pytest.raises(ConfigError):
        evaluate_perception([], _pairs(2, 0), ToyRenderer(), AudioCache(tmp_path))


@pytest.mark.slow
def test_calibration_curve_espeak():
    """Chance at strength 0, near the human 0.92 at the default strength 1."""
    pytest.importorskip("espeakng_loader")
    from hear2act_env.speech.calibration import calibrate

    points = {p.strength: p.accuracy for p in calibrate([0.0, 1.0], train_reps=2, test_reps=2)}
    assert points[0.0] == 0.5
    assert 0.88 <= points[1.0] <= 0.96


@pytest.mark.parametrize(
    "content",
    [
        b"this is not json",
        b"\xff\xfe",
        b"[1, 2, 3]",
        b'{"kind": "hear2act-logistic-v1"}',
        b'{"kind": "hear2act-logistic-v1", "feature_names": "abc", "mean": [], "scale": [], '
        b'"weights": [], "bias": 0}',
        b'{"kind": "hear2act-logistic-v1", "feature_names": ["a"], "mean": [NaN], "scale": [1], '
        b'"weights": [1], "bias": 0}',
        b'{"kind": "hear2act-logistic-v1", "feature_names": ["a"], "mean": ["x"], "scale": [1], '
        b'"weights": [1], "bias": 0}',
        b"[" * 5000 + b"]" * 5000,
    ],
    ids=["not json", "not utf-8", "a list", "no fields", "names a string", "nan", "a str", "deep"],
)
def test_a_file_that_is_not_a_saved_model_is_a_config_error_naming_it(tmp_path, content):
    from hear2act_env.errors import ConfigError
    from hear2act_env.speech.perception import LogisticModel

    path = tmp_path / "model.json"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match="model.json"):
        LogisticModel.load(path)


def test_perceiver_prosody_file_not_json_is_one_line_exit_2(tmp_path, capsys):
    from hear2act_cli import main

    bad = tmp_path / "p.json"
    bad.write_text("not json at all")
    argv = ["eval", "--agents", "openai:m", "--base-url", "http://127.0.0.1:9", "--no-probe"]
    argv += ["--perceiver", f"prosody:{bad}"]
    assert main([*argv, "--out", str(tmp_path / "o"), "--split", "test"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "p.json" in err
