"""Option values: a table from which nothing visible tells ``best`` apart.

The 11 options keep the paper's roles (best and safe r111, attractive r110 = the opening, six
partials, two violators). What changes is how their values are drawn, so that an agent that
reads the request and the option list but never asks learns nothing about which eligible option
is best or which attributes hold the needs (docs/domains.md, "How the option values are drawn"):

- **Every open attribute is a split.** A need attribute splits its levels into the need's
  satisfying and other levels; a distractor gets the split of one of its own catalog needs (a
  decoy the user does not have). Each option sits in one side of each split: on a need, its
  pattern bit; on a distractor, the bit of a need-like membership (the column of the need it
  imitates, with the eligible options' bits shuffled), so both kinds of column have the same
  group sizes and the same relation to the opening. Which need each distractor imitates is
  balanced (``imitated_needs``): one open column in three has the opening on its unmet side,
  as L3 has. The generator draws it before it picks the distractor attributes, each the pool
  attribute closest in levels shown to the need it will imitate, and passes it in
  (``imitates``).
- **Levels shown.** An open attribute shows at most ``SHOWN_LEVELS`` of its levels (a need
  keeps both sides in about their proportion), so the number of levels says nothing.
- **The opening stands apart** where its side has two or more other levels: its value there is
  one no other option takes. On a two-level side everyone, the opening included, shares both.
- **Best and safe are parted** (``_part_twins``): on a need attribute, where they would share a
  value, safe trades values with another member of its side; the column's values stay the same.
- **Within a side, values spread evenly** over a random subset of the side's levels, sized to
  the number of options in that side, so a value's frequency does not tell a side's size.
- **Favored attribute:** the opening is strictly ahead of all requirement-meeting options;
  best and the partials draw their levels from one law, and safe alone takes the lowest level
  open to them, so best's favored rank is exchangeable with a partial's (an attacker can spot
  safe, which leaves 1 in 7, not more).
- **Even tables.** Of several draws per distractor attribute, the one whose eligible options are
  most alike in the counts anyone can take from the table (``table_spread``) is kept; the
  generator then keeps, of several whole drawings, the one whose eligible options look most
  alike in the audit's option counts (``alikeness.option_spread``). Neither choice reads a
  role: both treat every eligible option the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from hear2act_env.errors import DomainError
from hear2act_env.protocol.scenario import Favored, Need, Requirement, Role
from hear2act_env.scenarios.domain import DomainAttribute

__all__ = [
    "ROLE_BITS",
    "SHOWN_LEVELS",
    "assign_values",
    "imitated_needs",
    "table_spread",
    "trim_levels",
]

_PARTIAL_BITS = ((0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (1, 0, 0), (1, 0, 1))
#: Construction order of the 11 options: (role, need bits); violators' bits are drawn.
ROLE_BITS: tuple[tuple[Role, tuple[int, int, int] | None], ...] = (
    (Role.BEST, (1, 1, 1)),
    (Role.SAFE, (1, 1, 1)),
    (Role.ATTRACTIVE, (1, 1, 0)),
    *((Role.PARTIAL, bits) for bits in _PARTIAL_BITS),
    (Role.VIOLATOR, None),
    (Role.VIOLATOR, None),
)
OPENING = 2
#: Need-like draws tried per distractor attribute (the most even one is kept).
DISTRACTOR_DRAWS = 12
#: Levels a scenario shows of each open attribute (those with more are cut down to this many), so
#: that how many levels an attribute has (need attributes tend to have more) says nothing.
SHOWN_LEVELS = 5
#: Weight of the spread of pairwise shared values (all pairs of eligible options alike, so that
#: best and safe, who meet the same needs, are not the most alike pair).
PAIR_WEIGHT = 4.0
#: How often best and safe are parted where they share a value on a need attribute.
TWIN_PARTING = 1.0
#: The opening keeps a level of its own on a side only where this many others remain.
OPENING_APART = 2
#: Weight of the spread of the eligible options' summed desirability (``level_desirability``).
DESIRABILITY_WEIGHT = 4.0
#: Level subsets drawn when a need attribute shows only some of its levels.
TRIM_DRAWS = 8
#: Chance that a violator sits on an attribute's satisfying side (needs and distractors alike).
VIOLATOR_P = 0.5
ELIGIBLE = (0, 1, 3, 4, 5, 6, 7, 8)
VIOLATORS = (9, 10)


def _pick(rng: np.random.Generator, items: Sequence[int]) -> int:
    if not len(items):
        raise DomainError("cannot pick from an empty set of levels")
    return int(items[int(rng.random() * len(items))])


def _shuffle(rng: np.random.Generator, items: Sequence[int]) -> list[int]:
    pool, out = list(items), []
    while pool:
        out.append(pool.pop(int(rng.random() * len(pool))))
    return out


def _split(levels: int, satisfied: Sequence[int]) -> tuple[list[int], list[int]]:
    sat = sorted(set(satisfied))
    return sat, [v for v in range(levels) if v not in sat]


def _spread(
    rng: np.random.Generator,
    members: list[int],
    levels: list[int],
    k: int,
    prefer: np.ndarray | None = None,
) -> dict[int, int]:
    """Values for ``members``: ``k`` levels drawn from ``levels`` (the ones ``prefer`` scores
    highest, if given; ties at random), each used about equally."""
    chosen = _shuffle(rng, levels)
    if prefer is not None:
        chosen = sorted(chosen, key=lambda v: -prefer[v])
    chosen = chosen[:k]
    values = [chosen[i % len(chosen)] for i in range(len(members))]
    return dict(zip(_shuffle(rng, members), values))


def _without(levels: list[int], opening: int) -> list[int]:
    rest = [v for v in levels if v != opening]
    return rest if len(rest) >= OPENING_APART else list(levels)


def _open_column(
    rng: np.random.Generator,
    size: int,
    satisfied: Sequence[int],
    bits: list[int],
    good: np.ndarray | None = None,
) -> list[int]:
    """One open attribute's values from the options' sides (``bits``: 1 = satisfying side).

    Each side uses about half as many distinct levels as it has members (at most what it has
    besides the opening's level), so a value repeats about as often on either side. With
    ``good`` (a need's attribute: ``level_desirability``), the satisfying side takes its least
    generally good levels and the other side its best ones, so that the side that meets the
    need does not show the more "desirable" values.
    """
    sat, unsat = _split(size, satisfied)
    sides = {1: sat, 0: unsat}
    opening = _pick(rng, sides[bits[OPENING]])
    members = {b: [i for i, x in enumerate(bits) if x == b and i != OPENING] for b in (0, 1)}
    # the opening's level is left out of its side while two or more others remain
    usable = {b: _without(sides[b], opening) for b in (0, 1)}
    present = [b for b in (0, 1) if members[b]]
    column = [0] * len(bits)
    column[OPENING] = opening
    for b in present:
        k = max(1, min((len(members[b]) + 1) // 2, len(usable[b])))
        prefer = None if good is None else (-good if b == 1 else good)
        for i, v in _spread(rng, members[b], usable[b], k, prefer).items():
            column[i] = v
    return column


def trim_levels(
    rng: np.random.Generator, attribute: DomainAttribute, satisfied: Sequence[int] | None = None
) -> tuple[DomainAttribute, dict[int, int]]:
    """``attribute`` with at most ``SHOWN_LEVELS`` of its levels (in their order) and its needs
    re-indexed (those left with no satisfying or no other level dropped), plus the map from
    old to new level indices. With ``satisfied`` (the scenario's need on it), both sides of
    that need keep levels in about their original proportion."""
    n = len(attribute.levels)
    if n <= SHOWN_LEVELS:
        return attribute, {i: i for i in range(n)}
    if satisfied is None:
        keep = _shuffle(rng, range(n))[:SHOWN_LEVELS]
    else:
        good = level_desirability(attribute)
        sat, unsat = _split(n, satisfied)
        n_sat = round(SHOWN_LEVELS * len(sat) / n)
        n_sat = max(1, SHOWN_LEVELS - len(unsat), min(n_sat, len(sat), SHOWN_LEVELS - 1))
        # of a few draws, the one whose two sides are the most alike in how many of the
        # domain's needs their levels satisfy (so "generally good values" do not mark the side
        # that meets the need)
        keep, gap = [], np.inf
        for _ in range(TRIM_DRAWS):
            s_keep = _shuffle(rng, sat)[:n_sat]
            u_keep = _shuffle(rng, unsat)[: SHOWN_LEVELS - n_sat]
            g = abs(good[s_keep].mean() - good[u_keep].mean())
            if g < gap - 1e-12:
                keep, gap = s_keep + u_keep, g
    index = {old: new for new, old in enumerate(sorted(keep))}
    needs = []
    for need in attribute.needs:
        kept = tuple(index[v] for v in need.satisfied_by if v in index)
        if 0 < len(kept) < len(keep):
            needs.append(replace(need, satisfied_by=kept))
    levels = tuple(attribute.levels[i] for i in sorted(keep))
    return replace(attribute, levels=levels, needs=tuple(needs)), index


def _sized_subset(rng: np.random.Generator, levels: int, side: int, opening_bit: int) -> list[int]:
    """A random satisfying set over ``levels`` whose opening side (the satisfying side when
    ``opening_bit`` is 1) has ``side`` levels, as far as ``levels`` allows (both sides kept)."""
    side = max(1, min(side, levels - 1))
    size = side if opening_bit else levels - side
    return sorted(_shuffle(rng, range(levels))[:size])


def _part_twins(rng: np.random.Generator, column: list[int], bits: list[int]) -> list[int]:
    """With probability ``TWIN_PARTING``, when best and safe share a value on a need attribute,
    safe trades values with another member of its side that holds a different one. The
    column's values (so every count taken over the column) stay the same; only the pairing
    changes, so that best and safe, on the same side of all three needs, are not the eligible
    pair that shares the most values."""
    best, safe = 0, 1
    if column[best] != column[safe] or rng.random() >= TWIN_PARTING:
        return column
    side = [
        i
        for i, b in enumerate(bits)
        if b == bits[safe] and i not in (best, safe, OPENING) and column[i] != column[safe]
    ]
    if side:
        j = side[int(rng.random() * len(side))]
        column[safe], column[j] = column[j], column[safe]
    return column


def _membership(
    rng: np.random.Generator,
    model_bits: list[int],
    violators: dict[int, int],
    lean: np.ndarray | None = None,
    toward: int | None = None,
) -> list[int]:
    """A distractor's sides: the imitated need's column (``model_bits``) with the eligible
    options' bits reassigned, at random or (``lean``, one score per eligible option) giving side
    ``toward`` (the larger side by default) to the options with the lowest scores (to even out
    what the table shows), and the violators on the sides given."""
    column = list(model_bits)
    bits = [column[i] for i in ELIGIBLE]
    if lean is None:
        order = _shuffle(rng, range(len(ELIGIBLE)))
    else:
        noise = np.array([rng.random() for _ in ELIGIBLE]) * 1e-3
        order = [int(j) for j in np.argsort(lean + noise)]
    ones = sum(bits)
    if toward is None:
        toward = 1 if ones * 2 >= len(bits) else 0
    n_toward = ones if toward == 1 else len(bits) - ones
    shuffled = [0] * len(bits)
    for rank, j in enumerate(order):
        shuffled[j] = toward if rank < n_toward else 1 - toward
    for i, b in zip(ELIGIBLE, shuffled):
        column[i] = b
    for v in VIOLATORS:
        column[v] = violators[v]
    return column


def _favored_column(
    rng: np.random.Generator,
    size: int,
    requirement: Requirement,
    favored: Favored,
    same: bool,
) -> list[int]:
    allowed = list(requirement.satisfied_by) if same else list(range(size))
    ranked = sorted(allowed, key=favored.score, reverse=True)  # best first
    top = _pick(rng, range(0, max(1, min(2, len(ranked) - 2))))
    below = ranked[top + 1 :]  # what eligible options may take
    if len(below) < 2:
        raise DomainError(f"favored {favored.attribute}: needs 3 levels open to eligible options")
    # best and the partials share one law (never the lowest level: that one is safe's alone,
    # so "best is ahead of safe" says nothing about which of the others is best)
    law = below[:-1]
    column = [0] * len(ROLE_BITS)
    column[OPENING] = ranked[top]
    for i in ELIGIBLE:
        column[i] = _pick(rng, law)
    column[1] = below[-1]  # safe: the lowest level open to eligible options, and alone there
    outside = [v for v in range(size) if v not in requirement.satisfied_by]
    for v in VIOLATORS:  # tempting: as good as the opening where the requirement allows it
        column[v] = _pick(rng, outside) if same else _pick(rng, ranked[: top + 1])
    return column


def assign_values(
    rng: np.random.Generator,
    shown: Sequence[DomainAttribute],
    requirement: Requirement,
    favored: Favored,
    needs: tuple[Need, ...],
    imitates: dict[str, int],
) -> list[list[int]]:
    """The 11 options' values (rows in ``ROLE_BITS`` order, columns in ``shown`` order);
    ``imitates``: for each distractor's key, the need (0, 1, 2) whose sides it copies."""
    size = {a.key: len(a.levels) for a in shown}
    by_key = {a.key: a for a in shown}
    need_bits: list[list[int]] = []
    violator_bits = [[int(rng.random() < VIOLATOR_P) for _ in range(3)] for _ in VIOLATORS]
    for k in range(3):
        col = []
        for i, (_, bits) in enumerate(ROLE_BITS):
            col.append(bits[k] if bits is not None else violator_bits[VIOLATORS.index(i)][k])
        need_bits.append(col)
    columns: dict[str, list[int]] = {}
    for k, need in enumerate(needs):
        columns[need.attribute] = _part_twins(
            rng,
            _open_column(
                rng,
                size[need.attribute],
                need.satisfied_by,
                need_bits[k],
                level_desirability(by_key[need.attribute]),
            ),
            need_bits[k],
        )
    req_sat, req_unsat = _split(size[requirement.attribute], requirement.satisfied_by)
    same = favored.attribute == requirement.attribute
    if not same:
        columns[requirement.attribute] = [
            _pick(rng, req_unsat if role == Role.VIOLATOR else req_sat) for role, _ in ROLE_BITS
        ]
    columns[favored.attribute] = _favored_column(
        rng, size[favored.attribute], requirement, favored, same
    )
    # distractors one by one: of a few need-like draws, the one that keeps the eligible
    # options most alike in what the table shows (greedy compensation)
    open_keys = [n.attribute for n in needs]
    text_len = {a.key: np.array([len(level) for level in a.levels], float) for a in shown}
    desir = {a.key: level_desirability(a) for a in shown}
    for a in shown:
        if a.key in columns:
            continue
        decoys = [n.satisfied_by for n in a.needs if 0 < len(n.satisfied_by) < len(a.levels)]
        best: tuple[float, list[int]] | None = None
        so_far = [np.asarray(columns[key]) for key in open_keys]
        held = sum(desir[key][c] for key, c in zip(open_keys, so_far))[list(ELIGIBLE)]
        leans = (_eligible_sharing(so_far), _opening_sharing(so_far), held)
        # the need it imitates and its sides are fixed before the draws, so that keeping the
        # most even draw cannot make distractors differ from needs in how their sides look
        k = imitates[a.key]
        opening_bit = need_bits[k][OPENING]
        model = needs[k]
        side = len(model.satisfied_by)
        side = side if opening_bit else size[model.attribute] - side
        fits = [d for d in decoys if (len(d) if opening_bit else len(a.levels) - len(d)) == side]
        if fits:  # a decoy of the attribute whose opening side is as large as on that need
            satisfied = fits[int(rng.random() * len(fits))]
        else:  # none fits: a random set with that side size
            satisfied = _sized_subset(rng, len(a.levels), side, opening_bit)
        sides = {v: int(rng.random() < VIOLATOR_P) for v in VIOLATORS}
        # the side whose levels the domain's needs favor: the least favored options so far go
        # there (with the desirability lean)
        sat_mean = desir[a.key][list(satisfied)].mean()
        other = [v for v in range(len(a.levels)) if v not in satisfied]
        rich = int(sat_mean >= desir[a.key][other].mean()) if other else 1
        towards = (None, None, need_bits[k][OPENING], rich)
        for trial in range(DISTRACTOR_DRAWS):
            column = _open_column(
                rng,
                len(a.levels),
                satisfied,
                _membership(
                    rng,
                    need_bits[k],
                    sides,
                    None if trial % 4 == 0 else leans[trial % 4 - 1],
                    towards[trial % 4],
                ),
            )
            cols = [*so_far, np.asarray(column)]
            rows = np.stack(cols, axis=1)
            keys = [*open_keys, a.key]
            total = sum(text_len[key][c] for key, c in zip(keys, cols))
            good = sum(desir[key][c] for key, c in zip(keys, cols))
            score = (
                table_spread(rows, range(rows.shape[1]))
                + float(total[list(ELIGIBLE)].var()) / 25
                + DESIRABILITY_WEIGHT * float(good[list(ELIGIBLE)].var())
            )
            if best is None or score < best[0]:
                best = (score, column)
        assert best is not None
        columns[a.key] = best[1]
        open_keys.append(a.key)
    return [[columns[a.key][i] for a in shown] for i in range(len(ROLE_BITS))]


def imitated_needs(rng: np.random.Generator, distractors: int) -> list[int]:
    """Which need (0, 1, 2 = L1, L2, L3) each of ``distractors`` distractors imitates.

    Every column shows which of its sides the opening is on, and the opening meets L1 and L2
    but not L3. Of the ``n_open = distractors + 3`` open columns, ``round(n_open / 3)`` should
    then be of the L3 kind (the opening on the unmet side), so that a column of either kind is
    a need with about the same chance (3 in ``n_open``): ``round(n_open / 3) - 1`` distractors
    imitate L3, the others L1 or L2 at random, in a random order. Drawn one in three each,
    many scenarios had no distractor of the L3 kind, and their one such column was surely a
    need (docs/domains.md, "Distractors imitate needs").
    """
    n_l3 = max(0, min(distractors, round((distractors + 3) / 3) - 1))
    kinds = [2] * n_l3 + [int(rng.random() * 2) for _ in range(distractors - n_l3)]
    return _shuffle(rng, kinds)


def level_desirability(a: DomainAttribute) -> np.ndarray:
    """Per level, the share of the attribute's needs (in the domain file) that it satisfies:
    what someone who reads the domain files would call a generally good value."""
    counts = np.zeros(len(a.levels))
    for need in a.needs:
        counts[list(need.satisfied_by)] += 1
    return counts / max(len(a.needs), 1)


def _eligible_sharing(columns: list[np.ndarray]) -> np.ndarray:
    """Per eligible option, how many other eligible options share its values so far."""
    sub = np.stack(columns, axis=1)[list(ELIGIBLE)]
    same = sub[:, None, :] == sub[None, :, :]
    return same.sum(axis=(1, 2)) - sub.shape[1]


def _opening_sharing(columns: list[np.ndarray]) -> np.ndarray:
    """Per eligible option, on how many columns so far it shows the opening's value."""
    sub = np.stack(columns, axis=1)
    return (sub[list(ELIGIBLE)] == sub[OPENING]).sum(axis=1)


def table_spread(rows: np.ndarray, open_columns: Sequence[int]) -> float:
    """How much the eligible options differ in role-agnostic table counts (0: all alike)."""
    sub = rows[:, list(open_columns)]
    same = sub[:, None, :] == sub[None, :, :]
    np.einsum("iic->ic", same)[:] = False
    elig = list(ELIGIBLE)
    in_elig = np.zeros(len(rows), bool)
    in_elig[elig] = True
    counts_all = same.sum(axis=1)
    counts_elig = same[:, in_elig, :].sum(axis=1)
    held = counts_elig[elig] + 1  # eligible options holding each eligible option's value
    modal = (held >= held.max(axis=0)).sum(axis=1)
    stats = np.stack(
        [
            same[elig, OPENING].sum(axis=1),
            same[elig][:, list(VIOLATORS)].sum(axis=(1, 2)),
            counts_all[elig].sum(axis=1),
            counts_elig[elig].sum(axis=1),
            modal,
            (counts_all[elig] == 0).sum(axis=1),
        ]
    )
    pairs = same[np.ix_(elig, elig)].sum(axis=2)[np.triu_indices(len(elig), 1)]
    return float(stats.var(axis=1).sum() + PAIR_WEIGHT * pairs.var())
