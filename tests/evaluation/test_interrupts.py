"""SIGINT and SIGTERM stop a run: no new episode starts, finished ones are on disk, the command
exits 130 within 5 s with one line on how to resume, and the same command then finishes the
grid with every episode exactly once.

Each test runs ``hear2act eval`` as a real process against a counting chat server in this
process (every reply takes 0.3 s until the signal) and signals the process while calls are in
flight. The server's replies name their topic, so the agent never loads the MiniLM topic matcher
(about 8 s per process): what is under test here is stopping and resuming, not parsing.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from hear2act_env.config import EnvConfig
from hear2act_env.evaluation.runner import GridConfig, load_records
from tests.llm.fake_openai_server import SCRIPT

IDS = tuple(GridConfig(agents=("prober",), env=EnvConfig(split="test")).scenario_ids()[:6])
REPLY_DELAY_S = 0.3
# fake_openai_server's script, its one free-text question given an explicit topic
TAGGED_SCRIPT = [r.replace("**Action:** ask\n", "**Action:** ask [TOPIC: OPEN]\n") for r in SCRIPT]


class CountingServer:
    """Chat completions that answer after ``delay`` seconds, logging each request's arrival
    time and whether it opens an episode (the first call of an episode has no turn yet)."""

    def __init__(self) -> None:
        self.arrivals: list[tuple[float, bool]] = []
        self.delay = REPLY_DELAY_S
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                messages = body["messages"]
                text = TAGGED_SCRIPT[max(0, _turns(messages)) % len(TAGGED_SCRIPT)]
                first = _turns(messages) <= 0
                with owner.lock:
                    owner.arrivals.append((time.monotonic(), first))
                time.sleep(owner.delay)
                reply = {
                    "choices": [
                        {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
                data = json.dumps(reply).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client went away (killed run)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def after(self, t: float) -> list[bool]:
        with self.lock:
            return [first for when, first in self.arrivals if when > t]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _first_user(messages: list[dict]) -> dict:
    return next((m for m in messages if m.get("role") == "user"), {"content": ""})


def _turns(messages: list[dict]) -> int:
    content = _first_user(messages)["content"]
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return len(re.findall(r"^Assistant:", content, flags=re.M)) - 1  # minus the opening


@pytest.fixture
def server():
    s = CountingServer()
    yield s
    s.close()


def _command(url: str, out: Path, backend: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "hear2act_cli",
        "eval",
        "--agents",
        "openai:scripted",
        "--base-url",
        url,
        "--scenarios",
        *IDS,
        "--access",
        "T",
        "--realizations",
        "prosody",
        "--backend",
        backend,
        "--workers",
        "2",
        "--out",
        str(out),
        "--no-plots",
        "--no-probe",
    ]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    env.pop("RAY_ADDRESS", None)
    return env


def _wait_for(predicate, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _signal_when(command: list[str], ready, sig: int) -> tuple[float, str]:
    """Start ``command``, send ``sig`` once ``ready()`` holds, and check that it exits 130
    within 5 s without a traceback; return when the signal was sent and its stderr."""
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
    )
    try:
        assert _wait_for(ready, 120), "the command did not get going"
        signalled = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert took < 5, f"exit took {took:.1f} s"
    assert "Traceback" not in err
    return signalled, err


@pytest.mark.parametrize(
    ("backend", "sig"),
    [
        ("serial", signal.SIGINT),
        ("thread", signal.SIGINT),
        ("thread", signal.SIGTERM),
        ("process", signal.SIGINT),
        pytest.param("ray", signal.SIGINT, marks=pytest.mark.slow),
    ],
)
def test_a_signal_stops_the_run_and_the_same_command_resumes(server, tmp_path, backend, sig):
    out = tmp_path / "run"
    # let the run get going: some calls made (a few episodes may have finished)
    signalled, err = _signal_when(
        _command(server.url, out, backend), lambda: len(server.after(0)) >= 8, sig
    )
    assert "run the same command again to resume" in err.splitlines()[-1]
    # no new episode started after the signal; at most the calls then in flight reached the
    # server (one per worker), and none once those were abandoned
    late = server.after(signalled)
    assert not any(late), f"{sum(late)} episodes started after the signal"
    assert len(late) <= 2
    time.sleep(1.0)
    assert len(server.after(signalled)) == len(late), "calls went on after the exit"
    server.delay = 0.0  # the delay kept calls in flight for the signal; the rerun needs none
    # what finished is on disk, once; the same command finishes the rest
    before = load_records(out / "results.jsonl")
    assert all(r.error is None for r in before)
    assert len(before) < len(IDS)
    rerun = subprocess.run(
        _command(server.url, out, backend), capture_output=True, text=True, env=_env(), timeout=300
    )
    assert rerun.returncode == 0, rerun.stderr
    lines = (out / "results.jsonl").read_text().splitlines()
    keys = [json.loads(line)["key"] for line in lines]
    assert len(keys) == len({json.dumps(k, sort_keys=True) for k in keys}) == len(IDS)
    assert all(r.error is None for r in load_records(out / "results.jsonl"))


@pytest.mark.slow
def test_a_signal_stops_training_with_a_resume_line(tmp_path):
    """``train`` (no cooperative loop: the signal interrupts SB3's loop) exits 130 quickly and
    says that no model was saved."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "hear2act_cli", "train", "--timesteps", "1000000"]
    _, err = _signal_when(
        [*command, "--out", str(out), "--quiet"],
        lambda: (out / "progress.csv").exists(),
        signal.SIGINT,
    )
    assert "no model was saved" in err.splitlines()[-1]
    assert not (out / "model.zip").exists()
