"""Deterministic scenario generator: one domain profile -> one validated scenario.

Randomness is a ``numpy.random.Generator`` seeded from a stable hash of the domain id and the
profile index, consumed only through ``Generator.random()`` (whose float stream is stable
across platforms), so the same domain files give the same bytes everywhere.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal, TypeVar, get_args

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
from hear2act_env.scenarios.construction_v2 import (
    ROLE_BITS,
    assign_values_v2,
    trim_levels,
)
from hear2act_env.scenarios.domain import Domain, DomainAttribute, NeedOption

T = TypeVar("T")
N_TEST_PER_DOMAIN = 2
_PARTIAL_BITS = ((0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (1, 0, 0), (1, 0, 1))


def scenario_seed(domain_id: str, index: int) -> int:
    """A stable 64-bit seed for profile ``index`` of ``domain_id``."""
    digest = hashlib.sha256(f"hear2act/{domain_id}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def split_of(index: int) -> str:
    """Fixed split: the last two profiles of each domain (scenarios 09 and 10) are test."""
    return "test" if index >= 10 - N_TEST_PER_DOMAIN else "train"


BankVersion = Literal[1, 2]
BANK_VERSIONS: tuple[int, ...] = get_args(BankVersion)
#: v2 drawings per profile; the one whose eligible options look most alike is kept.
V2_DRAWS = 30


def generate_domain(domain: Domain, version: BankVersion = 1) -> list[Scenario]:
    """All scenarios of ``domain``, one per profile, validated (``version``: the bank's
    construction, 1 as shipped, 2 per docs/protocol.md#candidates "Bank v2")."""
    return [generate_scenario(domain, i, version) for i in range(len(domain.profiles))]


def generate_scenario(domain: Domain, index: int, version: BankVersion = 1) -> Scenario:
    """The scenario for profile ``index`` of ``domain`` (validated)."""
    if version not in BANK_VERSIONS:
        raise DomainError(f"version: got {version!r}, expected one of {list(BANK_VERSIONS)}")
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
    if version == 1:
        distractors = _sample(rng, pool, 8 - len(used))
    else:  # distractors look like need attributes: each matches a need's number of levels
        distractors = _like_needs(rng, pool, [a for a, _ in need_refs], 8 - len(used))
    chosen = [domain.attribute(k) for k in used] + distractors
    order = _permutation(rng, len(chosen))
    shown: list[DomainAttribute] = [chosen[i] for i in order]
    if version == 2:
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

    if version == 1:
        specs = _role_specs(rng)
        values = _assign_values(rng, shown, specs, requirement, favored, needs)
        return validate(assemble([role for role, _, _ in specs], values))
    return validate(_most_alike_v2(rng, shown, requirement, favored, needs, assemble))


def _trim_open(
    rng: np.random.Generator,
    shown: list[DomainAttribute],
    need_refs: list[tuple[DomainAttribute, NeedOption]],
    fixed: set[str],
) -> tuple[list[DomainAttribute], list[tuple[DomainAttribute, NeedOption]]]:
    """Open attributes cut to ``SHOWN_LEVELS`` levels (construction_v2.trim_levels), with the
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
    k: int,
) -> list[DomainAttribute]:
    """``k`` attributes from ``pool``, each the closest in number of levels to a need
    attribute drawn at random (ties broken at random)."""
    pool, out = list(pool), []
    for _ in range(k):
        if not pool:
            raise DomainError(f"need {k} distractor attributes, the domain has too few")
        target = len(_pick(rng, needs).levels)
        gap = min(abs(len(a.levels) - target) for a in pool)
        out.append(
            pool.pop(
                pool.index(_pick(rng, [a for a in pool if abs(len(a.levels) - target) == gap]))
            )
        )
    return out


def _most_alike_v2(
    rng: np.random.Generator,
    shown: Sequence[DomainAttribute],
    requirement: Requirement,
    favored: Favored,
    needs: tuple[Need, ...],
    assemble: Callable[[list[Role], list[list[int]]], Scenario],
) -> Scenario:
    """Of ``V2_DRAWS`` whole drawings (table, names, order), the one whose eligible options look
    most alike (``alikeness.option_spread``; it reads no role)."""
    roles = [role for role, _ in ROLE_BITS]
    chosen: tuple[float, Scenario] | None = None
    for _ in range(V2_DRAWS):
        rows = assign_values_v2(rng, shown, requirement, favored, needs)
        if len({tuple(r) for r in rows}) != len(rows):
            continue
        scenario = assemble(roles, rows)
        spread = option_spread(scenario)
        if chosen is None or spread < chosen[0]:
            chosen = (spread, scenario)
    if chosen is None:
        raise DomainError("could not draw 11 distinct options: add levels to the attributes")
    return chosen[1]


def _role_specs(rng: np.random.Generator) -> list[tuple[Role, bool, tuple[int, int, int]]]:
    """(role, meets requirement, need bits) for the 11 candidates, in construction order."""
    tempting = (1, 1, 1)
    other = tuple(int(_pick(rng, (0, 1))) for _ in range(3))
    return (
        [
            (Role.BEST, True, (1, 1, 1)),
            (Role.SAFE, True, (1, 1, 1)),
            (Role.ATTRACTIVE, True, (1, 1, 0)),
        ]
        + [(Role.PARTIAL, True, bits) for bits in _PARTIAL_BITS]
        + [(Role.VIOLATOR, False, tempting), (Role.VIOLATOR, False, other)]  # type: ignore[list-item]
    )


def _assign_values(
    rng: np.random.Generator,
    shown: Sequence[DomainAttribute],
    specs: list[tuple[Role, bool, tuple[int, int, int]]],
    requirement: Requirement,
    favored: Favored,
    needs: tuple[Need, ...],
) -> list[list[int]]:
    columns: dict[str, list[int]] = {}
    n_levels = {a.key: len(a.levels) for a in shown}
    for k, need in enumerate(needs):
        sat, unsat = _split_levels(need.satisfied_by, n_levels[need.attribute])
        columns[need.attribute] = [_pick(rng, sat if bits[k] else unsat) for _, _, bits in specs]
    req_sat, req_unsat = _split_levels(requirement.satisfied_by, n_levels[requirement.attribute])
    columns[requirement.attribute] = [
        _pick(rng, req_sat if ok else req_unsat) for _, ok, _ in specs
    ]
    columns[favored.attribute] = _favored_column(rng, specs, requirement, favored, n_levels)
    for a in shown:
        if a.key not in columns:
            columns[a.key] = [_pick(rng, range(len(a.levels))) for _ in specs]
    rows = [[columns[a.key][i] for a in shown] for i in range(len(specs))]
    _make_rows_distinct(
        rng,
        rows,
        [i for i, a in enumerate(shown) if a.key not in _fixed(requirement, favored, needs)],
        shown,
    )
    return rows


def _favored_column(
    rng: np.random.Generator,
    specs: list[tuple[Role, bool, tuple[int, int, int]]],
    requirement: Requirement,
    favored: Favored,
    n_levels: dict[str, int],
) -> list[int]:
    size = n_levels[favored.attribute]
    same = favored.attribute == requirement.attribute
    allowed = list(requirement.satisfied_by) if same else list(range(size))
    ranked = sorted(allowed, key=favored.score, reverse=True)  # best first
    m = len(ranked)
    top = _pick(rng, range(0, min(2, m - 2)))
    best = _pick(rng, range(top + 1, m - 1))
    safe = _pick(rng, range(best + 1, m))
    outside = [v for v in range(size) if v not in requirement.satisfied_by]
    column = []
    for role, _, _ in specs:
        if role == Role.ATTRACTIVE:
            column.append(ranked[top])
        elif role == Role.BEST:
            column.append(ranked[best])
        elif role == Role.SAFE:
            column.append(ranked[safe])
        elif role == Role.PARTIAL:
            column.append(ranked[_pick(rng, range(top + 1, m))])
        else:  # violators are tempting: as good as it gets where the requirement allows
            column.append(_pick(rng, outside) if same else ranked[_pick(rng, range(0, top + 1))])
    return column


def _fixed(requirement: Requirement, favored: Favored, needs: tuple[Need, ...]) -> set[str]:
    return {requirement.attribute, favored.attribute, *(n.attribute for n in needs)}


def _make_rows_distinct(
    rng: np.random.Generator,
    rows: list[list[int]],
    free: list[int],
    shown: Sequence[DomainAttribute],
) -> None:
    """Redraw distractor values until no two candidates have identical values."""
    for _ in range(100):
        seen: set[tuple[int, ...]] = set()
        clash = None
        for i, row in enumerate(rows):
            if tuple(row) in seen:
                clash = i
                break
            seen.add(tuple(row))
        if clash is None:
            return
        col = _pick(rng, free)
        rows[clash][col] = _pick(rng, range(len(shown[col].levels)))
    raise DomainError("could not make candidate values distinct: add distractor levels")


def _split_levels(satisfied: tuple[int, ...], size: int) -> tuple[list[int], list[int]]:
    sat = sorted(satisfied)
    return sat, [v for v in range(size) if v not in satisfied]


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
