"""Play one episode of a policy in an env, keeping every step's info (the metrics' input)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from hear2act_env.policy import Policy
from hear2act_env.tally import EpisodeTally
from hear2act_env.wrappers.structured import StructuredObservation


@dataclass
class Rollout:
    """What one episode produced."""

    infos: list[dict[str, Any]] = field(default_factory=list)  # reset info, then one per step
    tally: EpisodeTally = field(default_factory=EpisodeTally)  # reward, end flags, metric parts
    transcript: str = ""

    @property
    def total_reward(self) -> float:
        return self.tally.total_reward

    @property
    def terminated(self) -> bool:
        return self.tally.terminated

    @property
    def truncated(self) -> bool:
        return self.tally.truncated


def wrap_for(env: gym.Env, policy: Policy) -> gym.Env:
    """Wrap ``env`` with the observation adapter the policy reads."""
    if policy.observation_kind in ("structured", "privileged"):
        return StructuredObservation(env, keep_text=True)
    return env


def run_episode(env: gym.Env, policy: Policy, seed: int, scenario: str | None = None) -> Rollout:
    """Reset ``env`` with ``seed`` (and ``scenario``), then let ``policy`` act until the end."""
    options = {"scenario": scenario} if scenario is not None else None
    obs, info = env.reset(seed=seed, options=options)
    privileged = policy.observation_kind == "privileged"
    if privileged:
        obs = {**obs, "truth": info["truth"]}
    policy.reset(obs, seed=seed)
    out = Rollout(infos=[info], tally=EpisodeTally.start(info))
    while True:
        obs, reward, terminated, truncated, info = env.step(policy.act(obs))
        if privileged:
            obs = {**obs, "truth": info["truth"]}
        out.infos.append(info)
        out.tally.step(info, reward, terminated, truncated)
        if terminated or truncated:
            out.transcript = obs["transcript"]
            return out
