import json
import subprocess
import sys
import time

import numpy as np
import pytest

from hear2act_agents.registry import make_agent
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.runner import GridConfig, load_records, run_grid
from hear2act_env.scenarios.bank import load_bank

IDS = tuple(s.id for s in load_bank()[:6])
CONFIG = GridConfig(
    agents=("random", "prober", "state-aware", "oracle"),
    conditions=(("T", "correct"), ("T+S", "correct"), ("T+S", "shuffled")),
    scenarios=IDS,
    runs=2,
)


def lines(path):
    return sorted(path.read_text().splitlines())


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial") / "r.jsonl"
    run_grid(CONFIG, out, make_agent, backend="serial", progress=False)
    return out


def test_grid_size_and_manifest(serial_run):
    assert len(lines(serial_run)) == 4 * 2 * 3 * 6 * 2
    manifest = json.loads(serial_run.with_suffix(".manifest.json").read_text())
    assert (
        manifest["config"]["agents"] == list(CONFIG.agents) and len(manifest["bank_sha256"]) == 64
    )
    assert "gymnasium" in manifest["versions"]
    from hear2act_env.scenarios.bank import BANK_VERSION

    assert manifest["bank_version"] == BANK_VERSION


@pytest.mark.parametrize(("backend", "workers"), [("thread", 2), ("process", 2)])
def test_backends_give_identical_records(serial_run, tmp_path, backend, workers):
    out = tmp_path / "r.jsonl"
    run_grid(CONFIG, out, make_agent, backend=backend, workers=workers, chunk=5, progress=False)
    assert lines(out) == lines(serial_run)


def test_ray_backend_gives_identical_records(serial_run, tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "r.jsonl"
        run_grid(CONFIG, out, make_agent, backend="ray", workers=2, chunk=16, progress=False)
        assert lines(out) == lines(serial_run)
    finally:
        ray.shutdown()


def test_rerun_resumes_without_duplicates(serial_run, tmp_path):
    out = tmp_path / "r.jsonl"
    kept = serial_run.read_text().splitlines()[:37]
    out.write_text("\n".join(kept) + "\n" + kept[37 - 1][:25])  # 37 records and a torn line
    out.with_suffix(".manifest.json").write_text(
        serial_run.with_suffix(".manifest.json").read_text()
    )
    records = run_grid(CONFIG, out, make_agent, progress=False)
    assert lines(out) == lines(serial_run) and len(records) == len(lines(serial_run))


def test_killed_run_resumes_to_the_uninterrupted_result(tmp_path):
    config = GridConfig(
        agents=("prober", "thorough"), scenarios=tuple(s.id for s in load_bank()[:20]), runs=3
    )
    full = tmp_path / "full.jsonl"
    run_grid(config, full, make_agent, progress=False)
    out = tmp_path / "killed.jsonl"
    code = (
        "import sys; from hear2act_agents.registry import make_agent; from hear2act_env.evaluation.runner import GridConfig, run_grid;"
        f"c = GridConfig(agents=('prober', 'thorough'), scenarios={config.scenarios!r}, runs=3);"
        f"run_grid(c, {str(out)!r}, make_agent, progress=False)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.time() + 60
    while time.time() < deadline and (not out.exists() or out.read_text().count("\n") < 40):
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    partial = out.read_text().count("\n")
    assert 40 <= partial < len(lines(full)), partial
    run_grid(config, out, make_agent, progress=False)
    assert lines(out) == lines(full)


class Exploding:
    name = "exploding"
    observation_kind = "text"

    def reset(self, observation, seed=None):
        self.n = 0

    def act(self, observation):
        self.n += 1
        if "-02" in observation["transcript"] or self.n > 3:
            raise RuntimeError("model timed out")
        return np.array([0, 0, 0])


def exploding_factory(name):
    return Exploding() if name == "exploding" else make_agent(name)


def test_failing_agent_is_recorded_not_fatal(tmp_path):
    config = GridConfig(agents=("exploding", "eager"), scenarios=IDS[:3])
    records = run_grid(
        config, tmp_path / "r.jsonl", exploding_factory, backend="thread", workers=2, progress=False
    )
    errors = [r for r in records if r.error]
    assert errors and all(
        r.key.agent == "exploding" and "model timed out" in r.error for r in errors
    )
    assert len(records) == 2 * 2 * 2 * 3 and all(
        r.error is None for r in records if r.key.agent == "eager"
    )


def test_other_grid_in_same_output_is_refused(serial_run, tmp_path):
    out = tmp_path / "r.jsonl"
    run_grid(GridConfig(agents=("eager",), scenarios=IDS[:1]), out, make_agent, progress=False)
    with pytest.raises(ConfigError, match="different grid"):
        run_grid(GridConfig(agents=("random",), scenarios=IDS[:1]), out, make_agent, progress=False)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"agents": ()}, "agents"),
        ({"runs": 0}, "runs"),
        ({"conditions": (("B", "correct"),)}, "access"),
        ({"realizations": ("x",)}, "realizations"),
    ],
)
def test_bad_grid_config(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        GridConfig(**{"agents": ("eager",), **kwargs})


def test_unknown_backend(tmp_path):
    with pytest.raises(ConfigError, match="backend"):
        run_grid(
            GridConfig(agents=("eager",), scenarios=IDS[:1]),
            tmp_path / "r.jsonl",
            make_agent,
            backend="gpu",
        )


def test_load_records_round_trip(serial_run):
    records = load_records(serial_run)
    assert [r.to_json() for r in records] == serial_run.read_text().splitlines()
