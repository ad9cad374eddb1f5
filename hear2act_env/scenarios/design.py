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

from collections.abc import Sequence
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


@dataclass(frozen=True)
class Slots:
    """What one open attribute can hold: ``kinds`` of the slots it may take ("met" and/or
    "missed"; two only for a crossing pair), the priorities its met need allows, and for a
    two-slot attribute the (met, missed) bit mixes its levels can give an eligible option."""

    kinds: tuple[str, ...]
    met_priorities: frozenset[str] = frozenset({"L1", "L2"})
    mixes: frozenset[tuple[int, int]] = frozenset()
    flexible: bool = False  # a one-slot attribute whose need may be met or missed


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


def design_cost(triples: Sequence[tuple[int, int, int, int]], n_attributes: int) -> float:
    """Lower is better: the largest share of one best, how far the bests are from even over 7,
    and how far the three most used attributes are above an even use of the attributes."""
    if not triples:
        return 10.0
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


def _initial(rng: np.random.Generator, slots: Sequence[Slots]) -> SlotDesign:
    met, missed = [], []
    for s in slots:
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
    ):
        arr[j] = mask
        return False
    return True


def anneal(
    rng: np.random.Generator, slots: Sequence[Slots], best_of: Sequence[int], steps: int = STEPS
) -> tuple[SlotDesign, list[tuple[int, int, int, int]]]:
    """The best design found by simulated annealing from a random start, and its triples."""
    design = _initial(rng, slots)
    triples = design_triples(design, slots, best_of)
    cost = design_cost(triples, len(slots))
    best = (cost, SlotDesign(list(design.met), list(design.missed)), triples)
    temperature = T_START
    for _ in range(steps):
        before = SlotDesign(list(design.met), list(design.missed))
        if not _move(rng, design, slots):
            continue
        new_triples = design_triples(design, slots, best_of)
        new_cost = design_cost(new_triples, len(slots))
        if new_cost <= cost or rng.random() < np.exp((cost - new_cost) / temperature):
            cost, triples = new_cost, new_triples
            if cost < best[0]:
                best = (cost, SlotDesign(list(design.met), list(design.missed)), triples)
        else:
            design = before
        temperature = max(temperature * COOLING, T_FLOOR)
    return best[1], best[2]
