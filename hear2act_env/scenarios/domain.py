"""Domain definitions: the data a service domain contributes to the scenario bank.

A domain is one JSON file in ``hear2act_env/scenarios/domains/`` (format documented in
``docs/domains.md``). It lists the domain's attributes (each with how its values read, the
needs one can have about it, the visible requirements and favored direction it supports),
realistic option names, request templates, and 10 user profiles; the generator turns each
profile into one scenario.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hear2act_env import jsonsafe
from hear2act_env.errors import DomainError
from hear2act_env.protocol.jsonmodel import from_jsonable
from hear2act_env.protocol.scenario import Better, Budget, Expertise, Urgency

Category = Literal[
    "travel", "housing", "healthcare", "finance", "food", "entertainment", "personal"
]

PROFILES_PER_DOMAIN = 10
MIN_ATTRIBUTES = 10
MIN_NAMES = 12
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


Priority = Literal["L1", "L2", "L3"]
ALL_PRIORITIES: tuple[Priority, ...] = ("L1", "L2", "L3")


@dataclass(frozen=True)
class NeedOption:
    """One need a user can have about an attribute (a direction on its levels).

    ``priorities`` lists the priorities the need may take: a need that is only ever a hard
    constraint says ``["L1"]``, a mild wish ``["L3"]`` (default: all three).
    """

    key: str
    satisfied_by: tuple[int, ...]
    statement: str
    ask_answer: str
    hint: str
    priorities: tuple[Priority, ...] = ALL_PRIORITIES
    #: Bank v4: the need said without a claim about any option ("I need a copy I can keep."),
    #: what the user says when asked to say more while the current option meets it; ``hint``
    #: (the complaint form) is said only about an option that fails the need.
    want: str = ""
    #: Bank v4: what this need cannot be drawn with: another need (``"attribute:need"``; the
    #: pair never shares a triple, whichever is listed) or an attribute (``"attribute"``; the
    #: need is never drawn in a table that shows that attribute as an open one, where the user
    #: would call it something they do not care about). Applied before counting, so the stored
    #: posterior stays exact.
    conflicts: tuple[str, ...] = ()


@dataclass(frozen=True)
class RequirementOption:
    """A visible requirement on an attribute, as stated in a request."""

    key: str
    satisfied_by: tuple[int, ...]
    phrase: str
    restatement: str


@dataclass(frozen=True)
class FavoredOption:
    """The direction in which an attribute is better, and how the user says so."""

    better: Better
    phrase: str
    restatement: str


@dataclass(frozen=True)
class DomainAttribute:
    """An attribute of the domain's options (at least 10 per domain)."""

    key: str
    label: str
    sgd_slot: str | None
    keywords: tuple[str, ...]
    levels: tuple[str, ...]
    needs: tuple[NeedOption, ...] = ()
    requirements: tuple[RequirementOption, ...] = ()
    favored: FavoredOption | None = None
    #: Bank v4: the assistant's question about the attribute, as a person would ask it
    #: ("Does the departure time matter to you?").
    ask: str = ""


@dataclass(frozen=True)
class Profile:
    """One user's visible side: circumstances, the visible requirement and the favored
    attribute. The hidden needs are not part of it: the generator draws them last, among the
    need triples the scenario's option table admits (docs/domains.md#bank-v3-the-table-first-the-needs-last), so nothing here may hint at
    them. ``requirement`` is ``"attribute_key:option_key"``, ``favored`` an attribute key.
    """

    situation: str
    urgency: Urgency
    budget: Budget
    expertise: Expertise
    requirement: str
    favored: str
    #: bank v4: needs (``"attribute_key:need_key"``) this situation makes false or moot (a
    #: locked exchange rate for a payment in one currency), or whole attributes (``"attribute"``:
    #: all its needs, and it is not asked about as one the user does not care about, when the
    #: table has other attributes to open); they leave the pool before the table's valid
    #: triples are counted, so the stored posterior stays exact
    excludes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LevelSet:
    """Some levels of one attribute (indices into its ``levels``)."""

    attribute: str
    levels: tuple[int, ...]


@dataclass(frozen=True)
class CoherenceRule:
    """Values that cannot go together on one option: an option whose ``when`` attribute takes
    one of its levels takes none of the ``forbid`` levels (``why`` says why, for readers)."""

    when: LevelSet
    forbid: LevelSet
    why: str


@dataclass(frozen=True)
class NameRule:
    """Names that imply a value (a real brand's kind, say): an option listed under one of
    ``names`` takes one of ``levels`` on ``attribute`` wherever that attribute is shown."""

    names: tuple[str, ...]
    attribute: str
    levels: tuple[int, ...]
    why: str


@dataclass(frozen=True)
class Kind:
    """Bank v4: a kind of option that exists in the domain (a fare class, a plan tier, a type
    of attraction). ``levels`` lists, per attribute the kind constrains, the levels an option
    of this kind can take (other attributes: any level); ``names`` are the names that belong to
    this kind (an option of another kind never carries them); ``price`` is where a typical
    option of the kind sits on the price attribute (a level index, fractions allowed)."""

    key: str
    label: str
    levels: tuple[LevelSet, ...] = ()
    names: tuple[str, ...] = ()
    price: float | None = None

    def allowed(self, attribute: str, n_levels: int) -> tuple[int, ...]:
        """The levels of ``attribute`` an option of this kind can take."""
        for ls in self.levels:
            if ls.attribute == attribute:
                return ls.levels
        return tuple(range(n_levels))


@dataclass(frozen=True)
class Offer:
    """Bank v4: how much each level of ``attribute`` adds to a typical option's price, in price
    levels (negative: it takes off)."""

    attribute: str
    points: tuple[float, ...]


@dataclass(frozen=True)
class PriceModel:
    """Bank v4: the price (or the domain's cost-like attribute) follows what an option offers.

    An option of kind ``k`` is expected at level ``k.price + sum(points of its shown levels)``
    of ``attribute`` (clamped to the levels), and takes a level at most ``noise`` away from
    it. ``trade_off`` says, for readers, where paying more buys less of something.
    """

    attribute: str
    offer: tuple[Offer, ...]
    noise: int = 1
    trade_off: str = ""

    def points(self, attribute: str) -> tuple[float, ...] | None:
        """The points of ``attribute``'s levels, or None when it does not move the price."""
        for offer in self.offer:
            if offer.attribute == attribute:
                return offer.points
        return None


PairVerdict = Literal["kinds", "price", "coherence"]


@dataclass(frozen=True)
class PairRule:
    """Bank v4: a pair of attributes whose values do not go together freely, and what keeps
    them apart: the ``kinds``, the ``price`` model or a ``coherence`` rule (``why`` in words)."""

    pair: tuple[str, ...]
    by: PairVerdict
    why: str


@dataclass(frozen=True)
class Domain:
    """A service domain seeded from one or more SGD services."""

    id: str
    name: str
    category: Category
    sgd_services: tuple[str, ...]
    request_templates: tuple[str, ...]
    names: tuple[str, ...]
    attributes: tuple[DomainAttribute, ...]
    profiles: tuple[Profile, ...]
    coherence: tuple[CoherenceRule, ...] = ()
    name_rules: tuple[NameRule, ...] = ()
    #: 3 for the shipped bank v3 files, 4 for files with the fields below (docs/domains.md).
    format: int = 3
    kinds: tuple[Kind, ...] = ()
    price: PriceModel | None = None
    #: every pair of attributes is either here (any values go together) or in ``pair_rules``
    compatible: tuple[tuple[str, ...], ...] = ()
    pair_rules: tuple[PairRule, ...] = ()

    def kind(self, key: str) -> Kind:
        """The kind with ``key``."""
        for kind in self.kinds:
            if kind.key == key:
                return kind
        raise DomainError(f"domain {self.id}: no kind {key!r}")

    def attribute(self, key: str) -> DomainAttribute:
        """The attribute with ``key``."""
        for attribute in self.attributes:
            if attribute.key == key:
                return attribute
        raise DomainError(f"domain {self.id}: no attribute {key!r}")

    def knows_ref(self, ref: str) -> bool:
        """Whether ``ref`` is ``"attribute:need"`` of a need or ``"attribute"`` of an attribute."""
        try:
            self.need_option(ref) if ":" in ref else self.attribute(ref)
        except DomainError:
            return False
        return True

    def need_option(self, ref: str) -> tuple[DomainAttribute, NeedOption]:
        """Resolve ``"attribute:need"``."""
        attribute, key = self._split_ref(ref)
        for option in attribute.needs:
            if option.key == key:
                return attribute, option
        raise DomainError(f"domain {self.id}: attribute {attribute.key!r} has no need {key!r}")

    def requirement_option(self, ref: str) -> tuple[DomainAttribute, RequirementOption]:
        """Resolve ``"attribute:requirement"``."""
        attribute, key = self._split_ref(ref)
        for option in attribute.requirements:
            if option.key == key:
                return attribute, option
        raise DomainError(
            f"domain {self.id}: attribute {attribute.key!r} has no requirement {key!r}"
        )

    def _split_ref(self, ref: str) -> tuple[DomainAttribute, str]:
        if ref.count(":") != 1:
            raise DomainError(f"domain {self.id}: reference {ref!r} is not 'attribute:option'")
        attribute_key, key = ref.split(":")
        return self.attribute(attribute_key), key


def load_domain(path: str | Path) -> Domain:
    """Parse one domain file, failing with the file, the field and what was expected."""
    path = Path(path)
    try:
        data = jsonsafe.load_file(path)
    except json.JSONDecodeError as exc:
        raise DomainError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, nested too deeply
        raise DomainError(f"{path}: not a readable domain file ({exc})") from None
    return from_jsonable(Domain, data, f"{path}", DomainError)


def domain_files(folder: str | Path | None = None) -> list[Path]:
    """The shipped domain files, sorted by name."""
    folder = Path(folder) if folder else Path(__file__).parent / "domains"
    return sorted(folder.glob("*.json"))


def domain_problems(domain: Domain, sgd_slots: dict[str, list[str]] | None = None) -> list[str]:
    """Structural problems of a domain definition (each names the field)."""
    out: list[str] = []
    where = f"domain {domain.id}"
    if not _SLUG.match(domain.id):
        out.append(f"{where}: id must be a lowercase slug like 'city-hotels'")
    if len(domain.attributes) < MIN_ATTRIBUTES:
        out.append(
            f"{where}: attributes: need at least {MIN_ATTRIBUTES}, got {len(domain.attributes)}"
        )
    keys = [a.key for a in domain.attributes]
    if len(set(keys)) != len(keys):
        out.append(f"{where}: attributes: duplicated keys in {keys}")
    if len(set(domain.names)) < MIN_NAMES or len(set(domain.names)) != len(domain.names):
        out.append(f"{where}: names: need at least {MIN_NAMES} distinct names")
    if not domain.request_templates or any(
        t.count("{requirement}") != 1 or t.replace("{requirement}", "").count("{")
        for t in domain.request_templates
    ):
        out.append(f"{where}: request_templates: each must contain '{{requirement}}' exactly once")
    for a in domain.attributes:
        out.extend(_attribute_problems(domain, a, sgd_slots))
    if len(domain.profiles) != PROFILES_PER_DOMAIN:
        out.append(
            f"{where}: profiles: need exactly {PROFILES_PER_DOMAIN}, got {len(domain.profiles)}"
        )
    for i, p in enumerate(domain.profiles):
        out.extend(f"{where}: profiles[{i}]: {msg}" for msg in _profile_problems(domain, p))
    out.extend(_rule_problems(domain))
    for name in ("urgency", "budget", "expertise", "situation"):
        values = {getattr(p, name) for p in domain.profiles}
        if len(values) < (len(domain.profiles) if name == "situation" else 2):
            out.append(
                f"{where}: profiles: {name} must vary across profiles (got {sorted(values)})"
            )
    return out


def _attribute_problems(
    domain: Domain, a: DomainAttribute, sgd_slots: dict[str, list[str]] | None
) -> list[str]:
    where = f"domain {domain.id}: attributes[{a.key}]"
    out = []
    if len(a.levels) < 2 or len(set(a.levels)) != len(a.levels):
        out.append(f"{where}: levels: need at least 2 distinct levels")
    if not a.keywords:
        out.append(f"{where}: keywords: need at least one")
    if a.sgd_slot is not None and sgd_slots is not None:
        known = {slot for s in domain.sgd_services for slot in sgd_slots.get(s, [])}
        if a.sgd_slot not in known:
            out.append(
                f"{where}: sgd_slot {a.sgd_slot!r} is not a slot of {list(domain.sgd_services)}"
            )
    options: list[tuple[str, tuple[int, ...]]] = [
        (f"needs[{n.key}]", n.satisfied_by) for n in a.needs
    ]
    options += [(f"requirements[{r.key}]", r.satisfied_by) for r in a.requirements]
    for n in a.needs:
        if not n.priorities or len(set(n.priorities)) != len(n.priorities):
            out.append(f"{where}: needs[{n.key}].priorities: expected distinct L1, L2, L3")
        for ref in n.conflicts:
            if not domain.knows_ref(ref) or ref.split(":")[0] == a.key:
                out.append(
                    f"{where}: needs[{n.key}].conflicts: {ref!r} is not a need or attribute "
                    "of another attribute (expected 'attribute:need' or 'attribute')"
                )
    for name, sat in options:
        if not sat or any(not 0 <= v < len(a.levels) for v in sat) or len(set(sat)) != len(sat):
            out.append(
                f"{where}: {name}.satisfied_by: expected distinct indices in [0, {len(a.levels)})"
            )
        elif len(sat) == len(a.levels):
            out.append(f"{where}: {name}.satisfied_by: every level satisfies it")
    return out


def _rule_problems(domain: Domain) -> list[str]:
    """Coherence and name rules that name unknown attributes, levels or names."""
    out: list[str] = []
    keys = {a.key: a for a in domain.attributes}

    def level_problem(where: str, attribute: str, levels: tuple[int, ...]) -> str | None:
        a = keys.get(attribute)
        if a is None:
            return f"{where}.attribute: {attribute!r} is not an attribute of the domain"
        if not levels or any(not 0 <= v < len(a.levels) for v in levels):
            return f"{where}.levels: expected indices in [0, {len(a.levels)}), got {list(levels)}"
        return None

    for i, rule in enumerate(domain.coherence):
        where = f"domain {domain.id}: coherence[{i}]"
        for part, ls in (("when", rule.when), ("forbid", rule.forbid)):
            msg = level_problem(f"{where}.{part}", ls.attribute, ls.levels)
            if msg:
                out.append(msg)
        if rule.when.attribute == rule.forbid.attribute:
            out.append(f"{where}: when and forbid must name two different attributes")
    for i, rule in enumerate(domain.name_rules):
        where = f"domain {domain.id}: name_rules[{i}]"
        msg = level_problem(where, rule.attribute, rule.levels)
        if msg:
            out.append(msg)
        unknown = [n for n in rule.names if n not in domain.names]
        if unknown or not rule.names:
            out.append(f"{where}.names: {unknown or 'none'} are not among the domain's names")
    return out


def _profile_problems(domain: Domain, p: Profile) -> list[str]:
    out: list[str] = []
    try:
        req_attr, req = domain.requirement_option(p.requirement)
        favored = domain.attribute(p.favored)
    except DomainError as exc:
        return [str(exc)]
    for ref in p.excludes:
        if not domain.knows_ref(ref):
            out.append(
                f"excludes: {ref!r} is not a need or attribute of the domain "
                "(expected 'attribute:need' or 'attribute')"
            )
    if favored.favored is None:
        out.append(f"favored: attribute {favored.key!r} defines no favored direction")
        return out
    allowed = req.satisfied_by if favored.key == req_attr.key else range(len(favored.levels))
    if len(set(allowed)) < 3:
        out.append(
            "favored: needs at least 3 levels open to requirement-meeting options "
            "(attractive > best > safe)"
        )
    return out
