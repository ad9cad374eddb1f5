import numpy as np
import pytest

from hear2act_env.evaluation.metrics import ACCEPT, FULLFIT, SUCCESS
from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord
from hear2act_env.evaluation.stats import bootstrap, paired_difference, pooled


def rec(scenario, success, agent="a", access="T", run=0, patterns=(), error=None):
    key = EpisodeKey(agent, "prosody", access, "correct", scenario, run)
    return EpisodeRecord(
        key=key, seed=key.seed, success=success, recommend_patterns=list(patterns), error=error
    )


def test_hand_computed_two_scenarios():
    # differences per scenario: s1 = 0, s2 = 1. Resampling 2 scenarios: means 0 (1/4), 0.5 (1/2), 1 (1/4).
    a = [rec("s1", True), rec("s2", False)]
    b = [rec("s1", True, access="T+S"), rec("s2", True, access="T+S")]
    d = paired_difference(a, b, SUCCESS, resamples=4000)
    assert d.value == pytest.approx(50.0)
    assert (d.low, d.high) == (0.0, 100.0)
    # constant difference: a degenerate interval
    c = [rec("s1", False), rec("s2", False)]
    e = paired_difference(c, b, SUCCESS)
    assert (e.value, e.low, e.high) == (100.0, 100.0, 100.0)


def test_ratio_metrics_pool_turns_within_scenarios():
    records = [
        rec("s1", False, patterns=["r111", "r110"]),
        rec("s2", False, patterns=["r100", "v111", "r011", "r111"]),
    ]
    assert FULLFIT(records) == pytest.approx(100 * 2 / 6)
    assert ACCEPT(records) == pytest.approx(100 * 3 / 6)  # r111, r110 and r111
    assert bootstrap(records, FULLFIT).value == pytest.approx(100 * 2 / 6)


def test_errors_are_left_out_and_unmatched_keys_ignored():
    a = [rec("s1", True), rec("s2", False, error="Timeout")]
    b = [
        rec("s1", False, access="T+S"),
        rec("s2", True, access="T+S"),
        rec("s3", True, access="T+S"),
    ]
    assert SUCCESS(a) == 100.0
    d = paired_difference(a, b, SUCCESS)
    assert d.value == -100.0 and d.n == 1


def test_ci_matches_known_distribution():
    """Bernoulli(0.3) successes on 400 scenarios: the CI width is close to 2 * 1.96 * sd."""
    rng = np.random.default_rng(0)
    records = [rec(f"s{i}", bool(rng.random() < 0.3)) for i in range(400)]
    e = bootstrap(records, SUCCESS)
    p = e.value / 100
    expected = 2 * 1.96 * np.sqrt(p * (1 - p) / 400) * 100
    assert (e.high - e.low) == pytest.approx(expected, rel=0.12)
    assert e.low < e.value < e.high


def test_paired_ci_covers_true_difference_most_of_the_time():
    rng = np.random.default_rng(1)
    covered = 0
    for t in range(60):
        base = rng.random(150) < 0.4
        better = base | (rng.random(150) < 0.2)  # true difference 0.6*0.2 = 12 points
        a = [rec(f"s{i}", bool(x)) for i, x in enumerate(base)]
        b = [rec(f"s{i}", bool(x), access="T+S") for i, x in enumerate(better)]
        d = paired_difference(a, b, SUCCESS, resamples=1000, seed=t)
        covered += d.low <= 12.0 <= d.high
    assert covered >= 51  # nominal 95% of 60 = 57


def test_pooled_weights_agents_equally():
    records = [rec(f"s{i}", True, agent="big") for i in range(4)] + [
        rec(f"s{i}", False, agent="small", run=r) for i in range(4) for r in range(3)
    ]
    assert pooled(records, SUCCESS).value == pytest.approx(50.0)
    assert SUCCESS(records) == pytest.approx(25.0)
