"""The agent registry: one alias table from names to policy factories."""

from __future__ import annotations

from collections.abc import Callable

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


def make_agent(name: str) -> Policy:
    """Build the agent called ``name``; unknown names raise ``ConfigError`` (a ``ValueError``) listing the known."""
    try:
        factory = AGENTS[name]
    except KeyError:
        raise ConfigError(f"agent: unknown name {name!r}; known agents: {sorted(AGENTS)}") from None
    return factory()
