"""The ``ray`` backend on a real two-node Ray cluster (head + worker, one CPU each, 127.0.0.1).

The test starts both nodes itself with ``ray start --block`` in their own process groups and
an own ``--temp-dir``, and stops them by their PIDs (never ``ray stop``, which would stop every
Ray on the machine); the nodes share this venv, so they import hear2act_env.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hear2act_agents.registry import make_agent
from hear2act_cli import main
from hear2act_env.config import EnvConfig
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.runner import GridConfig, run_grid

ray = pytest.importorskip("ray")

RAY = Path(sys.executable).with_name("ray")
IDS = tuple(GridConfig(agents=("prober",), env=EnvConfig(split="test")).scenario_ids()[:4])
CONFIG = GridConfig(
    agents=("prober", "state-aware"), env=EnvConfig(split="test"), scenarios=IDS
)  # 32 episodes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def lines(path: Path) -> list[str]:
    return sorted(path.read_text().splitlines())


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every live (not zombie) process."""
    ps = ["ps", "-eo", "pid=,ppid=,stat=,args="]
    table = {}
    for row in subprocess.run(ps, capture_output=True, text=True).stdout.splitlines():
        pid, ppid, stat, *args = row.split(None, 3)
        if not stat.startswith("Z"):
            table[int(pid)] = (int(ppid), args[0] if args else "")
    return table


def _ours(roots: list[int], marker: str) -> set[int]:
    """The processes of our nodes: descendants of ``roots`` and any naming our temp dir."""
    table = _processes()
    found = {p for p in roots if p in table}
    found |= {p for p, (_, args) in table.items() if marker in args and p != os.getpid()}
    grew = True
    while grew:
        children = {p for p, (ppid, _) in table.items() if ppid in found} - found
        found |= children
        grew = bool(children)
    return found


def _kill(pids: set[int], sig: int, group: bool = False) -> None:
    for pid in pids:
        try:
            (os.killpg if group else os.kill)(pid, sig)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def cluster():
    """The head's address, and the temp dirs of the two nodes (each node logs to its own)."""
    if ray.is_initialized():
        ray.shutdown()
    port = free_port()
    root = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: unix socket paths are limited
    dirs = [f"{root}/h", f"{root}/w"]
    common = ["--num-cpus=1", "--disable-usage-stats", "--block"]
    head = [
        str(RAY),
        "start",
        "--head",
        f"--port={port}",
        "--include-dashboard=false",
        f"--dashboard-port={free_port()}",
        f"--ray-client-server-port={free_port()}",
    ]
    worker = [str(RAY), "start", f"--address=127.0.0.1:{port}"]
    # no token authentication on the test cluster (Ray >= 2.5x turns it on when ~/.ray/auth_token
    # exists, which a local ray.init() writes); a driver connects to it in either auth mode
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH", "RAY_ADDRESS"))}
    env["RAY_AUTH_MODE"] = "disabled"
    nodes: list[subprocess.Popen] = []
    log = open(f"{root}/start.log", "wb")  # noqa: SIM115 - closed at teardown
    try:
        for args, temp_dir in ((head, dirs[0]), (worker, dirs[1])):
            cmd = args + common + [f"--temp-dir={temp_dir}"]
            cmd.append(f"--dashboard-agent-listen-port={free_port()}")
            nodes.append(
                subprocess.Popen(
                    cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
                )
            )
            if args is head:
                deadline = time.time() + 60
                while True:
                    try:
                        socket.create_connection(("127.0.0.1", port), 1).close()
                        break
                    except OSError:
                        if time.time() > deadline or nodes[0].poll() is not None:
                            raise RuntimeError(f"no head; see {root}/start.log") from None
                        time.sleep(0.5)
        address = f"127.0.0.1:{port}"
        ray.init(address=address, log_to_driver=False)  # wait until the worker node has joined
        _wait_for_nodes(2)
        ray.shutdown()
        yield address, dirs
    finally:
        if ray.is_initialized():
            ray.shutdown()
        ours = _ours([n.pid for n in nodes], root)  # before the nodes go
        # each node runs in its own process group (the `ray start` pid): ask, then insist
        groups = {n.pid for n in nodes}
        _kill(groups, signal.SIGTERM, group=True)
        deadline = time.time() + 5  # the worker node stops in ~1 s, the head can take 30 s
        while time.time() < deadline and any(n.poll() is None for n in nodes):
            time.sleep(0.2)
        _kill(groups, signal.SIGKILL, group=True)
        for n in nodes:
            n.wait(10)
        log.close()

        def left() -> set[int]:
            return _ours([], root) | (ours & set(_processes()))

        _kill(left(), signal.SIGKILL)
        deadline = time.time() + 10
        while left() and time.time() < deadline:
            time.sleep(0.2)
        still = left()
        shutil.rmtree(root, ignore_errors=True)
        assert not still, f"Ray processes left behind: {sorted(still)}"


def _wait_for_nodes(count: int) -> None:
    deadline = time.time() + 60
    while sum(n["Alive"] for n in ray.nodes()) < count:
        assert time.time() < deadline, f"the cluster has fewer than {count} nodes"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial") / "r.jsonl"
    run_grid(CONFIG, out, make_agent, backend="serial", progress=False)
    return out


def test_unreachable_cluster_is_a_config_error(tmp_path):
    if ray.is_initialized():
        ray.shutdown()
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    start = time.time()
    with pytest.raises(ConfigError, match=rf"cannot reach the Ray cluster at {address}.*ray start"):
        run_grid(CONFIG, tmp_path / "r.jsonl", make_agent, backend="ray", ray_address=address)
    assert time.time() - start < 30 and not ray.is_initialized()


def test_unreachable_cluster_through_the_cli(tmp_path, capsys):
    if ray.is_initialized():
        ray.shutdown()
    address = f"127.0.0.1:{free_port()}"
    argv = ["eval", "--agents", "prober", "--scenarios", IDS[0], "--out", str(tmp_path)]
    assert main(argv + ["--backend", "ray", "--ray-address", address, "--no-plots"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hear2act: error: ray address: cannot reach") and address in err
    assert "\n" not in err


def test_ray_address_needs_the_ray_backend(tmp_path, capsys):
    argv = ["eval", "--agents", "prober", "--scenarios", IDS[0], "--out", str(tmp_path)]
    assert main(argv + ["--backend", "thread", "--ray-address", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "hear2act: error: --ray-address: needs --backend ray (got --backend thread); "
        "add --backend ray"
    )
    with pytest.raises(ConfigError, match="needs backend 'ray'"):
        run_grid(CONFIG, tmp_path / "r.jsonl", make_agent, ray_address="127.0.0.1:1")


# The two tests on the cluster are slow (starting and stopping its two nodes takes about 15 s):
# .ci/run's slow step runs them; tests/evaluation/test_runner.py checks in the default run that
# the ray backend (a local Ray) gives the serial records.
@pytest.mark.slow
def test_cluster_gives_the_serial_records(cluster, serial_run, tmp_path, monkeypatch):
    address, dirs = cluster
    out = tmp_path / "r.jsonl"
    try:
        run_grid(
            CONFIG, out, make_agent, backend="ray", ray_address=address, workers=2, progress=False
        )
        assert lines(out) == lines(serial_run)
        manifest = json.loads(out.with_suffix(".manifest.json").read_text())
        assert manifest == json.loads(serial_run.with_suffix(".manifest.json").read_text())
        # $RAY_ADDRESS alone (what `RAY_ADDRESS=... hear2act benchmark --backend ray` does)
        ray.shutdown()
        monkeypatch.setenv("RAY_ADDRESS", address)
        again = tmp_path / "env.jsonl"
        run_grid(CONFIG, again, make_agent, backend="ray", workers=3, chunk=4, progress=False)
        assert lines(again) == lines(serial_run)
    finally:
        ray.shutdown()
    # both nodes ran episodes: each node's workers log the tasks they ran under its temp dir
    for temp_dir in dirs:
        deadline = time.time() + 10
        while not _ran_chunks(temp_dir):
            assert time.time() < deadline, f"no episode ran on the node of {temp_dir}"
            time.sleep(0.5)


def _ran_chunks(temp_dir: str) -> bool:
    logs = Path(temp_dir, "session_latest", "logs").glob("worker-*")
    return any(":task_name:run_chunk" in p.read_text(errors="replace") for p in logs)


@pytest.mark.slow
def test_cluster_through_the_cli(cluster, serial_run, tmp_path):
    address, _ = cluster
    if ray.is_initialized():
        ray.shutdown()
    argv = [sys.executable, "-m", "hear2act_cli", "eval", "--agents", "prober", "state-aware"]
    argv += ["--scenarios", *IDS, "--out", str(tmp_path), "--no-plots"]
    argv += ["--backend", "ray", "--ray-address", address, "--workers", "2"]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert lines(tmp_path / "results.jsonl") == lines(serial_run)


@pytest.mark.parametrize("answer", [b"", b"HTTP/1.1 400 Bad Request\r\n\r\n", b"SSH-2.0-x\r\n"])
def test_an_open_port_that_is_not_ray_fails_within_20_s(tmp_path, capsys, monkeypatch, answer):
    """A port where something else listens (silent, an HTTP/1 server, another protocol) is a
    one-line error, not a ``ray.init`` that waits for minutes.

    The probe's wait is bounded by ``runner.RAY_CONNECT_TIMEOUT``: the shipped bound and the 5 s
    allowed to the rest of the command stay within 20 s, and the test runs with a 1 s bound (a
    silent port took the whole 15 s of the shipped one)."""
    import threading

    from hear2act_env.evaluation import runner

    assert runner.RAY_CONNECT_TIMEOUT + 5 <= 20
    monkeypatch.setattr(runner, "RAY_CONNECT_TIMEOUT", 1.0)
    if ray.is_initialized():
        ray.shutdown()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    stop = threading.Event()
    held = []

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)  # kept open (and silent after its answer) until the test ends
            if answer:
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    address = f"127.0.0.1:{listener.getsockname()[1]}"
    argv = ["eval", "--agents", "prober", "--scenarios", IDS[0], "--out", str(tmp_path)]
    start = time.time()
    try:
        code = main(argv + ["--backend", "ray", "--ray-address", address, "--no-plots"])
    finally:
        stop.set()
        thread.join(5)
        listener.close()
        for conn in held:
            conn.close()
    assert code == 2 and time.time() - start < runner.RAY_CONNECT_TIMEOUT + 5
    err = capsys.readouterr().err.strip()
    assert err.startswith("hear2act: error: ray address: cannot ") and address in err
    assert "\n" not in err and not ray.is_initialized()
