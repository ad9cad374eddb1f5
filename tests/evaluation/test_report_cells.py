"""Names from results stay names in the tables a report writes (issue 39, "Hardening v2").

An agent name a spreadsheet would run as a formula (``=``, ``+``, ``@``, ``-``) is written to
``leaderboard.csv`` and ``conditions.csv`` as text (a leading apostrophe), while numbers,
negative ones included, stay numbers. A name (or realization) holding ``|``, a newline, a
carriage return or another control character stays one cell of one row of the Markdown
leaderboard: no extra cell, row or heading.
"""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from pathlib import Path

import pytest

from hear2act_cli import main
from hear2act_env.evaluation.leaderboard import (
    leaderboard_columns,
    leaderboard_markdown,
    leaderboard_rows,
    leaderboard_table,
)
from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord

FORMULAS = ['=HYPERLINK("http://x")', "+cmd|' /C calc'!A0", "@SUM(1)", "-2+3", "=1+1"]
NUMBER_NAME = "-42"  # a name that is a number: a number it stays


def _rec(agent: str, access: str, scenario: str, success: bool, realization: str = "prosody"):
    key = EpisodeKey(agent, realization, access, "correct", scenario, 0)
    return EpisodeRecord(key=key, seed=key.seed, success=success, actions=2)


def _records(agents: list[str]) -> list[EpisodeRecord]:
    """Per agent: T succeeds on both scenarios, T+S on one (a T+S - T of -50 points)."""
    out = []
    for agent in agents:
        out += [_rec(agent, "T", "s1", True), _rec(agent, "T", "s2", True)]
        out += [_rec(agent, "T+S", "s1", True), _rec(agent, "T+S", "s2", False)]
    return out


def _results(tmp_path: Path, records: list[EpisodeRecord]) -> Path:
    path = tmp_path / "results.jsonl"
    path.write_text("".join(r.to_json() + "\n" for r in records), encoding="utf-8")
    manifest = {"bank_version": 3, "bank_sha256": "ab" * 32, "config": {}}
    path.with_suffix(".manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return path


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _no_formula(rows: list[list[str]]) -> None:
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "@", "-", "\t", "\r")) or _is_number(cell), cell


def test_formula_names_are_text_in_leaderboard_and_conditions_csv(tmp_path, capsys):
    path = _results(tmp_path, _records([*FORMULAS, NUMBER_NAME]))
    out = tmp_path / "out"
    assert main(["report", str(path), "--leaderboard", "--out", str(out)]) == 0
    assert main(["report", str(path), "--no-plots", "--out", str(out)]) == 0
    capsys.readouterr()

    board = _csv(out / "leaderboard.csv")
    _no_formula(board)
    header = board[0]
    models = [row[header.index("model")] for row in board[1:]]
    assert models == ["'" + name for name in FORMULAS] + [NUMBER_NAME]
    # a difference of -50 percentage points stays a number, not text
    differences = {row[header.index("tps_minus_t_pp")] for row in board[1:]}
    assert differences == {"-50.0000"}

    conditions = _csv(out / "conditions.csv")
    _no_formula(conditions)
    agents = list(dict.fromkeys(row[0] for row in conditions[1:]))
    assert agents == ["'" + name for name in FORMULAS] + [NUMBER_NAME]
    differences_csv = _csv(out / "differences.csv")
    _no_formula(differences_csv)
    assert {row[6] for row in differences_csv[1:] if row[5] == "success"} == {"-50.0000"}


# -- Markdown --------------------------------------------------------------------------------
def _cells(line: str) -> list[str]:
    """The cells of a GFM table row: split on the pipes no backslash escapes."""
    assert line.startswith("| ") and line.endswith(" |"), line
    cells, cell, chars = [], "", iter(line[1:-1])
    for ch in chars:
        if ch == "\\":
            cell += ch + next(chars, "")
        elif ch == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += ch
    return [*cells, cell]


def _unescape(cell: str) -> str:
    out, chars = "", iter(cell.strip())
    for ch in chars:
        out += next(chars, "") if ch == "\\" else ch
    return out


NAMES = [
    "a|b\n# Heading",
    "a|b\r\n## Sub\rtitle",
    "x\\|y",  # a backslash before a pipe: neither may vanish
    "end\\",
    "tab\there",
    "esc\x1b[31mred",
    "line\u2028sep\u2029para\x85nel",
    "> quote",
    "- item",
    "=== setext",
    "<img src=x onerror=alert(1)>",
    "plain-name",
]


def _shown(name: str) -> str:
    """What a cell shows for ``name``: control and line-break characters become spaces."""
    return "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch for ch in name)


@pytest.mark.parametrize("name", NAMES)
def test_a_name_with_pipes_and_newlines_is_one_cell_of_one_row(name):
    rows = leaderboard_rows(_records([name, "state-aware"]))
    text = leaderboard_markdown(rows)
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("#")] == [
        "# Leaderboard",
        "## Prosody-mediated",
    ]
    table = [line for line in lines if line.startswith("|")]
    width = len(leaderboard_columns(rows))
    assert len(table) == 2 + 2  # header, rule, one row per agent
    for line in table:
        assert len(_cells(line)) == width, line
    mine = _cells(table[2])
    assert _unescape(mine[0]) == _shown(name)
    assert _unescape(_cells(table[3])[0]) == "state-aware"
    assert re.search(r"(?<!\\)<", text) is None  # no raw HTML in the file


def test_a_realization_with_a_newline_adds_no_heading():
    records = _records(["m"])
    records += [_rec("m", "T", "s1", True, realization="odd\n# Heading | x")]
    text = leaderboard_markdown(leaderboard_rows(records))
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == ["# Leaderboard", "## Prosody-mediated", "## odd # Heading \\| x"]


def test_plain_names_are_written_as_they_are():
    rows = leaderboard_rows(_records(["openai:gpt-4o-mini", "hf:/models/x_y*z"]))
    table = leaderboard_table(rows)
    assert "| openai:gpt-4o-mini | 100.0 [100.0, 100.0] n=2 | -50.0 [" in table
    assert "| hf:/models/x_y*z |" in table
