"""The scenario audit: its attackers find planted leaks, its decision rule is the documented
one, and the shipped bank is held to every limit: the exact prior-only optimum (the acceptance
test of bank v3), the largest posterior of one scenario, and every learned or heuristic
attacker over several fold seeds."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from hear2act_cli import main
from hear2act_cli.scenarios import text_env_factory
from hear2act_env.bootstrap import Estimate
from hear2act_env.protocol.scenario import Role
from hear2act_env.scenarios.bank import load_bank
from hear2act_env.scenarios.leakage import BEST_LIMIT, Figure, run_audit


@pytest.fixture(scope="module")
def shipped_report():
    bank = load_bank()
    return run_audit(bank, bank="the shipped bank", episode_env=text_env_factory(bank))


def _figure(report, attacker, scenarios):
    return next(f for f in report.figures if f.attacker == attacker and f.scenarios == scenarios)


@pytest.mark.slow  # the audit over all 480 scenarios: about 35 s
def test_report_covers_every_attacker_family_with_cis(shipped_report):
    groups = {f.group for f in shipped_report.figures}
    assert groups == {
        "best option",
        "zero-question episodes",
        "need attributes",
        "semantic",
        "exact prior-only",
    }
    for f in shipped_report.figures:
        e = f.estimate
        assert 0.0 <= e.low <= e.value <= e.high <= 1.0, f
        assert e.n in (96, 480), f
    best = [f for f in shipped_report.figures if f.group == "best option"]
    assert all(f.chance == pytest.approx(1 / 8) and f.limit == BEST_LIMIT for f in best)
    for attacker in ("ranker (linear)", "ranker (quadratic)"):
        assert {f.scenarios for f in best if f.attacker == attacker} == FOLD_SETS
    data = json.loads(json.dumps(shipped_report.to_dict()))
    assert data["n_scenarios"] == 480 and len(data["figures"]) == len(shipped_report.figures)


@pytest.mark.slow  # the audit over all 480 scenarios: about 35 s
def test_zero_question_play_confirms_the_rankers_pick(shipped_report):
    """Played through gym.make, 'recommend the top pick and confirm' succeeds exactly when the
    pick is best, so it equals the ranker's top-1."""
    ranker = _figure(shipped_report, "ranker (linear)", "test").estimate.value
    play = _figure(shipped_report, "ranker (linear): recommend top, confirm", "test")
    assert play.estimate.value == pytest.approx(ranker)


QUADRATIC_NEED_SCORER = "learned scorer (quadratic)"
FOLD_SETS = {"test", "5-fold", "5-fold s1", "5-fold s2"}


@pytest.mark.slow  # the audit over all 480 scenarios: about 35 s (CI: this and `leakage`)
def test_the_exact_figures_carry_the_bank_v3_limits(shipped_report):
    exact = {f.attacker: f for f in shipped_report.figures if f.group == "exact prior-only"}
    top1 = exact["exact Bayes top-1, expected (mean best_posterior)"]
    assert top1.limit == BEST_LIMIT and top1.point_within_limit
    assert top1.estimate.value >= 1 / 7 - 1e-9  # the floor: the last on favored is never best
    largest = exact["largest best_posterior of one scenario"]
    assert largest.limit == 0.25 and largest.estimate.value <= 0.25
    need = exact["exact need top-3, expected"]
    assert need.limit == pytest.approx(need.chance + 0.10) and need.point_within_limit


TWIN = ("shared with last on favored", "shared with closest ahead")


@pytest.mark.slow  # the audit over all 480 scenarios: about 35 s (CI: this and `leakage`)
def test_shipped_bank_best_option_play_and_semantic_figures_are_within(shipped_report):
    best = [f for f in shipped_report.figures if f.group == "best option"]
    assert {f.attacker for f in best} >= {f"most {t}" for t in TWIN}
    rankers = [f for f in best if "ranker" in f.attacker]
    assert {f.scenarios for f in rankers} == FOLD_SETS
    # bank v3: every attacker's exact expected score is known and within the limit (its
    # realized score is one draw of the needs around it)
    assert all(f.expected is not None and f.within_limit for f in best)
    play = [f for f in shipped_report.figures if f.group == "zero-question episodes" and f.limit]
    assert play and all(f.expected is not None and f.within_limit for f in play)


@pytest.mark.slow  # the audit over all 480 scenarios: about 35 s (CI: this and `leakage`)
def test_need_attribute_detection_is_within_its_limit(shipped_report):
    need = [f for f in shipped_report.figures if f.group == "need attributes"]
    linear = [f for f in need if f.attacker == "learned scorer"]
    quadratic = [f for f in need if f.attacker == QUADRATIC_NEED_SCORER]
    assert {f.scenarios for f in linear} == {f.scenarios for f in quadratic} == FOLD_SETS
    assert all(f.within_limit for f in linear), linear
    assert all(f.within_limit for f in quadratic), quadratic


@pytest.mark.slow  # the audit over all 480 scenarios: about 35 s (CI: this and `leakage`)
def test_shipped_bank_is_within_every_limit(shipped_report):
    assert [
        (f.attacker, f.scenarios, round(f.estimate.value, 3)) for f in shipped_report.violations()
    ] == []


def _fig(scenarios: str, value: float, low: float, high: float, limit: float = 0.16):
    return Figure("best option", "x", scenarios, Estimate(value, low, high, 96), 0.125, limit)


def test_an_exact_expectation_decides_over_the_realized_point():
    noisy = dataclasses.replace(_fig("all", 0.18, 0.15, 0.21), expected=0.145)
    assert noisy.within_limit and not noisy.point_within_limit
    leaky = dataclasses.replace(_fig("all", 0.15, 0.12, 0.18), expected=0.17)
    assert not leaky.within_limit
    # realized far above the limit: the needs were not drawn as the file says
    edited = dataclasses.replace(_fig("all", 0.5, 0.45, 0.55), expected=0.14)
    assert not edited.within_limit


@pytest.mark.slow  # the audit over all 480 scenarios: about 35 s (CI: this and `leakage`)
def test_the_exact_expectation_is_the_posterior_of_the_pick(shipped_report):
    """Recompute one heuristic's exact expectation by hand: the mean over scenarios of the
    exact posterior of the option it picks."""
    from hear2act_env.scenarios.domain import domain_files, load_domain
    from hear2act_env.scenarios.exact import scenario_triples
    from hear2act_env.scenarios.leakage.features import OPTION_FEATURES, option_features
    from hear2act_env.scenarios.leakage.view import view_of

    domains = {d.id: d for d in (load_domain(p) for p in domain_files())}
    fig = _figure(shipped_report, "most shared with last on favored", "all")
    j = OPTION_FEATURES.index("shared_with_last_on_favored")
    values = []
    for s in load_bank():
        view, _ = view_of(s)
        post = np.asarray(scenario_triples(s, domains[s.domain]).posterior)[view.eligible]
        scores = option_features(view)[:, j]
        top = np.flatnonzero(np.isclose(scores, scores.max()))
        values.append(post[top].mean())
    assert fig.expected == pytest.approx(np.mean(values))


def test_decision_rule_points_over_all_scenarios_significance_on_the_test_split():
    # over all scenarios: the point decides
    assert not _fig("all", 0.161, 0.13, 0.19).within_limit
    assert _fig("5-fold", 0.160, 0.13, 0.19).within_limit
    # on the 96 test scenarios: above the limit only when the whole CI is
    noisy = _fig("test", 0.19, 0.12, 0.26)
    assert noisy.within_limit and not noisy.point_within_limit
    assert not _fig("test", 0.25, 0.17, 0.33).within_limit
    # reported-only figures never fail
    assert Figure("g", "x", "test", Estimate(0.9, 0.8, 1.0, 96), 0.1, None).within_limit


# The planted-leak tests audit the first twelve domains of the bank (96 train and 24 test
# scenarios): a leak planted in every scenario shows as clearly there as in the whole bank, at
# a third of the cost (about 3 s instead of 10 s each).
PLANTED = 120


def _planted(position_of_best: int):
    """The shipped bank with ``best`` moved to a fixed shown position."""
    out = []
    for s in load_bank():
        cands = list(s.candidates)
        best = next(c for c in cands if c.role == Role.BEST)
        cands.remove(best)
        cands.insert(position_of_best, best)
        out.append(dataclasses.replace(s, candidates=tuple(cands)))
    return out


def test_attackers_find_a_planted_leak():
    report = run_audit(_planted(0)[:PLANTED], semantic=False)
    position = _figure(report, "fewest position", "all")
    assert position.estimate.value == pytest.approx(1.0) and not position.within_limit
    assert _figure(report, "ranker (linear)", "test").estimate.value > 0.9


def _twinned():
    """The shipped bank with ``safe`` given ``best``'s values on every open attribute."""
    out = []
    for s in load_bank():
        fixed = {s.attribute_index(s.requirement.attribute), s.attribute_index(s.favored.attribute)}
        best = next(c for c in s.candidates if c.role == Role.BEST)
        cands = []
        for c in s.candidates:
            if c.role == Role.SAFE:
                values = tuple(v if j in fixed else best.values[j] for j, v in enumerate(c.values))
                c = dataclasses.replace(c, values=values)
            cands.append(c)
        out.append(dataclasses.replace(s, candidates=tuple(cands)))
    return out


def test_the_twin_attack_finds_best_when_safe_copies_it():
    report = run_audit(_twinned()[:PLANTED], semantic=False)
    twin = _figure(report, "most shared with closest ahead", "all")
    assert twin.estimate.value > 0.9 and not twin.within_limit


def test_need_detection_scores_against_the_right_chance():
    report = run_audit(load_bank()[:40], semantic=False)
    need = [f for f in report.figures if f.group == "need attributes"]
    for f in need:
        assert 3 / 7 - 1e-9 <= f.chance <= 3 / 6 + 1e-9
        assert f.limit == pytest.approx(f.chance + 0.05)
    # no env factory given: no zero-question episodes, and the report says so
    assert not [f for f in report.figures if f.group == "zero-question episodes"]
    assert any("zero-question episodes skipped" in note for note in report.notes)


def test_cli_writes_json_and_fails_on_violations(tmp_path, capsys):
    path = tmp_path / "few.jsonl"
    path.write_text("\n".join(json.dumps(s.to_dict()) for s in _planted(3)[:30]) + "\n")
    out = tmp_path / "audit.json"
    rc = main(
        ["scenarios", "leakage", "--scenario-file", str(path), "--no-semantic", "--json", str(out)]
    )
    assert rc == 1  # best always at position 4: a heuristic finds it
    data = json.loads(out.read_text())
    assert data["bank"] == str(path) and any(not f["within_limit"] for f in data["figures"])
    assert "above their limit" in capsys.readouterr().out


def test_top_k_hits_splits_ties():
    from hear2act_env.scenarios.leakage.attackers import top1, top_k_hits

    assert top1(np.array([1.0, 1.0, 0.0, 1.0]), 0) == pytest.approx(1 / 3)
    assert top_k_hits(np.array([3.0, 1.0, 1.0, 0.0]), [1], 2) == pytest.approx(0.25)
    assert top_k_hits(np.array([3.0, 2.0, 1.0]), [0, 1], 2) == pytest.approx(1.0)


def test_cli_audit_with_a_folder_that_holds_no_domain_files_is_a_named_error(tmp_path, capsys):
    path = tmp_path / "few.jsonl"
    path.write_text("\n".join(json.dumps(s.to_dict()) for s in load_bank()[:20]) + "\n")
    args = ["scenarios", "leakage", "--scenario-file", str(path), "--no-semantic", "--no-episodes"]
    args += ["--domains"]
    assert main([*args, str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "domains:" in err and "Traceback" not in err


@pytest.mark.parametrize("content", [None, '{"x": 1}\n', "\xff\xfe not json\n"])
def test_cli_audit_of_a_missing_or_malformed_file_is_a_named_error(tmp_path, capsys, content):
    path = tmp_path / "bank.jsonl"
    if content is not None:
        path.write_bytes(content.encode("latin-1"))
    argv = ["scenarios", "leakage", "--scenario-file", str(path), "--no-semantic", "--no-episodes"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("hear2act: error:") and "Traceback" not in err


def test_the_quadratic_need_scorer_reads_a_signal_the_linear_one_cannot():
    """Need columns marked only by an interaction (two features with the same sign): the linear
    scorer stays near chance, the quadratic one (an audit need scorer) finds them."""
    from hear2act_env.scenarios.leakage import NEED_SCORERS
    from hear2act_env.scenarios.leakage.attackers import cross_validated_scores, top_k_hits

    rng = np.random.default_rng(0)
    features, targets = [], []
    for _ in range(400):
        x = rng.normal(size=(7, 2))
        x[:, 0] = np.abs(x[:, 0]) * rng.choice([-1.0, 1.0], size=7)
        needs = list(rng.choice(7, size=3, replace=False))
        for j in range(7):  # needs: same signs; the others: opposite signs
            x[j, 1] = np.abs(x[j, 1]) * np.sign(x[j, 0]) * (1 if j in needs else -1)
        features.append(x)
        targets.append(needs)
    hits = {}
    for label, kw in NEED_SCORERS:
        scores = cross_validated_scores(features, targets, 5, 0, **kw)
        hits[label] = np.mean([top_k_hits(s, t, 3) for s, t in zip(scores, targets)])
    assert hits["learned scorer"] < 3 / 7 + 0.08
    assert hits["learned scorer (quadratic)"] > 0.7


@pytest.mark.parametrize("split, n", [("test", 3), ("test", 12), ("train", 12)])
def test_small_or_one_split_files_audit_without_the_figures_they_cannot_support(split, n):
    """A user's file may be tiny or hold one split: the learned scorers report only what can
    be computed (train -> test needs both splits, 5-fold needs 10 scenarios)."""
    subset = [s for s in load_bank() if s.split == split][:n]
    report = run_audit(subset, semantic=False)
    learned = {(f.attacker, f.scenarios) for f in report.figures if "learned" in f.attacker}
    expected = (
        {
            (a, f)
            for a in ("learned scorer", "learned scorer (quadratic)")
            for f in FOLD_SETS - {"test"}
        }
        if n >= 10
        else set()
    )
    assert learned == expected
