"""Values read from results and manifests are checked before they become figures (issue 39,
"Hardening v2").

A results line whose numbers no run writes (tokens -1e18 or 2e308, run index 1e18, NaN, a
bool where a count belongs, ...) is a corrupt line: ``EpisodeRecord.from_json`` refuses it
naming the field, ``load_records`` skips it with a warning naming its line, and the report's
figures equal those of the clean records. A leaderboard manifest whose ``bank_version`` or
``bank_sha256`` has the wrong type is one error line (exit 2) naming the file, the field, the
value's type and what was expected, never a traceback.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from hear2act_cli import main
from hear2act_env.errors import Hear2ActError
from hear2act_env.evaluation import records
from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord
from hear2act_env.evaluation.runner import load_records

#: The caps of ``records`` (checked below to be its constants): tokens of one episode, run
#: indices, any other count of one episode.
MAX_TOKENS = 10**12
MAX_RUN = 10**6
MAX_COUNT = 10**6

M = "openai:m"
#: Every model episode: 2 turns, 2 calls, 1,000 prompt and 100 completion tokens.
_STATS = {
    "calls": 2,
    "prompt_tokens": 1000,
    "completion_tokens": 100,
    "calls_without_usage": 0,
    "format_errors": 0,
    "truncated": 0,
}
SHA = "ab" * 32


def _rec(agent: str, access: str, scenario: str, success: bool, run: int = 0) -> EpisodeRecord:
    key = EpisodeKey(agent, "prosody", access, "correct", scenario, run)
    return EpisodeRecord(
        key=key,
        seed=key.seed,
        success=success,
        actions=2,
        counts={"ask_open": 1, "recommend": 0, "confirm": 1},
        agent_stats=dict(_STATS) if agent.startswith("openai:") else {},
    )


CLEAN = [
    _rec(M, "T", "s1", True),
    _rec(M, "T", "s2", False),
    _rec(M, "T+S", "s1", True),
    _rec(M, "T+S", "s2", True),
    _rec("state-aware", "T", "s1", True),
    _rec("state-aware", "T", "s2", True),
]
#: The record each bad line is made from: a new scenario, so an accepted line changes n.
TEMPLATE = _rec(M, "T", "bad", True)

#: (case, dotted field, JSON literal put there, the name the error must give). Numbers that
#: overflow a float (2e308) parse as inf; NaN and Infinity are Python's JSON extensions.
BAD: list[tuple[str, str, str, str]] = [
    ("tokens -1e18", "agent_stats.prompt_tokens", "-1e18", "agent_stats.prompt_tokens"),
    ("tokens -10**18", "agent_stats.prompt_tokens", str(-(10**18)), "agent_stats.prompt_tokens"),
    ("tokens 2e308", "agent_stats.completion_tokens", "2e308", "agent_stats.completion_tokens"),
    ("tokens NaN", "agent_stats.prompt_tokens", "NaN", "agent_stats.prompt_tokens"),
    ("tokens Infinity", "agent_stats.completion_tokens", "Infinity", "completion_tokens"),
    ("tokens -Infinity", "agent_stats.completion_tokens", "-Infinity", "completion_tokens"),
    ("tokens at the cap", "agent_stats.prompt_tokens", str(MAX_TOKENS), "prompt_tokens"),
    ("tokens 1e11 as a float", "agent_stats.prompt_tokens", "1e11", "prompt_tokens"),
    ("tokens true", "agent_stats.prompt_tokens", "true", "agent_stats.prompt_tokens"),
    ("calls -1", "agent_stats.calls", "-1", "agent_stats.calls"),
    ("calls 1.5", "agent_stats.calls", "1.5", "agent_stats.calls"),
    ("calls a string", "agent_stats.calls", '"many"', "agent_stats.calls"),
    ("calls null", "agent_stats.calls", "null", "agent_stats.calls"),
    ("format errors 1e18", "agent_stats.format_errors", "1e18", "agent_stats.format_errors"),
    ("truncated true", "agent_stats.truncated", "true", "agent_stats.truncated"),
    ("calls without usage -3", "agent_stats.calls_without_usage", "-3", "calls_without_usage"),
    ("unchecked audio calls a list", "agent_stats.unchecked_audio_calls", "[]", "unchecked_audio"),
    ("seconds NaN", "agent_stats.seconds", "NaN", "agent_stats.seconds"),
    ("seconds -1", "agent_stats.seconds", "-1", "agent_stats.seconds"),
    ("a nested stat Infinity", "agent_stats.latency", '{"mean": Infinity}', "agent_stats.latency"),
    ("run 1e18", "key.run", "1e18", "key.run"),
    ("run 10**18", "key.run", str(10**18), "key.run"),
    ("run at the cap", "key.run", str(MAX_RUN), "key.run"),
    ("run -1", "key.run", "-1", "key.run"),
    ("run true", "key.run", "true", "key.run"),
    ("run 2e308", "key.run", "2e308", "key.run"),
    ("seed NaN", "seed", "NaN", "seed"),
    ("seed 1.5", "seed", "1.5", "seed"),
    ("seed true", "seed", "true", "seed"),
    ("actions -1", "actions", "-1", "actions"),
    ("actions 2e308", "actions", "2e308", "actions"),
    ("actions true", "actions", "true", "actions"),
    ("actions past the cap", "actions", str(MAX_COUNT + 1), "actions"),
    ("reluctant turns NaN", "reluctant_turns", "NaN", "reluctant_turns"),
    ("confirms above reluctant turns", "confirm_after_reluctant", "5", "confirm_after_reluctant"),
    ("reward NaN", "reward", "NaN", "reward"),
    ("reward 2e308", "reward", "2e308", "reward"),
    ("reward -Infinity", "reward", "-Infinity", "reward"),
    ("reward 1e300", "reward", "1e300", "reward"),
    ("reward 10**400", "reward", str(10**400), "reward"),
    ("reward true", "reward", "true", "reward"),
    ("a count -1", "counts.ask_open", "-1", "counts"),
    ("a count 1e18", "counts.ask_open", "1e18", "counts"),
    ("counts above actions", "counts.ask_open", "50", "counts"),
    ("final option 1e18", "final_option", "1e18", "final_option"),
    ("final option -5", "final_option", "-5", "final_option"),
    ("best true", "best", "true", "best"),
    ("a step value 1e18", "steps", "[[0, 1e18, 0]]", "steps"),
    ("a step value 10**30", "steps", f"[[0, {10**30}, 0]]", "steps"),
    ("a step act 9", "steps", "[[9, 0, 0]]", "steps"),
    ("a recommend pattern too short", "recommend_patterns", '["r"]', "recommend_patterns"),
    ("revealed L9", "revealed", '["L9"]', "revealed"),
    ("success 1", "success", "1", "success"),
    ("an agent with an escape sequence", "key.agent", '"\\u001b[2Jx"', "key.agent"),
    ("an agent with a newline", "key.agent", '"a\\n# Heading"', "key.agent"),
    ("an agent with a lone surrogate", "key.agent", '"\\udcff"', "key.agent"),
    ("an empty scenario", "key.scenario", '""', "key.scenario"),
    ("an unknown field", "figure", "1", "figure"),
]


def _bad_line(path: str, literal: str, scenario: str = "bad") -> str:
    """``TEMPLATE``'s line with ``literal`` (raw JSON) at the dotted ``path``."""
    data = json.loads(TEMPLATE.to_json())
    data["key"]["scenario"] = scenario
    *parents, last = path.split(".")
    where = data
    for name in parents:
        where = where[name]
    where[last] = "@@RAW@@"
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    assert text.count('"@@RAW@@"') == 1
    return text.replace('"@@RAW@@"', literal)


@pytest.mark.parametrize(("case", "path", "literal", "name"), BAD, ids=[b[0] for b in BAD])
def test_a_record_with_an_implausible_value_is_refused_by_name(case, path, literal, name):
    with pytest.raises(ValueError, match=name.replace("[", r"\[")) as caught:
        EpisodeRecord.from_json(_bad_line(path, literal))
    assert isinstance(caught.value, Hear2ActError), case  # a named error, never a bare one
    assert len(str(caught.value)) < 400  # the value is shown shortened


def test_the_caps_are_named_constants():
    assert (records.MAX_TOKENS, records.MAX_RUN, records.MAX_COUNT) == (
        MAX_TOKENS,
        MAX_RUN,
        MAX_COUNT,
    )


def test_the_clean_records_and_values_at_the_edges_are_kept():
    for record in CLEAN:
        assert EpisodeRecord.from_json(record.to_json()) == record
    edges = [
        ("agent_stats.prompt_tokens", str(MAX_TOKENS - 1)),
        ("key.run", str(MAX_RUN - 1)),
        ("agent_stats.seconds", "12.5"),
        ("agent_stats.model_access", '"A+T"'),  # a stat that is no number stays free
        ("reward", "-3.5"),
        ("final_option", "-1"),  # the env's "no final option"
        ("steps", "[[-1, 7, 0], [0, 0, 2]]"),
        ("seed", "-1"),  # not a figure: the viewer names it as not replayable
        ("key.agent", "\"+cmd|' /C calc'!A0\""),
    ]
    for path, literal in edges:
        record = EpisodeRecord.from_json(_bad_line(path, literal))
        assert record.key.scenario == "bad", path


def _write(folder: Path, lines: list[str], bank_version: object = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    manifest = {"bank_version": bank_version, "bank_sha256": SHA, "config": {}}
    path.with_suffix(".manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return path


def _mixed() -> tuple[list[str], list[int]]:
    """The clean lines with every bad line between them (the last line clean: a torn last
    line is dropped without a warning); the bad lines' numbers."""
    clean = [r.to_json() for r in CLEAN]
    bad = [_bad_line(path, literal, f"bad{i}") for i, (_, path, literal, _) in enumerate(BAD)]
    lines = clean[:3] + bad + clean[3:]
    return lines, list(range(4, 4 + len(bad)))


def test_load_records_skips_each_bad_line_naming_its_line_and_field(tmp_path):
    lines, numbers = _mixed()
    path = _write(tmp_path / "mixed", lines)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_records(path)
    assert loaded == CLEAN
    said = [str(w.message) for w in caught]
    assert len(said) == len(BAD)
    for text, number, (case, _, _, name) in zip(said, numbers, BAD):
        assert f"{path}:{number}: skipped a corrupt record" in text, case
        assert name in text, (case, text)


def _outputs(folder: Path) -> dict[str, str]:
    return {
        name: (folder / name).read_text(encoding="utf-8")
        for name in ("leaderboard.md", "leaderboard.csv", "conditions.csv", "usage.csv")
    }


def _report(path: Path, out: Path, capsys) -> dict[str, str]:  # noqa: ANN001
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["report", str(path), "--leaderboard", "--out", str(out)]) == 0
        assert main(["report", str(path), "--no-plots", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    return {**_outputs(out), "printed": printed.replace(str(out), "OUT")}


def test_the_report_of_clean_and_bad_lines_equals_that_of_the_clean_lines(tmp_path, capsys):
    lines, _ = _mixed()
    clean = _report(
        _write(tmp_path / "clean", [r.to_json() for r in CLEAN]), tmp_path / "a", capsys
    )
    mixed = _report(_write(tmp_path / "mixed", lines), tmp_path / "b", capsys)
    assert mixed == clean
    # the clean board: 2 finished T episodes of 2 turns each; no pass^K column (one run)
    assert "| openai:m | 50.0 [0.0, 100.0] n=2 |" in clean["leaderboard.md"]
    assert "| pass^" not in clean["leaderboard.md"] and "1e+18" not in clean["leaderboard.csv"]
    assert ",8,4000,400,4400," in clean["leaderboard.csv"]  # turns and tokens, T and T+S


# -- the leaderboard's manifests -------------------------------------------------------------
#: (case, manifest text, the field the error names, the type it names).
MANIFESTS: list[tuple[str, str, str, str]] = [
    (
        "bank_version an object",
        json.dumps({"bank_version": {"v": 3}, "bank_sha256": SHA}),
        "bank_version",
        "object",
    ),
    (
        "bank_version a list",
        json.dumps({"bank_version": [3], "bank_sha256": SHA}),
        "bank_version",
        "array",
    ),
    (
        "bank_version a fraction",
        json.dumps({"bank_version": 3.5, "bank_sha256": SHA}),
        "bank_version",
        "number",
    ),
    (
        "bank_version a string",
        json.dumps({"bank_version": "3", "bank_sha256": SHA}),
        "bank_version",
        "string",
    ),
    (
        "bank_version true",
        json.dumps({"bank_version": True, "bank_sha256": SHA}),
        "bank_version",
        "boolean",
    ),
    (
        "bank_version negative",
        json.dumps({"bank_version": -3, "bank_sha256": SHA}),
        "bank_version",
        "number",
    ),
    (
        "bank_version null",
        json.dumps({"bank_version": None, "bank_sha256": SHA}),
        "bank_version",
        "null",
    ),
    ("bank_version missing", json.dumps({"bank_sha256": SHA}), "bank_version", "missing"),
    (
        "bank_sha256 an object",
        json.dumps({"bank_version": 3, "bank_sha256": {}}),
        "bank_sha256",
        "object",
    ),
    (
        "bank_sha256 a number",
        json.dumps({"bank_version": 3, "bank_sha256": 12}),
        "bank_sha256",
        "number",
    ),
    (
        "bank_sha256 not hex",
        json.dumps({"bank_version": 3, "bank_sha256": "x" * 64}),
        "bank_sha256",
        "string",
    ),
    ("the manifest a list", json.dumps([{"bank_version": 3}]), "manifest", "array"),
    ("the manifest a number", "7", "manifest", "number"),
]


@pytest.mark.parametrize(
    ("case", "text", "field", "kind"), MANIFESTS, ids=[m[0] for m in MANIFESTS]
)
def test_a_leaderboard_manifest_field_of_the_wrong_type_is_one_error_line(
    case, text, field, kind, tmp_path, capsys
):
    path = _write(tmp_path / "r", [r.to_json() for r in CLEAN])
    manifest = path.with_suffix(".manifest.json")
    manifest.write_text(text, encoding="utf-8")
    status = main(["report", str(path), "--leaderboard", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2, case
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert str(manifest) in err and field in err and kind in err, err
    assert "expected" in err, err
    assert not (tmp_path / "out" / "leaderboard.md").exists()


def test_a_well_formed_manifest_still_makes_a_board(tmp_path, capsys):
    path = _write(tmp_path / "r", [r.to_json() for r in CLEAN])
    assert main(["report", str(path), "--leaderboard", "--out", str(tmp_path / "out")]) == 0
    assert "| openai:m |" in capsys.readouterr().out
