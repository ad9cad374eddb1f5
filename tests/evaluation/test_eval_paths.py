"""A run's scenario file is stored as an absolute path: the run resumes and reruns from any
folder; a manifest written before, with the path as typed, still resumes from its folder."""

from __future__ import annotations

import json

from hear2act_cli import main
from hear2act_env.scenarios.bank import dumps_bank, load_bank


def _run(out, capsys, *extra):
    argv = ["eval", "--agents", "prober", "--access", "T", "--realizations", "prosody"]
    code = main([*argv, "--out", str(out), "--no-plots", "--backend", "serial", *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_relative_scenario_file_is_stored_absolute_and_reruns_from_elsewhere(
    tmp_path, monkeypatch, capsys
):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    bank = [s for s in load_bank() if s.split == "test"][:1]
    (tmp_path / "a" / "bank.jsonl").write_bytes(dumps_bank(bank))
    monkeypatch.chdir(tmp_path / "a")
    code, text = _run("run", capsys, "--scenario-file", "bank.jsonl")
    assert code == 0, text
    man = json.loads((tmp_path / "a" / "run" / "results.manifest.json").read_text())
    absolute = str(tmp_path / "a" / "bank.jsonl")
    assert man["config"]["env"]["scenarios"] == absolute
    assert man["run"]["env"]["scenario_file"] == absolute
    monkeypatch.chdir(tmp_path / "b")  # a rerun of the manifest from another folder
    assert main(["eval", "--config", str(tmp_path / "a" / "run"), "--no-plots"]) == 0
    assert "1 episodes" in capsys.readouterr().out


def test_an_older_manifest_with_a_relative_path_still_resumes(tmp_path, monkeypatch, capsys):
    bank = [s for s in load_bank() if s.split == "test"][:2]
    (tmp_path / "bank.jsonl").write_bytes(dumps_bank(bank))
    monkeypatch.chdir(tmp_path)
    code, text = _run("run", capsys, "--scenario-file", "bank.jsonl", "--limit", "1")
    assert code == 0, text
    path = tmp_path / "run" / "results.manifest.json"
    man = json.loads(path.read_text())
    man["config"]["env"]["scenarios"] = "bank.jsonl"  # as the manifests before stored it
    man["run"]["env"]["scenario_file"] = "bank.jsonl"
    path.write_text(json.dumps(man))
    code, text = _run("run", capsys, "--scenario-file", "bank.jsonl", "--limit", "1")
    assert code == 0 and "different grid configuration" not in text, text
    # another file under the same name elsewhere is another grid: refused
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "bank.jsonl").write_bytes(dumps_bank(bank))
    monkeypatch.chdir(tmp_path / "c")
    code, text = _run(tmp_path / "run", capsys, "--scenario-file", "bank.jsonl", "--limit", "1")
    assert code == 2 and "different grid configuration" in text, text
