"""Reinforcement learning on Hear2Act: factored actions, flat observations, (Maskable)PPO
training, and an adapter from a saved model to the ``Policy`` protocol.

Importing this package is light; stable-baselines3 / sb3-contrib / torch are imported only by
``train`` and ``load_policy`` (``pip install "hear2act-env[rl]"`` and ``sb3-contrib``).

    from hear2act_agents.rl import train, train_env, load_policy, make_rl_agent
    train(train_env(access="T+S"), timesteps=300_000, seed=0, out_dir="runs/rl/x")
    policy = load_policy("runs/rl/x")          # a hear2act_env.policy.Policy
    policy = make_rl_agent("ppo:runs/rl/x")    # the same, from an agent spec
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DEFAULT_TURN_COST",
    "RLPolicy",
    "evaluate_models",
    "load_policy",
    "make_env",
    "make_rl_agent",
    "pretrained",
    "train",
    "train_env",
]

_LAZY = {
    "DEFAULT_TURN_COST": "hear2act_agents.rl.training",
    "train": "hear2act_agents.rl.training",
    "train_env": "hear2act_agents.rl.training",
    "TrainConfig": "hear2act_agents.rl.training",
    "RLPolicy": "hear2act_agents.rl.policy",
    "pretrained": "hear2act_agents.rl.pretrained",
    "evaluate_models": "hear2act_agents.rl.evaluation",
    "load_policy": "hear2act_agents.rl.policy",
    "make_rl_agent": "hear2act_agents.rl.policy",
    "make_env": "hear2act_agents.rl.envs",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hear2act_agents.rl' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
