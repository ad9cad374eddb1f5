"""The ``Policy`` protocol: every agent (rule, model or trained) plays through it."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

ObservationKind = Literal["text", "structured", "privileged"]


@runtime_checkable
class Policy(Protocol):
    """An agent. ``observation_kind`` says which observation it reads:

    ``"text"`` is the env's own observation; ``"structured"`` adds the keys of
    ``wrappers.StructuredObservation`` (text kept); ``"privileged"`` adds those and ``truth``
    (the ground truth from ``info``): only the oracle, labelled so in every report.
    """

    name: str
    observation_kind: ObservationKind

    def reset(self, observation: dict[str, Any], seed: int | None = None) -> None:
        """Start an episode from its first observation (``seed`` fixes any randomness)."""
        ...

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        """Return the action (act, option, topic) for ``observation``."""
        ...
