"""Odd command lines, as a careless or hostile user types them: every one ends in a correct
result or a one-line error with its documented exit status (0 done, 2 bad arguments or
configuration, 3 episodes errored), never a traceback, a hang or a write outside the paths
given.

Lines that could start a server or a long job run as subprocesses under a timeout; the rest run
in this process through ``hear2act_cli.main`` (argparse's own usage errors exit 2).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hear2act_cli import main
from hear2act_env.config import EnvConfig
from hear2act_env.evaluation.runner import GridConfig

ROOT = Path(__file__).resolve().parents[1]
SID = GridConfig(agents=("prober",), env=EnvConfig(split="test")).scenario_ids()[0]
ONE = ["--scenarios", SID, "--access", "T", "--realizations", "prosody", "--no-plots"]
DEEP = "[" * 50_000 + "]" * 50_000
ANY_DONE = (0, 3)


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> dict[str, str]:
    """Paths the lines name: a regular file, a path below it (never writable), garbage, an
    empty file, a deep-JSON file, a FIFO, a valid results file with its manifest."""
    tmp = tmp_path_factory.mktemp("hostile")
    (tmp / "file.txt").write_text("not a folder\n")
    (tmp / "garbage.bin").write_bytes(os.urandom(2048) + b"\x00\xff")
    (tmp / "empty.jsonl").write_text("")
    (tmp / "deep.jsonl").write_text(DEEP + "\n")
    (tmp / "deep.json").write_text(DEEP)
    (tmp / "notjson.toml").write_text("[[[ this is = not toml\n")
    os.mkfifo(tmp / "fifo")
    ok = tmp / "ok"
    assert main(["eval", "--agents", "prober", *ONE, "--out", str(ok)]) == 0
    return {
        "tmp": str(tmp),
        "file": str(tmp / "file.txt"),
        "sub": str(tmp / "file.txt" / "sub"),
        "garbage": str(tmp / "garbage.bin"),
        "empty": str(tmp / "empty.jsonl"),
        "deep": str(tmp / "deep.jsonl"),
        "deepjson": str(tmp / "deep.json"),
        "badtoml": str(tmp / "notjson.toml"),
        "fifo": str(tmp / "fifo"),
        "results": str(ok / "results.jsonl"),
        "new": str(tmp / "new-out"),
    }


#: (command line, accepted exit statuses). ``{name}`` is a path of the ``place`` fixture.
IN_PROCESS: list[tuple[str, tuple[int, ...]]] = [
    # demo
    ("demo --seed -1", (0, 2)),
    ("demo --seed abc", (2,)),
    ("demo --scenario no-such-scenario", (2,)),
    ("demo --agent nobody", (2,)),
    ("demo --agent openai:", (2,)),
    ("demo --agent ppo:/nonexistent/model", (2,)),
    ("demo --env Hear2Act-Nope-v0", (2,)),
    ("demo --save-audio {sub}", (2,)),
    ("demo --save-audio /proc/hear2act-no/clips", (2,)),
    ("demo --save-audio {file}", (2,)),
    # render
    ("render --limit x", (2,)),
    ("render --limit -3", (2,)),
    ("render --workers 0", (2,)),
    ("render --prosody-strength nan", (2,)),
    ("render --prosody-strength 3", (2,)),
    ("render --renderer nosuch", (2,)),
    ("render --renderer os:system", (2,)),
    ("render --renderer builtins:exec", (2,)),
    ("render --renderer :", (2,)),
    ("render --renderer hear2act_env.nope:Renderer", (2,)),
    ("render --audio-cache {sub} --limit 1", (2,)),
    ("render --scenario-file {garbage}", (2,)),
    ("render --scenario-file {empty}", (2,)),
    ("render --scenario-file {deepjson}", (2,)),
    ("render --scenario-file /nonexistent/scenarios.json", (2,)),
    ("render --scenario-file {tmp}", (2,)),
    ("render --realizations nope", (2,)),
    # perceive
    ("perceive --save-perceiver {sub}", (2,)),
    ("perceive --save-perceiver /proc/hear2act-no.json", (2,)),
    ("perceive --per-scenario 0", (2,)),
    ("perceive --train-stride -1", (2,)),
    ("perceive --curve abc", (2,)),
    ("perceive --renderer nosuch", (2,)),
    ("perceive --json {sub}", (2,)),
    # scenarios
    ("scenarios", (2,)),
    ("scenarios show no-such-scenario", (2,)),
    ("scenarios show ''", (2,)),
    ("scenarios validate {garbage}", (2,)),
    ("scenarios validate {empty}", (2,)),
    ("scenarios validate {deepjson}", (2,)),
    ("scenarios validate {deep}", (2,)),
    ("scenarios validate /nonexistent.json", (2,)),
    ("scenarios validate {tmp}", (2,)),
    ("scenarios export --out {sub}", (2,)),
    ("scenarios export --out /proc/hear2act-no/bank.jsonl", (2,)),
    ("scenarios list --bogus", (2,)),
    # benchmark
    ("benchmark --agents nobody", (2,)),
    ("benchmark --agents ppo:/nonexistent/model --out {new}-b1 --no-audio", (2,)),
    ("benchmark --runs 0", (2,)),
    ("benchmark --workers 0", (2,)),
    ("benchmark --backend nope", (2,)),
    ("benchmark --ray-address 127.0.0.1:1", (2,)),
    ("benchmark --backend ray --ray-address nonsense --out {new}-b2", (2,)),
    ("benchmark --backend ray --ray-address [::1 --out {new}-b3", (2,)),
    ("benchmark --backend ray --ray-address 127.0.0.1:99999 --out {new}-b4", (2,)),
    ("benchmark --out {file}", (2,)),
    ("benchmark --out {sub}", (2,)),
    ("benchmark --renderer nosuch --out {new}-b5", (2,)),
    ("benchmark --renderer os:system --out {new}-b6", (2,)),
    ("benchmark --perceiver /nonexistent.json --out {new}-b7", (2,)),
    ("benchmark --perceiver {garbage} --out {new}-b8", (2,)),
    ("benchmark --perceiver {deepjson} --out {new}-b9", (2,)),
    ("benchmark --scenario-file {garbage} --out {new}-b10", (2,)),
    # eval
    ("eval", (2,)),
    ("eval --agents", (2,)),
    ("eval --agents nobody", (2,)),
    ("eval --agents ppo:/nonexistent/model --out {new}-e1", (2,)),
    ("eval --agents maskable-ppo:{garbage} --out {new}-e2", (2,)),
    ("eval --agents ppo: --out {new}-e3", (2,)),
    ("eval --agents openai:m --base-url http://[::1 --out {new}-e4", (2,)),
    ("eval --agents openai:m --base-url notaurl --out {new}-e5", (2,)),
    ("eval --agents openai:m --base-url ftp://example.invalid/v1 --out {new}-e6", (2,)),
    (
        "eval --agents openai:m --base-url http://127.0.0.1:1/v1 --setting max_retries=0 --out {new}-e7",
        (2,),
    ),
    ("eval --agents prober --setting temperature=0 --out {new}-e8", (2,)),
    ("eval --agents openai:m --setting nokeyvalue --out {new}-e9", (2,)),
    ("eval --agents openai:m --setting =1 --out {new}-e10", (2,)),
    ("eval --agents openai:m --setting temperature=-5 --no-probe --out {new}-e11", (2,)),
    ("eval --agents openai:m --setting bogus_setting=1 --no-probe --out {new}-e12", (2,)),
    ("eval --agents openai:m --response-cache {sub} --no-probe --out {new}-e13", (2,)),
    ("eval --agents prober --scenarios no-such-scenario --out {new}-e14", (2,)),
    ("eval --agents prober --runs 0", (2,)),
    ("eval --agents prober --access X", (2,)),
    ("eval --agents prober --split nope", (2,)),
    ("eval --agents prober --out {file}", (2,)),
    ("eval --agents prober --out {sub}", (2,)),
    ("eval --agents prober --prices /nonexistent.toml --out {new}-e15", (2,)),
    ("eval --agents prober --prices {badtoml} --out {new}-e16", (2,)),
    ("eval --agents prober --prices {fifo} --out {new}-e17", (2,)),
    ("eval --agents prober --scenario-file {deepjson} --out {new}-e18", (2,)),
    ("eval --agents prober --scenario-file {fifo} --out {new}-e19", (2,)),
    ("eval --agents openai:m --perceiver nope --no-probe --out {new}-e20", (2,)),
    ("eval --agents hf:/nonexistent/model --out {new}-e21", (2,)),
    ("eval --agents qwen2-audio:/nonexistent/model --access A+T --out {new}-e22", (2,)),
    ("eval --agents openai:m --access A+T --no-probe --out {new}-e23", (2,)),
    ("eval --agents prober --backend serial --workers 0", (2,)),
    ("eval --agents prober " + " ".join(ONE) + " --out {new}-e24", (0,)),
    ("eval --agents prober state-aware " + " ".join(ONE) + " --runs 2 --out {new}-e25", (0,)),
    # report
    ("report /nonexistent/results.jsonl", (2,)),
    ("report {garbage}", (2,)),
    ("report {empty}", (2,)),
    ("report {deep}", (2,)),
    ("report {fifo}", (2,)),
    ("report {tmp}", (2,)),
    ("report {results} --out {sub}", (2,)),
    ("report {results} --out {file}", (2,)),
    ("report {results} --episode no-such-episode", (2,)),
    ("report {results} {results} --episode x", (2,)),
    ("report {results} --prices {badtoml}", (2,)),
    ("report {results} --no-plots --out {new}-r1", (0,)),
    ("report {results} --leaderboard --out {new}-r2", (0, 2)),
    # train and rl-eval (bad arguments only: they fail before any training)
    ("train --timesteps 0", (2,)),
    ("train --turn-cost -1", (2,)),
    ("train --turn-cost nan", (2,)),
    ("train --n-envs -1", (2,)),
    ("train --vec nope", (2,)),
    ("train --out {sub} --timesteps 1", (2,)),
    ("rl-eval --runs 0", (2,)),
    ("rl-eval --out {sub} prosody-T-c0.05", (2,)),
    ("rl-eval --baselines nobody --out {new}-rl1 prosody-T-c0.05", (2,)),
    # view
    ("view /nonexistent/results.jsonl --out {new}-v1", (2,)),
    ("view {results} --out {sub}", (2,)),
    ("view {results} --out {file}", (2,)),
    ("view {results} --max-pages 0", (2,)),
    ("view {results} --seed -1", (2,)),
    # play and audit: argument errors only (a valid line would serve)
    ("play", (2,)),
    ("play --name x --episodes 0", (2,)),
    ("play --name x --turn-cost nan", (2,)),
    ("play --name x --port 99999", (2,)),
    ("play --name x --access Z", (2,)),
    ("audit", (2,)),
    ("audit --out x --score y", (2,)),
    ("audit --score /nonexistent/audit", (2,)),
    ("audit --score {file}", (2,)),
    ("audit --out {new}-a1 --clips 3", (2,)),
    ("audit --out {new}-a2 --port -1", (2,)),
    ("audit --out {sub}", (2,)),
]

#: Lines run as a process under a timeout (a mistake there would serve or train for long).
SUBPROCESS: list[tuple[str, tuple[int, ...]]] = [
    ("play --name x --out {sub} --port 0", (2,)),
    ("play --name x --host 203.0.113.9 --port 0", (2,)),
    ("play --name x --scenario-file {garbage} --port 0", (2,)),
    ("audit --out {new}-a3 --host 203.0.113.9 --port 0", (2,)),
    ("train --scenario-file {garbage} --timesteps 1 --out {new}-t1", (2,)),
    ("train --init-from /nonexistent/model --timesteps 1 --out {new}-t2", (2,)),
]


def _argv(line: str, place: dict[str, str]) -> list[str]:
    import shlex

    return [part.format(**place) for part in shlex.split(line)]


def _call(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors
        return 2 if exc.code is None else int(exc.code)


def test_there_are_at_least_a_hundred_odd_lines():
    commands = {line.split()[0] for line, _ in IN_PROCESS + SUBPROCESS}
    assert len(IN_PROCESS) + len(SUBPROCESS) >= 100
    assert commands >= {"demo", "render", "perceive", "scenarios", "benchmark", "eval"}
    assert commands >= {"report", "train", "rl-eval", "view", "play", "audit"}


@pytest.mark.parametrize(("line", "codes"), IN_PROCESS, ids=[line for line, _ in IN_PROCESS])
def test_an_odd_line_ends_in_a_result_or_one_line_error(place, capsys, line, codes):
    before = set(os.listdir(place["tmp"]))
    code = _call(_argv(line, place))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code in codes, f"exit {code}; stderr: {err[-800:]}"
    if code == 2:
        errors = [e for e in err.splitlines() if e.startswith(("hear2act: error", "usage:"))]
        assert errors, err
        assert len([e for e in err.splitlines() if e.startswith("hear2act: error")]) <= 1
    made = set(os.listdir(place["tmp"])) - before
    named = {Path(p.format(**place)).name for p in line.split() if "{" in p}
    assert all(any(m.startswith(n) for n in named) for m in made), f"wrote {made}"


@pytest.mark.parametrize(("line", "codes"), SUBPROCESS, ids=[line for line, _ in SUBPROCESS])
def test_an_odd_line_that_could_serve_or_train_stops_in_time(place, line, codes):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "hear2act_cli", *_argv(line, place)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert "Traceback" not in proc.stderr
    assert proc.returncode in codes, proc.stderr[-800:]


def test_a_run_whose_every_episode_errors_exits_3(place, capsys, tmp_path):
    """An agent whose model cannot be reached errors in every episode: the run finishes,
    records the errors as infrastructure and says so in its exit status."""
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = ["eval", "--agents", "openai:m", *ONE, "--out", str(tmp_path / "down")]
    argv += ["--base-url", f"http://127.0.0.1:{port}/v1", "--no-probe"]
    argv += ["--setting", "max_retries=0", "--setting", "timeout=2"]
    assert _call(argv) == 3
    err = capsys.readouterr().err
    assert "1 of 1 episodes errored (infrastructure 1)" in err
    assert "Traceback" not in err


def test_a_deeply_nested_results_line_is_skipped_on_resume_report_and_view(place, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(Path(place["results"]).parent, run)
    results = run / "results.jsonl"
    good = results.read_text()
    results.write_text(DEEP + "\n" + good)
    with pytest.warns(UserWarning, match="corrupt record"):
        assert _call(["eval", "--agents", "prober", *ONE, "--out", str(run)]) == 0
    with pytest.warns(UserWarning, match="corrupt record"):
        assert _call(["report", str(results), "--no-plots"]) == 0
    assert _call(["view", str(results), "--out", str(tmp_path / "site"), "--no-plots"]) == 0
    assert json.loads(good.splitlines()[0])["key"]["scenario"] == SID
