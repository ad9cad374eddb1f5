"""``hear2act eval --config``: runs as files (TOML or a run's manifest), flags over the file,
``--print-config``, and a rerun from the manifest that resumes the same output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hear2act_cli import build_parser, main, run_config
from hear2act_cli.eval_run import EvalRun
from hear2act_env.evaluation.runner import GridConfig, load_records, manifest
from hear2act_env.scenarios.bank import load_bank

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
IDS = [s.id for s in load_bank() if s.split == "test"][:2]


def _printed(capsys, *argv: str) -> str:
    assert main(["eval", *argv, "--print-config"]) == 0
    return capsys.readouterr().out


def _resolved(*argv: str) -> dict:
    args = build_parser().parse_args(["eval", *argv])
    return run_config.resolve(args, args.eval_options)[0]


def _error(capsys, *argv: str) -> str:
    assert main(["eval", *argv, "--print-config"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    return captured.err


def _file(tmp_path: Path, text: str, name: str = "run.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_flags_override_the_file_and_the_file_overrides_the_defaults(tmp_path):
    path = _file(
        tmp_path,
        'agents = ["eager", "prober"]\nruns = 2\nworkers = 3\nno_plots = true\n'
        'split = "train"\n[settings]\ntemperature = 0.5\nmax_tokens = 64\n',
    )
    resolved = _resolved("--config", path, "--agents", "oracle", "--runs", "4")
    resolved_settings = resolved.pop("settings")
    assert resolved["agents"] == ["oracle"]  # a list flag replaces the file's list
    assert resolved["runs"] == 4 and resolved["workers"] == 3 and resolved["no_plots"] is True
    assert resolved["split"] == "train" and resolved["backend"] == "thread"  # file, default
    assert resolved_settings == {"max_tokens": 64, "temperature": 0.5}
    # --setting overrides the file's setting of its key and keeps the others
    again = _resolved("--config", path, "--setting", "temperature=0", "--setting", "top_p=1")
    assert again["settings"] == {"max_tokens": 64, "temperature": 0, "top_p": 1}
    assert again["agents"] == ["eager", "prober"] and again["runs"] == 2


def test_without_a_file_the_flags_resolve_as_before():
    resolved = _resolved("--agents", "eager", "--agents", "prober", "--setting", "x=1")
    assert resolved["agents"] == ["eager", "prober"]  # --agents extends, as it did
    assert resolved["access"] == ["T", "T+S"] and resolved["out"] == "hear2act-eval"
    assert resolved["settings"] == {"x": 1} and "base_url" not in resolved  # None left out


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("agents = ['eager']\nnope = 1\n", ["'nope'", "expected one of", "scenario_file"]),
        ("agents = ['eager']\nscenario-file = 'x'\n", ["'scenario-file'", "scenario_file"]),
        ("agents = ['eager']\nsetting = ['a=1']\n", ["'setting'", "[settings]"]),
        ("agents = ['eager']\nconfig = 'other.toml'\n", ["'config'"]),
    ],
)
def test_an_unknown_key_is_named(tmp_path, capsys, text, words):
    err = _error(capsys, "--config", _file(tmp_path, text))
    assert "unknown key" in err and all(w in err for w in words), err


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("runs = '2'", ["runs", "'2'", "integer"]),
        ("runs = true", ["runs", "True", "integer"]),
        ("runs = 2.5", ["runs", "2.5", "expected an integer"]),
        ("no_plots = 'yes'", ["no_plots", "'yes'", "true or false"]),
        ("scenarios = 'city-hotels-09'", ["scenarios", "'city-hotels-09'", "list of strings"]),
        ("access = []", ["access", "[]", "non-empty list"]),
        ("out = 3", ["out", "3", "expected a string"]),
        ("settings = 3", ["settings", "3", "expected a table"]),
        ("[settings]\nwhen = 2024-01-01", ["settings.when", "datetime.date", "expected a"]),
    ],
)
def test_a_value_of_the_wrong_type_is_named_with_what_was_expected(tmp_path, capsys, line, words):
    err = _error(capsys, "--config", _file(tmp_path, f"agents = ['eager']\n{line}\n"))
    assert all(w in err for w in words), err


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("split = 'dev'", ["split", "'dev'", "train, test, all"]),
        ("access = ['T', 'Q']", ["access", "'Q'", "T, A, A+T, T+S, A+T+S"]),
        ("realizations = ['loud']", ["realizations", "'loud'", "prosody, explicit"]),
        ("backend = 'gpu'", ["backend", "'gpu'", "serial, thread, process, ray"]),
        ("runs = 0", ["runs", "0", "integer"]),
        ("workers = -2", ["workers", "-2", "integer"]),
    ],
)
def test_the_flags_choices_and_bounds_hold_in_the_file(tmp_path, capsys, line, words):
    err = _error(capsys, "--config", _file(tmp_path, f"agents = ['eager']\n{line}\n"))
    assert all(w in err for w in words), err


def test_agents_are_required_from_the_flags_or_the_file(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:  # argparse's usage error, as without --config
        main(["eval", "--config", _file(tmp_path, "runs = 2\n"), "--print-config"])
    assert exc.value.code == 2
    assert "the following arguments are required: --agents" in capsys.readouterr().err


def test_a_file_that_is_not_a_run_file_is_refused_by_name(tmp_path, capsys):
    assert "not valid TOML" in _error(capsys, "--config", _file(tmp_path, "agents = [\n"))
    assert "cannot read" in _error(capsys, "--config", str(tmp_path / "missing.toml"))
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # never waited on: only a regular file is read
    assert "not a regular file" in _error(capsys, "--config", str(fifo))
    big = _file(tmp_path, "# " + "x" * run_config.MAX_TOML_BYTES + "\n", "big.toml")
    assert "larger than" in _error(capsys, "--config", big)
    other = _file(tmp_path, '{"agents": ["eager"]}', "run.json")
    assert "not a manifest written by hear2act eval" in _error(capsys, "--config", other)


def test_print_config_reads_back_to_the_same_text(tmp_path, capsys):
    path = _file(
        tmp_path,
        'agents = ["eager", "openai:Qwen/Qwen3-8B"]\nbase_url = "http://127.0.0.1:8000/v1"\n'
        'access = ["T"]\nscenario_file = "dir with \\"quotes\\" \\\\ é\\t.jsonl"\n'
        "[settings]\ntemperature = 0.25\nsend_seed = false\nstop = [\"\\n\", 'END']\n"
        '"odd.key" = 1e-5\nextra_body = {chat_template_kwargs = {enable_thinking = false}}\n',
    )
    first = _printed(capsys, "--config", path, "--runs", "3", "--setting", "top_p=0.9")
    again = _printed(capsys, "--config", _file(tmp_path, first, "printed.toml"))
    assert again == first
    resolved = _resolved("--config", str(tmp_path / "printed.toml"))
    assert resolved["scenario_file"] == 'dir with "quotes" \\ é\t.jsonl'
    assert resolved["runs"] == 3 and resolved["settings"]["top_p"] == 0.9
    assert resolved["settings"]["stop"] == ["\n", "END"] and resolved["settings"]["odd.key"] == 1e-5
    assert resolved["settings"]["extra_body"] == {
        "chat_template_kwargs": {"enable_thinking": False}
    }


def test_the_env_table_holds_the_settings_of_the_episodes(tmp_path, capsys):
    flat = _file(
        tmp_path, "agents = ['eager']\naccess = ['T']\nsplit = 'test'\nspoken = true\n", "flat.toml"
    )
    nested = _file(
        tmp_path, "agents = ['eager']\n[env]\naccess = ['T']\nsplit = 'test'\nspoken = true\n"
    )
    assert _resolved("--config", nested) == _resolved("--config", flat)
    assert _resolved("--config", nested)["access"] == ["T"]
    printed = _printed(capsys, "--config", flat)
    top, env = printed.split("[env]\n")
    assert "access" not in top and "spoken" not in top and "agents" in top
    assert env.startswith('access = ["T"]') and "spoken = true" in env
    assert set(run_config.ENV_KEYS) <= set(EvalRun.__dataclass_fields__)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[env]\nruns = 2\n", ["env.runs", "not a setting of the environment", "top level"]),
        ("[env]\nturn_cost = 1\n", ["env.turn_cost", "expected one of access"]),
        ("access = ['T']\n[env]\naccess = ['A+T']\n", ["access", "given twice", "[env]"]),
        ("env = 'T'\n", ["env", "'T'", "expected a table"]),
        ("[env]\naccess = 'T'\n", ["access", "'T'", "list of strings"]),
    ],
)
def test_a_bad_env_table_is_named(tmp_path, capsys, text, words):
    err = _error(capsys, "--config", _file(tmp_path, "agents = ['eager']\n" + text))
    assert all(w in err for w in words), err


def test_a_run_is_rerun_from_its_manifest(tmp_path, capsys):
    out = tmp_path / "ev"
    argv = ["--agents", "prober", "--split", "test", "--scenarios", *IDS, "--access", "T"]
    argv += ["--out", str(out), "--no-plots", "--backend", "serial"]
    assert main(["eval", *argv]) == 0
    report = capsys.readouterr().out
    results = out / "results.jsonl"
    before = results.read_bytes()
    records = sorted(r.to_json() for r in load_records(results))
    assert len(records) == 2 * 1 * len(IDS)  # realizations x access x scenarios
    man_path = out / "results.manifest.json"
    stored = json.loads(man_path.read_text())
    assert stored["run"]["agents"] == ["prober"] and stored["run"]["env"]["scenarios"] == IDS
    assert stored["run"]["out"] == str(out) and stored["run"]["settings"] == {}
    original = _printed(capsys, *argv)
    # the manifest (or its folder) as --config: the same configuration, printed the same
    assert _printed(capsys, "--config", str(man_path)) == original
    assert _printed(capsys, "--config", str(out)) == original
    # and run again into the same output: it resumes, runs nothing, reports the same
    assert main(["eval", "--config", str(man_path), "--out", str(out)]) == 0
    assert capsys.readouterr().out == report
    assert results.read_bytes() == before
    assert sorted(r.to_json() for r in load_records(results)) == records
    assert json.loads(man_path.read_text()) == stored


def test_settings_from_flags_and_from_a_file_are_one_value(tmp_path, capsys):
    argv = ["--agents", "eager", "--setting", "max_tokens=64", "--setting", "stop=['END']"]
    printed = _printed(capsys, *argv)
    assert "max_tokens = 64\n" in printed and 'stop = ["END"]' in printed
    typed = _file(tmp_path, printed, "typed.toml")
    # the file's own value repeated as a flag is the same value
    again = _resolved("--config", typed, "--setting", "max_tokens=64")
    assert again["settings"] == _resolved(*argv)["settings"] == {"max_tokens": 64, "stop": ["END"]}


def test_a_manifest_that_stored_flag_texts_resumes_under_typed_settings(tmp_path):
    from hear2act_env.errors import ConfigError
    from hear2act_env.evaluation.runner import _prepare_output

    path = tmp_path / "results.jsonl"
    old = manifest(GridConfig(agents=("prober",), agent_options={"max_tokens": 64}))
    old["config"]["agent_options"] = {"max_tokens": "64", "stop": "['END']"}  # as texts
    path.with_suffix(".manifest.json").write_text(json.dumps(old))
    same = GridConfig(agents=("prober",), agent_options={"max_tokens": 64, "stop": ["END"]})
    assert _prepare_output(path, same) == []
    changed = GridConfig(agents=("prober",), agent_options={"max_tokens": 65, "stop": ["END"]})
    with pytest.raises(ConfigError, match="changed: agent_options.max_tokens"):
        _prepare_output(path, changed)


def test_limit_runs_the_first_scenarios_and_records_them(tmp_path, capsys):
    grid = ["--agents", "prober", "--split", "test", "--access", "T", "--realizations", "prosody"]
    grid += ["--no-plots", "--backend", "serial"]
    out = tmp_path / "ev"
    assert main(["eval", *grid, "--out", str(out), "--limit", "2"]) == 0
    capsys.readouterr()
    first = [s.id for s in load_bank() if s.split == "test"][:2]
    records = load_records(out / "results.jsonl")
    assert sorted(r.key.scenario for r in records) == sorted(first)
    stored = json.loads((out / "results.manifest.json").read_text())
    assert stored["config"]["scenarios"] == first and stored["run"]["env"]["limit"] == 2
    # with --scenarios, the first N of those
    other = tmp_path / "other"
    argv = [*grid, "--out", str(other), "--scenarios", *first[::-1], "--limit", "1"]
    assert main(["eval", *argv]) == 0
    capsys.readouterr()
    assert [r.key.scenario for r in load_records(other / "results.jsonl")] == first[1:]


@pytest.mark.parametrize("value", ["-1", "x", "2.5"])
def test_a_bad_limit_is_named(capsys, value):
    with pytest.raises(SystemExit) as stop:  # argparse's usage error
        main(["eval", "--agents", "eager", "--limit", value, "--print-config"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--limit" in err and (f"got {value}" in err or f"got '{value}'" in err)


def test_runs_added_to_a_finished_folder_play_only_the_new_ones(tmp_path, capsys):
    grid = ["--agents", "prober", "--scenarios", IDS[0], "--access", "T", "--no-plots"]
    grid += ["--realizations", "prosody", "--backend", "serial", "--out", str(tmp_path / "ev")]
    assert main(["eval", *grid, "--runs", "2"]) == 0
    results = tmp_path / "ev" / "results.jsonl"
    first = results.read_text().splitlines()
    assert main(["eval", *grid, "--runs", "3"]) == 0
    lines = results.read_text().splitlines()
    assert lines[: len(first)] == first and len(lines) == 3  # run 2 appended, 0 and 1 kept
    assert sorted(r.key.run for r in load_records(results)) == [0, 1, 2]
    stored = json.loads((tmp_path / "ev" / "results.manifest.json").read_text())
    assert stored["config"]["runs"] == 3
    capsys.readouterr()
    assert main(["eval", *grid, "--runs", "2"]) == 2  # fewer runs: refused by name
    assert "changed: runs" in capsys.readouterr().err


def _manifest_from(tmp_path: Path, folder: str, **run) -> str:
    """A results folder holding a manifest whose run is ``run`` (as someone may send one)."""
    where = tmp_path / folder
    where.mkdir()
    data = {"config": GridConfig(agents=("prober",)).to_dict(), "run": run}
    return _file(where, json.dumps(data), "results.manifest.json")


def test_a_manifest_never_chooses_where_a_run_writes(tmp_path, capsys):
    sent = tmp_path / "sent"
    argv = ["--agents", "prober", "--scenarios", IDS[0], "--access", "T", "--no-plots"]
    assert main(["eval", *argv, "--realizations", "prosody", "--out", str(sent)]) == 0
    capsys.readouterr()
    results = (sent / "results.jsonl").read_bytes()
    man_path = sent / "results.manifest.json"
    data = json.loads(man_path.read_text())
    elsewhere, cache = tmp_path / "elsewhere", tmp_path / "cache"
    data["run"].update(out=str(elsewhere), response_cache=str(cache))  # as someone sent it
    man_path.write_text(json.dumps(data))
    resolved = _resolved("--config", str(man_path))
    assert resolved["out"] == str(sent) and "response_cache" not in resolved
    assert _resolved("--config", str(sent), "--out", "mine")["out"] == "mine"  # a flag wins
    assert main(["eval", "--config", str(sent)]) == 0  # resumes where the manifest lies
    capsys.readouterr()
    assert (sent / "results.jsonl").read_bytes() == results
    assert not elsewhere.exists() and not cache.exists()


@pytest.mark.parametrize(
    ("key", "flag", "value"),
    [
        ("base_url", "--base-url", "http://evil.example/v1"),
        ("ray_address", "--ray-address", "10.0.0.9:6379"),
    ],
)
def test_a_manifest_never_chooses_a_server_or_cluster(tmp_path, capsys, key, flag, value):
    path = _manifest_from(tmp_path, "sent", agents=["openai:m"], **{key: value})
    err = _error(capsys, "--config", path)
    assert f"the run used {flag} {value}" in err and f"give {flag} on the command line" in err
    mine = "http://127.0.0.1:8000/v1" if key == "base_url" else "127.0.0.1:6379"
    assert _resolved("--config", path, flag, mine)[key] == mine


def test_a_manifest_never_turns_on_a_models_own_code(tmp_path, capsys):
    path = _manifest_from(
        tmp_path, "sent", agents=["hf:/somewhere"], settings={"trust_remote_code": True}
    )
    err = _error(capsys, "--config", path)
    assert "--setting trust_remote_code=true" in err and "on the command line" in err
    secret = _manifest_from(tmp_path, "key", agents=["openai:m"], settings={"api_key_env": "GH"})
    err = _error(capsys, "--config", secret)
    assert '--setting api_key_env="GH"' in err and "the secret sent" in err
    assert _resolved("--config", secret, "--setting", "api_key_env=MINE")["settings"] == {
        "api_key_env": "MINE"
    }
    given = _resolved("--config", path, "--setting", "trust_remote_code=true")
    assert given["settings"] == {"trust_remote_code": True}
    off = _manifest_from(tmp_path, "off", agents=["eager"], settings={"trust_remote_code": False})
    assert _resolved("--config", off)["settings"] == {}


@pytest.mark.parametrize("agent", ["ppo:sent/model.zip", "maskable-ppo:sent"])
def test_a_manifest_never_chooses_a_pickled_model(tmp_path, capsys, agent):
    path = _manifest_from(tmp_path, "sent", agents=["eager", agent])
    err = _error(capsys, "--config", path)
    assert f"agents include {agent}" in err and "give --agents on the command line" in err
    assert _resolved("--config", path, "--agents", agent)["agents"] == [agent]


@pytest.mark.parametrize(
    "agent",
    [
        "litellm:oobabooga/http://10.0.0.1:5000/x",
        "litellm:huggingface/HTTPS://endpoint.example/x",
        "litellm:openai/Hosted_VLLM/Ws://10.0.0.2/v1",
    ],
)
def test_a_manifest_never_chooses_a_server_through_a_model_string(tmp_path, capsys, agent):
    path = _manifest_from(tmp_path, "sent", agents=["eager", agent])
    err = _error(capsys, "--config", path)
    assert len(err.strip().splitlines()) == 1, err
    assert f"agents include {agent}" in err and "names a server" in err, err
    assert "give --agents on the command line" in err, err
    assert _resolved("--config", path, "--agents", agent)["agents"] == [agent]
    # --base-url does not stand for it: the model string, not base_url, names the host
    err = _error(capsys, "--config", path, "--base-url", "http://127.0.0.1:8000/v1")
    assert "give --agents on the command line" in err, err
    plain = _manifest_from(tmp_path, "plain", agents=["litellm:openai/gpt-4o-mini", "eager"])
    assert _resolved("--config", plain)["agents"] == ["litellm:openai/gpt-4o-mini", "eager"]


def test_a_url_in_a_model_string_is_redacted_in_the_manifest():
    agent = "litellm:huggingface/https://user:hunter2@endpoint.example/x?api_key=abc123&n=1"
    data = manifest(GridConfig(agents=("prober",)), {"agents": [agent, "eager"]})
    text = json.dumps(data["run"])
    assert "hunter2" not in text and "abc123" not in text, text
    assert data["run"]["agents"] == [
        "litellm:huggingface/https://endpoint.example/x?api_key=[redacted]&n=1",
        "eager",
    ]


def test_a_manifest_without_a_run_configuration_is_a_clear_error(tmp_path, capsys):
    old = {"config": GridConfig(agents=("prober",)).to_dict(), "bank_version": 3}
    path = _file(tmp_path, json.dumps(old), "results.manifest.json")
    err = _error(capsys, "--config", path)
    assert "holds no run configuration" in err and "original flags" in err
    path = _file(tmp_path, json.dumps({**old, "run": ["prober"]}), "results.manifest.json")
    assert "run: got ['prober'], expected an object" in _error(capsys, "--config", path)


def test_the_manifest_stores_the_run_without_credentials():
    run = {
        "agents": ["openai:m"],
        "base_url": "http://user:hunter2@example.org/v1?api_key=abc",
        "settings": {"extra_body": {"note": "token=abcdef123456"}, "stop": ["sk-abcdefghijkl"]},
    }
    data = manifest(GridConfig(agents=("prober",)), run)
    text = json.dumps(data["run"])
    assert "hunter2" not in text and "api_key=abc" not in text and "abcdef123456" not in text
    assert "sk-abcdefghijkl" not in text and data["run"]["agents"] == ["openai:m"]
    assert data["run"]["base_url"].startswith("http://example.org/v1")
    assert "run" not in manifest(GridConfig(agents=("prober",)))  # without one: no key


@pytest.mark.parametrize(
    ("name", "expected", "settings"),
    [
        (
            "vllm-text.toml",
            {"agents": ["openai:Qwen/Qwen3-8B"], "access": ["T", "T+S"], "spoken": False},
            {"temperature": 0, "chat_template_kwargs": {"enable_thinking": False}},
        ),
        (
            "vllm-audio.toml",
            {"agents": ["openai:Qwen/Qwen2.5-Omni-7B"], "access": ["T", "A+T"], "spoken": True},
            {"send_audio": True},
        ),
        (
            "two-stage.toml",
            {"perceiver": "self", "access": ["A+T"], "spoken": True},
            {"send_audio": True},
        ),
    ],
)
def test_the_example_configs_resolve(capsys, tmp_path, monkeypatch, name, expected, settings):
    from hear2act_agents.registry import AgentFactory

    monkeypatch.chdir(tmp_path)  # the examples' relative folders (response_cache) land here
    path = str(EXAMPLES / name)
    printed = _printed(capsys, "--config", path)
    resolved = _resolved("--config", path)
    assert resolved["base_url"] == "http://127.0.0.1:8000/v1"
    assert {k: resolved[k] for k in expected} == expected
    assert settings.items() <= resolved["settings"].items()
    assert _printed(capsys, "--config", path, "--runs", "1") == printed  # runs = 1 there too
    # the settings fit the agent kind: its agent builds (no request is sent)
    run = EvalRun.of(resolved)
    agent = AgentFactory(run.agent_settings(), allow_clarify=not run.spoken)(run.agents[0])
    assert agent.backend.supports_audio is ("A+T" in resolved["access"])


def test_a_run_file_may_hold_its_price_table(tmp_path, capsys, server):
    import csv

    out = tmp_path / "out"
    text = (
        f'agents = ["openai:scripted"]\nbase_url = "{server}"\nscenarios = {IDS[:1]!r}\n'.replace(
            "'", '"'
        )
        + 'realizations = ["prosody"]\naccess = ["T"]\nno_plots = true\n'
        + f'out = "{out}"\n'
        + '[prices."openai:scripted"]\nprompt = 1.5\ncompletion = 2\n'
    )
    path = _file(tmp_path, text)
    printed = _printed(capsys, "--config", path)
    assert 'prices = { "openai:scripted" = { completion = 2, prompt = 1.5 } }' in printed
    again = _file(tmp_path, printed, "printed.toml")  # --print-config round-trips it
    assert _printed(capsys, "--config", again) == printed
    assert main(["eval", "--config", path]) == 0
    (row,) = csv.DictReader((out / "usage.csv").open())
    tokens = (int(row["prompt_tokens"]), int(row["completion_tokens"]))
    assert tokens[0] > 0 and float(row["cost_usd"]) == pytest.approx(
        (1.5 * tokens[0] + 2 * tokens[1]) / 1e6
    )
    # the manifest keeps the table, so a rerun from it prices the same
    stored = json.loads((out / "results.manifest.json").read_text())["run"]
    assert stored["prices"] == {"openai:scripted": {"prompt": 1.5, "completion": 2}}
    # --prices PATH on the command line replaces the file's table
    assert _resolved("--config", path, "--prices", "other.toml")["prices"] == "other.toml"


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ('[prices."m"]\nprompt = -1\ncompletion = 1\n', ["prices", "'m'", "prompt", "-1"]),
        ('[prices."m"]\nprompt = nan\ncompletion = 1\n', ["prices", "prompt", "a number from 0"]),
        ('[prices."m"]\nprompt = 1\ncompletion = 1\ncurrency = "EUR"\n', ["unknown fields"]),
        ("[prices]\nm = 3\n", ["'m' must be a table"]),
    ],
)
def test_a_bad_price_table_in_a_run_file_is_named(tmp_path, capsys, table, words):
    err = _error(capsys, "--config", _file(tmp_path, 'agents = ["eager"]\n' + table))
    assert all(w in err for w in words), err
