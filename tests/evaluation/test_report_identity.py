"""A report never merges one agent name run with two configurations into one row
(``evaluation.identity``): each configuration gets a row labelled with its hash; parts of one
grid (other runs, other scenarios, other transport settings) still merge."""

from __future__ import annotations

import json
import shutil

import pytest

from hear2act_cli import main
from hear2act_env.evaluation.identity import config_hash, configuration, label_agent
from hear2act_env.evaluation.runner import GridConfig, manifest
from hear2act_env.evaluation.usage import base_model
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
def test_one_name_with_two_configurations_gives_two_labelled_rows(
    finished, tmp_path, capsys, leaderboard
):
    cold = _copy(finished, tmp_path, "cold", temperature=0, max_tokens=16)
    warm = _copy(finished, tmp_path, "warm", temperature=0.7, max_tokens=16)
    argv = ["report", cold, warm, "--no-plots", "--out", str(tmp_path / "r")]
    assert main(argv + (["--leaderboard"] if leaderboard else [])) == 0
    out = capsys.readouterr().out
    labels = {}
    for name, options in (("cold", {"temperature": 0}), ("warm", {"temperature": 0.7})):
        data = json.loads((tmp_path / name / "results.manifest.json").read_text())
        labels[name] = f"prober@{config_hash(configuration(data['config']))}"
        assert options  # the two differ only in temperature
    assert labels["cold"] != labels["warm"]
    for label in labels.values():
        assert label in out
    # the note says what each label stands for, and only what differs
    assert f"- {labels['cold']}: temperature=0" in out
    assert f"- {labels['warm']}: temperature=0.7" in out
    assert "max_tokens" not in out
    if leaderboard:
        rows = (tmp_path / "r" / "leaderboard.csv").read_text().splitlines()[1:]
        assert sorted(r.split(",")[1] for r in rows) == sorted(labels.values())
    else:
        rows = (tmp_path / "r" / "conditions.csv").read_text().splitlines()[1:]
        assert {r.split(",")[0] for r in rows} == set(labels.values())


def test_the_configuration_hash_is_stable_and_order_free():
    a = {"agent_options.temperature": 0, "agent_options.max_tokens": 16, "perceiver": None}
    b = dict(reversed(list(a.items())))
    assert config_hash(a) == config_hash(b)
    assert len(config_hash(a)) == 8 and int(config_hash(a), 16) >= 0
    assert config_hash(a) != config_hash({**a, "agent_options.temperature": 0.0001})


def test_a_label_goes_before_the_first_stage_suffix():
    assert label_agent("openai:m+stage1", "0123abcd") == "openai:m@0123abcd+stage1"
    assert label_agent("hf:/x/y", "0123abcd") == "hf:/x/y@0123abcd"
    assert base_model("openai:m@0123abcd+stage1") == "openai:m"


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


def _priced_folder(tmp_path, name, prices):
    """Results of ``openai:m`` (2 episodes, 1,100 tokens each) with a manifest whose run
    carried ``prices`` (a table, or a price file's path)."""
    from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord

    stats = {"calls": 2, "prompt_tokens": 1000, "completion_tokens": 100}
    stats |= {"calls_without_usage": 0, "format_errors": 0, "truncated": 0}
    where = tmp_path / name
    where.mkdir()
    lines = []
    for sid in FIRST + ["x"]:
        key = EpisodeKey("openai:m", "prosody", "T", "correct", sid, 0)
        rec = EpisodeRecord(key=key, seed=key.seed, success=True, actions=2, agent_stats=stats)
        lines.append(rec.to_json() + "\n")
    (where / "results.jsonl").write_text("".join(lines))
    data = manifest(GridConfig(agents=("openai:m",)), {"prices": prices})
    (where / "results.manifest.json").write_text(json.dumps(data))
    return str(where / "results.jsonl")


def test_prices_a_run_file_carried_cost_the_report(tmp_path, capsys):
    table = {"openai:m": {"prompt": 1.0, "completion": 2.0}}  # $0.0012 an episode
    path = _priced_folder(tmp_path, "a", table)
    assert main(["report", path, "--leaderboard", "--out", str(tmp_path / "r")]) == 0
    assert "| 0.0024 |" in capsys.readouterr().out
    # --prices still decides
    prices = tmp_path / "p.toml"
    prices.write_text('["openai:m"]\nprompt = 2.0\ncompletion = 4.0\n')
    argv = ["report", path, "--leaderboard", "--out", str(tmp_path / "r"), "--prices", str(prices)]
    assert main(argv) == 0
    assert "| 0.0048 |" in capsys.readouterr().out


def test_a_price_file_named_by_a_manifest_is_not_opened(tmp_path, capsys):
    secret = tmp_path / "secret.toml"
    secret.write_text('["openai:m"]\nprompt = 1.0\ncompletion = 2.0\n')
    path = _priced_folder(tmp_path, "a", str(secret))
    assert main(["report", path, "--leaderboard", "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "0.0024" not in out  # cost "-": the path is for --prices to give


def test_one_model_priced_two_ways_by_two_runs_is_named(tmp_path, capsys):
    a = _priced_folder(tmp_path, "a", {"openai:m": {"prompt": 1.0, "completion": 2.0}})
    b = _priced_folder(tmp_path, "b", {"openai:m": {"prompt": 3.0, "completion": 2.0}})
    assert main(["report", a, b, "--no-plots", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "openai:m is priced two ways" in err and "--prices" in err


def test_the_export_keeps_both_configurations_apart(finished, tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    cold = _copy(finished, tmp_path, "cold", temperature=0)
    warm = _copy(finished, tmp_path, "warm", temperature=0.7)
    assert main(["export-results", cold, warm, "--out", str(tmp_path / "x")]) == 0
    capsys.readouterr()
    rows = datasets.load_dataset(str(tmp_path / "x"), cache_dir=str(tmp_path / "c"))["train"]
    agents = {}
    for row in rows:
        agents.setdefault(row["agent"], set()).add(row["source"])
    assert len(agents) == 2 and all(a.startswith("prober@") for a in agents)
    assert sorted(s for v in agents.values() for s in v) == [
        "cold/results.jsonl",
        "warm/results.jsonl",
    ]
