"""Deterministic scenario generator: one domain profile -> one validated scenario (the
construction of ``hear2act_env.scenarios.construction``, documented in docs/domains.md).

Randomness is a ``numpy.random.Generator`` seeded from a stable hash of the domain id and the
profile index, consumed only through ``Generator.random()`` (whose float stream is stable
across platforms), so the same domain files give the same bytes everywhere.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np

from hear2act_env.errors import DomainError
from hear2act_env.protocol.scenario import (
    PERSONAS,
    Attribute,
    Candidate,
    Context,
    Favored,
    Need,
    Requirement,
    Role,
    Scenario,
)
from hear2act_env.protocol.validator import validate
from hear2act_env.scenarios.alikeness import option_spread
from hear2act_env.scenarios.construction import (
    ROLE_BITS,
    SHOWN_LEVELS,
    assign_values,
    imitated_needs,
    trim_levels,
)
from hear2act_env.scenarios.domain import Domain, DomainAttribute, NeedOption

T = TypeVar("T")
N_TEST_PER_DOMAIN = 2


def scenario_seed(domain_id: str, index: int) -> int:
    """A stable 64-bit seed for profile ``index`` of ``domain_id``."""
    digest = hashlib.sha256(f"hear2act/{domain_id}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def split_of(index: int) -> str:
    """Fixed split: the last two profiles of each domain (scenarios 09 and 10) are test."""
    return "test" if index >= 10 - N_TEST_PER_DOMAIN else "train"


#: Drawings per profile; the one whose eligible options look most alike is kept.
DRAWINGS = 45


def generate_domain(domain: Domain) -> list[Scenario]:
    """All scenarios of ``domain``, one per profile, validated."""
    return [generate_scenario(domain, i) for i in range(len(domain.profiles))]


def generate_scenario(domain: Domain, index: int) -> Scenario:
    """The scenario for profile ``index`` of ``domain`` (validated)."""
    rng = np.random.default_rng(scenario_seed(domain.id, index))
    profile = domain.profiles[index]
    req_attr, req = domain.requirement_option(profile.requirement)
    fav_attr = domain.attribute(profile.favored)
    if fav_attr.favored is None:
        raise DomainError(
            f"domain {domain.id}: attribute {fav_attr.key!r} has no favored direction"
        )
    need_refs = [domain.need_option(ref) for ref in profile.needs]
    used = [req_attr.key] + ([fav_attr.key] if fav_attr.key != req_attr.key else [])
    used += [a.key for a, _ in need_refs]
    pool = [a for a in domain.attributes if a.key not in used]
    # distractors look like need attributes: which need each imitates is drawn first
    # (balanced, construction.imitated_needs), then each is the pool attribute closest in
    # levels shown to the need it imitates
    kinds = imitated_needs(rng, 8 - len(used))
    distractors = _like_needs(rng, pool, [a for a, _ in need_refs], kinds)
    imitates = {a.key: k for a, k in zip(distractors, kinds)}
    chosen = [domain.attribute(k) for k in used] + distractors
    order = _permutation(rng, len(chosen))
    shown: list[DomainAttribute] = [chosen[i] for i in order]
    shown, need_refs = _trim_open(rng, shown, need_refs, {req_attr.key, fav_attr.key})

    requirement = Requirement(req_attr.key, req.satisfied_by, req.phrase, req.restatement)
    fav = fav_attr.favored
    favored = Favored(fav_attr.key, fav.better, fav.phrase, fav.restatement)
    needs = tuple(
        Need(level, a.key, o.satisfied_by, o.statement, o.ask_answer, o.hint)
        for level, (a, o) in zip(("L1", "L2", "L3"), need_refs)
    )

    def assemble(roles: list[Role], values: list[list[int]]) -> Scenario:
        names = _sample(rng, list(domain.names), len(roles))
        candidates = [Candidate(n, role, tuple(v)) for n, role, v in zip(names, roles, values)]
        candidates = [candidates[i] for i in _permutation(rng, len(candidates))]
        template = _pick(rng, domain.request_templates)
        request = f"{profile.situation} {template.format(requirement=req.phrase)} {fav.phrase}"
        return Scenario(
            id=f"{domain.id}-{index + 1:02d}",
            domain=domain.id,
            domain_name=domain.name,
            category=domain.category,
            sgd_services=domain.sgd_services,
            split=split_of(index),  # type: ignore[arg-type]
            persona=_pick(rng, PERSONAS),  # type: ignore[arg-type]
            context=Context(profile.urgency, profile.budget, profile.expertise, profile.situation),
            request=request,
            attributes=tuple(Attribute(a.key, a.label, a.keywords, a.levels) for a in shown),
            requirement=requirement,
            favored=favored,
            needs=needs,
            candidates=tuple(candidates),
        )

    return validate(_most_alike(rng, shown, requirement, favored, needs, imitates, assemble))


def _trim_open(
    rng: np.random.Generator,
    shown: list[DomainAttribute],
    need_refs: list[tuple[DomainAttribute, NeedOption]],
    fixed: set[str],
) -> tuple[list[DomainAttribute], list[tuple[DomainAttribute, NeedOption]]]:
    """Open attributes cut to ``SHOWN_LEVELS`` levels (construction.trim_levels), with the
    needs re-indexed to match."""
    need_of = {a.key: o for a, o in need_refs}
    out, trimmed_needs = [], {}
    for a in shown:
        if a.key in fixed:
            out.append(a)
            continue
        need = need_of.get(a.key)
        cut, index = trim_levels(rng, a, need.satisfied_by if need else None)
        if need is not None:
            kept = tuple(index[v] for v in need.satisfied_by if v in index)
            trimmed_needs[a.key] = (cut, replace(need, satisfied_by=kept))
        out.append(cut)
    return out, [trimmed_needs[a.key] for a, _ in need_refs]


def _like_needs(
    rng: np.random.Generator,
    pool: list[DomainAttribute],
    needs: list[DomainAttribute],
    kinds: Sequence[int],
) -> list[DomainAttribute]:
    """One attribute from ``pool`` per entry of ``kinds``: the closest in number of levels
    shown to ``needs[kind]``, the need it will imitate (ties broken at random)."""
    pool, out = list(pool), []
    for kind in kinds:
        if not pool:
            raise DomainError(f"need {len(kinds)} distractor attributes, the domain has too few")
        target = _shown(needs[kind])
        gap = min(abs(_shown(a) - target) for a in pool)
        out.append(
            pool.pop(pool.index(_pick(rng, [a for a in pool if abs(_shown(a) - target) == gap])))
        )
    return out


def _shown(attribute: DomainAttribute) -> int:
    return min(len(attribute.levels), SHOWN_LEVELS)


def _most_alike(
    rng: np.random.Generator,
    shown: Sequence[DomainAttribute],
    requirement: Requirement,
    favored: Favored,
    needs: tuple[Need, ...],
    imitates: dict[str, int],
    assemble: Callable[[list[Role], list[list[int]]], Scenario],
) -> Scenario:
    """Of ``DRAWINGS`` whole drawings (table, names, order), the one whose eligible options look
    most alike (``alikeness.option_spread``; it reads no role)."""
    roles = [role for role, _ in ROLE_BITS]
    chosen: tuple[float, Scenario] | None = None
    for _ in range(DRAWINGS):
        rows = assign_values(rng, shown, requirement, favored, needs, imitates)
        if len({tuple(r) for r in rows}) != len(rows):
            continue
        scenario = assemble(roles, rows)
        spread = option_spread(scenario)
        if chosen is None or spread < chosen[0]:
            chosen = (spread, scenario)
    if chosen is None:
        raise DomainError("could not draw 11 distinct options: add levels to the attributes")
    return chosen[1]


def _pick(rng: np.random.Generator, items: Sequence[T]) -> T:
    if not len(items):
        raise DomainError("cannot pick from an empty set of levels or items")
    return items[int(rng.random() * len(items))]


def _sample(rng: np.random.Generator, items: list[T], k: int) -> list[T]:
    if k > len(items):
        raise DomainError(f"need {k} items to sample, only {len(items)} available")
    pool = list(items)
    return [pool.pop(int(rng.random() * len(pool))) for _ in range(k)]


def _permutation(rng: np.random.Generator, n: int) -> list[int]:
    return _sample(rng, list(range(n)), n)
