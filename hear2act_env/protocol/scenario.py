"""The scenario data model (docs/protocol.md#scenario, #candidates) with a strict JSON round trip.

A scenario is self-contained: it carries its 8 attributes (in shown order), the visible
requirement, the favored attribute, the three hidden needs and the 11 candidates (in shown
order), so a scenario file needs nothing else to be played.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, get_args

from hear2act_env.errors import ScenarioError
from hear2act_env.protocol.jsonmodel import OMIT_DEFAULT, from_jsonable, to_jsonable

NeedLevel = Literal["L1", "L2", "L3"]
Split = Literal["train", "test"]
Better = Literal["lower", "higher"]
Urgency = Literal["low", "medium", "high"]
Budget = Literal["tight", "moderate", "flexible"]
Expertise = Literal["novice", "intermediate", "expert"]
#: Speaker personas; each maps to one voice of a renderer, fixed within an episode.
Persona = Literal["amber", "birch", "cedar", "dune", "ember", "fern"]

NEED_LEVELS: tuple[str, ...] = get_args(NeedLevel)
SPLITS: tuple[str, ...] = get_args(Split)
URGENCY: tuple[str, ...] = get_args(Urgency)
BUDGET: tuple[str, ...] = get_args(Budget)
EXPERTISE: tuple[str, ...] = get_args(Expertise)
PERSONAS: tuple[str, ...] = get_args(Persona)


class Role(str, Enum):
    """A candidate's role in the 11-option construction (docs/protocol.md#candidates)."""

    BEST = "best"
    SAFE = "safe"
    ATTRACTIVE = "attractive"
    PARTIAL = "partial"
    VIOLATOR = "violator"


@dataclass(frozen=True)
class Attribute:
    """One askable attribute: its words, keywords and how each value reads."""

    key: str
    label: str
    keywords: tuple[str, ...]
    levels: tuple[str, ...]
    #: bank v4: the assistant's question about it ("Does the departure time matter to you?");
    #: empty in older files, where the question is built from the label
    ask: str = field(default="", metadata=OMIT_DEFAULT)


@dataclass(frozen=True)
class Requirement:
    """The visible requirement stated in the request (e.g. "under $300")."""

    attribute: str
    satisfied_by: tuple[int, ...]
    phrase: str
    restatement: str


@dataclass(frozen=True)
class Favored:
    """The attribute the request implies more-is-better (or less-is-better) on."""

    attribute: str
    better: Better
    phrase: str
    restatement: str

    def score(self, level: int) -> int:
        """A number that grows as the level gets better for the user."""
        return level if self.better == "higher" else -level


@dataclass(frozen=True)
class Need:
    """A hidden need; ``level`` is its priority (L1 hard constraint .. L3 moderate)."""

    level: NeedLevel
    attribute: str
    satisfied_by: tuple[int, ...]
    statement: str
    ask_answer: str
    hint: str
    #: bank v4: the need said without a claim about the option at hand (said under CLARIFY
    #: while the current option meets it; ``hint`` is said only about one that fails it)
    want: str = field(default="", metadata=OMIT_DEFAULT)


@dataclass(frozen=True)
class Context:
    """Circumstances that shaped the needs; not shown to the agent."""

    urgency: Urgency
    budget: Budget
    expertise: Expertise
    situation: str


@dataclass(frozen=True)
class Candidate:
    """One option: its name, role and a level index for each scenario attribute."""

    name: str
    role: Role
    values: tuple[int, ...]


@dataclass(frozen=True)
class Identifiability:
    """How well the visible part points at the answer (hidden from agents; docs/domains.md#bank-v3-the-table-first-the-needs-last).

    ``valid_triples`` is the number of need triples of the domain's pool that the option table
    admits (the needs were drawn uniformly among them), ``best_posterior`` the largest share of
    them naming one option ``best`` (what the best guess without a question wins), and
    ``need_share[j]`` the share of them with a need on attribute ``j`` (shown order).
    """

    valid_triples: int
    best_posterior: float
    need_share: tuple[float, ...]


@dataclass(frozen=True)
class Scenario:
    """One Hear2Act scenario: an episode's task, hidden needs and options.

    ``identifiability`` is set by the bank v3 generator and absent from hand-written files.
    """

    id: str
    domain: str
    domain_name: str
    category: str
    sgd_services: tuple[str, ...]
    split: Split
    persona: Persona
    context: Context
    request: str
    attributes: tuple[Attribute, ...]
    requirement: Requirement
    favored: Favored
    needs: tuple[Need, ...]
    candidates: tuple[Candidate, ...]
    identifiability: Identifiability | None = None

    # -- derived views -------------------------------------------------------------------
    @property
    def bank_format(self) -> int:
        """4 for a bank v4 scenario (its attributes carry the assistant's questions), else 3;
        the dialogue follows it (docs/protocol.md#user-engine)."""
        return 4 if self.attributes and all(a.ask for a in self.attributes) else 3

    def attribute_index(self, key: str) -> int:
        """Shown position (0-based) of the attribute ``key``."""
        for i, attribute in enumerate(self.attributes):
            if attribute.key == key:
                return i
        raise ScenarioError(f"scenario {self.id}: no attribute with key {key!r}")

    def meets_requirement(self, candidate: Candidate) -> bool:
        """Whether ``candidate`` satisfies the visible requirement."""
        value = candidate.values[self.attribute_index(self.requirement.attribute)]
        return value in self.requirement.satisfied_by

    def need_bits(self, candidate: Candidate) -> tuple[bool, bool, bool]:
        """(L1, L2, L3) satisfied flags of ``candidate``."""
        return tuple(
            candidate.values[self.attribute_index(need.attribute)] in need.satisfied_by
            for need in self.needs
        )  # type: ignore[return-value]

    def pattern(self, candidate: Candidate) -> str:
        """Pattern (docs/protocol.md#spaces): "r" or "v" for the requirement, then the L1-L3 bits."""
        bits = "".join("1" if b else "0" for b in self.need_bits(candidate))
        return ("r" if self.meets_requirement(candidate) else "v") + bits

    def favored_score(self, candidate: Candidate) -> int:
        """How good ``candidate`` is on the favored attribute (higher is better)."""
        return self.favored.score(candidate.values[self.attribute_index(self.favored.attribute)])

    def role_index(self, role: Role) -> int:
        """Shown index of the first candidate with ``role``."""
        for i, candidate in enumerate(self.candidates):
            if candidate.role == role:
                return i
        raise ScenarioError(f"scenario {self.id}: no candidate with role {role.value!r}")

    def describe(self, candidate: Candidate) -> str:
        """The candidate in words with all its attribute values."""
        parts = [
            f"{attribute.label}: {attribute.levels[value]}"
            for attribute, value in zip(self.attributes, candidate.values)
        ]
        return f"{candidate.name} ({'; '.join(parts)})"

    def options_text(self) -> str:
        """The numbered list of candidates (1-based, shown order)."""
        return "\n".join(
            f"{i}. {self.describe(candidate)}" for i, candidate in enumerate(self.candidates, 1)
        )

    # -- JSON ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; ``Scenario.from_dict`` inverts it exactly."""
        return to_jsonable(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        """Parse a dict (as from JSON), failing with the scenario id and field."""
        sid = data.get("id", "<no id>") if isinstance(data, Mapping) else "<not an object>"
        return from_jsonable(cls, data, f"scenario {sid}", ScenarioError)
