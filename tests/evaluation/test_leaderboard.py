"""The leaderboard on hand-made records whose every cell is known: a section per realization,
the first stages of ``--perceiver`` runs as columns of their decision model, ``n`` per
estimate, every rate in percent (and the files say so), tokens and cost."""

from __future__ import annotations

import csv
from dataclasses import replace

import pytest

from hear2act_env.evaluation.leaderboard import (
    UNITS,
    leaderboard_csv,
    leaderboard_markdown,
    leaderboard_rows,
    split_agent,
)
from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord
from hear2act_env.evaluation.usage import Price

#: Every model episode: 2 turns, 2 calls, 1,000 prompt and 100 completion tokens.
_STATS = {"calls": 2, "prompt_tokens": 1000, "completion_tokens": 100, "calls_without_usage": 0}


def _rec(agent, realization, access, scenario, success, *, error=None, privileged=False, **more):
    key = EpisodeKey(agent, realization, access, "correct", scenario, 0)
    model = agent.startswith("openai:") and error is None
    return EpisodeRecord(
        key=key,
        seed=key.seed,
        success=success,
        actions=2,
        privileged=privileged,
        agent_stats={**_STATS, "format_errors": 0, "truncated": 0, **more} if model else {},
        error=error,
        error_kind="infrastructure" if error else None,
    )


M = "openai:m"
RECORDS = [
    # Explicit lexical first in the files: its section still comes second
    _rec(M, "explicit", "T", "s1", True),
    _rec(M, "explicit", "T", "s2", False),
    _rec(M, "explicit", "T+S", "s1", True),
    _rec(M, "explicit", "T+S", "s2", True),
    # Prosody-mediated: the model itself under T, T+S and A+T
    _rec(M, "prosody", "T", "s1", True),
    _rec(M, "prosody", "T", "s2", True),
    _rec(M, "prosody", "T+S", "s1", True, format_errors=1),
    _rec(M, "prosody", "T+S", "s2", True),
    _rec(M, "prosody", "A+T", "s1", False, truncated=1),
    _rec(M, "prosody", "A+T", "s2", False),
    # its two-stage runs: --perceiver self (one episode errored), self-text and prosody:PATH;
    # no affect: run
    _rec(M + "+stage1", "prosody", "A+T", "s1", True),
    _rec(M + "+stage1", "prosody", "A+T", "s2", False, error="InfrastructureError: down"),
    _rec(M + "+stage1-text", "prosody", "T", "s1", False, format_errors=1),
    _rec(M + "+stage1-text", "prosody", "T", "s2", True),
    _rec(M + "+prosody", "prosody", "A+T", "s1", False),
    _rec(M + "+prosody", "prosody", "A+T", "s2", False),
    # a rule agent (no model calls) and the oracle (left out)
    _rec("state-aware", "prosody", "T", "s1", True),
    _rec("state-aware", "prosody", "T", "s2", True),
    _rec("oracle", "prosody", "T", "s1", True, privileged=True),
]
PRICES = {M: Price(prompt=1.0, completion=2.0)}  # $0.0012 an episode

HEAD = (
    "| model | Success T | T+S - T | A+T - T | T+S-hat(self) - T | T+S-hat(self-text) - T "
    "| T+S-hat(prosody) - T | T+S-hat(affect) - T | format err % | truncated % | errored "
    "| finished | turns | tokens | cost $ |"
)
RULE = "| --- " * 15 + "|"
# Prosody: 11 finished episodes of 2 turns, 2 with a format error, 1 truncated, 1 errored
PROSODY_M = (
    "| openai:m | 100.0 [100.0, 100.0] n=2 | 0.0 [0.0, 0.0] n=2 | -100.0 [-100.0, -100.0] n=2 "
    "| 0.0 [0.0, 0.0] n=1 | -50.0 [-100.0, 0.0] n=2 | -100.0 [-100.0, -100.0] n=2 | - "
    "| 9.1 | 4.5 | 1 | 11 | 22 | 12100 | 0.0132 |"
)
PROSODY_RULE = (
    "| state-aware | 100.0 [100.0, 100.0] n=2 | - | - | - | - | - | - | - | - | 0 | 2 | - | - | - |"
)
EXPLICIT_M = (
    "| openai:m | 50.0 [0.0, 100.0] n=2 | 50.0 [0.0, 100.0] n=2 | - | - | - | - | - "
    "| 0.0 | 0.0 | 0 | 4 | 8 | 4400 | 0.0048 |"
)


def test_every_markdown_cell_is_the_one_worked_out_by_hand():
    text = leaderboard_markdown(leaderboard_rows(RECORDS, PRICES))
    assert text.splitlines() == [
        "# Leaderboard",
        "",
        UNITS,
        "",
        "## Prosody-mediated",
        "",
        HEAD,
        RULE,
        PROSODY_M,
        PROSODY_RULE,
        "",
        "## Explicit lexical",
        "",
        HEAD,
        RULE,
        EXPLICIT_M,
    ]
    assert "in percent" in UNITS and "percentage points" in UNITS


def test_every_csv_cell_is_the_one_worked_out_by_hand(tmp_path):
    leaderboard_csv(leaderboard_rows(RECORDS, PRICES), tmp_path / "lb.csv")
    lines = (tmp_path / "lb.csv").read_text().splitlines()
    estimates = [
        "success_t_pct",
        "tps_minus_t_pp",
        "apt_minus_t_pp",
        "tpshat_self_minus_t_pp",
        "tpshat_self_text_minus_t_pp",
        "tpshat_prosody_minus_t_pp",
        "tpshat_affect_minus_t_pp",
    ]
    head = ["realization", "model"]
    for name in estimates:
        head += [name, f"{name}_low", f"{name}_high", name.rsplit("_", 1)[0] + "_n"]
    head += "format_error_pct truncated_pct errored finished turns".split()
    head += "prompt_tokens completion_tokens tokens cost_usd".split()
    none = ",,,,0"  # an estimate not run: no value, low, high; n 0
    assert lines == [
        ",".join(head),
        "prosody,openai:m,100.0000,100.0000,100.0000,2,0.0000,0.0000,0.0000,2,"
        "-100.0000,-100.0000,-100.0000,2,0.0000,0.0000,0.0000,1,-50.0000,-100.0000,0.0000,2,"
        f"-100.0000,-100.0000,-100.0000,2{none},9.0909,4.5455,1,11,22,11000,1100,12100,0.013200",
        f"prosody,state-aware,100.0000,100.0000,100.0000,2{none * 6},,,0,2,0,0,0,0,",
        f"explicit,openai:m,50.0000,0.0000,100.0000,2,50.0000,0.0000,100.0000,2{none * 5},"
        "0.0000,0.0000,0,4,8,4000,400,4400,0.004800",
    ]


#: CSV columns that are not rates: names, counts, money, differences (percentage points).
_COUNTS = {"errored", "finished", "turns", "prompt_tokens", "completion_tokens", "tokens"}


def test_every_rate_in_the_csv_is_a_percent_and_its_header_says_so(tmp_path):
    # three runs of each scenario: the pass^3 column too
    records = [
        replace(r, key=replace(r.key, run=run), success=r.success or run == 0)
        for r in RECORDS
        for run in range(3)
    ]
    leaderboard_csv(leaderboard_rows(records, PRICES), tmp_path / "lb.csv")
    with (tmp_path / "lb.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert "pass^3_t_pct" in rows[0]
    rates = 0
    for name in rows[0]:
        values = [r[name] for r in rows if r[name] != ""]
        if name in ("realization", "model", "cost_usd") or name in _COUNTS:
            continue
        if name.endswith("_n"):
            assert all(v.isdigit() for v in values), name
        elif "_pp" in name:  # a difference of two percents
            assert all(-100 <= float(v) <= 100 for v in values), name
        else:  # every other column is a rate: in percent, and named so
            assert "_pct" in name, f"{name}: a rate column must say it is in percent"
            assert values and all(0 <= float(v) <= 100 for v in values), (name, values)
            rates += 1
    # Success T, pass^3 T, pass@3 T (value, low, high each), format errors, truncations
    assert rates == 3 + 3 + 3 + 2
    assert {r["format_error_pct"] for r in rows if r["model"] == M} == {"9.0909", "0.0000"}


def test_perceiver_runs_are_columns_of_their_decision_model_not_rows():
    rows = leaderboard_rows(RECORDS)
    assert [(r.realization, r.model) for r in rows] == [
        ("prosody", M),
        ("prosody", "state-aware"),
        ("explicit", M),
    ]
    (affect_only,) = leaderboard_rows(
        [r for r in RECORDS if r.key.realization == "prosody" and r.key.agent == M]
        + [_rec(M + "+affect", "prosody", "A+T", s, True) for s in ("s1", "s2")]
    )
    assert str(affect_only.differences["T+S-hat(affect) - T"]) == "0.0 [0.0, 0.0]"
    assert affect_only.episodes["T+S-hat(affect) - T"] == 2
    assert affect_only.differences["T+S-hat(prosody) - T"] is None


@pytest.mark.parametrize(
    ("agent", "split"),
    [
        ("openai:m", ("openai:m", "")),
        ("openai:m+stage1", ("openai:m", "stage1")),
        ("openai:m+stage1-text", ("openai:m", "stage1-text")),
        ("openai:m+stage1:openai:m", ("openai:m", "stage1")),
        ("openai:m+prosody", ("openai:m", "prosody")),
        ("hf:/models/x+affect", ("hf:/models/x", "affect")),
        ("openai:m+other", ("openai:m+other", "")),
        ("+prosody", ("+prosody", "")),
        ("state-aware", ("state-aware", "")),
    ],
)
def test_agent_names_split_into_model_and_first_stage(agent, split):
    assert split_agent(agent) == split
