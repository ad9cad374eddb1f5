"""A report never merges one agent name run with two configurations into one row
(``evaluation.identity``); parts of one grid (other runs, other scenarios, other transport
settings) still merge."""

from __future__ import annotations

import json
import shutil

import pytest

from hear2act_cli import main
from hear2act_env.evaluation.identity import configuration
from hear2act_env.evaluation.runner import GridConfig, manifest
from hear2act_env.scenarios.bank import load_bank

FIRST = [s.id for s in load_bank() if s.split == "test"][:1]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("ev") / "a"
    argv = ["eval", "--agents", "prober", "--scenarios", *FIRST, "--access", "T"]
    argv += ["--realizations", "prosody", "--out", str(out), "--no-plots", "--backend", "serial"]
    assert main(argv) == 0
    return out


def _copy(finished, tmp_path, name, **options):
    """A copy of the finished folder whose manifest says the agent ran with ``options``."""
    where = tmp_path / name
    shutil.copytree(finished, where)
    man = where / "results.manifest.json"
    data = json.loads(man.read_text())
    data["config"]["agent_options"] = options
    man.write_text(json.dumps(data))
    return str(where / "results.jsonl")


@pytest.mark.parametrize("leaderboard", [False, True])
def test_one_name_with_two_configurations_is_refused_by_name(
    finished, tmp_path, capsys, leaderboard
):
    cold = _copy(finished, tmp_path, "cold", temperature=0, max_tokens=16)
    warm = _copy(finished, tmp_path, "warm", temperature=0.7, max_tokens=16)
    argv = ["report", cold, warm, "--no-plots", "--out", str(tmp_path / "r")]
    assert main(argv + (["--leaderboard"] if leaderboard else [])) == 2
    err = capsys.readouterr().err
    assert "'prober'" in err and "two configurations" in err and "temperature" in err
    assert "max_tokens" not in err  # only what differs is named
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_parts_of_one_grid_still_merge(finished, tmp_path, capsys):
    a = _copy(finished, tmp_path, "a", temperature=0, timeout=30)
    b = _copy(finished, tmp_path, "b", temperature=0, timeout=90)  # transport only
    assert main(["report", a, b, "--no-plots", "--out", str(tmp_path / "r")]) == 0
    capsys.readouterr()


def test_the_configuration_leaves_out_transport_and_the_choice_of_episodes():
    base = GridConfig(agents=("prober",), agent_options={"temperature": 0, "timeout": 5})
    other = GridConfig(
        agents=("prober",), scenarios=tuple(FIRST), runs=3, agent_options={"temperature": 0}
    )
    assert configuration(manifest(base)["config"]) == configuration(manifest(other)["config"])
    hotter = GridConfig(agents=("prober",), agent_options={"temperature": 1})
    assert configuration(manifest(hotter)["config"]) != configuration(manifest(base)["config"])


def test_an_unreadable_configuration_among_several_files_is_named(finished, tmp_path, capsys):
    a = _copy(finished, tmp_path, "a", temperature=0)
    b = _copy(finished, tmp_path, "b", temperature=0)
    man = tmp_path / "b" / "results.manifest.json"
    data = json.loads(man.read_text())
    data["config"]["runs"] = "many"
    man.write_text(json.dumps(data))
    assert main(["report", a, b, "--no-plots", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "b" / "results.jsonl") in err and "unreadable" in err, err
    assert "Traceback" not in err
