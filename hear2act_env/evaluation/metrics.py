"""Metrics (docs/protocol.md#metrics) as ratios of per-episode numerators and denominators.

Success%, full disclosure and premature closure are per episode; Accept% and FullFit% are per
agent recommendation turn (the opening recommendation is not the agent's); shares are per
action. Writing every metric as sum(num) / sum(den) lets the scenario-level bootstrap resample
scenarios and recompute any of them the same way. Records with an ``error`` are left out (the
report counts them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hear2act_env.evaluation.records import EpisodeRecord


@dataclass(frozen=True)
class Metric:
    """A named ratio metric; ``scale`` 100 for percentages."""

    name: str
    part: Callable[[EpisodeRecord], tuple[float, float]]
    scale: float = 100.0

    def parts(self, records: Sequence[EpisodeRecord]) -> tuple[np.ndarray, np.ndarray]:
        """Per-record numerators and denominators."""
        pairs = np.array([self.part(r) for r in records], dtype=float).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]

    def __call__(self, records: Sequence[EpisodeRecord]) -> float:
        num, den = self.parts([r for r in records if r.error is None])
        return float(self.scale * num.sum() / den.sum()) if den.sum() else float("nan")


def _accept(p: str) -> bool:
    return p[0] == "r" and p[1] == "1" and p[2] == "1"


def _share(kind: str) -> Callable[[EpisodeRecord], tuple[float, float]]:
    def part(r: EpisodeRecord) -> tuple[float, float]:
        if kind == "ask":
            n = r.counts.get("ask_targeted", 0) + r.counts.get("ask_open", 0)
        else:
            n = r.counts.get(kind, 0)
        return n, r.actions

    return part


SUCCESS = Metric("success", lambda r: (r.success, 1))
ACCEPT = Metric(
    "accept", lambda r: (sum(map(_accept, r.recommend_patterns)), len(r.recommend_patterns))
)
FULLFIT = Metric(
    "fullfit", lambda r: (r.recommend_patterns.count("r111"), len(r.recommend_patterns))
)
FULL_DISCLOSURE = Metric("full_disclosure", lambda r: (len(r.revealed) == 3, 1))
PREMATURE_CLOSURE = Metric("premature_closure", lambda r: (r.premature_closure, 1))
NEEDS_REVEALED = Metric("needs_revealed", lambda r: (len(r.revealed), 1), scale=1.0)
ACTIONS = Metric("actions", lambda r: (r.actions, 1), scale=1.0)
GATHER_ACTIONS = Metric(
    "ask_clarify_actions",
    lambda r: (
        r.counts.get("ask_targeted", 0) + r.counts.get("ask_open", 0) + r.counts.get("clarify", 0),
        1,
    ),
    scale=1.0,
)
RETURN = Metric("mean_return", lambda r: (r.reward, 1), scale=1.0)
CONFIRM_AFTER_RELUCTANT = Metric(
    "confirm_after_reluctant", lambda r: (r.confirm_after_reluctant, r.reluctant_turns)
)
SHARES = tuple(
    Metric(f"{kind}_share", _share(kind))
    for kind in ("ask", "clarify", "recommend", "confirm", "invalid")
)

MAIN = (SUCCESS, ACCEPT, FULLFIT)
BEHAVIOUR = (
    FULL_DISCLOSURE,
    PREMATURE_CLOSURE,
    NEEDS_REVEALED,
    GATHER_ACTIONS,
    ACTIONS,
    CONFIRM_AFTER_RELUCTANT,
)
ALL = MAIN + BEHAVIOUR + (RETURN,) + SHARES
BY_NAME = {m.name: m for m in ALL}
