"""Drawing the visible part of a bank v3 scenario: shown attributes and the 11 options' values.

Rows of the table while it is drawn: 0 is the opening, 1..8 the eligible options in favored
order (1 ahead), 9 and 10 the violators. No row has a role beyond that yet: which eligible
options are ``best``, ``safe`` and the partials follows from the needs, drawn after the table
(``generator``). Steps:

1. **Attributes.** The requirement's and the favored attribute, then open attributes drawn at
   random among the domain's others (those that can hold a met and a missed need in one table
   three times as likely as the rest), shown in a random order.
2. **Favored and requirement columns.** The opening takes the best level open to requirement-
   meeting options; eligible options take levels strictly behind it, one of them alone on the
   lowest (so 7 of the 8 can be ``best``). Violators break the requirement.
3. **Open columns.** Each open attribute gets one or two pool needs as slots and the column
   design (``design.anneal``) says which eligible options meet each; every option then takes a
   random level that gives its bits (its *class* of levels).
4. **Coherence.** Domain rules (values that cannot go together) are repaired within classes.
5. **Exact repair.** The valid triples over the domain's whole pool are counted
   (``exact.valid_triples``); random level changes within classes that lower the largest share
   of one best are kept for a few hundred steps.

Names are assigned last, honoring the domain's name rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hear2act_env.errors import DomainError
from hear2act_env.scenarios.capacity import crossing_pairs
from hear2act_env.scenarios.design import Slots, anneal
from hear2act_env.scenarios.domain import Domain, DomainAttribute, NeedOption, Profile
from hear2act_env.scenarios.exact import (
    PoolNeed,
    ValidTriples,
    VisiblePart,
    best_lookup,
    valid_triples,
)

__all__ = ["Table", "draw_table", "assign_names", "table_cost"]

N_ROWS = 11
OPENING = 0
ELIGIBLE_ROWS = tuple(range(1, 9))
VIOLATOR_ROWS = (9, 10)
SHOWN = 8
#: Weight of an attribute that can take both roles when open attributes are drawn.
BOTH_ROLES_WEIGHT = 3.0
#: Chance that such an attribute gets a crossing pair (else a single need).
CROSSING_P = 0.85
#: Steps of the exact repair, and of the coherence repair.
REPAIR_STEPS = 400
COHERE_STEPS = 200


@dataclass
class Table:
    """A drawn visible part: shown attributes (shown order), values (rows as above), the level
    class of every cell, and the exact valid triples."""

    shown: list[DomainAttribute]
    values: np.ndarray
    classes: dict[tuple[int, int], list[int]]
    requirement: str
    requirement_levels: tuple[int, ...]
    favored: str
    better: str
    triples: ValidTriples | None = None

    def visible(self) -> VisiblePart:
        return VisiblePart(
            attributes=tuple(a.key for a in self.shown),
            levels=tuple(a.levels for a in self.shown),
            values=tuple(tuple(int(v) for v in row) for row in self.values),
            requirement=self.requirement,
            requirement_levels=self.requirement_levels,
            favored=self.favored,
            better=self.better,  # type: ignore[arg-type]
            opening=OPENING,
        )

    def need_excess(self, triples: ValidTriples | None = None) -> float:
        """How far the three likeliest need attributes hold more of the needs than chance
        (3 in the number of open attributes), under ``triples`` (default: the table's)."""
        found = triples if triples is not None else self.triples
        assert found is not None
        keys = [self.shown[j].key for j in self.open_columns]
        shares = sorted((found.need_share[k] for k in keys), reverse=True)
        return sum(shares[:3]) / 3 - 3 / len(keys)

    @property
    def open_columns(self) -> list[int]:
        return [
            j for j, a in enumerate(self.shown) if a.key not in (self.requirement, self.favored)
        ]


def _pick(rng: np.random.Generator, items: Sequence):
    return items[int(rng.random() * len(items))]


def _weighted_sample(rng: np.random.Generator, items: list, weights: list[float], k: int) -> list:
    items, weights, out = list(items), list(weights), []
    for _ in range(k):
        total = sum(weights)
        x, acc = rng.random() * total, 0.0
        for i, w in enumerate(weights):
            acc += w
            if x < acc or i == len(weights) - 1:
                out.append(items.pop(i))
                weights.pop(i)
                break
    return out


def _favored_column(
    rng: np.random.Generator, fav: DomainAttribute, allowed: Sequence[int]
) -> tuple[int, list[int]]:
    """(opening level, 8 eligible levels in favored order): the opening strictly ahead, one
    eligible option alone on the lowest level."""
    ranked = sorted(allowed, reverse=fav.favored is not None and fav.favored.better == "higher")
    opening, rest = ranked[0], ranked[1:]
    last, middle = rest[-1], rest[:-1] or rest
    chosen = sorted(int(rng.random() * len(middle)) for _ in range(7))
    return opening, [middle[i] for i in chosen] + [last]


def _slots_for(
    rng: np.random.Generator, attribute: DomainAttribute
) -> tuple[Slots, tuple[NeedOption, ...]]:
    """One or two pool needs of ``attribute`` as slots (``design.Slots``) and those needs."""
    pairs = crossing_pairs(attribute)
    if pairs and rng.random() < CROSSING_P:
        met, missed = _pick(rng, pairs)
        mixes = frozenset(
            (int(lv in met.satisfied_by), int(lv in missed.satisfied_by))
            for lv in range(len(attribute.levels))
        )
        slots = Slots(
            ("met", "missed"), frozenset(met.priorities) & {"L1", "L2"}, mixes, flexible=False
        )
        return slots, (met, missed)
    need = _pick(rng, attribute.needs)
    kinds = tuple(
        k
        for k, ok in (
            ("met", {"L1", "L2"} & set(need.priorities)),
            ("missed", "L3" in need.priorities),
        )
        if ok
    )
    met_p = frozenset(need.priorities) & {"L1", "L2"}
    return Slots(kinds, met_p, frozenset(), flexible=len(kinds) == 2), (need,)


def draw_table(
    rng: np.random.Generator,
    domain: Domain,
    profile: Profile,
    pool: Sequence[PoolNeed],
    both_roles: frozenset[str],
) -> Table | None:
    """One visible part for ``profile`` (None when its level classes cannot cohere)."""
    req_attr, req = domain.requirement_option(profile.requirement)
    fav = domain.attribute(profile.favored)
    fixed = [req_attr] + ([fav] if fav.key != req_attr.key else [])
    others = [a for a in domain.attributes if a not in fixed and a.needs]
    if len(others) < SHOWN - len(fixed):
        raise DomainError(
            f"domain {domain.id}: a table shows {SHOWN - len(fixed)} open attributes, but only "
            f"{len(others)} attributes with needs are not the profile's requirement or favored one"
        )
    weights = [BOTH_ROLES_WEIGHT if a.key in both_roles else 1.0 for a in others]
    opens = _weighted_sample(rng, others, weights, SHOWN - len(fixed))
    chosen = fixed + opens
    order = rng.permutation(len(chosen))
    shown = [chosen[int(i)] for i in order]
    col = {a.key: j for j, a in enumerate(shown)}
    values = np.zeros((N_ROWS, SHOWN), dtype=np.int64)
    classes: dict[tuple[int, int], list[int]] = {}

    # favored and requirement columns
    meets = list(req.satisfied_by)
    fails = [lv for lv in range(len(req_attr.levels)) if lv not in req.satisfied_by]
    allowed = meets if fav.key == req_attr.key else list(range(len(fav.levels)))
    opening_level, eligible_levels = _favored_column(rng, fav, allowed)
    jf, jr = col[fav.key], col[req_attr.key]
    for r, lv in zip((OPENING, *ELIGIBLE_ROWS), (opening_level, *eligible_levels)):
        values[r, jf] = lv
        classes[(r, jf)] = [lv]
    for r in VIOLATOR_ROWS:
        classes[(r, jr)] = fails
        values[r, jr] = _pick(rng, fails)
        if jf != jr:
            classes[(r, jf)] = list(range(len(fav.levels)))
            values[r, jf] = _pick(rng, classes[(r, jf)])
    if jf != jr:
        for r in (OPENING, *ELIGIBLE_ROWS):
            classes[(r, jr)] = meets
            values[r, jr] = _pick(rng, meets)

    # open columns: the slot design, then a level of the right class for every option
    table = Table(shown, values, classes, req_attr.key, tuple(meets), fav.key, fav.favored.better)  # type: ignore[union-attr]
    open_cols = table.open_columns
    picked = [_slots_for(rng, shown[j]) for j in open_cols]
    score = np.array(eligible_levels) * (1 if fav.favored.better == "higher" else -1)  # type: ignore[union-attr]
    best_of = best_lookup(np.arange(8), score).tolist()  # eligible index of the one ahead
    design, _ = anneal(rng, [s for s, _ in picked], best_of)
    for k, j in enumerate(open_cols):
        slots, needs = picked[k]
        masks = []
        if design.met[k] >= 0:
            masks.append((needs[0], design.met[k], 1))
        if design.missed[k] >= 0:
            masks.append((needs[-1], design.missed[k], 0))
        levels = range(len(shown[j].levels))
        for r in range(N_ROWS):
            if r in VIOLATOR_ROWS:
                cls = list(levels)
            else:
                cls = [
                    lv
                    for lv in levels
                    if all(
                        (lv in need.satisfied_by)
                        == bool(opening_bit if r == OPENING else (mask >> (r - 1)) & 1)
                        for need, mask, opening_bit in masks
                    )
                ]
            if not cls:
                return None
            classes[(r, j)] = cls
            values[r, j] = _pick(rng, cls)
    if not _cohere(rng, table, domain):
        return None
    table.triples = valid_triples(table.visible(), pool)
    _repair(rng, table, domain, pool)
    return table


def _violations(table: Table, domain: Domain, rows: Sequence[int] = range(N_ROWS)) -> list:
    col = {a.key: j for j, a in enumerate(table.shown)}
    out = []
    for rule in domain.coherence:
        jw, jf = col.get(rule.when.attribute), col.get(rule.forbid.attribute)
        if jw is None or jf is None:
            continue
        for r in rows:
            if (
                table.values[r, jw] in rule.when.levels
                and table.values[r, jf] in rule.forbid.levels
            ):
                out.append((r, jw, rule.when.levels, jf, rule.forbid.levels))
    return out


def _cohere(rng: np.random.Generator, table: Table, domain: Domain) -> bool:
    """Repair coherence violations within level classes; False when that fails."""
    for _ in range(COHERE_STEPS):
        found = _violations(table, domain)
        if not found:
            return True
        r, jw, bad_w, jf, bad_f = _pick(rng, found)
        fixes = []
        for j, bad in ((jw, bad_w), (jf, bad_f)):
            good = [lv for lv in table.classes.get((r, j), []) if lv not in bad]
            if good:
                fixes.append((j, good))
        if not fixes:
            return False
        j, good = _pick(rng, fixes)
        table.values[r, j] = _pick(rng, good)
    return not _violations(table, domain)


def table_cost(table: Table, triples: ValidTriples) -> float:
    """What the exact repair lowers: the largest share of one best, plus how far the three most
    likely need attributes are above chance + 0.05."""
    if not triples.count:
        return 10.0
    return triples.best_posterior + 0.5 * max(0.0, table.need_excess(triples) - 0.05)


def _repair(
    rng: np.random.Generator, table: Table, domain: Domain, pool: Sequence[PoolNeed]
) -> None:
    """Level changes within classes that lower ``table_cost``, kept when they do not break
    coherence."""
    free = [
        (r, j)
        for j in table.open_columns
        for r in (OPENING, *ELIGIBLE_ROWS)
        if len(table.classes[(r, j)]) > 1
    ]
    assert table.triples is not None
    cost = table_cost(table, table.triples)
    for _ in range(REPAIR_STEPS if free else 0):
        if table.triples.best_posterior <= 1 / 7 + 1e-9:
            break
        r, j = _pick(rng, free)
        old = table.values[r, j]
        table.values[r, j] = _pick(rng, table.classes[(r, j)])
        if table.values[r, j] == old or _violations(table, domain, (r,)):
            table.values[r, j] = old
            continue
        found = valid_triples(table.visible(), pool)
        new_cost = table_cost(table, found)
        if new_cost <= cost:
            cost, table.triples = new_cost, found
        else:
            table.values[r, j] = old


def assign_names(
    rng: np.random.Generator, domain: Domain, table: Table, rows: Sequence[int]
) -> list[str] | None:
    """A distinct name for each of ``rows`` (in that order) honoring the name rules, or None."""
    col = {a.key: j for j, a in enumerate(table.shown)}
    allowed_by: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
    for rule in domain.name_rules:
        if rule.attribute in col:
            for name in rule.names:
                allowed_by.setdefault(name, []).append((col[rule.attribute], rule.levels))

    def fits(name: str, r: int) -> bool:
        return all(table.values[r, j] in levels for j, levels in allowed_by.get(name, []))

    names = [domain.names[int(i)] for i in rng.permutation(len(domain.names))]
    options = {r: [n for n in names if fits(n, r)] for r in rows}
    out: dict[int, str] = {}
    taken: set[str] = set()
    for r in sorted(rows, key=lambda r: len(options[r])):
        free = [n for n in options[r] if n not in taken]
        if not free:
            return None
        out[r] = free[0]
        taken.add(free[0])
    return [out[r] for r in rows]
