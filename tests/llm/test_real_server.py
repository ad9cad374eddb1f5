"""``hear2act eval`` against a real OpenAI-compatible server: ``transformers serve`` on a tiny
randomly initialised chat model (``tiny.build_chat_model``), offline, on CPU.

The server runs as a subprocess in its own process group on a free 127.0.0.1 port, pinned to
the tiny model's folder (``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE``: nothing is downloaded),
and is stopped by its process group at teardown. Its access log counts the chat requests it
served, which is how the test checks that a resumed run does no work twice. A random model
answers garbage: the policy re-asks and falls back (format errors), but every episode finishes
without an error. The fault injection tests keep using ``fake_openai_server.py``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from hear2act_env.evaluation.runner import load_records
from hear2act_env.scenarios.bank import load_bank

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("openai")
transformers = pytest.importorskip("transformers")
if int(transformers.__version__.split(".")[0]) < 5:
    pytest.skip(
        "the `transformers serve` CLI used here is transformers 5's", allow_module_level=True
    )

IDS = [s.id for s in load_bank() if s.split == "test"][:2]
READY_S = 120.0  # model load + server start, bounded
CHAT = "POST /v1/chat/completions"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
    )
    env.pop("OPENAI_API_KEY", None)
    return env


def _stop(proc: subprocess.Popen) -> None:
    """End ``proc``'s process group (it was started in a session of its own)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(
        ProcessLookupError, PermissionError
    ):  # anything left in the group (the group outlives its leader)
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


class Server:
    def __init__(self, proc: subprocess.Popen, log: Path, base_url: str, model: str) -> None:
        self.proc, self.log, self.base_url, self.model = proc, log, base_url, model

    def chat_requests(self) -> int:
        """Chat completion requests the server has answered (its access log)."""
        return self.log.read_text(errors="replace").count(CHAT)

    def settled_chat_requests(self, quiet_s: float = 1.0, bound_s: float = 30.0) -> int:
        """``chat_requests`` once it has not changed for ``quiet_s`` (requests of a killed
        client may still be finishing)."""
        end = time.monotonic() + bound_s
        last, since = self.chat_requests(), time.monotonic()
        while time.monotonic() < end:
            time.sleep(0.1)
            now = self.chat_requests()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                break
        return last


@pytest.fixture(scope="module")
def real_server(tiny_chat, tmp_path_factory):
    log = tmp_path_factory.mktemp("transformers-serve") / "serve.log"
    port = _free_port()
    model = str(tiny_chat)
    cmd = [sys.executable, "-m", "transformers.cli.transformers", "serve", model]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            cmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(), start_new_session=True
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + READY_S
        listed = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as resp:
                    listed = json.loads(resp.read())
                break
            except OSError:
                time.sleep(0.25)
        if listed is None:
            raise RuntimeError(
                f"transformers serve did not answer /v1/models within {READY_S:g} s (exit "
                f"{proc.poll()}):\n{log.read_text(errors='replace')[-3000:]}"
            )
        ids = [m["id"] for m in listed["data"]]
        assert ids == [model], ids  # a pinned server lists its model under the name it was given
        yield Server(proc, log, base_url, model)
    finally:
        _stop(proc)


def _eval_cmd(server: Server, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "hear2act_cli",
        "eval",
        "--agents",
        f"openai:{server.model}",
        "--base-url",
        server.base_url,
        "--scenarios",
        *IDS,
        "--access",
        "T",
        "T+S",
        "--realizations",
        "prosody",
        "--out",
        str(out),
        "--no-plots",
        "--workers",
        "2",
        "--setting",
        "max_tokens=16",
        "--setting",
        "temperature=0",
        "--setting",
        "topic_matcher=keyword",  # the MiniLM matcher costs ~8 s of loading per run
    ]


def _lines(path: Path) -> list[dict]:
    """The complete records of a results file as written (no de-duplication)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    return [json.loads(line) for line in data[: data.rfind(b"\n") + 1].splitlines() if line]


def _key(row: dict) -> str:
    k = row["key"]
    return "|".join(str(k[f]) for f in sorted(k))


# slow (starting the server takes about 10 s, the three runs as long): .ci/run's slow step runs
# it. The default run checks that an eval against a stand-in chat server resumes after SIGINT
# and SIGTERM (tests/evaluation/test_interrupts.py) and that a grid killed with SIGKILL resumes
# (tests/evaluation/test_trustworthy.py).
@pytest.mark.slow
def test_eval_against_transformers_serve_resumes_after_a_kill(real_server, tmp_path):
    out = tmp_path / "ev"
    results = out / "results.jsonl"
    cmd = _eval_cmd(real_server, out)
    expected = 2 * len(IDS)  # (T, T+S) x scenarios, one realization

    # 1. killed (SIGKILL, its whole process group) as soon as its first episode is written
    before = real_server.chat_requests()
    err = tmp_path / "first.err"
    with err.open("wb") as fh:
        first = subprocess.Popen(
            cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=fh, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 120
        while not _lines(results) and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.poll() is None, f"the first run ended early: {err.read_text()[-2000:]}"
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        _stop(first)
    assert real_server.settled_chat_requests() > before  # the run reached the server
    killed = _lines(results)
    assert 1 <= len(killed) < expected
    assert all(r["error"] is None for r in killed)

    # 2. the same command resumes: only the missing episodes run, each once
    served = real_server.settled_chat_requests()
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{expected} episodes, 0 with errors" in done.stdout
    rows = _lines(results)
    counts = Counter(_key(r) for r in rows)
    assert len(counts) == expected and set(counts.values()) == {1}, counts
    new = rows[len(killed) :]
    assert {_key(r) for r in new}.isdisjoint(_key(r) for r in killed)
    # the server answered the probe and exactly the calls of the episodes run now
    assert real_server.settled_chat_requests() - served == 1 + sum(
        r["agent_stats"]["calls"] for r in new
    )

    records = load_records(results)
    assert len(records) == expected
    for r in records:
        assert r.error is None and r.error_kind is None, r.error
        assert r.key.agent == f"openai:{real_server.model}"
        assert r.agent_stats["calls"] >= r.actions > 0  # one call per turn at least
        assert r.agent_stats["api_errors"] == 0 and r.agent_stats["timeouts"] == 0
    manifest = json.loads((out / "results.manifest.json").read_text())
    assert manifest["config"]["agent_options"]["base_url"] == real_server.base_url

    # 3. a finished grid: the rerun appends nothing and sends only the probe
    data = results.read_bytes()
    served = real_server.settled_chat_requests(quiet_s=0.3)
    again = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert results.read_bytes() == data
    assert real_server.settled_chat_requests(quiet_s=0.3) - served == 1


@pytest.mark.slow
def test_audit_model_against_transformers_serve(real_server, tmp_path):
    """``hear2act audit --model`` against the real server: a text model's server drops the
    audio, so the hearing check refuses it before anything is made; trusted anyway, it
    labels every clip with one call each, token counts from the server."""
    folder = tmp_path / "audit"
    cmd = [
        sys.executable, "-m", "hear2act_cli", "audit", "--out", str(folder),
        "--clips", "4", "--context", "--model", f"openai:{real_server.model}",
        "--base-url", real_server.base_url, "--setting", "send_audio=true",
        "--setting", "max_tokens=8", "--audio-cache", str(tmp_path / "cache"),
    ]  # fmt: skip
    refused = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "ignored the audio" in refused.stderr and not folder.exists()

    served = real_server.settled_chat_requests()
    done = subprocess.run(
        [*cmd, "--trust-audio"], env=_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "4 of 4 in all" in done.stdout
    assert real_server.settled_chat_requests() - served == 1 + 4  # the probe, one per clip
    (labels,) = (folder / "models").glob("*.jsonl")
    lines = [json.loads(x) for x in labels.read_text().splitlines()]
    assert len(lines) == 4 and len({x["clip"] for x in lines}) == 4
    assert all(x["usage"]["prompt_tokens"] > 0 and x["reply"] is not None for x in lines)
    scored = subprocess.run(
        [sys.executable, "-m", "hear2act_cli", "audit", "--score", str(folder), "--json",
         str(tmp_path / "score.json")],
        env=_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr[-2000:]
    (row,) = json.loads((tmp_path / "score.json").read_text())["models"].values()
    assert row["clips"] == 4 and row["context"] is True
    assert row["no_answer"] == sum(x["label"] is None for x in lines)


@pytest.mark.slow
def test_a_run_file_against_transformers_serve_reaches_the_leaderboard(real_server, tmp_path):
    """``eval --config run.toml`` (three runs) against the real server, then the leaderboard
    row with pass^3 and the paired T+S column, then the manifest reruns it (given the server
    again) with only the probe sent."""
    from .test_run_file_end_to_end import check_row, leaderboard_row, write_run_file

    out = tmp_path / "run"
    agent = f"openai:{real_server.model}"
    run = write_run_file(tmp_path / "run.toml", agent, out, base_url=f'"{real_server.base_url}"')
    with run.open("a") as fh:
        fh.write("max_tokens = 16\n")
    cmd = [sys.executable, "-m", "hear2act_cli", "eval", "--config", str(run)]
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    check_row(leaderboard_row(out / "results.jsonl", tmp_path / "board"), agent)
    served = real_server.settled_chat_requests(quiet_s=0.3)
    again = [sys.executable, "-m", "hear2act_cli", "eval", "--config", str(out)]
    refused = subprocess.run(again, env=_env(), capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "give --base-url on the command line" in refused.stderr
    again += ["--base-url", real_server.base_url]  # a manifest does not choose the server
    rerun = subprocess.run(again, env=_env(), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert real_server.settled_chat_requests(quiet_s=0.3) - served == 1  # the probe only


@pytest.mark.slow
def test_litellm_against_transformers_serve_equals_openai(real_server, tmp_path):
    """``litellm:openai/MODEL`` through LiteLLM's OpenAI-compatible route to the real server:
    every episode finishes, one request per logged call (and the probe), token counts from
    the server, and greedy decoding gives the same episodes and tokens as ``openai:MODEL``."""
    if importlib.util.find_spec("litellm") is None:  # not importorskip: importing LiteLLM
        pytest.skip("litellm is not installed")  # before OFFLINE_ENV would fetch its cost map
    runs = {}
    for agent in (f"openai:{real_server.model}", f"litellm:openai/{real_server.model}"):
        out = tmp_path / agent.split(":")[0]
        cmd = _eval_cmd(real_server, out)
        cmd[cmd.index("--agents") + 1] = agent
        cmd[cmd.index("--workers") + 1] = "1"
        cmd[cmd.index("--access") + 1 : cmd.index("--realizations")] = ["T"]
        served = real_server.settled_chat_requests(quiet_s=0.3)
        done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        records = load_records(out / "results.jsonl")
        assert len(records) == len(IDS) and all(r.error is None for r in records)
        calls = sum(r.agent_stats["calls"] for r in records)
        assert real_server.settled_chat_requests(quiet_s=0.3) - served == 1 + calls
        assert all(r.agent_stats["prompt_tokens"] > 0 for r in records)
        runs[agent.split(":")[0]] = {
            r.key.scenario: (r.steps, r.agent_stats["calls"], r.agent_stats["prompt_tokens"],
                             r.agent_stats["completion_tokens"], r.success)
            for r in records
        }  # fmt: skip
    assert runs["litellm"] == runs["openai"]
