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
from dataclasses import dataclass, field, replace

import numpy as np

from hear2act_env.errors import DomainError
from hear2act_env.scenarios.capacity import crossing_pairs
from hear2act_env.scenarios.design import SlotDesign, Slots, anneal
from hear2act_env.scenarios.domain import Domain, DomainAttribute, Kind, NeedOption, Profile
from hear2act_env.scenarios.exact import (
    PoolNeed,
    ValidTriples,
    VisiblePart,
    best_lookup,
    valid_triples,
)
from hear2act_env.scenarios.realism import names_of, price_band, price_inversions, typical_level

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
#: Bank v4: weight of a need (or crossing pair) whose met need can be L1 when slots are drawn,
#: against 1 for the rest (few hedged needs can be L1, so the L1 need would bunch otherwise).
L1_WEIGHT = 20.0
#: Bank v4: weight of an open attribute with a crossing pair whose met need can be L1 and L2
#: (so that it can carry the L1 or the L2 need and the L3 one), against 1 for the rest.
LEVEL_FREE_WEIGHT = 6.0
#: Bank v4: levels the favored column keeps at least (of those the requirement allows).
MIN_FAVORED_LEVELS = 4
#: Steps of the exact repair, and of the coherence repair.
REPAIR_STEPS = 400
COHERE_STEPS = 200
#: Bank v4: swaps tried to put richer offers on dearer rows (``_ease_inversions``).
EASE_STEPS = 40


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
    #: bank v4: the kind of each row (empty for a format-3 domain), and the classes the column
    #: design gave before they narrowed to the kinds
    kinds: list[Kind] = field(default_factory=list)
    base_classes: dict[tuple[int, int], list[int]] = field(default_factory=dict)

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

    def level_excess(self, triples: ValidTriples | None = None) -> float:
        """Bank v4: how far the three likeliest attributes of the L1 need, and of the L2 need,
        hold more of that need than chance (the larger of the two)."""
        found = triples if triples is not None else self.triples
        assert found is not None
        keys = [self.shown[j].key for j in self.open_columns]
        out = 0.0
        for share in found.level_share[:2]:
            top = sorted((share.get(k, 0.0) for k in keys), reverse=True)
            out = max(out, sum(top[:3]) - 3 / len(keys))
        return out

    def shown_values(self, r: int) -> dict[str, int]:
        """Row ``r`` as attribute key -> level."""
        return {a.key: int(self.values[r, j]) for j, a in enumerate(self.shown)}

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
    rng: np.random.Generator, fav: DomainAttribute, allowed: Sequence[int], balanced: bool = False
) -> tuple[int, list[int]]:
    """(opening level, 8 eligible levels in favored order): the opening strictly ahead, one
    eligible option alone on the lowest level, the other 7 drawn independently (bank v3) or
    spread evenly over the levels between (``balanced``, bank v4)."""
    ranked = sorted(allowed, reverse=fav.favored is not None and fav.favored.better == "higher")
    opening, rest = ranked[0], ranked[1:]
    last, middle = rest[-1], rest[:-1] or rest
    if balanced:
        chosen = _spread(rng, len(middle), 7)
    else:
        chosen = sorted(int(rng.random() * len(middle)) for _ in range(7))
    return opening, [middle[i] for i in chosen] + [last]


def _spread(rng: np.random.Generator, n_levels: int, k: int) -> list[int]:
    """``k`` level indices (sorted) over ``n_levels`` levels, as evenly as they go: no level
    holds two more than another, the extra ones drawn at random (bank v4: two options level on
    the favored attribute cannot be the ``best`` and ``safe`` pair, so ties cost triples)."""
    base, extra = divmod(k, n_levels)
    counts = [base] * n_levels
    for i in rng.permutation(n_levels)[:extra]:
        counts[int(i)] += 1
    return [lv for lv, c in enumerate(counts) for _ in range(c)]


def _pick_weighted(rng: np.random.Generator, items: Sequence, v4: bool, met_of):
    """One of ``items``: uniformly (bank v3), or ``L1_WEIGHT`` times likelier when its met
    need can be L1 (bank v4)."""
    if not v4:
        return _pick(rng, items)
    weights = [L1_WEIGHT if "L1" in met_of(x).priorities else 1.0 for x in items]
    return _weighted_sample(rng, list(items), weights, 1)[0]


def _in_pool(attribute: DomainAttribute, in_pool: set[str]) -> DomainAttribute:
    """Bank v4: ``attribute`` with only its needs left in the scenario's pool, so the column
    design plants needs that can be drawn (itself when none is left)."""
    needs = tuple(n for n in attribute.needs if f"{attribute.key}:{n.key}" in in_pool)
    return replace(attribute, needs=needs) if needs else attribute


def _level_free_pairs(attribute: DomainAttribute) -> list[tuple[NeedOption, NeedOption]]:
    """Bank v4: ``attribute``'s crossing (met, missed) pairs whose met need may be L1 or L2."""
    return [(h, s) for h, s in crossing_pairs(attribute) if {"L1", "L2"} <= set(h.priorities)]


def _crossing_slots(attribute: DomainAttribute, met: NeedOption, missed: NeedOption) -> Slots:
    """The two slots of a crossing pair and the (met, missed) bit mixes its levels give."""
    mixes = frozenset(
        (int(lv in met.satisfied_by), int(lv in missed.satisfied_by))
        for lv in range(len(attribute.levels))
    )
    return Slots(("met", "missed"), frozenset(met.priorities) & {"L1", "L2"}, mixes)


def _slots_for(
    rng: np.random.Generator, attribute: DomainAttribute, v4: bool = False
) -> tuple[Slots, tuple[NeedOption, ...]]:
    """One or two pool needs of ``attribute`` as slots (``design.Slots``) and those needs
    (``v4``: a need that can be L1 is ``L1_WEIGHT`` times likelier)."""
    pairs = crossing_pairs(attribute)
    level_free = _level_free_pairs(attribute) if v4 else []
    if level_free:  # bank v4: both roles, the met one at L1 or L2
        met, missed = _pick(rng, level_free)
        return _crossing_slots(attribute, met, missed), (met, missed)
    if v4 and not any("L1" in h.priorities for h, _ in pairs):
        if any("L1" in n.priorities for n in attribute.needs) and rng.random() < 0.5:
            pairs = ()  # bank v4: an L1-capable need only stands alone here; take it half the time
    if pairs and rng.random() < CROSSING_P:
        met, missed = _pick_weighted(rng, pairs, v4, lambda p: p[0])
        return _crossing_slots(attribute, met, missed), (met, missed)
    need = _pick_weighted(rng, attribute.needs, v4, lambda n: n)
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
    level_free: bool = True,
) -> Table | None:
    """One visible part for ``profile`` (None when its level classes cannot cohere;
    ``level_free``, bank v4: prefer open attributes with a crossing pair whose met need may be
    L1 or L2, ``LEVEL_FREE_WEIGHT``)."""
    req_attr, req = domain.requirement_option(profile.requirement)
    fav = domain.attribute(profile.favored)
    fixed = [req_attr] + ([fav] if fav.key != req_attr.key else [])
    others = [a for a in domain.attributes if a not in fixed and a.needs]
    in_pool = {p.id for p in pool}
    if domain.format >= 4:  # bank v4: open columns among attributes the request left needs on
        live = [a for a in others if any(f"{a.key}:{n.key}" in in_pool for n in a.needs)]
        others = live if len(live) >= SHOWN - len(fixed) else others
    if len(others) < SHOWN - len(fixed):
        raise DomainError(
            f"domain {domain.id}: a table shows {SHOWN - len(fixed)} open attributes, but only "
            f"{len(others)} attributes with needs are not the profile's requirement or favored one"
        )
    if domain.format >= 4 and level_free:
        weights = [
            LEVEL_FREE_WEIGHT if _level_free_pairs(_in_pool(a, in_pool)) else 1.0 for a in others
        ]
    else:
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
    if domain.format >= 4:
        allowed = _reachable(domain, req_attr, meets, fav, allowed)
    opening_level, eligible_levels = _favored_column(rng, fav, allowed, domain.format >= 4)
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
    v4 = domain.format >= 4
    picked = [
        _slots_for(rng, _in_pool(shown[j], in_pool) if v4 else shown[j], v4) for j in open_cols
    ]
    if domain.format >= 4:
        kinds = _draw_kinds(rng, table, domain)
        if kinds is None:
            return None
        table.kinds = kinds
        picked = [
            (_constrain_slots(sl, needs, shown[j], kinds), needs)
            for (sl, needs), j in zip(picked, open_cols)
        ]
    score = np.array(eligible_levels) * (1 if fav.favored.better == "higher" else -1)  # type: ignore[union-attr]
    best_of = best_lookup(np.arange(8), score).tolist()  # eligible index of the one ahead
    penalty = _row_penalty(table, domain, open_cols, picked) if table.kinds else None
    design, _ = anneal(
        rng, [s for s, _ in picked], best_of, per_level=domain.format >= 4, penalty=penalty
    )
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
    if table.kinds and not _narrow_to_kinds(rng, table):
        return None
    if not _cohere(rng, table, domain):
        return None
    _ease_inversions(rng, table, domain)
    table.triples = valid_triples(table.visible(), pool)
    _repair(rng, table, domain, pool)
    return table


def _reachable(
    domain: Domain,
    req_attr: DomainAttribute,
    meets: Sequence[int],
    fav: DomainAttribute,
    allowed: Sequence[int],
) -> list[int]:
    """Bank v4: the favored levels (of ``allowed``) some kind can show while meeting the
    requirement, a price within its noise of its base ("the cheapest" is the cheapest option
    of a kind that meets the requirement, not a price no such kind charges). The reach widens
    by a level at a time until ``MIN_FAVORED_LEVELS`` are left (ties on the favored
    column leave no option ahead); ``allowed`` itself when even 2 levels beyond fall short."""
    model = domain.price

    def fits(kind: Kind, key: str, n: int, levels: Sequence[int], extra: float) -> list[int]:
        ok = [lv for lv in levels if lv in kind.allowed(key, n)]
        if model is not None and key == model.attribute and kind.price is not None:
            typical = typical_level(kind.price)
            ok = [lv for lv in ok if abs(lv - typical) <= model.noise + extra]
        return ok

    enough = min(len(allowed), MIN_FAVORED_LEVELS)
    for extra in (0, 1, 2):
        out = set()
        for kind in domain.kinds:
            if fits(kind, req_attr.key, len(req_attr.levels), meets, extra):
                out |= set(fits(kind, fav.key, len(fav.levels), allowed, extra))
        kept = [lv for lv in allowed if lv in out]
        if len(kept) >= enough:
            return kept
    return list(allowed)


def _draw_kinds(rng: np.random.Generator, table: Table, domain: Domain) -> list[Kind] | None:
    """Bank v4: a kind for every row, drawn among those that allow its requirement and favored
    cells and can reach its price (None when no kind fits a row). Drawn before the column
    design, which then gives each option only bits its kind's levels can take."""
    col = {a.key: j for j, a in enumerate(table.shown)}
    model = domain.price
    jp = col.get(model.attribute) if model is not None else None
    slack = 0.0
    if model is not None:
        slack = sum(
            max(abs(x) for x in points)
            for a in table.shown
            if a.key != model.attribute and (points := model.points(a.key)) is not None
        )
    out = []
    for r in range(N_ROWS):
        fits: list[tuple[float, Kind]] = []
        fixed = [(j, cls) for (row, j), cls in table.classes.items() if row == r]
        for kind in domain.kinds:
            if not all(
                set(cls) & set(kind.allowed(table.shown[j].key, len(table.shown[j].levels)))
                for j, cls in fixed
            ):
                continue
            if jp is None or kind.price is None:
                fits.append((0.0, kind))
                continue
            a = table.shown[jp]
            cls = table.classes.get((r, jp), list(range(len(a.levels))))
            levels = [lv for lv in cls if lv in kind.allowed(a.key, len(a.levels))]
            typical = typical_level(kind.price)
            gap = min(abs(lv - typical) for lv in levels) - model.noise  # type: ignore[union-attr]
            if gap <= slack:
                fits.append((max(0.0, gap), kind))
        if not fits:
            return None
        # the kinds that sit nearest the row's price (every kind whose band holds it, if any)
        nearest = min(g for g, _ in fits)
        out.append(_pick(rng, [k for g, k in fits if g <= nearest]))
    return out


#: A column's state for one option in a design: its met bit and its missed bit (None: no slot).
State = tuple[int | None, int | None]
_STATES: tuple[State, ...] = tuple((m, z) for m in (None, 0, 1) for z in (None, 0, 1))


def _row_penalty(
    table: Table,
    domain: Domain,
    open_cols: list[int],
    picked: list[tuple[Slots, tuple[NeedOption, ...]]],
):
    """Bank v4: a cost for the column design of options its kinds cannot make: per option,
    one for each coherence rule its bits leave no levels to honor, and how many levels the
    prices its bits leave it lie outside what its kind can charge for the other columns' bits."""
    col = {a.key: j for j, a in enumerate(table.shown)}
    rows = (OPENING, *ELIGIBLE_ROWS)
    position = {j: k for k, j in enumerate(open_cols)}

    def levels(r: int, j: int, state: State) -> list[int]:
        a = table.shown[j]
        allowed = table.kinds[r].allowed(a.key, len(a.levels))
        if j not in position:
            return [lv for lv in table.classes[(r, j)] if lv in allowed]
        needs = picked[position[j]][1]
        m, z = state
        return [
            lv
            for lv in allowed
            if (m is None or int(lv in needs[0].satisfied_by) == m)
            and (z is None or int(lv in needs[-1].satisfied_by) == z)
        ]

    def states(j: int) -> tuple[State, ...]:
        return _STATES if j in position else ((None, None),)

    rules = []
    for rule in domain.coherence:
        jw, jf = col.get(rule.when.attribute), col.get(rule.forbid.attribute)
        if jw is None or jf is None:
            continue
        ok: dict[tuple[int, State, State], bool] = {}
        for r in rows:
            for sw in states(jw):
                for sf in states(jf):
                    ok[(r, sw, sf)] = any(
                        lw not in rule.when.levels or lf not in rule.forbid.levels
                        for lw in levels(r, jw, sw)
                        for lf in levels(r, jf, sf)
                    )
        rules.append((jw, jf, ok))

    model = domain.price
    priced = model is not None and model.attribute in col
    span: dict[tuple[int, int, State], tuple[float, float]] = {}
    if priced:
        assert model is not None
        jp = col[model.attribute]
        for r in rows:
            for j, a in enumerate(table.shown):
                points = model.points(a.key) if j != jp else None
                if points is None:
                    continue
                for state in states(j):
                    got = levels(r, j, state) or list(table.kinds[r].allowed(a.key, len(a.levels)))
                    span[(r, j, state)] = (
                        min(points[lv] for lv in got),
                        max(points[lv] for lv in got),
                    )
        n_levels = len(table.shown[jp].levels)

    # vectorized over the 9 rows: a state index per (column, row) -> lookups
    n_cols, n_rows = len(table.shown), len(rows)
    row_ix = np.arange(n_rows)
    shifts = np.arange(len(ELIGIBLE_ROWS))
    ok_tabs = []
    for jw, jf, ok in rules:
        tab = np.ones((n_rows, len(_STATES), len(_STATES)), bool)
        for (r, sw, sf), good in ok.items():
            tab[rows.index(r), _STATES.index(sw), _STATES.index(sf)] = good
        ok_tabs.append((jw, jf, tab))
    if priced:
        lo_tab = np.zeros((n_cols, n_rows, len(_STATES)))
        hi_tab = np.zeros((n_cols, n_rows, len(_STATES)))
        for (r, j, state), (lo, hi) in span.items():
            lo_tab[j, rows.index(r), _STATES.index(state)] = lo
            hi_tab[j, rows.index(r), _STATES.index(state)] = hi
        base = np.array([float(table.kinds[r].price or 0.0) for r in rows])
        # the price levels a row's kind can show in each state of the price column
        p_lo = np.zeros((n_rows, len(_STATES)))
        p_hi = np.zeros((n_rows, len(_STATES)))
        for i, r in enumerate(rows):
            for state in states(jp):
                got = levels(r, jp, state) or [int(table.values[r, jp])]
                p_lo[i, _STATES.index(state)] = min(got)
                p_hi[i, _STATES.index(state)] = max(got)
        noise = model.noise  # type: ignore[union-attr]

    none = np.zeros(n_rows, np.int64)
    by_mask = [
        [
            np.concatenate(([1 + bit], 1 + ((mask >> shifts) & 1)))
            for mask in range(1 << len(ELIGIBLE_ROWS))
        ]
        for bit in (0, 1)
    ]

    def codes(mask: int, opening_bit: int) -> np.ndarray:
        """Per row: 0 for no slot, 1 + the bit otherwise (the opening's bit is fixed)."""
        return none if mask < 0 else by_mask[opening_bit][mask]

    def penalty(design: SlotDesign) -> float:
        idx = np.zeros((n_cols, n_rows), np.int64)
        for k, j in enumerate(open_cols):
            idx[j] = 3 * codes(design.met[k], 1) + codes(design.missed[k], 0)
        total = 0.0
        for jw, jf, tab in ok_tabs:
            total += float((~tab[row_ix, idx[jw], idx[jf]]).sum())
        if priced:
            cols_ix = np.arange(n_cols)[:, None]
            lo = base + lo_tab[cols_ix, row_ix[None, :], idx].sum(axis=0)
            hi = base + hi_tab[cols_ix, row_ix[None, :], idx].sum(axis=0)
            low = np.clip(np.rint(lo), 0, n_levels - 1)
            high = np.clip(np.rint(hi), 0, n_levels - 1)
            shown_lo, shown_hi = p_lo[row_ix, idx[jp]], p_hi[row_ix, idx[jp]]
            gap = np.maximum(0, np.maximum(low - (shown_hi + noise), (shown_lo - noise) - high))
            total += float(gap.sum())
        return total

    return penalty


def _constrain_slots(
    slots: Slots, needs: tuple[NeedOption, ...], attribute: DomainAttribute, kinds: list[Kind]
) -> Slots:
    """Bank v4: ``slots`` with the bits each eligible option's kind can give, and the slot
    kinds the opening's kind can serve."""

    def bits(kind: Kind) -> frozenset[tuple[int, ...]]:
        levels = kind.allowed(attribute.key, len(attribute.levels))
        return frozenset(tuple(int(lv in n.satisfied_by) for n in needs) for lv in levels)

    opening = bits(kinds[OPENING])
    serves = set()
    if any(b[0] == 1 for b in opening):
        serves.add("met")
    if any(b[-1] == 0 for b in opening):
        serves.add("missed")
    if len(needs) == 2 and (1, 0) in opening:
        serves.add("both")
    return replace(
        slots,
        row_bits=tuple(bits(kinds[r]) for r in ELIGIBLE_ROWS),
        opening=frozenset(serves),
    )


def _narrow_to_kinds(rng: np.random.Generator, table: Table) -> bool:
    """Bank v4: every cell's class narrowed to its row's kind (False when one empties)."""
    table.base_classes = {cell: list(cls) for cell, cls in table.classes.items()}
    for (r, j), cls in list(table.classes.items()):
        a = table.shown[j]
        ok = set(table.kinds[r].allowed(a.key, len(a.levels)))
        narrowed = [lv for lv in cls if lv in ok]
        if not narrowed:
            return False
        table.classes[(r, j)] = narrowed
        if table.values[r, j] not in narrowed:
            table.values[r, j] = _pick(rng, narrowed)
    return True


#: A way out of a violation: set cell (row, column) to one of these levels (column ``KIND``:
#: give the row one of these kinds, by index).
Fix = tuple[int, int, list[int]]
KIND = -1


def _violations(
    table: Table, domain: Domain, rows: Sequence[int] = range(N_ROWS)
) -> list[list[Fix]]:
    """Every clash of a row's values (coherence rules; bank v4: the price band of its kind),
    each as the cell changes that would end it."""
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
                out.append(
                    [
                        (r, j, [lv for lv in table.classes.get((r, j), []) if lv not in bad])
                        for j, bad in ((jw, rule.when.levels), (jf, rule.forbid.levels))
                    ]
                )
    model = domain.price
    if table.kinds and model is not None and model.attribute in col:
        jp = col[model.attribute]
        for r in rows:
            out.extend(_price_fixes(table, domain, r, jp))
    return out


def _price_gap(domain: Domain, kind: Kind, shown: dict[str, int], key: str) -> int:
    """How many levels the price in ``shown`` is from ``kind``'s band (0: within)."""
    band = price_band(domain, kind, shown)
    return 0 if shown[key] in band else min(abs(shown[key] - b) for b in band)


def _price_fixes(table: Table, domain: Domain, r: int, jp: int) -> list[list[Fix]]:
    """Bank v4: when row ``r``'s price is outside its kind's band, the single changes that bring
    it closer: the price, a level of an attribute the price model prices, or the row's kind
    (column ``KIND``, levels = kind indices). [] when it is within."""
    key = table.shown[jp].key
    kind = table.kinds[r]
    shown = table.shown_values(r)
    gap = _price_gap(domain, kind, shown, key)
    if not gap:
        return []
    model = domain.price
    assert model is not None
    fixes: list[Fix] = []
    for j, a in enumerate(table.shown):
        if j != jp and model.points(a.key) is None:
            continue
        good = []
        for lv in table.classes[(r, j)]:
            moved = dict(shown)
            moved[a.key] = lv
            if lv != shown[a.key] and _price_gap(domain, kind, moved, key) < gap:
                good.append(lv)
        fixes.append((r, j, good))
    others = [
        i
        for i, k in enumerate(domain.kinds)
        if k is not kind
        and all(
            v in k.allowed(a.key, len(a.levels)) and v in table.base_classes.get((r, j), [v])
            for j, (a, v) in enumerate(zip(table.shown, table.values[r]))
        )
        and _price_gap(domain, k, shown, key) < gap
    ]
    fixes.append((r, KIND, others))
    return [fixes]


def _cohere(rng: np.random.Generator, table: Table, domain: Domain) -> bool:
    """Repair clashes within level classes; False when that fails."""
    for _ in range(COHERE_STEPS):
        found = _violations(table, domain)
        if not found:
            return True
        if table.kinds:  # bank v4: a clash no single change ends may still end after another's
            found = [v for v in found if any(good for _, _, good in v)] or found
        fixes = [(r, j, good) for r, j, good in _pick(rng, found) if good]
        if not fixes:
            return False
        r, j, good = _pick(rng, fixes)
        if j == KIND:
            _switch_kind(table, r, domain.kinds[_pick(rng, good)])
        else:
            table.values[r, j] = _pick(rng, good)
    return not _violations(table, domain)


def _offers(table: Table) -> list[tuple[dict[str, int], None]]:
    return [
        ({a.key: int(table.values[r, j]) for j, a in enumerate(table.shown)}, None)
        for r in range(N_ROWS)
    ]


def _ease_inversions(rng: np.random.Generator, table: Table, domain: Domain) -> None:
    """Bank v4: while two rows are priced against their offers (``realism.price_inversions``),
    swap a priced attribute's values between them, so the richer offer sits on the dearer row;
    a swap keeps both cells in their level classes (the column design holds) and both rows
    coherent, and stays only when it lowers the number of such pairs."""
    model = domain.price
    col = {a.key: j for j, a in enumerate(table.shown)}
    if not table.kinds or model is None or model.attribute not in col:
        return
    priced = [
        j
        for j, a in enumerate(table.shown)
        if a.key != model.attribute and model.points(a.key) is not None
    ]
    pairs = price_inversions(domain, _offers(table))
    for _ in range(EASE_STEPS):
        if not pairs:
            return
        a, b = pairs[int(rng.integers(len(pairs)))]
        moves = [
            j
            for j in priced
            if table.values[a, j] != table.values[b, j]
            and table.values[b, j] in table.classes.get((a, j), ())
            and table.values[a, j] in table.classes.get((b, j), ())
        ]
        if not moves:
            continue
        j = moves[int(rng.integers(len(moves)))]
        table.values[[a, b], j] = table.values[[b, a], j]
        after = price_inversions(domain, _offers(table))
        if len(after) < len(pairs) and not _violations(table, domain, (a, b)):
            pairs = after
        else:
            table.values[[a, b], j] = table.values[[b, a], j]


def _switch_kind(table: Table, r: int, kind: Kind) -> None:
    """Bank v4: row ``r`` becomes ``kind``; its classes narrow from the design's afresh."""
    table.kinds[r] = kind
    for j, a in enumerate(table.shown):
        if (r, j) in table.base_classes:
            ok = set(kind.allowed(a.key, len(a.levels)))
            table.classes[(r, j)] = [lv for lv in table.base_classes[(r, j)] if lv in ok]


def table_cost(table: Table, triples: ValidTriples) -> float:
    """What the exact repair lowers: the largest share of one best, plus how far the three most
    likely need attributes are above chance + 0.05."""
    if not triples.count:
        return 10.0
    cost = triples.best_posterior + 0.5 * max(0.0, table.need_excess(triples) - 0.05)
    if table.kinds:  # bank v4 also spreads the L1 and the L2 need on their own
        cost += 0.5 * max(0.0, table.level_excess(triples) - 0.05)
    return cost


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

    owner = names_of(domain)

    def fits(name: str, r: int) -> bool:
        if table.kinds and owner[name] not in (None, table.kinds[r].key):
            return False
        return all(table.values[r, j] in levels for j, levels in allowed_by.get(name, []))

    every = list(owner)
    names = [every[int(i)] for i in rng.permutation(len(every))]
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
