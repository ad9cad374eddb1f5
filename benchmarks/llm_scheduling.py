"""How well the runner keeps a slow model server busy: LLM-agent episodes against a stub
OpenAI-compatible server that answers every request after a fixed latency.

    python benchmarks/llm_scheduling.py [--latency 0.5] [--episodes 192] [--workers 20]
        [--max-concurrency 20] [--replies varied|fixed] [--topic-matcher default|keyword]
        [--warm] [--cli]

The stub (this file run with ``--serve``, a subprocess: it does not share the GIL with the
runner) sleeps ``--latency`` seconds, then replies with a valid action. ``--replies varied``
(default): 0 to 3 open ASKs (by the scenario's options), then RECOMMEND and CONFIRM in turn, so
episodes take 2 to 20 calls; ``fixed``: always RECOMMEND option 1 (every episode runs to the
20-turn limit). ``run_grid(backend="thread", workers=W)`` plays the episodes of one ``openai:``
agent (``AgentFactory``: ``base_url``, ``max_concurrency``, no response cache) over both
realizations, T and T+S, and as many scenarios as ``--episodes`` needs (a multiple of 4).

Figures, the calls counted from the records' agent stats:

- ``ideal_s``: ``max(total_calls * latency / W, max_calls_per_episode * latency)``, every
  call at ``latency``, W at a time, but no less than the longest episode's calls in a row;
- ``fifo_s``: the same calls with whole episodes started in the runner's submission order, each
  on the first free worker: the best a scheduler that does not know episode lengths gets here;
- ``ratio`` = ideal / actual (goal >= 0.8 at 0.5 s latency with 20 workers) and
  ``fifo_ratio`` = fifo / actual (what the runner itself loses: per-call CPU, GIL, setup);
- ``server``: requests seen, most in flight, and seconds spent with k requests in flight.

``--latency 0`` measures the runner's own cost (env, prompt, parsing, HTTP client).
``--topic-matcher default`` is what ``hear2act eval`` uses (MiniLM when its wheel is installed,
loaded on the first reply, a stall of several seconds); ``--warm`` loads it before the clock
starts. ``--cli`` also times ``hear2act eval ... --workers W`` in a subprocess (its wall time
includes interpreter start, the probe request and the report).
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPLIES = [
    "[ACTION: ASK] [TOPIC: OPEN] What matters most to you here?",
    "[ACTION: RECOMMEND] [OPTION: 1] Option 1 may suit you.",
    "[ACTION: CONFIRM] Shall I book it?",
    "[ACTION: RECOMMEND] [OPTION: 2] How about option 2 instead?",
    "[ACTION: CONFIRM] Great, booking it now.",
    "[ACTION: RECOMMEND] [OPTION: 3] Then option 3.",
    "[ACTION: CONFIRM] Done.",
]


# -- the stub server (a subprocess) ---------------------------------------------------------
def _reply_for(messages: list[dict]) -> str:
    """ASK (0 to 3 times, by the scenario's options), then RECOMMEND and CONFIRM in turn."""

    def text_of(role: str) -> str:
        m = next((m for m in messages if m.get("role") == role), {"content": ""})
        return m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])

    turns = max(0, len(re.findall(r"^Assistant:", text_of("user"), flags=re.M)) - 1)
    asks = int(hashlib.sha256(text_of("system").encode()).hexdigest(), 16) % 4
    if turns < asks:
        return REPLIES[0]
    return REPLIES[1 + (turns - asks) % (len(REPLIES) - 1)]


FIXED = "[ACTION: RECOMMEND] [OPTION: 1] This one."


def serve(latency: float, replies: str = "varied") -> None:
    lock = threading.Lock()
    state = {"requests": 0, "in_flight": 0, "max_in_flight": 0}
    at_level: dict[int, float] = {}  # seconds spent with k requests in flight
    since = [time.monotonic()]

    def level_changes(delta: int) -> None:  # under the lock
        now = time.monotonic()
        k = state["in_flight"]
        at_level[k] = at_level.get(k, 0.0) + now - since[0]
        since[0] = now
        state["in_flight"] = k + delta

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else headers and body wait on a delayed ACK (~40 ms)

        def log_message(self, *args):
            pass

        def _json(self, status: int, data: dict) -> None:
            body = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            with lock:
                level_changes(0)
                busy = {k: round(v, 2) for k, v in sorted(at_level.items()) if k}
                self._json(200, {**state, "seconds_at_in_flight": busy})

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path.rstrip("/").endswith("/reset"):
                with lock:
                    state.update(requests=0, in_flight=0, max_in_flight=0)
                    at_level.clear()
                    since[0] = time.monotonic()
                self._json(200, {"ok": True})
                return
            body = json.loads(raw)
            with lock:
                state["requests"] += 1
                level_changes(+1)
                state["max_in_flight"] = max(state["max_in_flight"], state["in_flight"])
            try:
                time.sleep(latency)
                content = FIXED if replies == "fixed" else _reply_for(body.get("messages", []))
            finally:
                with lock:
                    level_changes(-1)
            self._json(
                200,
                {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", ""),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                },
            )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 128
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass


class Stub:
    """The stub server as a subprocess; ``stats()`` and ``reset()`` talk to it."""

    def __init__(self, latency: float, replies: str = "varied") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--latency", str(latency), "--replies", replies],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.proc.kill()
            raise RuntimeError(f"the stub server did not start: {line!r}")
        self.base_url = f"http://127.0.0.1:{int(line.split()[1])}/v1"

    def stats(self) -> dict:
        import urllib.request

        with urllib.request.urlopen(f"{self.base_url}/stats", timeout=5) as resp:
            return json.loads(resp.read())

    def reset(self) -> None:
        import urllib.request

        req = urllib.request.Request(f"{self.base_url}/reset", data=b"{}", method="POST")
        urllib.request.urlopen(req, timeout=5).close()

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- the measurement ------------------------------------------------------------------------
def scenario_ids(episodes: int) -> list[str]:
    from hear2act_env.scenarios.bank import load_bank

    per_scenario = 4  # 2 realizations x (T, T+S)
    if episodes % per_scenario:
        raise SystemExit(f"--episodes: expected a multiple of {per_scenario}, got {episodes}")
    ids = [s.id for s in load_bank()]
    if episodes // per_scenario > len(ids):
        raise SystemExit(f"--episodes: at most {per_scenario * len(ids)}")
    return ids[: episodes // per_scenario]


def fifo_makespan(calls: list[int], latency: float, workers: int) -> float:
    """Wall time of the episodes started in this order on ``workers`` workers, each as soon as
    a worker is free, every call taking ``latency`` and nothing else taking time: the best the
    runner's submission order allows."""
    free = [0.0] * workers
    for n in calls:
        start = heapq.heappop(free)
        heapq.heappush(free, start + n * latency)
    return max(free, default=0.0)


def figures(records: list, order: list, latency: float, workers: int, wall: float) -> dict:
    by_id = {r.key.id(): r for r in records}
    records = [by_id[k.id()] for k in order if k.id() in by_id]  # in submission order
    errors = [r for r in records if r.error is not None]
    calls = [int(r.agent_stats.get("calls", 0)) for r in records]
    total = sum(calls)
    ideal = max(total * latency / workers, max(calls, default=0) * latency)
    fifo = fifo_makespan(calls, latency, workers)
    return {
        "episodes": len(records),
        "errors": len(errors),
        "first_error": errors[0].error if errors else None,
        "calls": total,
        "calls_per_episode": f"{min(calls, default=0)}..{max(calls, default=0)}, "
        f"mean {total / max(len(calls), 1):.2f}",
        "ideal_s": round(ideal, 3),
        "fifo_s": round(fifo, 3),  # the ideal for episodes started in the runner's order
        "actual_s": round(wall, 3),
        "ratio": round(ideal / wall, 3) if wall > 0 else None,
        "fifo_ratio": round(fifo / wall, 3) if wall > 0 else None,
    }


def run_api(stub: Stub, args: argparse.Namespace, ids: list[str], out: Path) -> dict:
    from hear2act_agents.registry import AgentFactory
    from hear2act_env.conditions import Condition
    from hear2act_env.evaluation.runner import GridConfig, run_grid

    settings: dict = {
        "base_url": stub.base_url,
        "max_concurrency": args.max_concurrency,
        "temperature": 0,
    }
    if args.topic_matcher != "default":
        settings["topic_matcher"] = args.topic_matcher
    config = GridConfig(
        agents=("openai:stub",),
        conditions=(Condition.of("T"), Condition.of("T+S")),
        scenarios=tuple(ids),
        agent_options=settings,
    )
    factory = AgentFactory(settings)
    if args.warm and args.topic_matcher == "default":
        from hear2act_agents.llm.parsing import default_topic_matcher

        default_topic_matcher()
    stub.reset()
    start = time.perf_counter()
    records = run_grid(
        config, out / "results.jsonl", factory, backend="thread", workers=args.workers,
        progress=False,
    )  # fmt: skip
    wall = time.perf_counter() - start
    result = figures(records, config.keys(), args.latency, args.workers, wall)
    result["server"] = stub.stats()
    return result


def run_cli(stub: Stub, args: argparse.Namespace, ids: list[str], out: Path) -> dict:
    from hear2act_env.conditions import Condition
    from hear2act_env.evaluation.runner import GridConfig, load_records

    keys = GridConfig(  # the CLI's grid, for the order of its work units
        agents=("openai:stub",),
        conditions=(Condition.of("T"), Condition.of("T+S")),
        scenarios=tuple(ids),
    ).keys()
    cmd = [sys.executable, "-m", "hear2act_cli", "eval", "--agents", "openai:stub"]
    cmd += ["--base-url", stub.base_url, "--split", "all", "--scenarios", *ids]
    cmd += ["--access", "T", "T+S", "--out", str(out), "--no-plots"]
    cmd += ["--workers", str(args.workers), "--setting", f"max_concurrency={args.max_concurrency}"]
    cmd += ["--setting", "temperature=0"]
    if args.topic_matcher != "default":
        cmd += ["--setting", f"topic_matcher={args.topic_matcher}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    stub.reset()
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"hear2act eval failed ({done.returncode}):\n{done.stderr[-3000:]}")
    records = load_records(out / "results.jsonl")
    result = figures(records, keys, args.latency, args.workers, wall)
    result["server"] = stub.stats()  # includes the probe request
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per request")
    parser.add_argument("--episodes", type=int, default=192)
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--max-concurrency", type=int, default=20)
    parser.add_argument(
        "--topic-matcher", choices=("default", "keyword", "minilm"), default="default"
    )
    parser.add_argument("--warm", action="store_true", help="load the topic matcher first")
    parser.add_argument("--cli", action="store_true", help="also time `hear2act eval`")
    parser.add_argument(
        "--replies",
        choices=("varied", "fixed"),
        default="varied",
        help="varied: episodes of 2 to 20 calls; fixed: always RECOMMEND option 1",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency, args.replies)
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    ids = scenario_ids(args.episodes)
    stub = Stub(args.latency, args.replies)
    print(
        f"latency {args.latency:g} s, {args.episodes} episodes, workers {args.workers}, "
        f"max_concurrency {args.max_concurrency}, {args.replies} replies, "
        f"topic matcher {args.topic_matcher}" + (" (warm)" if args.warm else "")
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rows = {"run_grid": run_api(stub, args, ids, Path(tmp) / "api")}
            if args.cli:
                rows["hear2act eval"] = run_cli(stub, args, ids, Path(tmp) / "cli")
    finally:
        stub.close()
    for name, row in rows.items():
        print(f"\n{name}:")
        for k, v in row.items():
            print(f"  {k:18} {v}")


if __name__ == "__main__":
    main()
