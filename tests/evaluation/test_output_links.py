"""A results folder someone sent never writes outside itself (issue 39): links planted where
eval, benchmark and report write (the lock, the results, the agent log, the report's CSVs and
plots) are refused or replaced, and their targets are never truncated, appended to or
overwritten. Also: the process backend starts no more workers than it has episodes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hear2act_cli import main
from hear2act_env.config import EnvConfig
from hear2act_env.evaluation import runner
from hear2act_env.evaluation.runner import GridConfig

SID = GridConfig(agents=("prober",), env=EnvConfig(split="test")).scenario_ids()[0]
ONE = ["--scenarios", SID, "--access", "T", "--realizations", "prosody", "--no-plots"]
PRECIOUS = "my thesis, chapter 3\n" * 50


@pytest.fixture
def sent(tmp_path: Path) -> tuple[Path, Path]:
    """A finished results folder (as someone would send it) and a file outside it."""
    folder = tmp_path / "sent"
    assert main(["eval", "--agents", "prober", *ONE, "--out", str(folder)]) == 0
    precious = tmp_path / "precious.txt"
    precious.write_text(PRECIOUS)
    return folder, precious


def _plant(folder: Path, name: str, target: Path) -> None:
    (folder / name).unlink(missing_ok=True)
    (folder / name).symlink_to(target)


def _last_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--out", "{out}"],
        ["eval", "--config", "{out}"],
        ["benchmark", "--out", "{out}", "--agents", "prober", "--split", "test", "--no-audio"],
    ],
    ids=["eval --out", "eval --config", "benchmark --out"],
)
def test_a_linked_lock_is_refused_and_its_target_kept(sent, capsys, argv):
    folder, precious = sent
    _plant(folder, "results.jsonl.lock", precious)
    cmd = [a.replace("{out}", str(folder)) for a in argv]
    if cmd[0] == "eval" and "--config" not in cmd:
        cmd += ["--agents", "prober", *ONE]
    code = main(cmd)
    assert code == 2
    assert "results.jsonl.lock is a link" in _last_line(capsys)
    assert precious.read_text() == PRECIOUS


def test_linked_results_are_refused_before_a_rerun_appends_to_their_target(sent, capsys):
    folder, precious = sent
    real = (folder / "results.jsonl").read_text()
    (folder / "results.jsonl").unlink()
    outside = precious.parent / "outside-results.jsonl"
    outside.write_text(real)
    _plant(folder, "results.jsonl", outside)
    assert main(["eval", "--config", str(folder)]) == 2
    assert "results.jsonl is a link" in _last_line(capsys)
    assert outside.read_text() == real


def test_a_linked_agent_log_is_refused(sent, capsys):
    folder, precious = sent
    _plant(folder, "results.log.jsonl", precious)
    assert main(["eval", "--config", str(folder)]) == 2
    assert "results.log.jsonl is a link" in _last_line(capsys)
    assert precious.read_text() == PRECIOUS


@pytest.mark.parametrize("leaderboard", [False, True], ids=["report", "report --leaderboard"])
def test_report_replaces_planted_links_and_leaves_their_targets(sent, capsys, leaderboard):
    folder, precious = sent
    names = ["conditions.csv", "differences.csv", "passk.csv", "leaderboard.csv", "leaderboard.md"]
    targets = {}
    for name in names:
        target = precious.parent / f"target-{name}"
        target.write_text(PRECIOUS)
        _plant(folder, name, target)
        targets[name] = target
    argv = ["report", str(folder / "results.jsonl"), "--no-plots"]
    assert main(argv + (["--leaderboard"] if leaderboard else [])) == 0
    for name, target in targets.items():
        assert target.read_text() == PRECIOUS, name
    written = {n for n in names if not (folder / n).is_symlink()}
    if leaderboard:
        assert written == {"leaderboard.csv", "leaderboard.md"}
    else:
        assert written == {"conditions.csv", "differences.csv"}  # one run: no pass^k table


def test_report_plots_replace_a_planted_link(sent, capsys):
    pytest.importorskip("matplotlib")
    folder, precious = sent
    _plant(folder, "success_by_condition.png", precious)
    assert main(["report", str(folder / "results.jsonl")]) == 0
    assert precious.read_text() == PRECIOUS
    pngs = sorted(folder.glob("*.png"))
    assert pngs and not any(p.is_symlink() for p in pngs)


def test_a_site_rebuilt_over_a_planted_folder_link_does_not_write_through_it(sent, tmp_path):
    """A site folder whose ``report`` became a link to another folder: the rebuild removes the
    link (never following it) and writes its report into a real folder of the site."""
    pytest.importorskip("jinja2")
    folder, _ = sent
    site = tmp_path / "site"
    argv = ["view", str(folder), "--out", str(site), "--no-plots", "--max-pages", "1"]
    assert main(argv) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    import shutil

    shutil.rmtree(site / "report")
    (site / "report").symlink_to(elsewhere, target_is_directory=True)
    assert main(argv) == 0
    assert list(elsewhere.iterdir()) == []
    assert (site / "report").is_dir() and not (site / "report").is_symlink()


def test_process_workers_are_capped_at_the_work_to_do(monkeypatch, tmp_path):
    seen: list[int] = []

    def fake(chunks, config, factory, workers):
        seen.append(workers)
        for c in chunks:
            yield runner.run_chunk(c, config, factory)

    monkeypatch.setattr(runner, "_process_results", fake)
    from hear2act_agents.registry import make_agent

    config = GridConfig(
        agents=("prober",),
        env=EnvConfig(split="test"),
        conditions=("T",),
        realizations=("prosody",),
        scenarios=(SID,),
    )
    records = runner.run_grid(
        config, tmp_path / "r.jsonl", make_agent, backend="process", workers=200, progress=False
    )
    assert len(records) == 1 and seen == [1]


def test_a_manifest_asking_for_100000_workers_is_a_named_error(sent, capsys):
    folder, _ = sent
    manifest = json.loads((folder / "results.manifest.json").read_text())
    manifest["run"]["workers"] = 100000
    manifest["run"]["backend"] = "process"
    (folder / "results.manifest.json").write_text(json.dumps(manifest))
    assert main(["eval", "--config", str(folder)]) == 2
    assert "workers: expected an integer from 1 to 1024, got 100000" in _last_line(capsys)


def test_the_lock_and_results_are_regular_files_after_a_run(sent):
    folder, _ = sent
    for name in ("results.jsonl", "results.jsonl.lock", "results.manifest.json"):
        assert (folder / name).is_file() and not (folder / name).is_symlink()
        assert os.stat(folder / name).st_nlink == 1
