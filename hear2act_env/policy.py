"""The ``Policy`` protocol: every agent (rule, model or trained) plays through it."""

from __future__ import annotations

from typing import Any, Literal, Protocol, get_args, runtime_checkable

import numpy as np

from hear2act_env.errors import ConfigError

ObservationKind = Literal["text", "structured", "privileged"]


@runtime_checkable
class Policy(Protocol):
    """An agent. ``observation_kind`` says which observation it reads:

    ``"text"`` is the env's own observation; ``"structured"`` adds the keys of
    ``wrappers.StructuredObservation`` (text kept); ``"privileged"`` adds those and ``truth``
    (the ground truth from ``info``): only the oracle, labelled so in every report.

    ``stats`` is optional: subclass ``Policy`` (``class MyAgent(Policy): ...``) to inherit its
    default, or leave it out of a duck-typed class (``agent_stats`` then gives ``{}``). The
    runner checks the required members with ``check_policy`` when it builds an agent.
    Optional too: ``episode_log() -> dict`` (JSON-ready), which the runner writes beside the
    results, one line per episode (model agents log their prompts, replies and tokens).
    """

    name: str
    observation_kind: ObservationKind

    def reset(self, observation: dict[str, Any], seed: int | None = None) -> None:
        """Start an episode from its first observation (``seed`` fixes any randomness)."""
        ...

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        """Return the action (act, option, topic) for ``observation``."""
        ...

    def stats(self) -> dict[str, Any]:
        """Counters of the episode just played, stored in its record as ``agent_stats``.

        Optional: classes that subclass ``Policy`` inherit this default (no counters).
        """
        return {}


#: Members every agent must have (``stats`` is optional).
REQUIRED_MEMBERS = ("name", "observation_kind", "reset", "act")
OBSERVATION_KINDS: tuple[str, ...] = get_args(ObservationKind)


def check_policy(agent: object, spec: str = "agent") -> None:
    """Raise ``ConfigError`` unless ``agent`` has every required member of ``Policy``."""
    missing = [m for m in REQUIRED_MEMBERS if not hasattr(agent, m)]
    if missing:
        raise ConfigError(
            f"{spec}: {type(agent).__name__} lacks {missing}; an agent needs "
            f"{list(REQUIRED_MEMBERS)} (see hear2act_env.policy.Policy)"
        )
    kind = agent.observation_kind
    if kind not in OBSERVATION_KINDS:
        raise ConfigError(
            f"{spec}: observation_kind is {kind!r}, expected one of {list(OBSERVATION_KINDS)}"
        )


def agent_log(agent: object) -> dict[str, Any] | None:
    """The agent's ``episode_log()`` (optional: model agents log their calls), or None."""
    log = getattr(agent, "episode_log", None)
    if not callable(log):
        return None
    try:
        data = log()
    except Exception:  # noqa: BLE001 - a broken log never costs the episode's record
        return None
    return data if isinstance(data, dict) else None


def agent_stats(agent: object) -> dict[str, Any]:
    """The agent's ``stats()``, or the protocol's default (no counters) when it has none."""
    stats = getattr(agent, "stats", None)
    return dict(stats()) if callable(stats) else {}
