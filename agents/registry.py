"""The agent registry: one alias table for the baselines, and prefixed specs for model agents.

``make_agent("prober")`` builds a baseline; ``make_agent("openai:MODEL", base_url=...)``,
``"hf:PATH"``, ``"qwen2-audio:PATH"`` and ``"qwen2.5-omni:PATH"`` build LLM agents
(``agents.llm``); ``"ppo:PATH"`` loads a trained RL policy (``agents.rl``). Unknown names raise
``ConfigError`` (a ``ValueError``) listing what is known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.baselines import (
    EagerPolicy,
    OraclePolicy,
    ProberPolicy,
    RandomPolicy,
    StateAwarePolicy,
    ThoroughPolicy,
)
from hear2act_env.errors import ConfigError
from hear2act_env.policy import Policy

AGENTS: dict[str, Callable[[], Policy]] = {
    "random": RandomPolicy,
    "eager": EagerPolicy,
    "thorough": ThoroughPolicy,
    "state-aware": StateAwarePolicy,
    "prober": ProberPolicy,
    "oracle": OraclePolicy,
}
LLM_PREFIXES = ("openai", "hf", "qwen2-audio", "qwen2.5-omni")
RL_PREFIXES = ("ppo",)


def make_agent(name: str, **options: Any) -> Policy:
    """Build the agent ``name`` (``options`` go to model agents' factories)."""
    if name in AGENTS:
        if options:
            raise ConfigError(f"agent {name!r}: baselines take no options, got {sorted(options)}")
        return AGENTS[name]()
    prefix = name.partition(":")[0]
    if prefix in LLM_PREFIXES:
        from agents.llm.factory import make_llm_agent

        return make_llm_agent(name, **options)
    if prefix in RL_PREFIXES:
        from agents.rl.policy import make_rl_agent

        return make_rl_agent(name, **options)
    known = sorted(AGENTS) + [f"{p}:..." for p in LLM_PREFIXES + RL_PREFIXES]
    raise ConfigError(f"agent: unknown name {name!r}; known agents: {known}")


@dataclass(frozen=True)
class AgentFactory:
    """A picklable ``name -> Policy`` factory carrying model-agent options (for the runner)."""

    options: dict[str, Any] = field(default_factory=dict)

    def __call__(self, name: str) -> Policy:
        return make_agent(name, **(self.options if name not in AGENTS else {}))
