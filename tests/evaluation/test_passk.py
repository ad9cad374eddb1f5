"""pass^k and pass@k: the estimators on hand-made records whose every value is known, the rule
for scenarios with errored runs, the report's table (only when a scenario was played more than
once) and the leaderboard's pass^K column, and a grid run with --runs 3."""

from __future__ import annotations

import csv
import itertools

import pytest

from hear2act_env.bootstrap import mean_ci
from hear2act_env.config import EnvConfig
from hear2act_env.errors import Hear2ActError
from hear2act_env.evaluation.leaderboard import (
    COLUMNS,
    leaderboard_columns,
    leaderboard_csv,
    leaderboard_markdown,
    leaderboard_rows,
)
from hear2act_env.evaluation.passk import pass_all, pass_any, pass_k, pass_k_curve, runs_of
from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord
from hear2act_env.evaluation.report import report
from hear2act_env.evaluation.runner import GridConfig, run_grid


def _rec(scenario, run, success, *, error=None, agent="a", access="T"):
    key = EpisodeKey(agent, "prosody", access, "correct", scenario, run)
    return EpisodeRecord(
        key=key,
        seed=key.seed,
        success=success,
        actions=3,
        error=error,
        error_kind="agent" if error else None,
    )


def _cell(agent="a", access="T"):
    """s1: 4 of 4 runs succeed, s2: 2 of 4, s3: 0 of 4; s4: 1 of 1 finished run (its second
    run errored), so s4 counts for k = 1 only."""
    outcomes = {"s1": [1, 1, 1, 1], "s2": [1, 0, 0, 1], "s3": [0, 0, 0, 0]}
    records = [
        _rec(s, run, bool(ok), agent=agent, access=access)
        for s, runs in outcomes.items()
        for run, ok in enumerate(runs)
    ]
    records.append(_rec("s4", 0, True, agent=agent, access=access))
    records.append(_rec("s4", 1, False, error="RuntimeError: boom", agent=agent, access=access))
    return records


#: k: (pass^k, pass@k) in percent, worked out by hand from the cell above.
EXPECTED = {
    1: (100 * (1 + 2 / 4 + 0 + 1) / 4, 100 * (1 + 2 / 4 + 0 + 1) / 4),
    2: (100 * (6 / 6 + 1 / 6 + 0) / 3, 100 * (1 + (1 - 1 / 6) + 0) / 3),
    3: (100 * (4 / 4 + 0 + 0) / 3, 100 * (1 + 1 + 0) / 3),
    4: (100 * (1 + 0 + 0) / 3, 100 * (1 + 1 + 0) / 3),
}


def test_estimators_match_hand_worked_values_and_the_errored_run_rule():
    records = _cell()
    assert runs_of(records) == 4
    curve = pass_k_curve(records)
    assert [p.k for p in curve] == [1, 2, 3, 4]
    for p in curve:
        assert p.pass_all.value == pytest.approx(EXPECTED[p.k][0])
        assert p.pass_any.value == pytest.approx(EXPECTED[p.k][1])
        # s4 has one finished run: in for k = 1, left out (and counted) for k >= 2
        assert (p.scenarios, p.left_out) == ((4, 0) if p.k == 1 else (3, 1))
        assert p.pass_all.n == p.pass_any.n == p.scenarios
        assert 0 <= p.pass_all.low <= p.pass_all.value <= p.pass_all.high <= 100
        assert p.pass_all.value <= p.pass_any.value
    # the CI is the package's scenario bootstrap of the per-scenario values (2,000 draws, seed 0)
    two = curve[1].pass_all
    reference = mean_ci([100.0, 100 / 6, 0.0])
    assert (two.low, two.high) == (reference.low, reference.high)
    assert two.low < two.value < two.high


def test_estimator_equals_the_mean_over_every_subset_of_k_runs():
    runs = [True, False, True, True, False]
    n, c = len(runs), sum(runs)
    for k in range(1, n + 1):
        subsets = list(itertools.combinations(runs, k))
        assert pass_all(n, c, k) == pytest.approx(sum(map(all, subsets)) / len(subsets))
        assert pass_any(n, c, k) == pytest.approx(sum(map(any, subsets)) / len(subsets))


def test_degenerate_cells_and_bad_arguments():
    always = [_rec(s, run, True) for s in ("s1", "s2") for run in range(3)]
    p = pass_k(always, 3)
    assert (p.pass_all.value, p.pass_all.low, p.pass_all.high) == (100.0, 100.0, 100.0)
    # every run of every scenario errored: nothing to average, both scenarios left out
    broken = [_rec(s, run, False, error="x") for s in ("s1", "s2") for run in range(2)]
    p = pass_k(broken, 1)
    assert (p.scenarios, p.left_out, p.pass_all.n) == (0, 2, 0)
    assert str(p.pass_all) == "-"
    with pytest.raises(Hear2ActError, match=r"k: got 0, expected >= 1"):
        pass_k(always, 0)
    with pytest.raises(Hear2ActError, match=r"k: got 4, expected 1 <= k <= n = 3"):
        pass_all(3, 1, 4)
    with pytest.raises(Hear2ActError, match=r"c: got 5, expected 0 <= c <= n = 3"):
        pass_any(3, 5, 1)


def _section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start + 1 : end]


def test_report_table_and_csv_with_several_runs(tmp_path):
    text = report(_cell(), tmp_path, plots=False)
    table = _section(text, "pass^k (all k runs")
    assert table[0].split() == [
        "agent",
        "realization",
        "condition",
        "runs",
        "errors",
        "k",
        "scenarios",
        "left_out",
        "pass^k",
        "pass@k",
    ]
    # k = 2: pass^2 = 7/18, pass@2 = 11/18, over 3 scenarios (s4 left out)
    two = next(line.split() for line in table[2:] if line.split()[5] == "2")
    assert two[:8] == ["a", "prosody", "T", "4", "1", "2", "3", "1"]
    assert two[8] == f"{100 * 7 / 18:.1f}" and two[11] == f"{100 * 11 / 18:.1f}"
    with (tmp_path / "passk.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 * 2
    got = {(r["k"], r["metric"]): float(r["value"]) for r in rows}
    for k, (every, some) in EXPECTED.items():
        assert got[(str(k), "pass^k")] == pytest.approx(every, abs=1e-4)
        assert got[(str(k), "pass@k")] == pytest.approx(some, abs=1e-4)


def test_report_with_one_run_has_no_passk_table_or_csv(tmp_path):
    one_run = [r for r in _cell() if r.key.run == 0]
    text = report(one_run, tmp_path, plots=False)
    assert "pass^k" not in text and "pass@k" not in text
    assert not (tmp_path / "passk.csv").exists()
    assert (tmp_path / "conditions.csv").exists()


def test_leaderboard_has_pass_k_columns_only_with_several_runs(tmp_path):
    records = _cell("openai:m") + _cell("openai:m", access="T+S")
    rows = leaderboard_rows(records)
    assert leaderboard_columns(rows) == (
        COLUMNS[0],
        COLUMNS[1],
        "pass^4 T",
        "pass@4 T",
        *COLUMNS[2:],
    )
    (row,) = rows
    assert row.runs == 4
    assert row.pass_k_t.value == pytest.approx(EXPECTED[4][0])
    assert row.pass_any_t.value == pytest.approx(EXPECTED[4][1])
    # n: the 3 scenarios with 4 finished runs (s4 is left out), times 4
    assert row.cells()[2] == f"{row.pass_k_t} n=3x4"
    assert row.cells()[3] == f"{row.pass_any_t} n=3x4"
    head = leaderboard_markdown(rows).splitlines()[6]
    assert "| model | Success T | pass^4 T | pass@4 T |" in head
    leaderboard_csv(rows, tmp_path / "lb.csv")
    with (tmp_path / "lb.csv").open() as fh:
        (line,) = csv.DictReader(fh)
    assert float(line["pass^4_t_pct"]) == pytest.approx(EXPECTED[4][0], abs=1e-4)
    assert float(line["pass@4_t_pct"]) == pytest.approx(EXPECTED[4][1], abs=1e-4)
    assert line["pass^4_t_n"] == line["pass@4_t_n"] == "12"
    # one run: the columns of before, no pass^k
    once = leaderboard_rows([r for r in records if r.key.run == 0])
    assert leaderboard_columns(once) == COLUMNS
    assert len(once[0].cells()) == len(COLUMNS)
    leaderboard_csv(once, tmp_path / "lb1.csv")
    assert "pass^" not in (tmp_path / "lb1.csv").read_text().splitlines()[0]


def test_models_with_different_runs_compare_at_a_common_k_and_sort_by_success():
    four = _cell("openai:a")  # 4 runs
    two = [r for r in _cell("openai:b") if r.key.run < 2]  # 2 runs
    one = [r for r in _cell("openai:c") if r.key.run == 0]  # 1 run: no pass^2
    rows = leaderboard_rows(four + two + one)
    assert {r.runs for r in rows} == {2}
    assert leaderboard_columns(rows)[2:4] == ("pass^2 T", "pass@2 T")
    by = {r.model: r for r in rows}
    assert by["openai:a"].pass_k_t.value == pytest.approx(EXPECTED[2][0])
    assert by["openai:a"].pass_any_t.value == pytest.approx(EXPECTED[2][1])
    assert by["openai:b"].pass_k_t is not None and by["openai:c"].pass_k_t is None
    values = [r.success_t.value for r in rows]
    assert values == sorted(values, reverse=True)


def test_common_k_is_the_fewest_runs_above_one():
    from hear2act_env.evaluation.leaderboard import common_k

    assert common_k([5, 3, 1]) == 3 and common_k([1, 1]) == 1 and common_k([]) == 1


def test_grid_with_three_runs_reports_passk_and_pass1_equals_success(tmp_path):
    from hear2act_agents.registry import make_agent

    config = GridConfig(agents=("prober",), env=EnvConfig(split="test"))
    ids = tuple(config.scenario_ids()[:4])
    config = GridConfig(
        agents=("random", "prober"),
        realizations=("prosody",),
        conditions=("T", "T+S"),
        env=EnvConfig(split="test"),
        scenarios=ids,
        runs=3,
    )
    records = run_grid(config, tmp_path / "r.jsonl", make_agent, progress=False)
    assert len(records) == 2 * 2 * 4 * 3
    report(records, tmp_path, plots=False)
    with (tmp_path / "passk.csv").open() as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == [
            "agent",
            "realization",
            "condition",
            "runs",
            "errors",
            "k",
            "scenarios",
            "left_out",
            "metric",
            "value",
            "ci_low",
            "ci_high",
        ]
        passk = list(reader)
    with (tmp_path / "conditions.csv").open() as fh:
        success = {
            (r["agent"], r["condition"]): r["value"]
            for r in csv.DictReader(fh)
            if r["metric"] == "success"
        }
    assert len(success) == 4
    cells = {(r["agent"], r["condition"]) for r in passk}
    assert cells == set(success)
    for r in passk:
        assert r["runs"] == "3" and r["scenarios"] == "4" and r["left_out"] == "0"
        if r["k"] == "1":  # no errors: every scenario has 3 runs, so pass^1 = pass@1 = Success
            assert r["value"] == success[(r["agent"], r["condition"])]
    assert sorted({r["k"] for r in passk}) == ["1", "2", "3"]
    # the runs of a scenario differ (own seeds): the random agent's k = 3 figures spread apart
    random3 = {
        r["metric"]: float(r["value"])
        for r in passk
        if (r["agent"], r["condition"], r["k"]) == ("random", "T", "3")
    }
    assert random3["pass^k"] < float(success[("random", "T")]) < random3["pass@k"]
