"""Odd arguments, as a careless or hostile user types them: every command ends in a named error
(exit status 2, a one-line message) and never in a traceback or in work that should not start."""

from __future__ import annotations

import pytest

from hear2act_cli import main

#: {d} is a folder holding bad.jsonl (not JSON), badutf.jsonl (invalid UTF-8) and adir/.
COMMANDS = [
    [],
    ["nope"],
    ["demo", "--seed", "-5"],
    ["demo", "--seed", "x"],
    ["demo", "--scenario", "nope-01"],
    ["demo", "--realization", "loud"],
    ["demo", "--access", "Z"],
    ["demo", "--agent", "nope"],
    ["demo", "--max-actions", "0"],
    ["demo", "--max-actions", "-3"],
    ["demo", "--max-actions", "100000"],
    ["demo", "--prosody-strength", "nan"],
    ["demo", "--scenario-file", "{d}/bad.jsonl"],
    ["demo", "--scenario-file", "{d}/badutf.jsonl"],
    ["demo", "--scenario-file", "{d}/adir"],
    ["demo", "--scenario-file", "{d}/missing.jsonl"],
    ["scenarios"],
    ["scenarios", "show", "nope"],
    ["scenarios", "show", ""],
    ["scenarios", "validate", "{d}/adir"],
    ["scenarios", "validate", "{d}/missing"],
    ["scenarios", "validate", "{d}/badutf.jsonl"],
    ["scenarios", "export", "--format", "zip", "--out", "{d}/x"],
    ["scenarios", "leakage", "--scenario-file", "{d}/bad.jsonl"],
    ["scenarios", "leakage", "--domains", "{d}/adir", "--no-episodes", "--no-semantic"],
    ["benchmark", "--runs", "0"],
    ["benchmark", "--runs", "-1"],
    ["benchmark", "--workers", "0"],
    ["benchmark", "--backend", "gpu"],
    ["benchmark", "--split", "dev"],
    ["benchmark", "--agents", "nope"],
    ["benchmark", "--scenario-file", "{d}/bad.jsonl", "--out", "{d}/b1"],
    ["benchmark", "--out", "/proc/forbidden", "--agents", "eager", "--split", "test"],
    ["eval"],
    ["eval", "--agents"],
    ["eval", "--agents", "nope"],
    ["eval", "--agents", "eager", "--setting", "x"],
    ["eval", "--agents", "eager", "--setting", "=3"],
    ["eval", "--agents", "openai:m", "--base-url", "ftp://x"],
    ["eval", "--agents", "eager", "--access", "Q"],
    ["eval", "--agents", "eager", "--runs", "0"],
    ["eval", "--agents", "eager", "--scenarios", "nope-01", "--out", "{d}/e1"],
    ["report"],
    ["report", "{d}/missing.jsonl"],
    ["report", "{d}/bad.jsonl"],
    ["report", "{d}/adir"],
    ["report", "{d}/badutf.jsonl"],
    ["train", "--timesteps", "0"],
    ["train", "--timesteps", "-5"],
    ["train", "--turn-cost", "nan"],
    ["train", "--turn-cost", "-1"],
    ["train", "--access", "S"],
    ["train", "--n-envs", "-1"],
    ["rl-eval"],
    ["rl-eval", "--models", "nope"],
    ["perceive", "--strength", "-1"],
    ["render", "--workers", "0"],
    ["render", "--limit", "-1"],
    ["render", "--renderer", "nope"],
    ["render", "--cross-split", "--split", "test"],
    ["perceive", "--renderer", "no_such_module_x:y"],
    ["perceive", "--renderer", "os:getcwd"],
    ["benchmark", "--renderer", "hear2act_env.speech.espeak:EspeakRenderer", "--out", "{d}/b2"],
    ["benchmark", "--perceiver", "{d}/bad.jsonl", "--out", "{d}/b3"],
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("odd")
    (d / "bad.jsonl").write_text("not json\n")
    (d / "badutf.jsonl").write_bytes(b"\xff\xfe\n")
    (d / "adir").mkdir()
    return d


def test_the_sweep_is_large_enough():
    assert len(COMMANDS) >= 40


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "(none)")
def test_odd_arguments_end_in_a_named_error(command, folder, capsys):
    argv = [part.format(d=folder) for part in command]
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2, (argv, rc, err[-300:])
    assert "error" in err and "Traceback" not in err, err[-300:]
