"""What the dialogue has said in words, as structured data (a perfect reader of the text).

``LexicalView`` is what an ideal language understanding of the transcript yields: the option
table, the visible requirement and favored direction (from the request), the needs whose words
have been spoken (attribute and satisfying levels), and the surface class of the latest user
reply. It never reads hidden needs that were not said, nor the state. Rule baselines and the RL
observation wrapper are built on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from hear2act_env.protocol.engine import ReplyKind

if TYPE_CHECKING:
    from hear2act_env.env import Hear2ActEnv

Surface = Literal[
    "accept", "rejection", "need_stated", "restated", "no_matter", "nothing_else", "sorry"
]
SURFACES: tuple[str, ...] = (
    "accept",
    "rejection",
    "need_stated",
    "restated",
    "no_matter",
    "nothing_else",
    "sorry",
)
SURFACE_OF: dict[ReplyKind, str] = {
    ReplyKind.ACCEPT: "accept",
    ReplyKind.REJECT_REQUIREMENT: "rejection",
    ReplyKind.REJECT_L1: "rejection",
    ReplyKind.CONFIRM_DECLINED: "rejection",
    ReplyKind.CONCERN_L2: "need_stated",
    ReplyKind.QUALIFIED_L3: "need_stated",
    ReplyKind.ASK_NEED: "need_stated",
    ReplyKind.OPEN_REVEAL: "need_stated",
    ReplyKind.OPEN_RESTATE: "need_stated",
    ReplyKind.CLARIFY: "need_stated",
    ReplyKind.ASK_REQUIREMENT: "restated",
    ReplyKind.ASK_FAVORED: "restated",
    ReplyKind.ASK_DISTRACTOR: "no_matter",
    ReplyKind.OPEN_NOTHING: "nothing_else",
    ReplyKind.INVALID: "sorry",
    ReplyKind.CONFIRMED: "accept",
}


@dataclass(frozen=True)
class LexicalView:
    """The lexically available facts of the current episode."""

    values: np.ndarray  # (11, 8) level index of each option on each shown attribute
    n_levels: tuple[int, ...]  # per attribute
    requirement: tuple[int, frozenset[int]]  # (attribute position, satisfying levels)
    favored: tuple[int, int]  # (attribute position, +1 if higher levels are better else -1)
    known_needs: dict[str, tuple[int, frozenset[int]]]  # "L1".. -> (attribute position, levels)
    current: int  # the option under discussion
    surface: str  # surface class of the latest user reply
    actions: int
    asked: frozenset[int]  # topics asked so far (0 = open question)

    def fits(self, option: int) -> bool:
        """Whether ``option`` meets the requirement and every known need."""
        row = self.values[option]
        pos, sat = self.requirement
        return row[pos] in sat and all(row[p] in s for p, s in self.known_needs.values())

    def best_known_fit(self) -> int:
        """The option that meets the most known constraints, best on the favored attribute."""
        pos, sign = self.favored
        req_pos, req_sat = self.requirement

        def key(o: int) -> tuple[int, int, int]:
            row = self.values[o]
            met = sum(row[p] in s for p, s in self.known_needs.values())
            return (int(row[req_pos] in req_sat), met, sign * int(row[pos]))

        return max(range(len(self.values)), key=key)


def lexical_view(env: Hear2ActEnv) -> LexicalView:
    """The lexical view of ``env``'s current episode (after reset)."""
    engine, scenario = env._engine, env.scenario  # noqa: SLF001 - the view is part of the env layer
    if engine is None or scenario is None:
        raise RuntimeError("call reset() before reading the lexical view")
    index = {a.key: i for i, a in enumerate(scenario.attributes)}
    needs = {
        scenario.needs[i].level: (
            index[scenario.needs[i].attribute],
            frozenset(scenario.needs[i].satisfied_by),
        )
        for i in sorted(engine.revealed)
    }
    return LexicalView(
        values=env._values,  # noqa: SLF001
        n_levels=tuple(len(a.levels) for a in scenario.attributes),
        requirement=(
            index[scenario.requirement.attribute],
            frozenset(scenario.requirement.satisfied_by),
        ),
        favored=(
            index[scenario.favored.attribute],
            1 if scenario.favored.better == "higher" else -1,
        ),
        known_needs=needs,
        current=engine.current,
        surface=SURFACE_OF[env._last_reply_kind],  # noqa: SLF001
        actions=env._actions,  # noqa: SLF001
        asked=frozenset(env._asked),  # noqa: SLF001
    )
