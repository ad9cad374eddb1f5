"""The report's and the leaderboard's columns on hand-built records whose every cell is known:
the errors column the footer refers to, the truncation rate beside the format-error rate, and
the note on audio that was trusted, not checked."""

from __future__ import annotations

import csv

import pytest

from hear2act_env.evaluation.leaderboard import COLUMNS, leaderboard_csv, leaderboard_rows
from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord
from hear2act_env.evaluation.report import report
from hear2act_env.evaluation.usage import usage_rows


def _record(agent, access, scenario, *, success=True, actions=4, error=None, **stats):
    key = EpisodeKey(agent, "prosody", access, "correct", scenario, 0)
    return EpisodeRecord(
        key=key,
        seed=key.seed,
        success=success,
        actions=actions,
        agent_stats=stats,
        error=error,
        error_kind="infrastructure" if error else None,
    )


def _stats(calls, format_errors, truncated, prompt, completion, unchecked=0):
    return {
        "calls": calls,
        "format_errors": format_errors,
        "truncated": truncated,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "calls_without_usage": 0,
        "unchecked_audio_calls": unchecked,
    }


RECORDS = [
    # openai:m under T: one finished episode, one that its server failed
    _record("openai:m", "T", "s1", actions=4, **_stats(5, 1, 1, 100, 10)),
    _record("openai:m", "T", "s2", error="InfrastructureError: no answer"),
    # openai:m under A+T, its audio trusted (--trust-audio), not checked
    _record("openai:m", "A+T", "s1", success=False, actions=5, **_stats(5, 0, 2, 300, 20, 5)),
    _record("openai:m", "A+T", "s2", actions=5, **_stats(5, 1, 0, 200, 10, 5)),
    # a rule agent: no model calls
    _record("state-aware", "T", "s1"),
    _record("state-aware", "T", "s2"),
]


def _section(text: str, title: str) -> list[str]:
    """The lines of the table titled ``title`` (header first)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start + 1 : end]


def _row(lines: list[str], *first: str) -> list[str]:
    return next(line.split() for line in lines[2:] if line.split()[: len(first)] == list(first))


def test_condition_tables_have_the_errors_column_the_footer_refers_to(tmp_path):
    text = report(RECORDS, tmp_path, plots=False)
    table = _section(text, "Success / Accept / FullFit")
    head = table[0].split()
    assert head[:5] == ["agent", "realization", "condition", "n", "errors"]
    assert _row(table, "openai:m", "prosody", "T")[3:5] == ["2", "1"]
    assert _row(table, "openai:m", "prosody", "A+T")[3:5] == ["2", "0"]
    assert _row(table, "state-aware", "prosody", "T")[3:5] == ["2", "0"]
    behaviour = _section(text, "Interaction behaviour")
    assert behaviour[0].split()[4] == "errors"
    # a paired difference counts the errors of both its cells; pooled ones, of the pool
    diffs = _section(text, "Paired differences against T")
    diff = next(line for line in diffs[2:] if line.startswith("openai:m"))
    assert diff.split()[5:7] == ["2", "1"]  # agent realization A+T - T n errors
    pooled = _section(text, "Pooled over non-privileged agents")
    assert _row(pooled, "pooled", "prosody", "T")[3:5] == ["4", "1"]
    assert (
        "6 episodes, 1 with errors (1 infrastructure; left out of every figure, see the errors "
        "column)" in text
    )
    with (tmp_path / "conditions.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    t = next(r for r in rows if r["agent"] == "openai:m" and r["condition"] == "T")
    assert (t["n"], t["errors"]) == ("2", "1")


def test_usage_table_has_the_truncation_rate_beside_the_format_error_rate(tmp_path):
    text = report(RECORDS, tmp_path, plots=False)
    table = _section(text, "Model calls and tokens")
    head = table[0]
    assert head.index("format err %") < head.index("truncated %") < head.index("prompt tok/ep")
    # agent realization condition n calls/ep format% truncated% prompt/ep compl/ep tokens cost
    t = _row(table, "openai:m", "prosody", "T")
    assert t[3:] == ["1", "5.00", "25.0", "25.0", "100", "10", "110", "-"]
    at = _row(table, "openai:m", "prosody", "A+T")
    assert at[3:] == ["2", "5.00", "10.0", "20.0", "250", "15", "530", "-"]
    assert not any(line.startswith("state-aware") for line in table)
    with (tmp_path / "usage.csv").open() as fh:
        rows = {r["condition"]: r for r in csv.DictReader(fh)}
    assert (rows["T"]["truncated"], rows["T"]["truncated_rate"]) == ("1", "0.2500")
    assert (rows["A+T"]["truncated"], rows["A+T"]["truncated_rate"]) == ("2", "0.2000")
    assert (rows["A+T"]["format_errors"], rows["A+T"]["format_error_rate"]) == ("1", "0.1000")
    (t_row,) = [u for u in usage_rows(RECORDS) if u.condition == "T"]
    assert (t_row.turns, t_row.truncated, t_row.truncated_rate) == (4, 1, 0.25)


def test_the_report_says_when_audio_was_trusted_not_checked():
    text = report(RECORDS, None, plots=False)
    (note,) = [line for line in text.splitlines() if "audio trusted, not checked" in line]
    assert note.startswith("openai:m:") and note.endswith("under A+T")
    checked = [r for r in RECORDS if not r.agent_stats.get("unchecked_audio_calls")]
    assert "audio trusted" not in report(checked, None, plots=False)


def test_leaderboard_has_the_truncation_rate_beside_the_format_error_rate(tmp_path):
    fe, tr = COLUMNS.index("format err %"), COLUMNS.index("truncated %")
    assert tr == fe + 1 and COLUMNS[tr + 1] == "errored"
    rows = {r.model: r for r in leaderboard_rows(RECORDS)}
    model = rows["openai:m"]
    # turns of the error-free episodes: 4 (T) + 10 (A+T); format errors 2, truncated 3
    assert model.format_error_rate == pytest.approx(100 * 2 / 14)
    assert model.truncated_rate == pytest.approx(100 * 3 / 14)
    cells = model.cells()
    assert (cells[fe], cells[tr], cells[tr + 1]) == ("14.3", "21.4", "1")
    assert cells[COLUMNS.index("tokens")] == "640"
    rule = rows["state-aware"].cells()
    assert (rule[fe], rule[tr], rule[tr + 1]) == ("-", "-", "0")
    leaderboard_csv(list(rows.values()), tmp_path / "lb.csv")
    with (tmp_path / "lb.csv").open() as fh:
        line = next(r for r in csv.DictReader(fh) if r["model"] == "openai:m")
    assert (line["format_error_pct"], line["truncated_pct"]) == ("14.2857", "21.4286")
