"""``eval --trust-audio``: an audio agent runs only against a server shown to hear, unless the
user says to trust it; the manifest and the report say which."""

import json

from hear2act_cli import main
from hear2act_env.scenarios.bank import load_bank

SID = next(s.id for s in load_bank() if s.split == "test")


def _args(server, model, out, *extra):
    return [
        "eval", "--agents", f"openai:{model}", "--base-url", server, "--scenarios", SID,
        "--access", "A+T", "--realizations", "prosody", "--out", str(out), "--no-plots",
        "--setting", "send_audio=true", *extra,
    ]  # fmt: skip


def test_a_deaf_server_stops_the_run_even_without_the_probe(server, tmp_path, capsys):
    for extra in ((), ("--no-probe",)):
        assert main(_args(server, "deaf", tmp_path / "deaf", *extra)) == 2
        err = capsys.readouterr().err.strip()
        assert "--trust-audio" in err and "\n" not in err
        assert not (tmp_path / "deaf" / "results.jsonl").exists()


def test_a_hearing_server_runs_and_trust_is_recorded(server, tmp_path, capsys):
    assert main(_args(server, "hearing", tmp_path / "hears")) == 0
    capsys.readouterr()
    assert main(_args(server, "deaf", tmp_path / "trusted", "--trust-audio")) == 0
    out = capsys.readouterr().out
    manifest = json.loads((tmp_path / "trusted" / "results.manifest.json").read_text())
    assert manifest["config"]["agent_options"]["trust_audio"] is True
    assert "audio trusted, not checked" in out
