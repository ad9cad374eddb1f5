"""A tiny training run saves a model that reloads as a Policy and plays through the runner."""

import json

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="MaskablePPO needs sb3-contrib")

from hear2act_agents.registry import make_agent
from hear2act_agents.rl.actions import to_env
from hear2act_agents.rl.policy import load_policy, make_rl_agent
from hear2act_agents.rl.training import train, train_env
from hear2act_cli import build_parser, main
from hear2act_env.config import EnvConfig
from hear2act_env.env import Hear2ActEnv
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.rollout import run_episode, wrap_for
from hear2act_env.evaluation.runner import GridConfig, run_grid
from hear2act_env.policy import Policy
from hear2act_env.scenarios.bank import load_bank
from tests.rl.stubs import ToneRenderer

TINY = {
    "n_envs": 2,
    "n_steps": 64,
    "batch_size": 64,
    "n_epochs": 1,
    "eval_every": 128,
    "eval_episodes": 2,
}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("rl") / "tiny"
    result = train(train_env(access="T+S"), 256, 3, out, progress=False, **TINY)
    return result


def test_tiny_training_saves_model_config_and_curve(tiny_run):
    assert tiny_run.model_path.is_file() and tiny_run.timesteps >= 256
    config = json.loads(tiny_run.config_path.read_text())
    assert config["kind"] == "hear2act-rl-v1" and config["algorithm"] == "MaskablePPO"
    env = config["config"]["env"]  # the env of the run, in one place
    assert env["access"] == "T+S" and env["turn_cost"] == 0.05 and env["split"] == "train"
    assert "access" not in config["config"] and "turn_cost" not in config["config"]
    assert config["config"]["seed"] == 3 and config["encoder"]["with_state"]
    from hear2act_env.scenarios.bank import BANK_VERSION

    assert config["bank_version"] == (BANK_VERSION if env["scenarios"] is None else None)
    lines = tiny_run.progress_path.read_text().splitlines()
    assert lines[0].startswith("timesteps,") and len(lines) >= 3


def test_reloaded_policy_plays_an_episode(tiny_run):
    policy = load_policy(tiny_run.out_dir)
    assert isinstance(policy, Policy) and policy.observation_kind == "structured"
    env = wrap_for(Hear2ActEnv(access="T+S", split="test"), policy)
    rollout = run_episode(env, policy, seed=0)
    assert rollout.terminated or rollout.truncated
    assert not any(info["invalid_action"] for info in rollout.infos[1:])
    # deterministic: the same episode twice gives the same actions
    again = run_episode(env, load_policy(tiny_run.model_path), seed=0)
    assert [i["last_turn"] for i in again.infos] == [i["last_turn"] for i in rollout.infos]


def test_runner_evaluates_the_model_by_spec(tiny_run, tmp_path):
    spec = f"ppo:{tiny_run.out_dir}"
    assert make_rl_agent(spec).name == spec
    sid = next(s.id for s in load_bank() if s.split == "test")
    config = GridConfig(
        agents=(spec, "prober"),
        realizations=("prosody",),
        conditions=(("T+S", "correct"),),
        scenarios=(sid,),
        env=EnvConfig(turn_cost=0.05),
    )
    records = run_grid(config, tmp_path / "r.jsonl", make_agent, progress=False)
    assert len(records) == 2 and all(r.error is None for r in records)
    mine = next(r for r in records if r.key.agent == spec)
    assert mine.actions >= 1 and mine.reward <= 1.0
    assert mine.agent_stats["model_access"] == "T+S"


def test_bad_specs_and_paths(tmp_path):
    with pytest.raises(ConfigError):
        make_rl_agent("ppo")
    with pytest.raises(ConfigError):
        load_policy(tmp_path)


def test_parsers_register_and_train_from_the_command_line(tmp_path, capsys):
    parser = build_parser()
    args = parser.parse_args(["train", "--access", "T+S", "--turn-cost", "0.1"])
    assert args.turn_cost == 0.1 and args.func.__name__ == "train"
    args = parser.parse_args(["rl-eval", "runs/x", "--runs", "2"])
    assert args.models == ["runs/x"] and args.runs == 2
    out = tmp_path / "cli"
    argv = ["train", "--access", "T", "--timesteps", "128", "--out", str(out), "--n-envs", "2"]
    argv += ["--eval-every", "64", "--eval-episodes", "1", "--quiet"]
    assert main(argv) == 0
    assert (out / "model.zip").is_file()
    sid = next(s.id for s in load_bank() if s.split == "test")
    assert (
        main(
            [
                "rl-eval",
                str(out),
                "--out",
                str(tmp_path / "ev"),
                "--quiet",
                "--no-plots",
                "--split",
                "test",
                "--baselines",
                "prober",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "ppo:" in text and "prober" in text and sid


def test_audio_policy_through_the_runner(tmp_path):
    """A+T end to end with a synthetic voice: scaler, training, reload, runner episode."""
    out = tmp_path / "audio"
    env = train_env(access="A+T", renderer=ToneRenderer())
    kw = dict(TINY, scaler_episodes=2)
    result = train(env, 128, 0, out, progress=False, vec="dummy", **kw)
    config = json.loads(result.config_path.read_text())
    assert config["encoder"]["with_audio"] and len(config["encoder"]["prosody_mean"]) == 16
    policy = load_policy(out)
    env = wrap_for(Hear2ActEnv(access="A+T", renderer=ToneRenderer(), audio_cache=False), policy)
    rollout = run_episode(env, policy, seed=1)
    assert rollout.infos[-1]["actions"] >= 1
    with pytest.raises(ConfigError):  # an audio model needs audio
        run_episode(wrap_for(Hear2ActEnv(access="T"), policy), policy, seed=1)


def test_plain_ppo_without_masks(tmp_path):
    env = train_env(realization="explicit", turn_cost=0.0)
    result = train(env, 128, 0, tmp_path / "plain", progress=False, mask=False, **TINY)
    policy = load_policy(result.out_dir)
    assert not policy.masked
    obs, _ = wrap_for(Hear2ActEnv(), policy).reset(seed=0)
    policy.reset(obs)
    action = policy.act(obs)
    assert action.shape == (3,) and any(np.array_equal(action, to_env(i)) for i in range(22))


def test_warm_start_copies_the_source_policy(tiny_run, tmp_path):
    import torch
    from sb3_contrib import MaskablePPO

    from hear2act_agents.rl.encoding import EncoderSpec
    from hear2act_agents.rl.envs import make_env
    from hear2act_agents.rl.training import warm_start

    source = load_policy(tiny_run.out_dir)  # T+S
    spec = EncoderSpec.for_access("T+S")
    model = MaskablePPO(
        "MlpPolicy",
        make_env(access="T+S", spec=spec),
        n_steps=64,
        policy_kwargs={"net_arch": [128, 128]},
        device="cpu",
    )
    warm_start(model, spec, tiny_run.out_dir)
    x = torch.randn(5, spec.size)
    with torch.no_grad():
        a = model.policy.get_distribution(x).distribution.probs
        b = source.model.policy.get_distribution(x).distribution.probs
    assert torch.allclose(a, b)
    with pytest.raises(ConfigError):  # a T+S observation is not a prefix of T
        warm_start(model, EncoderSpec.for_access("T"), tiny_run.out_dir)
