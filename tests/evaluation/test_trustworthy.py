"""Trustworthy runs: an outage is never an agent's failure, resume retries errors, one writer
per output, one record per episode key, and a report over errored cells never crashes."""

from __future__ import annotations

import json
import threading
import time

import pytest

from hear2act_agents.registry import make_agent
from hear2act_env.errors import ConfigError, InfrastructureError
from hear2act_env.evaluation.records import EpisodeRecord
from hear2act_env.evaluation.report import report
from hear2act_env.evaluation.runner import GridConfig, load_records, output_lock, run_grid
from hear2act_env.scenarios.bank import load_bank

IDS = tuple(s.id for s in load_bank()[:3])
CONFIG = GridConfig(
    agents=("prober",), conditions=(("T", "correct"), ("T+S", "correct")), scenarios=IDS
)


class _Flaky:
    """A factory whose agent's model is down until ``up`` is set."""

    def __init__(self) -> None:
        self.up = False

    def __call__(self, name: str):
        agent = make_agent("prober")
        if not self.up:

            def act(observation):
                raise InfrastructureError("model call failed after retries: refused")

            agent.act = act  # type: ignore[method-assign]
        return agent


def test_an_outage_is_an_infrastructure_error_left_out_of_the_metrics(tmp_path):
    out = tmp_path / "r.jsonl"
    records = run_grid(CONFIG, out, _Flaky(), progress=False)
    assert len(records) == 12
    assert all(r.error_kind == "infrastructure" and not r.success for r in records)
    text = report(records, plots=False)
    assert "12 with errors (12 infrastructure; left out of every figure" in text
    assert "no paired difference for prober / prosody / T+S - T" in text


def test_resume_retries_errored_episodes_by_default(tmp_path):
    out, factory = tmp_path / "r.jsonl", _Flaky()
    run_grid(CONFIG, out, factory, progress=False)
    kept = run_grid(CONFIG, out, factory, progress=False, retry_errors=False)
    assert all(r.error is not None for r in kept)  # --no-retry-errors keeps them
    factory.up = True
    records = run_grid(CONFIG, out, factory, progress=False)
    assert len(records) == 12 and all(r.error is None and r.success for r in records)
    # the file holds the errors and the retries; loading keeps the finished record per key
    assert len(out.read_text().splitlines()) == 24
    loaded = load_records(out)
    assert len(loaded) == 12 and all(r.error is None for r in loaded)


def test_loading_keeps_the_first_finished_record_per_key(tmp_path):
    out = tmp_path / "r.jsonl"
    records = run_grid(CONFIG, out, make_agent, progress=False)
    first = records[0]
    twin = EpisodeRecord.from_json(first.to_json())
    twin.actions = 99  # a second writer's copy of the same key
    failed = EpisodeRecord(key=first.key, seed=first.seed, error="x", error_kind="agent")
    with out.open("a") as fh:
        fh.write(twin.to_json() + "\n" + failed.to_json() + "\n")
    loaded = {r.key.id(): r for r in load_records(out)}
    assert len(loaded) == 12 and loaded[first.key.id()].actions == first.actions


def test_a_second_writer_on_one_output_is_refused_or_waits(tmp_path):
    out = tmp_path / "r.jsonl"
    with output_lock(out):
        with pytest.raises(ConfigError, match=r"being written by another run \(pid \d+\)"):
            run_grid(CONFIG, out, make_agent, progress=False)
    assert not out.exists() or not load_records(out)

    released = threading.Event()

    def hold() -> None:
        with output_lock(out):
            time.sleep(0.5)
        released.set()

    holder = threading.Thread(target=hold)
    holder.start()
    time.sleep(0.1)
    records = run_grid(CONFIG, out, make_agent, progress=False, wait=True)
    holder.join()
    assert released.is_set() and len(records) == 12
    assert len(out.read_text().splitlines()) == 12  # one record per key


def test_two_runs_racing_on_one_output_leave_one_record_per_key(tmp_path):
    out = tmp_path / "r.jsonl"
    results: list[object] = []

    def run() -> None:
        try:
            results.append(run_grid(CONFIG, out, make_agent, progress=False, wait=True))
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(isinstance(r, list) and len(r) == 12 for r in results)
    assert len(out.read_text().splitlines()) == 12


def _options_config(**options):
    return GridConfig(agents=("prober",), scenarios=IDS[:1], agent_options=options)


def test_resume_accepts_transport_changes_and_refuses_result_changes(tmp_path):
    out = tmp_path / "r.jsonl"
    run_grid(
        _options_config(base_url="http://a:1/v1", temperature=0.0), out, make_agent, progress=False
    )
    # a new server address, more concurrency: the same results, so resuming is fine
    moved = _options_config(base_url="http://b:2/v1", temperature=0.0, max_concurrency=16)
    assert len(run_grid(moved, out, make_agent, progress=False)) == 4
    manifest = json.loads(out.with_suffix(".manifest.json").read_text())
    assert manifest["config"]["agent_options"]["base_url"] == "http://b:2/v1"
    # another temperature changes what the model answers: refused, naming the setting
    with pytest.raises(ConfigError, match=r"changed: agent_options\.temperature"):
        run_grid(
            _options_config(base_url="http://b:2/v1", temperature=0.7),
            out,
            make_agent,
            progress=False,
        )


def test_the_manifest_never_stores_credentials(tmp_path):
    out = tmp_path / "r.jsonl"
    url = "https://alice:hunter2secret@api.example.com/v1?api-key=k3y-v4lue-123&region=eu"
    run_grid(_options_config(base_url=url), out, make_agent, progress=False)
    text = out.with_suffix(".manifest.json").read_text()
    assert "hunter2secret" not in text and "k3y-v4lue-123" not in text and "alice" not in text
    assert "api.example.com/v1" in text and "region=eu" in text


@pytest.mark.parametrize("content", ["{not json", '{"config": 3}', "\udcff"])
def test_a_corrupt_manifest_is_a_named_error(tmp_path, content):
    out = tmp_path / "r.jsonl"
    run_grid(_options_config(), out, make_agent, progress=False)
    out.with_suffix(".manifest.json").write_bytes(content.encode("utf-8", "surrogateescape"))
    with pytest.raises(ConfigError, match="manifest.json is unreadable"):
        run_grid(_options_config(), out, make_agent, progress=False)


def test_corrupt_middle_lines_are_named_skipped_and_rerun(tmp_path):
    out = tmp_path / "r.jsonl"
    run_grid(CONFIG, out, make_agent, progress=False)
    lines = out.read_bytes().split(b"\n")
    lines[2] = b"\xff\xfe garbage"
    lines[4] = (
        lines[4]
        .replace(b'"success":true', b'"success":"yes"')
        .replace(b'"success":false', b'"success":"yes"')
    )
    out.write_bytes(b"\n".join(lines))
    with pytest.warns(UserWarning) as caught:
        loaded = load_records(out)
    named = " ".join(str(w.message) for w in caught)
    assert f"{out}:3: skipped a corrupt record" in named and f"{out}:5:" in named
    assert len(loaded) == 10
    with pytest.warns(UserWarning):
        records = run_grid(CONFIG, out, make_agent, progress=False)
    assert len(records) == 12 and all(r.error is None for r in records)


def test_a_results_path_that_is_a_folder_is_a_named_error(tmp_path):
    (tmp_path / "r.jsonl").mkdir()
    with pytest.raises(ConfigError, match="cannot write results"):
        run_grid(CONFIG, tmp_path / "r.jsonl", make_agent, progress=False)


@pytest.mark.slow  # ten killed process runs: about 20 s
def test_kill_9_at_ten_points_of_a_process_run_resumes_to_the_uninterrupted_result(tmp_path):
    import os
    import random
    import signal
    import subprocess
    import sys

    ids = tuple(s.id for s in load_bank()[:10])
    config = GridConfig(agents=("prober", "thorough"), scenarios=ids, runs=2)
    full = tmp_path / "full.jsonl"
    expected = sorted(r.to_json() for r in run_grid(config, full, make_agent, progress=False))
    out = tmp_path / "killed.jsonl"
    code = (
        "from hear2act_agents.registry import make_agent\n"
        "from hear2act_env.evaluation.runner import GridConfig, run_grid\n"
        "if __name__ == '__main__':\n"
        f"    c = GridConfig(agents=('prober', 'thorough'), scenarios={ids!r}, runs=2)\n"
        f"    run_grid(c, {str(out)!r}, make_agent, backend='process', workers=2, chunk=4,"
        " progress=False)\n"
    )
    script = tmp_path / "run.py"
    script.write_text(code)
    rng = random.Random(7)
    kills = 0
    for _ in range(10):
        before = out.read_bytes().count(b"\n") if out.exists() else 0
        if before >= len(expected):
            break
        target = before + rng.randint(1, 12)
        proc = subprocess.Popen([sys.executable, str(script)], start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            if out.exists() and out.read_bytes().count(b"\n") >= target:
                break
            time.sleep(0.005)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and its pool, mid-write or not
            kills += 1
        proc.wait()
    assert kills >= 5
    records = run_grid(config, out, make_agent, progress=False)
    assert sorted(r.to_json() for r in records) == expected
    assert out.read_bytes().count(b"\n") == len(expected)  # nothing written twice or torn
