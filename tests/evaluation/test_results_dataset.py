"""``hear2act export-results``: hand-made records exported as a ``datasets`` folder and loaded
back, every cell compared with the record it came from; the first file's record of a key wins;
outputs that are not ours are refused."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import datasets
import pytest
import yaml

from hear2act_cli import main
from hear2act_env.errors import ConfigError, MissingExtraError
from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord
from hear2act_env.evaluation.results_dataset import COLUMNS, export_results

SHA = "ab" * 32
CONFIG = {"agents": ["rule", "oracle"], "env": {"turn_cost": 0.0}, "runs": 1}


def _rec(agent, scenario, access="T", run=0, **fields) -> EpisodeRecord:
    key = EpisodeKey(agent, "prosody", access, fields.pop("fidelity", "correct"), scenario, run)
    return EpisodeRecord(key=key, seed=key.seed, **fields)


#: run A: a success with every list filled, a failure, an errored episode, the oracle.
RUN_A = [
    _rec(
        "rule",
        "city-hotels-09",
        success=True,
        final_option=3,
        best=3,
        reward=0.75,
        terminated=True,
        actions=3,
        counts={"ask_open": 1, "recommend": 2},
        recommend_patterns=["r101", "r111"],
        steps=[[0, 0, 0], [2, 5, 0], [2, 3, 0]],
        revealed=["L2"],
        reluctant_turns=1,
        agent_stats={"calls": 3, "prompt_tokens": 120, "note": {"nested": [1, 2]}},
    ),
    _rec(
        "rule",
        "city-hotels-10",
        access="T+S",
        fidelity="shuffled",
        final_option=-1,
        best=7,
        reward=-0.5,
        truncated=True,
        actions=20,
        premature_closure=True,
        reluctant_turns=2,
        confirm_after_reluctant=1,
    ),
    _rec(
        "rule",
        "city-hotels-10",
        run=1,
        error="InfrastructureError: the server said 503",
        error_kind="infrastructure",
    ),
    _rec("oracle", "city-hotels-09", success=True, best=3, final_option=3, privileged=True),
]
#: run B: one key run A also holds (a different outcome: A's must win), one of its own.
RUN_B = [
    _rec("rule", "city-hotels-09", success=False, final_option=1, best=3, actions=1),
    _rec("rule", "dinner-reservations-09", success=True, actions=2, best=0, final_option=0),
]


def _write(folder: Path, records: list[EpisodeRecord], manifest: dict | None) -> Path:
    folder.mkdir(parents=True)
    path = folder / "results.jsonl"
    path.write_text("".join(r.to_json() + "\n" for r in records), encoding="utf-8")
    if manifest is not None:
        (folder / "results.manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return path


@pytest.fixture
def two_runs(tmp_path) -> tuple[Path, Path]:
    manifest = {"bank_version": 4, "bank_sha256": SHA, "hear2act_env": "0.2.0", "config": CONFIG}
    return (
        _write(tmp_path / "runs" / "a", RUN_A, manifest),
        _write(tmp_path / "runs" / "b", RUN_B, None),
    )


def _expected(record: EpisodeRecord, source: str, manifest: bool) -> dict:
    """The row a record must load back as, written out field by field."""
    key = record.key
    return {
        "agent": key.agent,
        "realization": key.realization,
        "access": key.access,
        "fidelity": key.fidelity,
        "condition": key.condition,
        "scenario": key.scenario,
        "run": key.run,
        "seed": record.seed,
        "success": record.success,
        "final_option": record.final_option,
        "best": record.best,
        "reward": record.reward,
        "terminated": record.terminated,
        "truncated": record.truncated,
        "actions": record.actions,
        "counts": record.counts,
        "recommend_patterns": record.recommend_patterns,
        "steps": record.steps,
        "revealed": record.revealed,
        "premature_closure": record.premature_closure,
        "reluctant_turns": record.reluctant_turns,
        "confirm_after_reluctant": record.confirm_after_reluctant,
        "privileged": record.privileged,
        "agent_stats": record.agent_stats,
        "error": record.error,
        "error_kind": record.error_kind,
        "source": source,
        "bank_version": 4 if manifest else None,
        "bank_sha256": SHA if manifest else None,
        "hear2act_env": "0.2.0" if manifest else None,
        "config": CONFIG if manifest else None,
    }


def _load(out: Path, tmp_path: Path) -> list[dict]:
    ds = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    assert list(ds) == ["train"]
    rows = ds["train"].to_list()
    for row in rows:  # the JSON columns, parsed
        for name in ("counts", "agent_stats", "config"):
            row[name] = json.loads(row[name]) if row[name] is not None else None
    return rows


def test_every_cell_loads_back_and_the_first_file_wins(two_runs, tmp_path):
    a, b = two_runs
    out = tmp_path / "shared"
    written = export_results([a, b], out)
    assert written == [out / "data" / "results.parquet", out / "README.md"]
    rows = _load(out, tmp_path)
    expected = [_expected(r, "a/results.jsonl", True) for r in RUN_A]
    expected.append(_expected(RUN_B[1], "b/results.jsonl", False))  # RUN_B[0]: A's key
    assert rows == expected
    assert [c.name for c in COLUMNS] == list(rows[0])


def test_the_other_order_keeps_the_other_record(two_runs, tmp_path):
    a, b = two_runs
    export_results([b, a], tmp_path / "shared")
    rows = _load(tmp_path / "shared", tmp_path)
    first = [
        r for r in rows if (r["agent"], r["scenario"], r["run"]) == ("rule", "city-hotels-09", 0)
    ]
    assert (
        len(first) == 1 and first[0]["success"] is False and first[0]["source"] == "b/results.jsonl"
    )
    assert len(rows) == len(RUN_A) + 1


def test_one_file_is_named_by_its_name(two_runs, tmp_path):
    export_results([two_runs[1]], tmp_path / "one")
    rows = _load(tmp_path / "one", tmp_path)
    assert {r["source"] for r in rows} == {"results.jsonl"}
    assert rows == [_expected(r, "results.jsonl", False) for r in RUN_B]


def test_the_card_declares_the_config_and_every_column(two_runs, tmp_path):
    out = tmp_path / "shared"
    export_results(list(two_runs), out)
    text = (out / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---")[1])
    assert front["configs"] == [
        {
            "config_name": "default",
            "data_files": [{"split": "train", "path": "data/results.parquet"}],
        }
    ]
    for column in COLUMNS:
        assert f"| `{column.name}` |" in text
    assert "5 episodes of 2 agent(s)" in text and f"bank version 4, SHA-256 {SHA}" in text


def test_the_command_writes_and_rewrites_its_own_folder(two_runs, tmp_path, capsys):
    out = tmp_path / "shared"
    args = ["export-results", str(two_runs[0]), str(two_runs[1]), "--out", str(out)]
    assert main(args) == 0
    assert f"wrote {out / 'data' / 'results.parquet'}" in capsys.readouterr().out
    assert main(args[:2] + args[3:]) == 0  # an earlier export is rewritten: run A alone now
    assert len(_load(out, tmp_path)) == len(RUN_A)


@pytest.mark.parametrize("kind", ["file", "foreign folder"])
def test_the_command_refuses_an_out_that_is_not_ours(two_runs, tmp_path, capsys, kind):
    out = tmp_path / "taken"
    if kind == "file":
        out.write_text("mine\n")
        said = "is not a folder"
    else:
        out.mkdir()
        (out / "notes.txt").write_text("mine\n")
        said = "holding other files"
    assert main(["export-results", str(two_runs[0]), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and str(out) in err and said in err
    assert (out.read_text() if kind == "file" else (out / "notes.txt").read_text()) == "mine\n"
    assert kind == "file" or sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_an_empty_folder_is_fine(two_runs, tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert main(["export-results", str(two_runs[0]), "--out", str(out)]) == 0


def test_a_missing_results_file_is_named(tmp_path, capsys):
    missing = tmp_path / "nope.jsonl"
    assert main(["export-results", str(missing), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "RESULTS" in err and "nope.jsonl" in err
    assert not (tmp_path / "o").exists()


def test_a_file_without_records_is_refused(tmp_path):
    empty = tmp_path / "results.jsonl"
    empty.write_text("")
    with pytest.raises(ConfigError, match="no records"):
        export_results([empty], tmp_path / "o")


def test_without_pyarrow_the_extra_is_named(two_runs, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(MissingExtraError, match="pyarrow"):
        export_results([two_runs[0]], tmp_path / "o")
