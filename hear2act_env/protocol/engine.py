"""The deterministic user engine (docs/protocol.md#user-engine): what the user says back to each action.

The engine decides the *content* of a reply (its ``ReplyKind``, which need it is about) and the
state of the current recommendation; it holds no randomness. The realizer
(``protocol/realizer.py``) turns that content into words and a delivery label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Literal, get_args

from hear2act_env.protocol.delivery import State
from hear2act_env.protocol.scenario import Role, Scenario

Realization = Literal["prosody", "explicit"]
REALIZATIONS: tuple[str, ...] = get_args(Realization)
N_ACTS = 4
N_OPTIONS = 11
N_TOPICS = 9  # 0 = open question, 1..8 = the scenario's attributes in shown order
REQUIREMENT = -1  # "need index" of the visible requirement in replies


class Act(IntEnum):
    """The agent's action types (first component of the action)."""

    ASK = 0
    CLARIFY = 1
    RECOMMEND = 2
    CONFIRM = 3


class ReplyKind(str, Enum):
    """What a user reply contains (the engine's decision, before wording)."""

    REJECT_REQUIREMENT = "reject_requirement"
    REJECT_L1 = "reject_l1"
    CONCERN_L2 = "concern_l2"  # Explicit: the L2 statement
    QUALIFIED_L3 = "qualified_l3"  # Explicit: assent containing the L3 statement
    ACCEPT = "accept"  # a line from the shared acceptance pool
    ASK_NEED = "ask_need"
    ASK_REQUIREMENT = "ask_requirement"
    ASK_FAVORED = "ask_favored"
    ASK_DISTRACTOR = "ask_distractor"
    OPEN_REVEAL = "open_reveal"
    OPEN_RESTATE = "open_restate"
    OPEN_NOTHING = "open_nothing"
    CLARIFY = "clarify"  # the L1 hint: the current option fails L1
    CLARIFY_MET = "clarify_met"  # bank v4: the L1 need's words, the current option meets it
    CONFIRM_DECLINED = "confirm_declined"
    CONFIRMED = "confirmed"  # the episode ends; no user words
    INVALID = "invalid"


@dataclass(frozen=True)
class Reply:
    """The engine's answer: content kind, the need it is about, and the recommendation's state."""

    kind: ReplyKind
    state: State
    need: int | None = None  # 0..2 for L1..L3, REQUIREMENT for the requirement, else None


@dataclass(frozen=True)
class ScenarioFacts:
    """Per-scenario lookups the engine needs at every step, computed once."""

    patterns: tuple[str, ...]
    states: tuple[State, ...]
    violated: tuple[tuple[int, ...], ...]  # per option: violated needs (REQUIREMENT, 0, 1, 2)
    topic_need: tuple[int | None, ...]  # per topic 1..8 (index 0 unused): need index or None
    topic_role: tuple[str, ...]  # per attribute: L1/L2/L3/requirement/favored/distractor
    best: int
    attractive: int

    @classmethod
    def of(cls, s: Scenario) -> ScenarioFacts:
        """Compute the lookups for scenario ``s``."""
        patterns = tuple(s.pattern(c) for c in s.candidates)
        need_of = {n.attribute: i for i, n in enumerate(s.needs)}
        roles = []
        for a in s.attributes:
            if a.key in need_of:
                roles.append(s.needs[need_of[a.key]].level)
            elif a.key == s.requirement.attribute:
                roles.append("requirement")
            elif a.key == s.favored.attribute:
                roles.append("favored")
            else:
                roles.append("distractor")
        return cls(
            patterns=patterns,
            states=tuple(state_of_pattern(p) for p in patterns),
            violated=tuple(_violated(p) for p in patterns),
            topic_need=(None, *(need_of.get(a.key) for a in s.attributes)),
            topic_role=tuple(roles),
            best=s.role_index(Role.BEST),
            attractive=s.role_index(Role.ATTRACTIVE),
        )


def clarify_kind(scenario: Scenario, facts: ScenarioFacts, option: int) -> ReplyKind:
    """What CLARIFY says about ``option``: the complaint (``CLARIFY``) where it fails L1; where
    it meets L1, the need's words without a claim about it (``CLARIFY_MET``, bank v4; a bank v3
    scenario has no such words and keeps the complaint)."""
    if 0 not in facts.violated[option] and scenario.needs[0].want:
        return ReplyKind.CLARIFY_MET
    return ReplyKind.CLARIFY


def state_of_pattern(pattern: str) -> State:
    """The state a recommendation with ``pattern`` (e.g. "r110") puts the user in."""
    if pattern[0] == "v" or pattern[1] == "0":
        return State.REJECTION
    if pattern[2] == "0":
        return State.CONCERN
    if pattern[3] == "0":
        return State.RELUCTANT
    return State.RESOLVED


def _violated(pattern: str) -> tuple[int, ...]:
    out = [REQUIREMENT] if pattern[0] == "v" else []
    return tuple(out + [i for i in range(3) if pattern[i + 1] == "0"])


@dataclass
class UserEngine:
    """The user's side of one episode: the current recommendation and what is revealed.

    ``current`` starts at the ``attractive`` option (the fixed opening recommendation).
    """

    scenario: Scenario
    realization: Realization
    allow_clarify: bool = True
    facts: ScenarioFacts | None = None  # pass precomputed lookups to skip recomputing them
    current: int = field(init=False)
    revealed: set[int] = field(init=False)
    #: needs whose statement or ask answer was spoken (a hint alone does not name a need)
    named: set[int] = field(init=False)
    #: options the L1 hint was spoken about while they break L1 (their L1 value is ruled out)
    hinted: list[int] = field(init=False)
    finished: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        if self.realization not in REALIZATIONS:
            raise ValueError(
                f"realization: got {self.realization!r}, expected one of {list(REALIZATIONS)}"
            )
        if self.facts is None:
            self.facts = ScenarioFacts.of(self.scenario)
        self.current = self.facts.attractive
        self.revealed = set()
        self.named = set()
        self.hinted = []

    @property
    def state(self) -> State:
        """The state of the current recommendation."""
        return self.facts.states[self.current]

    def opening(self) -> Reply:
        """The user's reaction to the opening recommendation of ``attractive``."""
        return self._react_to(self.current)

    def is_valid(self, act: int, option: int, topic: int) -> bool:
        """Whether (act, option, topic) is a legal action here."""
        if not (0 <= act < N_ACTS and 0 <= option < N_OPTIONS and 0 <= topic < N_TOPICS):
            return False
        return act != Act.CLARIFY or self.allow_clarify

    def respond(self, act: int, option: int, topic: int) -> Reply:
        """The reply to one agent action (an invalid one gets ``INVALID``)."""
        if self.finished:
            raise RuntimeError("the episode has ended; reset before acting again")
        if not self.is_valid(act, option, topic):
            return Reply(ReplyKind.INVALID, self.state)
        if act == Act.RECOMMEND:
            self.current = option
            return self._react_to(option)
        if act == Act.CONFIRM:
            if self.state == State.REJECTION:
                return Reply(ReplyKind.CONFIRM_DECLINED, State.REJECTION)
            self.finished = True
            return Reply(ReplyKind.CONFIRMED, self.state)
        if act == Act.CLARIFY:
            self.revealed.add(0)
            self._hint_about(self.current)
            return Reply(clarify_kind(self.scenario, self.facts, self.current), self.state, 0)
        if topic == 0:
            return self._open_question()
        return self._targeted_question(topic)

    def _react_to(self, option: int) -> Reply:
        pattern = self.facts.patterns[option]
        state = self.facts.states[option]
        if pattern[0] == "v":
            return Reply(ReplyKind.REJECT_REQUIREMENT, state, REQUIREMENT)
        if state == State.REJECTION:
            self.revealed.add(0)
            self._hint_about(option)
            return Reply(ReplyKind.REJECT_L1, state, 0)
        if self.realization == "prosody" or state == State.RESOLVED:
            return Reply(ReplyKind.ACCEPT, state)
        need = 1 if state == State.CONCERN else 2
        self.revealed.add(need)
        self.named.add(need)
        kind = ReplyKind.CONCERN_L2 if need == 1 else ReplyKind.QUALIFIED_L3
        return Reply(kind, state, need)

    def _hint_about(self, option: int) -> None:
        """The L1 hint was spoken about ``option``: if it breaks L1, its L1 value is out."""
        if 0 in self.facts.violated[option] and option not in self.hinted:
            self.hinted.append(option)

    def _say_need(self, need: int) -> None:
        """An open question reveals ``need``: L1 by its hint, L2 and L3 by their statement."""
        self.revealed.add(need)
        if need == 0:
            self._hint_about(self.current)
        else:
            self.named.add(need)

    def _open_question(self) -> Reply:
        violated = self.facts.violated[self.current]
        hidden = [n for n in violated if n != REQUIREMENT and n not in self.revealed]
        if hidden:
            self._say_need(hidden[0])
            return Reply(ReplyKind.OPEN_REVEAL, self.state, hidden[0])
        if violated:
            if violated[0] == 0:  # a restated L1 repeats its hint
                self._hint_about(self.current)
            return Reply(ReplyKind.OPEN_RESTATE, self.state, violated[0])
        return Reply(ReplyKind.OPEN_NOTHING, self.state)

    def _targeted_question(self, topic: int) -> Reply:
        need = self.facts.topic_need[topic]
        if need is not None:
            self.revealed.add(need)
            self.named.add(need)
            return Reply(ReplyKind.ASK_NEED, self.state, need)
        role = self.facts.topic_role[topic - 1]
        if role == "requirement":
            return Reply(ReplyKind.ASK_REQUIREMENT, self.state, REQUIREMENT)
        if role == "favored":
            return Reply(ReplyKind.ASK_FAVORED, self.state)
        return Reply(ReplyKind.ASK_DISTRACTOR, self.state)
