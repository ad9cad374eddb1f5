"""``hear2act eval`` end to end against the local OpenAI-compatible server."""

import json

import pytest

from hear2act_cli import main
from hear2act_env.evaluation.runner import load_records
from hear2act_env.scenarios.bank import load_bank

IDS = [s.id for s in load_bank() if s.split == "test"][:3]


def test_eval_http_agent_and_baseline(server, tmp_path, capsys):
    out = tmp_path / "ev"
    args = [
        "eval",
        "--agents",
        "openai:scripted",
        "--agents",
        "state-aware",
        "--base-url",
        server,
        "--scenarios",
        *IDS,
        "--out",
        str(out),
        "--no-plots",
        "--workers",
        "3",
        "--response-cache",
        str(tmp_path / "cache"),
        "--setting",
        "temperature=0",
    ]
    assert main(args) == 0
    records = load_records(out / "results.jsonl")
    assert len(records) == 2 * 2 * 2 * 3  # agents x realizations x (T, T+S) x scenarios
    llm = [r for r in records if r.key.agent == "openai:scripted"]
    assert all(r.error is None and r.agent_stats["calls"] > 0 for r in llm)
    manifest = json.loads((out / "results.manifest.json").read_text())
    assert manifest["config"]["agent_options"]["base_url"] == server
    assert "openai:scripted" in capsys.readouterr().out
    # a rerun resumes: nothing is recomputed, nothing duplicated
    assert main(args) == 0
    assert len(load_records(out / "results.jsonl")) == len(records)


def test_a_server_that_is_down_stops_eval_at_the_probe(server, tmp_path, capsys):
    out = tmp_path / "ev"
    args = ["eval", "--agents", "openai:down", "--base-url", server, "--scenarios", IDS[0]]
    args += ["--out", str(out), "--no-plots", "--setting", "max_retries=0"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "did not answer a probe request" in err and "Traceback" not in err
    assert not (out / "results.jsonl").exists()


def test_eval_failing_server_is_recorded_not_fatal(server, tmp_path, capsys):
    """Without the probe (or when the server fails mid-run), every episode it could not serve
    is an infrastructure error, left out of the figures."""
    out = tmp_path / "ev"
    args = ["eval", "--agents", "openai:down", "--base-url", server, "--scenarios", IDS[0]]
    args += ["--access", "T", "--realizations", "prosody", "--out", str(out), "--no-plots"]
    args += ["--setting", "max_retries=0", "--no-probe"]
    assert main(args) == 3  # finished, with errored episodes
    (record,) = load_records(out / "results.jsonl")
    # the server never answered: an infrastructure error, not the agent's failure
    assert record.error is not None and record.error_kind == "infrastructure"
    assert "InfrastructureError" in record.error and not record.success
    text = capsys.readouterr().out
    assert "1 with errors (1 infrastructure; left out of every figure" in text


@pytest.mark.parametrize(
    ("agent", "setting", "message"),
    [
        ("openai:m", "max_token=8", "unknown settings ['max_token']"),
        ("openai:m", "max_retries=-1", "max_retries >= 0"),
        ("openai:m", "deadline=0", "deadline must be > 0"),
        ("hf:/nonexistent/model", "temperature=0", "no model folder"),
    ],
)
def test_eval_config_errors_fail_before_the_first_episode(
    tmp_path, capsys, agent, setting, message
):
    out = tmp_path / "ev"
    args = ["eval", "--agents", agent, "--scenarios", IDS[0], "--out", str(out)]
    args += ["--setting", setting, "--no-plots"]
    if agent.startswith("openai:"):
        args += ["--base-url", "http://127.0.0.1:9/v1"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (out / "results.jsonl").exists()  # nothing ran


def test_no_file_of_an_eval_holds_the_key_even_when_the_server_echoes_it(
    server, tmp_path, monkeypatch, capsys
):
    key = "sk-fake-0123456789abcdefSECRET"
    monkeypatch.setenv("HEAR2ACT_FAKE_KEY", key)
    out = tmp_path / "ev"
    args = ["eval", "--agents", "openai:echo-headers", "--base-url", f"{server}?api-key={key}"]
    args += ["--scenarios", IDS[0], "--access", "T", "--realizations", "prosody"]
    args += ["--out", str(out), "--no-plots", "--setting", "api_key_env=HEAR2ACT_FAKE_KEY"]
    args += ["--setting", "max_retries=0"]
    assert main(args) == 2  # the probe: the echoed key is redacted from the message too
    assert key not in capsys.readouterr().err
    assert main([*args, "--no-probe"]) == 3  # finished, with errored episodes
    (record,) = load_records(out / "results.jsonl")
    assert record.error_kind == "infrastructure" and "[redacted]" in record.error
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written and all(key.encode() not in p.read_bytes() for p in written)
    assert key not in capsys.readouterr().out


def test_eval_help_lists_every_perceiver_kind(capsys):
    from hear2act_agents.registry import PERCEIVER_LABELS

    with pytest.raises(SystemExit) as stop:
        main(["eval", "--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the lines
    usage = text[text.index("--perceiver {") :].split("}")[0]
    for kind in PERCEIVER_LABELS:  # every kind the factory names agents after
        shown = kind if kind.startswith("self") else f"{kind}:PATH"
        assert shown in usage.split("{")[1].split(","), (kind, usage)
        assert f"{shown}:" in text  # and the help says what it does
