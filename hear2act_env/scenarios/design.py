"""The column design of a bank v3 table: which eligible options each planted need column holds.

Bank v3 draws the option table first and the needs last, uniformly among every valid need
triple the table admits (docs/domains.md#bank-v3-the-table-first-the-needs-last). For that to leave an agent no better than a guess among
7 options, the table must admit many valid triples whose ``best`` options spread evenly. This
module searches for such a table in the abstract, before any level is chosen.

Each open attribute gets one or two **slots**, each the column of one pool need over the 8
eligible options (a bit mask): a *met* slot (an L1/L2 column: the opening meets it, 4 eligible
options do) or a *missed* slot (an L3 column: the opening misses it, 5 eligible options meet
it). An attribute takes both only through a crossing pair of needs (``capacity``), and then
the eligible options may only take the (met, missed) bit mixes that some level gives
(``Slots.mixes``). Given the slots, a triple (met slot, met slot, missed slot) on three
distinct attributes is valid exactly when the two met columns share 2 options and the missed
column holds those two and one option of each of the other three quadrants; its ``best`` is the
one of the shared two ahead on the favored attribute. Simulated annealing moves one option in
or out of a column (or turns a one-slot attribute from met to missed) towards an even spread of
bests and of attributes over the valid triples.

The design reads no need of the scenario (there is none yet): it only makes the table rich. The
exact count over the whole pool, done after the levels are chosen, is what the generator keeps
or rejects a table by.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Slots", "SlotDesign", "anneal", "design_triples"]

N_ELIGIBLE = 8
MET_SIZE = 4
MISSED_SIZE = 5
_POP = [bin(i).count("1") for i in range(1 << N_ELIGIBLE)]
#: Annealing steps per design, start and floor temperature.
STEPS = 2500
T_START, T_FLOOR, COOLING = 0.03, 0.001, 0.998
#: Bank v4: weight of the L1 and the L2 need's spread in ``design_cost``.
LEVEL_WEIGHT = 0.5
#: Bank v4: cost per option of the 7 that can be ``best`` that no valid triple names (with 6
#: bests named, the best share is at least 1/6, above the limit).
COVER_WEIGHT = 0.15
#: Bank v4: reward per valid triple (up to ``COUNT_CAP``) in ``design_cost``.
COUNT_REWARD = 0.0002
COUNT_CAP = 60


@dataclass(frozen=True)
class Slots:
    """What one open attribute can hold: ``kinds`` of the slots it may take ("met" and/or
    "missed"; two only for a crossing pair), the priorities its met need allows, and for a
    two-slot attribute the (met, missed) bit mixes its levels can give an eligible option."""

    kinds: tuple[str, ...]
    met_priorities: frozenset[str] = frozenset({"L1", "L2"})
    mixes: frozenset[tuple[int, int]] = frozenset()
    flexible: bool = False  # a one-slot attribute whose need may be met or missed
    #: bank v4, per eligible option: the bits (one-slot: ``(bit,)``; two-slot: ``(met,
    #: missed)``) that its kind's levels can give (empty: no constraint, bank v3)
    row_bits: tuple[frozenset[tuple[int, ...]], ...] = ()
    #: bank v4: the slot kinds the opening's kind can serve ("met", "missed"; "both" for a
    #: two-slot attribute's (1, 0)); None: no constraint
    opening: frozenset[str] | None = None


@dataclass
class SlotDesign:
    """Masks per attribute: ``met[j]``, ``missed[j]`` (-1 for none)."""

    met: list[int]
    missed: list[int]


def _random_mask(rng: np.random.Generator, size: int) -> int:
    members = rng.permutation(N_ELIGIBLE)[:size]
    return int(sum(1 << int(i) for i in members))


def _mixes_ok(met: int, missed: int, mixes: frozenset[tuple[int, int]]) -> bool:
    return all(((met >> r) & 1, (missed >> r) & 1) in mixes for r in range(N_ELIGIBLE))


def design_triples(
    design: SlotDesign, slots: Sequence[Slots], best_of: Sequence[int]
) -> list[tuple[int, int, int, int]]:
    """Valid (L1 attribute, L2 attribute, L3 attribute, best eligible index) of ``design``."""
    out = []
    n = len(slots)
    for i in range(n):
        hi = design.met[i]
        if hi < 0 or "L1" not in slots[i].met_priorities:
            continue
        for j in range(n):
            hj = design.met[j]
            if j == i or hj < 0 or "L2" not in slots[j].met_priorities:
                continue
            both = hi & hj
            if _POP[both] != 2 or best_of[both] < 0:
                continue
            for k in range(n):
                z = design.missed[k]
                if k in (i, j) or z < 0 or z & both != both:
                    continue
                if _POP[hi & z] == 3 and _POP[hj & z] == 3:
                    out.append((i, j, k, best_of[both]))
    return out


def design_cost(
    triples: Sequence[tuple[int, int, int, int]], n_attributes: int, per_level: bool = False
) -> float:
    """Lower is better: the largest share of one best, how far the bests are from even over 7,
    and how far the three most used attributes are above an even use of the attributes (with
    ``per_level``, bank v4: also for the L1 need alone and the L2 need alone)."""
    if not triples:
        return 10.0
    if per_level:
        return _cost_v4(triples, n_attributes)
    counts = np.bincount([t[3] for t in triples], minlength=N_ELIGIBLE).astype(float)
    share = counts / counts.sum()
    used = np.bincount([a for t in triples for a in t[:3]], minlength=n_attributes) / len(triples)
    top3 = float(np.sort(used)[::-1][:3].sum()) / 3
    return (
        float(share.max())
        + 0.3 * float(((share[:7] - 1 / 7) ** 2).sum())
        + 0.5 * max(0.0, top3 - 3 / n_attributes - 0.05)
        - 0.0002 * min(len(triples), 60)
    )


def _top3(counts: list[int]) -> int:
    return sum(sorted(counts, reverse=True)[:3])


def _cost_v4(triples: Sequence[tuple[int, int, int, int]], n_attributes: int) -> float:
    """``design_cost`` with the per-level terms, in plain Python (small lists: faster than
    numpy in the annealing loop)."""
    n = len(triples)
    chance = 3 / n_attributes
    level_cost = 0.0
    used = [0] * n_attributes
    for level in (0, 1):
        at = [0] * n_attributes
        for t in triples:
            at[t[level]] += 1
        level_cost += LEVEL_WEIGHT * max(0.0, _top3(at) / n - chance - 0.05)
        for a, c in enumerate(at):
            used[a] += c
    for t in triples:
        used[t[2]] += 1
    bests = [0] * N_ELIGIBLE
    for t in triples:
        bests[t[3]] += 1
    spread = sum((c / n - 1 / 7) ** 2 for c in bests[:7])
    return (
        max(bests) / n
        + 0.3 * spread
        + COVER_WEIGHT * sum(1 for c in bests[:7] if not c)
        + 0.5 * max(0.0, _top3(used) / n / 3 - chance - 0.05)
        + level_cost
        - COUNT_REWARD * min(n, COUNT_CAP)
    )


@functools.cache
def _bits(allowed: frozenset[tuple[int, ...]], slot: str) -> frozenset[int]:
    """The bits one slot of an attribute can take for an option whose kind gives ``allowed``
    (two-slot attributes give (met, missed) pairs; a one-slot attribute single bits)."""
    if not allowed or len(next(iter(allowed))) == 1:
        return frozenset(a[0] for a in allowed)
    return frozenset(a[0 if slot == "met" else 1] for a in allowed)


def _rows_ok(met: int, missed: int, s: Slots) -> bool:
    """Whether every eligible option's bits are ones its kind can give (bank v4)."""
    for r, allowed in enumerate(s.row_bits):
        mb, zb = (met >> r) & 1, (missed >> r) & 1
        if met >= 0 and missed >= 0:
            if (mb, zb) not in allowed:
                return False
        elif met >= 0 and mb not in _bits(allowed, "met"):
            return False
        elif missed >= 0 and zb not in _bits(allowed, "missed"):
            return False
    return True


def _opening_ok(met: int, missed: int, s: Slots) -> bool:
    if s.opening is None or (met < 0 and missed < 0):
        return True
    if met >= 0 and missed >= 0:
        return "both" in s.opening
    return ("met" if met >= 0 else "missed") in s.opening


def _constrained_mask(rng: np.random.Generator, size: int, s: Slots, slot: str) -> int:
    """A random mask of ``size`` eligible options that one slot's row bits allow (-1: none)."""
    options = [_bits(a, slot) for a in s.row_bits]
    must = [r for r, b in enumerate(options) if b == {1}]
    free = [r for r, b in enumerate(options) if b == {0, 1}]
    need = size - len(must)
    if need < 0 or need > len(free):
        return -1
    chosen = must + [free[int(i)] for i in rng.permutation(len(free))[:need]]
    return int(sum(1 << r for r in chosen))


def _initial_constrained(rng: np.random.Generator, s: Slots) -> tuple[int, int]:
    """Bank v4: a start for one attribute honoring its row bits and opening (-1, -1 when
    nothing fits; a two-slot attribute whose mixes do not fit keeps one slot)."""
    if len(s.kinds) == 2:
        for _ in range(500):
            m, z = _random_mask(rng, MET_SIZE), _random_mask(rng, MISSED_SIZE)
            if _mixes_ok(m, z, s.mixes) and _rows_ok(m, z, s) and _opening_ok(m, z, s):
                return m, z
    options = [k for k in s.kinds if s.opening is None or k in s.opening]
    for i in rng.permutation(len(options)):
        kind = options[int(i)]
        mask = _constrained_mask(rng, MET_SIZE if kind == "met" else MISSED_SIZE, s, kind)
        if mask >= 0:
            return (mask, -1) if kind == "met" else (-1, mask)
    return -1, -1


def _initial(rng: np.random.Generator, slots: Sequence[Slots]) -> SlotDesign:
    met, missed = [], []
    for s in slots:
        if s.row_bits:
            m, z = _initial_constrained(rng, s)
            met.append(m)
            missed.append(z)
            continue
        kinds = s.kinds
        if s.flexible:
            kinds = ("met",) if rng.random() < 0.5 else ("missed",)
        m = z = -1
        for _ in range(500):
            m = _random_mask(rng, MET_SIZE) if "met" in kinds else -1
            z = _random_mask(rng, MISSED_SIZE) if "missed" in kinds else -1
            if len(kinds) < 2 or _mixes_ok(m, z, s.mixes):
                break
        else:
            m = -1  # no mix found: keep the missed slot only
        met.append(m)
        missed.append(z)
    return SlotDesign(met, missed)


def _move(rng: np.random.Generator, design: SlotDesign, slots: Sequence[Slots]) -> bool:
    """Change ``design`` in place by one random move; False when the move is not allowed."""
    j = int(rng.integers(len(slots)))
    s = slots[j]
    if s.flexible and rng.random() < 0.15:  # turn a one-slot attribute over
        if s.row_bits:
            was = design.met[j], design.missed[j]
            if was[0] >= 0:
                new = (-1, _constrained_mask(rng, MISSED_SIZE, s, "missed"))
            else:
                new = (_constrained_mask(rng, MET_SIZE, s, "met"), -1)
            if max(new) < 0 or not _opening_ok(*new, s):
                return False
            design.met[j], design.missed[j] = new
            return True
        if design.met[j] >= 0:
            design.met[j], design.missed[j] = -1, _random_mask(rng, MISSED_SIZE)
        else:
            design.met[j], design.missed[j] = _random_mask(rng, MET_SIZE), -1
        return True
    present = [k for k, m in (("met", design.met[j]), ("missed", design.missed[j])) if m >= 0]
    if not present:
        return False
    kind = present[int(rng.integers(len(present)))]
    arr = design.met if kind == "met" else design.missed
    mask = arr[j]
    inside = [r for r in range(N_ELIGIBLE) if mask >> r & 1]
    outside = [r for r in range(N_ELIGIBLE) if not mask >> r & 1]
    arr[j] = mask ^ (1 << inside[int(rng.integers(len(inside)))])
    arr[j] ^= 1 << outside[int(rng.integers(len(outside)))]
    if (
        design.met[j] >= 0
        and design.missed[j] >= 0
        and not _mixes_ok(design.met[j], design.missed[j], s.mixes)
    ) or not _rows_ok(design.met[j], design.missed[j], s):
        arr[j] = mask
        return False
    return True


def anneal(
    rng: np.random.Generator,
    slots: Sequence[Slots],
    best_of: Sequence[int],
    steps: int = STEPS,
    per_level: bool = False,
    penalty: Callable[[SlotDesign], float] | None = None,
) -> tuple[SlotDesign, list[tuple[int, int, int, int]]]:
    """The best design found by simulated annealing from a random start, and its triples
    (``per_level``: ``design_cost``'s bank v4 terms; ``penalty``: a bank v4 cost added for
    options whose bits their kind cannot price)."""
    extra = penalty or (lambda design: 0.0)
    design = _initial(rng, slots)
    triples = design_triples(design, slots, best_of)
    cost = design_cost(triples, len(slots), per_level) + extra(design)
    best = (cost, SlotDesign(list(design.met), list(design.missed)), triples)
    temperature = T_START
    for _ in range(steps):
        before = SlotDesign(list(design.met), list(design.missed))
        if not _move(rng, design, slots):
            continue
        new_triples = design_triples(design, slots, best_of)
        new_cost = design_cost(new_triples, len(slots), per_level) + extra(design)
        if new_cost <= cost or rng.random() < np.exp((cost - new_cost) / temperature):
            cost, triples = new_cost, new_triples
            if cost < best[0]:
                best = (cost, SlotDesign(list(design.met), list(design.missed)), triples)
        else:
            design = before
        temperature = max(temperature * COOLING, T_FLOOR)
    return best[1], best[2]
