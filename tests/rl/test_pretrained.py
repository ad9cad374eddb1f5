"""The shipped PPO models load, match the packaged bank, and keep their measured behaviour."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import hear2act_env  # noqa: F401  (registers the ids)
from hear2act_agents.rl import load_policy, make_rl_agent
from hear2act_agents.rl.pretrained import pretrained, pretrained_path
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.rollout import run_episode, wrap_for
from hear2act_env.scenarios.bank import CHECKSUM_PATH

pytest.importorskip("sb3_contrib")

NAMES = ("prosody-T-c0.05", "prosody-A+T-c0.05", "prosody-T+S-c0.05")
ENV_IDS = {
    "T": "Hear2Act-Prosody-Text-v0",
    "A+T": "Hear2Act-Prosody-v0",
    "T+S": "Hear2Act-Prosody-TextState-v0",
}


def test_shipped_models_are_listed_and_match_the_bank() -> None:
    assert set(NAMES) <= set(pretrained())
    bank_sha = CHECKSUM_PATH.read_text().split()[0]
    for name in NAMES:
        config = json.loads((pretrained_path(name) / "config.json").read_text())
        assert config["scenarios_sha256"] == bank_sha, name
        assert config["config"]["turn_cost"] == 0.05
        assert config["config"]["realization"] == "prosody"


def test_evaluation_finds_the_training_scenarios(tmp_path) -> None:
    from hear2act_agents.rl.evaluation import training_scenarios

    def config(path: str | None, sha: str) -> Path:
        out = tmp_path / f"c{len(list(tmp_path.iterdir()))}.json"
        out.write_text(json.dumps({"config": {"scenarios": path}, "scenarios_sha256": sha}))
        return out

    bank_sha = CHECKSUM_PATH.read_text().split()[0]
    here = tmp_path / "bank.jsonl"
    here.write_text("")
    assert training_scenarios(config(str(here), "x")) == str(here)
    assert training_scenarios(config(str(here), bank_sha)) is None  # a copy of the bank
    assert training_scenarios(config(None, bank_sha)) is None
    assert training_scenarios(config("gone/bank.jsonl", bank_sha)) is None  # same bytes
    with pytest.raises(ConfigError, match="gone/other.jsonl"):
        training_scenarios(config("gone/other.jsonl", "0" * 64))
    for name in NAMES:
        assert training_scenarios(pretrained_path(name) / "config.json") is None


def test_unknown_name_is_a_config_error_that_lists_the_shipped_models() -> None:
    with pytest.raises(ConfigError, match="prosody-T-c0.05"):
        load_policy("no-such-model")


def _play(name: str, scenarios: list[str]) -> tuple[float, float]:
    policy = make_rl_agent(f"ppo:{name}")
    access = policy.access
    env = wrap_for(gym.make(ENV_IDS[access], turn_cost=0.05, split="test"), policy)
    success, actions = [], []
    for i, scenario in enumerate(scenarios):
        out = run_episode(env, policy, seed=i, scenario=scenario)
        success.append(out.infos[-1]["is_success"])
        actions.append(len(out.infos) - 1)
    env.close()
    return float(np.mean(success)), float(np.mean(actions))


def test_shipped_models_reproduce_the_voice_saves_a_check() -> None:
    """The experiment's headline on 32 test episodes: the voice (A+T) saves most of the check
    that the transcript-only policy (T) makes, like the true state tag (T+S) does."""
    env = gym.make("Hear2Act-Prosody-Text-v0", split="test")
    scenarios = [s.id for s in env.unwrapped.scenarios][::3]
    env.close()
    results = {name: _play(name, scenarios) for name in NAMES}
    (s_t, a_t), (s_at, a_at), (s_ts, a_ts) = (results[n] for n in NAMES)
    assert min(s_t, s_at, s_ts) >= 0.9, results
    assert a_at < a_t - 0.3, results
    assert abs(a_at - a_ts) < 0.3, results
