"""The paper's metrics in any loop: RecordHear2ActMetrics, summarize, the SB3 callback."""

from __future__ import annotations

import csv
import pickle
import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import hear2act_env  # noqa: F401 - registers the ids
from hear2act_agents.registry import make_agent
from hear2act_env import ENV_IDS
from hear2act_env.evaluation import metrics as M
from hear2act_env.evaluation.records import EpisodeKey
from hear2act_env.evaluation.rollout import run_episode, wrap_for
from hear2act_env.evaluation.runner import GridConfig, load_records, run_grid
from hear2act_env.evaluation.summary import records_from_episodes, summarize, write_records
from hear2act_env.scenarios.bank import load_bank
from hear2act_env.wrappers.metrics import MONITOR_KEYS, RecordHear2ActMetrics
from tests.rl.stubs import ToneRenderer

IDS = [s.id for s in load_bank() if s.split == "test"][:6]
ROOT = Path(__file__).resolve().parents[2]


def _loop(env_id: str, agent: str, episodes: list[tuple[str, int]], **kwargs) -> list[dict]:
    """A plain loop: the wrapper around gym.make, the agent through its usual adapter."""
    policy = make_agent(agent)
    env = RecordHear2ActMetrics(gym.make(env_id, **kwargs), buffer_length=1000)
    for scenario, seed in episodes:
        run_episode(wrap_for(env, policy), policy, seed=seed, scenario=scenario)
    return list(env.episodes)


def test_runner_and_wrapper_agree_on_every_metric(tmp_path):
    config = GridConfig(
        agents=("prober", "random", "state-aware"),
        realizations=("prosody",),
        conditions=(("T", "correct"), ("T+S", "correct"), ("T+S", "shuffled")),
        scenarios=tuple(IDS),
        runs=2,
    )
    records = run_grid(config, tmp_path / "r.jsonl", make_agent, progress=False)
    for agent in config.agents:
        for condition in config.conditions:
            access, fidelity = condition.pair()
            env_id = (
                "Hear2Act-Prosody-TextState-v0" if "S" in access else "Hear2Act-Prosody-Text-v0"
            )
            keys = [
                EpisodeKey(agent, "prosody", access, fidelity, s, r) for s in IDS for r in (0, 1)
            ]
            mine = _loop(
                env_id, agent, [(k.scenario, k.seed) for k in keys], state_fidelity=fidelity
            )
            ours = records_from_episodes(mine, agent=agent)
            theirs = [
                r for r in records if r.key.agent == agent and r.key.condition == str(condition)
            ]
            for metric in M.ALL:
                assert metric(ours) == pytest.approx(metric(theirs), nan_ok=True), metric.name
            by_key = {r.key: r for r in theirs}
            for r in ours:  # record for record, with the loop's own seeds
                assert r.to_json() == by_key[r.key].to_json()


def test_info_has_the_parts_only_when_the_episode_ends():
    env = RecordHear2ActMetrics(gym.make("Hear2Act-Prosody-TextState-v0"))
    _, info = env.reset(seed=3)
    assert "hear2act" not in info
    _, _, term, trunc, info = env.step(np.array([0, 0, 0]))
    assert not (term or trunc) and "hear2act" not in info
    _, _, term, _, info = env.step(np.array([3, 0, 0]))
    parts = info["hear2act"]
    assert term and parts["premature_closure"] and not parts["success"]
    assert parts["counts"]["ask_open"] == 1 and parts["counts"]["confirm"] == 1
    assert (parts["realization"], parts["access"], parts["fidelity"], parts["seed"]) == (
        "prosody",
        "T+S",
        "correct",
        3,
    )
    assert set(MONITOR_KEYS) <= set(info) and info["hear2act_success"] == 0.0
    assert len(env.episodes) == 1


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_every_registered_id_and_pickling(env_id):
    kwargs = {"renderer": ToneRenderer(), "audio_cache": False} if "Text" not in env_id else {}
    env = RecordHear2ActMetrics(gym.make(env_id, **kwargs), buffer_length=2)
    for seed in range(3):
        env.reset(seed=seed)
        env.step(np.array([2, seed, 0]))
        copy = pickle.loads(pickle.dumps(env))  # mid-episode
        done = False
        while not done:
            _, _, term, trunc, info = copy.step(np.array([3, 0, 0]))
            done = term or trunc
        assert "hear2act" in info
        env = copy
    assert len(env.episodes) == 2  # bounded queue


@pytest.mark.parametrize("vector", ["sync", "async"])
def test_vector_envs_follow_the_info_convention(vector):
    def make():
        return RecordHear2ActMetrics(gym.make("Hear2Act-Explicit-Text-v0"))

    if vector == "sync":
        venv = gym.vector.SyncVectorEnv([make, make])
    else:
        venv = gym.vector.AsyncVectorEnv([make, make], shared_memory=False)
    venv.reset(seed=0)
    _, _, term, _, infos = venv.step(np.array([[3, 0, 0], [0, 0, 0]]))
    venv.close()
    assert term.tolist() == [True, False]
    assert infos["_hear2act"].tolist() == [True, False]
    assert infos["hear2act"]["success"][0] == False  # noqa: E712 - numpy bool
    assert infos["hear2act"]["counts"]["confirm"][0] == 1


def test_summarize_and_write_records_feed_the_report(tmp_path, capsys):
    episodes = _loop("Hear2Act-Prosody-Text-v0", "prober", [(s, 0) for s in IDS])
    episodes += _loop("Hear2Act-Prosody-TextState-v0", "prober", [(s, 0) for s in IDS])
    summary = summarize(episodes, agent="prober")
    assert "prober" in summary.text and "T+S" in summary.text
    assert {r.condition for r in summary.rows} == {"T", "T+S"}
    assert [d.condition for d in summary.differences] == ["T+S - T"]
    path = write_records(episodes, tmp_path / "mine.jsonl", agent="prober")
    assert len(load_records(path)) == 2 * len(IDS)
    from hear2act_cli import main

    assert main(["report", str(path), "--no-plots"]) == 0
    assert "prober" in capsys.readouterr().out


def test_summarize_rejects_foreign_dicts():
    from hear2act_env.errors import ConfigError

    with pytest.raises(ConfigError, match="episodes\\[0\\]: missing"):
        summarize([{"success": True}])
    with pytest.raises(ConfigError, match="nothing to summarize"):
        summarize([])


def test_readme_own_loop_example_runs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- own-loop -->\s*```python\n(.*?)```", text, re.S)
    assert block, "README: the own-loop example is marked with <!-- own-loop -->"
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 14
    namespace: dict = {}
    exec(compile(code, "README own-loop", "exec"), namespace)  # noqa: S102
    assert "Success" in str(namespace["summary"]) or "success" in str(namespace["summary"])


def test_sb3_callback_and_monitor_log_the_metrics(tmp_path):
    pytest.importorskip("sb3_contrib")
    from hear2act_agents.rl.training import train

    tiny = {"n_envs": 2, "n_steps": 64, "batch_size": 64, "n_epochs": 1, "eval_episodes": 0}
    result = train(None, 256, 0, tmp_path / "run", progress=False, **tiny)
    rows = list(csv.DictReader((result.out_dir / "sb3" / "progress.csv").open()))
    assert rows and "hear2act/success" in rows[0] and "hear2act/premature_closure" in rows[0]
    logged = [float(r["hear2act/episodes"]) for r in rows if r.get("hear2act/episodes")]
    assert sum(logged) > 0
    from stable_baselines3.common.monitor import Monitor

    env = Monitor(
        RecordHear2ActMetrics(gym.make("Hear2Act-Prosody-Text-v0")),
        str(tmp_path / "mon"),
        info_keywords=MONITOR_KEYS,
    )
    env.reset(seed=0)
    env.step(np.array([3, 0, 0]))
    env.close()
    lines = (tmp_path / "mon.monitor.csv").read_text().splitlines()
    assert "hear2act_success" in lines[1] and len(lines) == 3


def test_train_with_tensorboard_but_without_the_package_is_a_named_error(tmp_path, capsys):
    import importlib.util

    pytest.importorskip("sb3_contrib")
    if importlib.util.find_spec("tensorboard") is not None:
        pytest.skip("tensorboard is installed here")
    from hear2act_cli import main

    argv = ["train", "--timesteps", "64", "--out", str(tmp_path / "r"), "--quiet"]
    assert main([*argv, "--tensorboard", str(tmp_path / "tb")]) == 2
    assert "pip install tensorboard" in capsys.readouterr().err


def test_training_closes_the_sb3_log_files(tmp_path):
    import gc
    import warnings

    pytest.importorskip("sb3_contrib")
    from hear2act_agents.rl.training import train

    tiny = {"n_envs": 2, "n_steps": 64, "batch_size": 64, "n_epochs": 1, "eval_episodes": 0}
    train(None, 128, 0, tmp_path / "run", progress=False, **tiny)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    assert not [w for w in caught if "progress.csv" in str(w.message)]
