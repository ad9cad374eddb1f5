"""What the dialogue has said in words, as structured data (a perfect reader of the text).

``LexicalView`` is what an ideal language understanding of the transcript yields: the option
table, the visible requirement and favored direction (from the request), the needs whose words
have been spoken (attribute and satisfying levels), and the surface class of the latest user
reply. It never reads hidden needs that were not said, nor the state. The env builds it
(``Hear2ActEnv.lexical_view()``); the ``StructuredObservation`` wrapper, and through it the rule
baselines and RL policies, read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

from hear2act_env.protocol.engine import ReplyKind

Surface = Literal[
    "accept", "rejection", "need_stated", "restated", "no_matter", "nothing_else", "sorry"
]
SURFACES: tuple[str, ...] = get_args(Surface)
SURFACE_OF: dict[ReplyKind, Surface] = {
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
    ReplyKind.CLARIFY_MET: "need_stated",
    ReplyKind.ASK_REQUIREMENT: "restated",
    ReplyKind.ASK_FAVORED: "restated",
    ReplyKind.ASK_DISTRACTOR: "no_matter",
    ReplyKind.OPEN_NOTHING: "nothing_else",
    ReplyKind.INVALID: "sorry",
    ReplyKind.CONFIRMED: "accept",
}


@dataclass(frozen=True)
class LexicalView:
    """The lexically available facts of the current episode (``Hear2ActEnv.lexical_view()``)."""

    values: np.ndarray  # (11, 8) level index of each option on each shown attribute
    n_levels: tuple[int, ...]  # per attribute
    requirement: tuple[int, frozenset[int]]  # (attribute position, satisfying levels)
    favored: tuple[int, int]  # (attribute position, +1 if higher levels are better else -1)
    known_needs: dict[str, tuple[int, frozenset[int]]]  # "L1".. -> (attribute position, levels)
    current: int  # the option under discussion
    surface: Surface  # surface class of the latest user reply
    actions: int
    asked: frozenset[int]  # topics asked so far (0 = open question)
    #: words-only view: needs known only by their direction (the L1 hint), with the levels
    #: the user turned down: "L1" -> (attribute position, ruled-out levels)
    ruled_out: dict[str, tuple[int, frozenset[int]]] = field(default_factory=dict)
