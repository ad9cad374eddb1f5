"""A run file end to end with real model code: ``hear2act eval --config run.toml`` with a tiny
local chat model (``hf:``), three runs, then its leaderboard row with pass^3 and a paired
T+S column, then the run again from its manifest (nothing left to do). The same against a
real OpenAI-compatible server is in test_real_server.py (slow)."""

from __future__ import annotations

import csv
from pathlib import Path

from hear2act_cli import main
from hear2act_env.evaluation.runner import load_records

IDS = ["city-hotels-09", "airport-rides-09"]


def write_run_file(path: Path, agent: str, out: Path, **extra: str) -> Path:
    lines = [
        f'agents = ["{agent}"]',
        'access = ["T", "T+S"]',
        'realizations = ["prosody"]',
        f"scenarios = {IDS!r}".replace("'", '"'),
        "runs = 3",
        "workers = 2",
        "no_plots = true",
        f'out = "{out}"',
        *(f"{k} = {v}" for k, v in extra.items()),
        "",
        "[settings]",
        "temperature = 0",
        'topic_matcher = "keyword"',
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def leaderboard_row(results: Path, out: Path) -> dict[str, str]:
    assert main(["report", str(results), "--leaderboard", "--out", str(out), "--no-plots"]) == 0
    (row,) = [r for r in csv.DictReader((out / "leaderboard.csv").open())]
    return row


def check_row(row: dict[str, str], agent: str) -> None:
    assert row["model"] == agent and row["realization"] == "prosody"
    assert row["success_t_n"] == row["pass^3_t_n"] == "6"  # 2 scenarios x 3 runs
    assert row["tps_minus_t_n"] == "6" and row["tps_minus_t_pp"] != ""
    assert 0.0 <= float(row["pass^3_t_pct"]) <= float(row["success_t_pct"]) <= 100.0
    assert int(row["tokens"]) > 0 and row["errored"] == "0" and row["finished"] == "12"


def test_a_local_model_from_a_run_file_to_its_leaderboard_row(tiny_chat, tmp_path, capsys):
    out = tmp_path / "run"
    agent = f"hf:{tiny_chat}"
    run = write_run_file(tmp_path / "run.toml", agent, out)
    with run.open("a") as fh:
        fh.write('max_new_tokens = 8\ndevice = "cpu"\n')
    assert main(["eval", "--config", str(run)]) == 0
    records = load_records(out / "results.jsonl")
    assert len(records) == 12 and all(r.error is None for r in records)
    check_row(leaderboard_row(out / "results.jsonl", tmp_path / "board"), agent)
    # the manifest reruns it: a finished run has nothing left to do
    data = (out / "results.jsonl").read_bytes()
    capsys.readouterr()
    assert main(["eval", "--config", str(out / "results.manifest.json")]) == 0
    assert (out / "results.jsonl").read_bytes() == data
