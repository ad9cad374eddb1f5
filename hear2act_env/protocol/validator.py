"""The structural validator: every rule of docs/protocol.md#candidates, each a small named check.

``problems(scenario)`` lists every broken rule as "scenario ID: field: what is wrong";
``validate(scenario)`` raises ``ScenarioError`` with all of them.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterator

from hear2act_env.constants import OPTIONS_MAX, SENTENCE_MAX, SHORT_TEXT_MAX
from hear2act_env.errors import ScenarioError
from hear2act_env.protocol.scenario import (
    BUDGET,
    EXPERTISE,
    NEED_LEVELS,
    PERSONAS,
    SPLITS,
    URGENCY,
    Role,
    Scenario,
)

N_CANDIDATES = 11
N_ATTRIBUTES = 8
PARTIAL_PATTERNS = ("000", "001", "010", "011", "100", "101")
ROLE_COUNTS = {Role.BEST: 1, Role.SAFE: 1, Role.ATTRACTIVE: 1, Role.PARTIAL: 6, Role.VIOLATOR: 2}
#: Characters allowed in every text (the observation spaces' charset).
TEXT_CHARSET = frozenset(string.printable) - frozenset("\t\r\x0b\x0c")
#: Texts held to ``SHORT_TEXT_MAX`` (the others are sentences, held to ``SENTENCE_MAX``).
_SHORT = frozenset({"domain_name", "candidates", "attributes"})
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*-\d{2}$")

Check = Callable[[Scenario], Iterator[str]]


def check_candidate_count(s: Scenario) -> Iterator[str]:
    """Exactly 11 candidates."""
    if len(s.candidates) != N_CANDIDATES:
        yield f"candidates: expected {N_CANDIDATES} candidates, got {len(s.candidates)}"


def check_role_counts(s: Scenario) -> Iterator[str]:
    """One best, one safe, one attractive, six partials, two violators."""
    counts = Counter(c.role for c in s.candidates)
    for role, expected in ROLE_COUNTS.items():
        if counts[role] != expected:
            yield f"candidates.role: expected {expected} {role.value!r}, got {counts[role]}"


def check_attributes(s: Scenario) -> Iterator[str]:
    """8 distinct attributes, each with levels, keywords and a label."""
    keys = [a.key for a in s.attributes]
    if len(keys) != N_ATTRIBUTES or len(set(keys)) != N_ATTRIBUTES:
        yield f"attributes: expected {N_ATTRIBUTES} distinct keys, got {keys}"
    for a in s.attributes:
        if len(a.levels) < 2:
            yield f"attributes[{a.key}].levels: expected at least 2 levels, got {len(a.levels)}"
        if len(set(a.levels)) != len(a.levels):
            yield f"attributes[{a.key}].levels: duplicated level text in {list(a.levels)}"
        if not a.keywords:
            yield f"attributes[{a.key}].keywords: expected at least one keyword"


def check_need_attributes(s: Scenario) -> Iterator[str]:
    """Three needs L1, L2, L3 on three distinct attributes, none the requirement's or favored's."""
    levels = tuple(n.level for n in s.needs)
    if levels != NEED_LEVELS:
        yield f"needs.level: expected {list(NEED_LEVELS)} in order, got {list(levels)}"
    attrs = [n.attribute for n in s.needs]
    if len(set(attrs)) != len(attrs):
        yield f"needs.attribute: expected 3 distinct attributes, got {attrs}"
    keys = {a.key for a in s.attributes}
    for n in s.needs:
        if n.attribute not in keys:
            yield f"needs[{n.level}].attribute: {n.attribute!r} is not one of the attributes {sorted(keys)}"
        if n.attribute in (s.requirement.attribute, s.favored.attribute):
            yield f"needs[{n.level}].attribute: {n.attribute!r} is also the requirement or favored attribute"
    for name, attr in (("requirement", s.requirement.attribute), ("favored", s.favored.attribute)):
        if attr not in keys:
            yield f"{name}.attribute: {attr!r} is not one of the attributes {sorted(keys)}"


def check_value_sets(s: Scenario) -> Iterator[str]:
    """Satisfying sets and candidate values index existing levels; sets are proper subsets."""
    n_levels = {a.key: len(a.levels) for a in s.attributes}
    sets = [(f"needs[{n.level}]", n.attribute, n.satisfied_by) for n in s.needs]
    sets.append(("requirement", s.requirement.attribute, s.requirement.satisfied_by))
    for where, attr, sat in sets:
        size = n_levels.get(attr)
        if size is None:
            continue
        if not sat or len(set(sat)) != len(sat) or any(not 0 <= v < size for v in sat):
            yield f"{where}.satisfied_by: expected distinct level indices in [0, {size}), got {list(sat)}"
        elif len(sat) == size:
            yield f"{where}.satisfied_by: every level satisfies it, so no candidate can violate it"
    for i, c in enumerate(s.candidates):
        if len(c.values) != len(s.attributes):
            yield f"candidates[{i}].values: expected {len(s.attributes)} values, got {len(c.values)}"
            continue
        for a, v in zip(s.attributes, c.values):
            if not 0 <= v < len(a.levels):
                yield f"candidates[{i}].values[{a.key}]: level {v} outside [0, {len(a.levels)})"


def check_patterns(s: Scenario) -> Iterator[str]:
    """Each role has its pattern: best/safe r111, attractive r110, partials the six others, violators v."""
    if _values_broken(s):
        return
    partials: list[str] = []
    for i, c in enumerate(s.candidates):
        p = s.pattern(c)
        expected = {Role.BEST: "r111", Role.SAFE: "r111", Role.ATTRACTIVE: "r110"}.get(c.role)
        if expected and p != expected:
            yield f"candidates[{i}] ({c.role.value}): expected pattern {expected}, got {p}"
        if c.role == Role.PARTIAL:
            if p[0] != "r":
                yield f"candidates[{i}] (partial): violates the requirement (pattern {p})"
            partials.append(p[1:])
        if c.role == Role.VIOLATOR and p[0] != "v":
            yield f"candidates[{i}] (violator): meets the requirement (pattern {p})"
    if sorted(partials) != list(PARTIAL_PATTERNS) and len(partials) == 6:
        yield f"candidates (partial): expected patterns {list(PARTIAL_PATTERNS)}, got {sorted(partials)}"


def check_unique_best(s: Scenario) -> Iterator[str]:
    """``best`` is the unique best fit: strictly ahead of every other requirement-meeting 111."""
    if _values_broken(s) or Counter(c.role for c in s.candidates)[Role.BEST] != 1:
        return
    best = s.candidates[s.role_index(Role.BEST)]
    for i, c in enumerate(s.candidates):
        if c is not best and s.pattern(c) == "r111" and s.favored_score(c) >= s.favored_score(best):
            yield f"candidates[{i}] ({c.role.value}): fits all needs and is not worse than best on the favored attribute"


def check_best_beats_safe(s: Scenario) -> Iterator[str]:
    """``best`` is strictly better than ``safe`` on the favored attribute."""
    if _values_broken(s) or not _has_roles(s, Role.BEST, Role.SAFE):
        return
    best, safe = (s.candidates[s.role_index(r)] for r in (Role.BEST, Role.SAFE))
    if s.favored_score(best) <= s.favored_score(safe):
        yield "candidates (best, safe): best must be strictly better than safe on the favored attribute"


def check_attractive_on_top(s: Scenario) -> Iterator[str]:
    """``attractive`` is strictly best on the favored attribute among requirement-meeting options."""
    if _values_broken(s) or not _has_roles(s, Role.ATTRACTIVE):
        return
    top = s.candidates[s.role_index(Role.ATTRACTIVE)]
    for i, c in enumerate(s.candidates):
        if c is not top and s.meets_requirement(c) and s.favored_score(c) >= s.favored_score(top):
            yield (
                f"candidates[{i}] ({c.role.value}): meets the requirement and is not worse than "
                "attractive on the favored attribute"
            )


def check_texts(s: Scenario) -> Iterator[str]:
    """Every text is non-empty, on one line, template-free, in the observation charset and not
    too long; the options text fits its observation space."""
    for where, text in _texts(s):
        limit = SHORT_TEXT_MAX if where.split("[")[0] in _SHORT else SENTENCE_MAX
        if not text.strip():
            yield f"{where}: empty text"
        elif "\n" in text:
            yield f"{where}: a line break in {text[:60]!r}...; expected one line"
        elif len(text) > limit:
            yield f"{where}: {len(text)} characters, expected at most {limit}"
        elif "{" in text or "}" in text:
            yield f"{where}: unfilled template slot in {text!r}"
        elif not set(text) <= TEXT_CHARSET:
            bad = sorted(set(text) - TEXT_CHARSET)
            yield f"{where}: characters {bad} outside printable ASCII in {text!r}"
    if not _values_broken(s) and (size := len(s.options_text())) > OPTIONS_MAX:
        yield f"options: {size} characters, expected at most {OPTIONS_MAX}"


def check_metadata(s: Scenario) -> Iterator[str]:
    """Id, split, persona and context fields take their documented values."""
    if not _ID.match(s.id):
        yield f"id: {s.id!r} is not of the form 'domain-slug-NN'"
    for name, value, allowed in (
        ("split", s.split, SPLITS),
        ("persona", s.persona, PERSONAS),
        ("context.urgency", s.context.urgency, URGENCY),
        ("context.budget", s.context.budget, BUDGET),
        ("context.expertise", s.context.expertise, EXPERTISE),
        ("favored.better", s.favored.better, ("lower", "higher")),
    ):
        if value not in allowed:
            yield f"{name}: got {value!r}, expected one of {list(allowed)}"
    if not s.sgd_services:
        yield "sgd_services: expected at least one SGD service"
    names = [c.name for c in s.candidates]
    if len(set(names)) != len(names):
        yield f"candidates.name: names must be unique, got {names}"


CHECKS: tuple[Check, ...] = (
    check_candidate_count,
    check_role_counts,
    check_attributes,
    check_need_attributes,
    check_value_sets,
    check_patterns,
    check_unique_best,
    check_best_beats_safe,
    check_attractive_on_top,
    check_texts,
    check_metadata,
)


def problems(scenario: Scenario) -> list[str]:
    """Every broken rule, each prefixed with the scenario id."""
    return [f"scenario {scenario.id}: {msg}" for check in CHECKS for msg in check(scenario)]


def validate(scenario: Scenario) -> Scenario:
    """Return ``scenario`` unchanged, or raise ``ScenarioError`` listing every broken rule."""
    found = problems(scenario)
    if found:
        raise ScenarioError("; ".join(found))
    return scenario


def _texts(s: Scenario) -> Iterator[tuple[str, str]]:
    yield "request", s.request
    yield "domain_name", s.domain_name
    yield "context.situation", s.context.situation
    yield "requirement.phrase", s.requirement.phrase
    yield "requirement.restatement", s.requirement.restatement
    yield "favored.phrase", s.favored.phrase
    yield "favored.restatement", s.favored.restatement
    for n in s.needs:
        for name in ("statement", "ask_answer", "hint"):
            yield f"needs[{n.level}].{name}", getattr(n, name)
    for a in s.attributes:
        yield f"attributes[{a.key}].label", a.label
        for j, level in enumerate(a.levels):
            yield f"attributes[{a.key}].levels[{j}]", level
        for j, kw in enumerate(a.keywords):
            yield f"attributes[{a.key}].keywords[{j}]", kw
    for i, c in enumerate(s.candidates):
        yield f"candidates[{i}].name", c.name


def _values_broken(s: Scenario) -> bool:
    return any(True for _ in check_value_sets(s)) or any(True for _ in check_need_attributes(s))


def _has_roles(s: Scenario, *roles: Role) -> bool:
    counts = Counter(c.role for c in s.candidates)
    return all(counts[r] == 1 for r in roles)
