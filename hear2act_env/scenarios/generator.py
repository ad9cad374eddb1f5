"""Deterministic scenario generator: one domain profile -> one validated scenario (bank v3:
the table first, the needs last; docs/domains.md#bank-v3-the-table-first-the-needs-last).

1. Draw the visible part for the profile (``table.draw_table``: shown attributes, the 11
   options' values; it reads no need of the scenario, there is none yet).
2. Count every valid need triple of the domain's pool for it (``exact.valid_triples``). Keep
   the table when no option is ``best`` under more than ``ACCEPT_POSTERIOR`` of them and the
   three likeliest need attributes are at most ``NEED_MARGIN`` above chance; else draw again
   (up to ``ATTEMPTS`` times, then keep the best table drawn if it is within ``MAX_POSTERIOR``).
3. Draw the needs uniformly among the valid triples; the roles follow from them.

Randomness is a ``numpy.random.Generator`` seeded from a stable hash of the domain id and the
profile index, consumed only through ``Generator.random()`` and ``Generator.permutation``
(whose streams are stable across platforms), so the same domain files give the same bytes
everywhere.
"""

from __future__ import annotations

import hashlib

import numpy as np

from hear2act_env.errors import DomainError
from hear2act_env.protocol.scenario import (
    PERSONAS,
    Attribute,
    Candidate,
    Context,
    Favored,
    Identifiability,
    Need,
    Requirement,
    Role,
    Scenario,
)
from hear2act_env.protocol.validator import validate
from hear2act_env.scenarios.capacity import domain_capacity
from hear2act_env.scenarios.domain import Domain
from hear2act_env.scenarios.exact import ValidTriples, need_pool
from hear2act_env.scenarios.quality import text_pool
from hear2act_env.scenarios.table import (
    ELIGIBLE_ROWS,
    OPENING,
    VIOLATOR_ROWS,
    Table,
    assign_names,
    draw_table,
)

N_TEST_PER_DOMAIN = 2
#: A table is kept at once when its largest best share is at most this.
ACCEPT_POSTERIOR = 0.16
#: ... and the three likeliest need attributes hold at most chance + this much of the needs.
NEED_MARGIN = 0.10
#: Tables drawn per profile before the best one drawn is kept.
ATTEMPTS = 30
#: Bank v4: draws in a row that give no table before open attributes are drawn without the
#: preference for level-free crossing pairs (``table.LEVEL_FREE_WEIGHT``).
LEVEL_FREE_TRIES = 8
#: Bank v4: how much a table's level excess above ``NEED_MARGIN`` counts against its best share
#: when no drawn table is accepted.
RANK_LEVEL_WEIGHT = 0.5
#: No table is kept above this (the profile then fails with a DomainError).
MAX_POSTERIOR = 0.25


def scenario_seed(domain_id: str, index: int) -> int:
    """A stable 64-bit seed for profile ``index`` of ``domain_id``."""
    digest = hashlib.sha256(f"hear2act/{domain_id}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def split_of(index: int) -> str:
    """Fixed split: the last two profiles of each domain (scenarios 09 and 10) are test."""
    return "test" if index >= 10 - N_TEST_PER_DOMAIN else "train"


def generate_domain(domain: Domain) -> list[Scenario]:
    """All scenarios of ``domain``, one per profile, validated."""
    return [generate_scenario(domain, i) for i in range(len(domain.profiles))]


def _accepted(table: Table) -> bool:
    assert table.triples is not None
    return (
        table.triples.count > 0
        and table.triples.best_posterior <= ACCEPT_POSTERIOR + 1e-9
        and table.need_excess() <= NEED_MARGIN + 1e-9
        and (not table.kinds or table.level_excess() <= NEED_MARGIN + 1e-9)
    )


def _rank(table: Table) -> tuple[bool, float, float]:
    """How good a drawn table is (lower first): whether its largest best share is above
    ``MAX_POSTERIOR`` (such a table cannot be kept), then that share (bank v4: plus
    ``RANK_LEVEL_WEIGHT`` times its excess above ``NEED_MARGIN``), then its excess."""
    assert table.triples is not None
    best = table.triples.best_posterior
    over = best > MAX_POSTERIOR + 1e-9
    excess = table.need_excess()
    if table.kinds:
        excess = max(excess, table.level_excess())
        return over, best + RANK_LEVEL_WEIGHT * max(0.0, excess - NEED_MARGIN), excess
    return over, best, excess


def _request(rng: np.random.Generator, domain: Domain, index: int) -> str:
    """The request of profile ``index``: situation, a drawn template, the favored phrase."""
    profile = domain.profiles[index]
    _, req = domain.requirement_option(profile.requirement)
    fav = domain.attribute(profile.favored).favored
    assert fav is not None
    template = domain.request_templates[int(rng.random() * len(domain.request_templates))]
    return f"{profile.situation} {template.format(requirement=req.phrase)} {fav.phrase}"


def generate_scenario(domain: Domain, index: int) -> Scenario:
    """The scenario for profile ``index`` of ``domain`` (validated)."""
    rng = np.random.default_rng(scenario_seed(domain.id, index))
    profile = domain.profiles[index]
    if domain.attribute(profile.favored).favored is None:
        raise DomainError(
            f"domain {domain.id}: attribute {profile.favored!r} has no favored direction"
        )
    pool = need_pool(domain)
    request = None
    if domain.format >= 4:  # the request is visible: needs its text rules out leave the pool
        request = _request(rng, domain, index)
        _, req = domain.requirement_option(profile.requirement)
        fav = domain.attribute(profile.favored).favored
        restated = (req.restatement, fav.restatement)  # type: ignore[union-attr]
        pool = text_pool(domain, request, restated, profile.excludes)
    both = frozenset(c.attribute for c in domain_capacity(domain) if c.both_roles)
    kept: Table | None = None
    empty = 0  # draws in a row that gave no table
    for _ in range(ATTEMPTS):
        table = draw_table(rng, domain, profile, pool, both, empty < LEVEL_FREE_TRIES)
        if table is None or table.triples is None or not table.triples.count:
            empty += 1
            continue
        empty = 0
        if kept is None or _rank(table) < _rank(kept):
            kept = table
        if _accepted(table):
            break
    if kept is None or kept.triples is None or _rank(kept)[0]:
        found = "no table" if kept is None else f"best {kept.triples.best_posterior:.3f}"  # type: ignore[union-attr]
        raise DomainError(
            f"domain {domain.id}: profiles[{index}]: no option table within {ATTEMPTS} draws "
            f"names {MAX_POSTERIOR} or less of its valid need triples' bests to one option "
            f"({found}); add crossing needs to the pool (docs/domains.md)"
        )
    return validate(_assemble(rng, domain, index, kept, request))


def draw_needs(rng: np.random.Generator, triples: ValidTriples) -> tuple[str, str, str]:
    """One valid triple, uniformly: every one is equally likely given the table."""
    return triples.triples[int(rng.random() * triples.count)]


def _assemble(
    rng: np.random.Generator, domain: Domain, index: int, table: Table, request: str | None
) -> Scenario:
    """The scenario: needs drawn uniformly among the table's valid triples, roles from them
    (``request``: drawn before the table, bank v4; None: drawn here, bank v3)."""
    triples = table.triples
    assert triples is not None
    profile = domain.profiles[index]
    refs = draw_needs(rng, triples)
    needs = []
    for level, ref in zip(("L1", "L2", "L3"), refs):
        attribute, option = domain.need_option(ref)
        needs.append(
            Need(
                level,
                attribute.key,
                option.satisfied_by,
                option.statement,
                option.ask_answer,
                option.hint,
                option.want,
            )  # type: ignore[arg-type]
        )
    col = {a.key: j for j, a in enumerate(table.shown)}
    roles: dict[int, Role] = {OPENING: Role.ATTRACTIVE}
    roles |= dict.fromkeys(VIOLATOR_ROWS, Role.VIOLATOR)
    full = [
        r
        for r in ELIGIBLE_ROWS
        if all(table.values[r, col[n.attribute]] in n.satisfied_by for n in needs)
    ]
    # rows are in favored order: the first of the two full-fit rows is ahead
    roles[full[0]], roles[full[1]] = Role.BEST, Role.SAFE
    roles |= {r: Role.PARTIAL for r in ELIGIBLE_ROWS if r not in full}
    rows = list(range(len(table.values)))
    names = assign_names(rng, domain, table, rows)
    if names is None:
        raise DomainError(f"domain {domain.id}: profiles[{index}]: the name rules leave no name")
    candidates = [
        Candidate(names[r], roles[r], tuple(int(v) for v in table.values[r])) for r in rows
    ]
    candidates = [candidates[int(i)] for i in rng.permutation(len(candidates))]
    req_attr, req = domain.requirement_option(profile.requirement)
    fav_attr = domain.attribute(profile.favored)
    fav = fav_attr.favored
    assert fav is not None
    if request is None:
        template = domain.request_templates[int(rng.random() * len(domain.request_templates))]
        request = f"{profile.situation} {template.format(requirement=req.phrase)} {fav.phrase}"
    keys = [a.key for a in table.shown]
    return Scenario(
        id=f"{domain.id}-{index + 1:02d}",
        domain=domain.id,
        domain_name=domain.name,
        category=domain.category,
        sgd_services=domain.sgd_services,
        split=split_of(index),  # type: ignore[arg-type]
        persona=PERSONAS[int(rng.random() * len(PERSONAS))],  # type: ignore[arg-type]
        context=Context(profile.urgency, profile.budget, profile.expertise, profile.situation),
        request=request,
        attributes=tuple(
            Attribute(a.key, a.label, a.keywords, a.levels, a.ask) for a in table.shown
        ),
        requirement=Requirement(req_attr.key, req.satisfied_by, req.phrase, req.restatement),
        favored=Favored(fav_attr.key, fav.better, fav.phrase, fav.restatement),
        needs=tuple(needs),
        candidates=tuple(candidates),
        identifiability=Identifiability(
            valid_triples=triples.count,
            best_posterior=round(triples.best_posterior, 6),
            need_share=tuple(round(triples.need_share[k], 6) for k in keys),
        ),
    )
