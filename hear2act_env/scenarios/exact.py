"""The exact prior-only attacker: every need triple a scenario's visible part admits (docs/domains.md#bank-v3-the-table-first-the-needs-last).

Before its first question an agent sees the *visible part* of a scenario: the shown attributes
and their level texts, the 11 candidates' values, the visible requirement, the favored attribute
(and its direction) and the opening recommendation. Given the domain's need pool, this module
lists every **valid need triple** for that visible part:

- an ordered (L1, L2, L3) of three pool needs on three distinct shown attributes, none of them
  the requirement's or the favored attribute ("open" attributes), each need allowed at its
  priority (a pool need may be restricted to some priorities; by default every priority);
- under which DESIGN 3.2 holds exactly. The requirement-meeting candidates other than the
  opening are the 8 *eligible* ones. The triple is valid when the opening has pattern 110; the
  eligible candidates' patterns are 111 twice and 000, 001, 010, 011, 100, 101 once each; and
  the two 111 candidates differ on the favored attribute (the one ahead is ``best``). The rules
  that do not depend on the needs (11 candidates, exactly 2 break the requirement, the opening
  meets it and is strictly first on the favored attribute among those that do) are checked
  once: a visible part that breaks them admits no triple.

A pool need applies to a scenario by the *text* of its satisfying levels: a scenario may show
only some of an attribute's levels (in their domain order), and the need is satisfied by a
shown level exactly when that level's text is one of the need's satisfying level texts.

Counting: two pool needs are distinct triple members even when they split the shown levels
the same way (their words differ), since the needs are drawn among the pool's needs. When the
needs are drawn uniformly among the valid triples (bank v3), every valid triple is equally
likely given what an agent sees, so the shares below are exact posteriors:
``posterior[i]`` is the share of valid triples naming candidate ``i`` best, ``best_posterior``
its maximum (the success of the best prior-only guess), and ``need_share[a]`` the share of
valid triples putting a need on attribute ``a``. Swapping L1 and L2 maps the eligible
patterns and the opening's 110 onto themselves, so a valid (a, b, c) has a valid (b, a, c) with
the same ``best``: without priority restrictions counts are even.

The search is vectorized: each pool need becomes a bit mask over the 8 eligible candidates and
an opening bit; the pattern multiset above holds exactly when the masks have sizes 4, 4, 5
(L1, L2, L3), pairwise overlaps 2, 3, 3 (L1&L2, L1&L3, L2&L3) and triple overlap 2 (the counts
of each pattern follow from these by inclusion-exclusion), with the opening bits 1, 1, 0.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from hear2act_env.protocol.scenario import NEED_LEVELS, Better, Role, Scenario
from hear2act_env.scenarios.domain import Domain

__all__ = [
    "N_CANDIDATES",
    "N_ELIGIBLE",
    "PoolNeed",
    "ValidTriples",
    "VisiblePart",
    "need_pool",
    "scenario_triples",
    "true_triple",
    "valid_triples",
    "visible_part",
]

N_CANDIDATES = 11
N_ELIGIBLE = 8
ALL_PRIORITIES: frozenset[str] = frozenset(NEED_LEVELS)
#: Needed sizes of the eligible masks: |L1|, |L2|, |L3|, |L1&L2|, |L1&L3|, |L2&L3|, |L1&L2&L3|.
_SIZES = (4, 4, 5, 2, 3, 3, 2)
#: The opening's bits (pattern 110).
_OPENING_BITS = (1, 1, 0)
_POPCOUNT = np.array([bin(i).count("1") for i in range(1 << N_ELIGIBLE)], dtype=np.int8)


@dataclass(frozen=True)
class PoolNeed:
    """One need of a domain's pool: ``id`` ("attribute:key"), its attribute, the texts of the
    levels that satisfy it, the priorities (of "L1", "L2", "L3") it may take, and its statement
    (used only to recognize a scenario's true need, ``true_triple``)."""

    id: str
    attribute: str
    satisfied: frozenset[str]
    priorities: frozenset[str] = ALL_PRIORITIES
    statement: str = ""
    #: bank v4: pool need ids this need never shares a triple with, and attribute keys it is
    #: never drawn beside as an open attribute (the domain file's ``conflicts``, made symmetric)
    conflicts: frozenset[str] = frozenset()


@dataclass(frozen=True)
class VisiblePart:
    """What an agent sees of a scenario before its first question, as far as the enumeration
    needs it. ``values[i][j]`` is candidate ``i``'s level index on attribute ``j`` (shown order);
    ``levels[j]`` are attribute ``j``'s shown level texts; ``opening`` is the shown index of the
    opening recommendation."""

    attributes: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    values: tuple[tuple[int, ...], ...]
    requirement: str
    requirement_levels: tuple[int, ...]
    favored: str
    better: Better
    opening: int

    def column(self, key: str) -> int:
        """Shown position of attribute ``key``."""
        return self.attributes.index(key)

    @property
    def open_attributes(self) -> tuple[str, ...]:
        """The attributes a need may sit on: all but the requirement's and the favored one."""
        return tuple(a for a in self.attributes if a not in (self.requirement, self.favored))


@dataclass(frozen=True)
class ValidTriples:
    """Every valid need triple of one visible part, and the exact posteriors they give.

    ``triples[t]`` is (L1, L2, L3) pool need ids, ``bests[t]`` the shown index of the candidate
    that triple makes ``best``. ``posterior`` (one per candidate, shown order) sums to 1 when
    ``count`` > 0 and is all zeros otherwise (then ``best_posterior`` is 0 too). ``need_share``
    maps every shown attribute key to the share of valid triples with a need on it (the shares
    sum to 3 when ``count`` > 0).
    """

    triples: tuple[tuple[str, str, str], ...]
    bests: tuple[int, ...]
    posterior: tuple[float, ...]
    need_share: dict[str, float] = field(hash=False)
    #: per priority (L1, L2, L3): shown attribute key -> share of valid triples with that
    #: priority's need on it (each sums to 1 when ``count`` > 0)
    level_share: tuple[dict[str, float], ...] = field(default=(), hash=False)

    @property
    def count(self) -> int:
        """Number of valid triples."""
        return len(self.triples)

    @property
    def best_posterior(self) -> float:
        """The largest share of valid triples naming one candidate ``best``."""
        return max(self.posterior, default=0.0)

    @property
    def possible_bests(self) -> tuple[int, ...]:
        """Shown indices of the candidates some valid triple makes ``best``."""
        return tuple(i for i, p in enumerate(self.posterior) if p > 0)

    def attributes_of(self, t: int) -> tuple[str, str, str]:
        """The (L1, L2, L3) attribute keys of triple ``t``."""
        return tuple(n.split(":", 1)[0] for n in self.triples[t])  # type: ignore[return-value]


def visible_part(scenario: Scenario) -> VisiblePart:
    """The visible part of ``scenario``. It reads the attributes, candidate values, requirement,
    favored attribute and which candidate is the opening (the only role an agent is shown);
    never the needs or any other role."""
    return VisiblePart(
        attributes=tuple(a.key for a in scenario.attributes),
        levels=tuple(a.levels for a in scenario.attributes),
        values=tuple(c.values for c in scenario.candidates),
        requirement=scenario.requirement.attribute,
        requirement_levels=tuple(scenario.requirement.satisfied_by),
        favored=scenario.favored.attribute,
        better=scenario.favored.better,
        opening=scenario.role_index(Role.ATTRACTIVE),
    )


def need_pool(
    domain: Domain, priorities: Mapping[str, Collection[str]] | None = None
) -> tuple[PoolNeed, ...]:
    """The need pool of ``domain``, one ``PoolNeed`` per need of every attribute.

    A need's allowed priorities come from ``priorities`` (need id -> subset of "L1", "L2",
    "L3") when it names the need, else from a ``priorities`` field of the domain file's need
    if the domain model has one, else all three.
    """
    priorities = priorities or {}
    conflicts = _conflicts(domain)
    out = []
    for attribute in domain.attributes:
        for need in attribute.needs:
            nid = f"{attribute.key}:{need.key}"
            allowed = priorities.get(nid, getattr(need, "priorities", None))
            out.append(
                PoolNeed(
                    id=nid,
                    attribute=attribute.key,
                    satisfied=frozenset(attribute.levels[i] for i in need.satisfied_by),
                    priorities=_priorities(allowed, nid),
                    statement=need.statement,
                    conflicts=frozenset(conflicts.get(nid, ())),
                )
            )
    return tuple(out)


def _conflicts(domain: Domain) -> dict[str, set[str]]:
    """Need id -> the need ids and attribute keys it conflicts with; a need pair both ways."""
    out: dict[str, set[str]] = {}
    for attribute in domain.attributes:
        for need in attribute.needs:
            nid = f"{attribute.key}:{need.key}"
            for ref in getattr(need, "conflicts", ()):
                out.setdefault(nid, set()).add(ref)
                if ":" in ref:
                    out.setdefault(ref, set()).add(nid)
    return out


def _priorities(allowed: Iterable[str] | None, nid: str) -> frozenset[str]:
    if allowed is None:
        return ALL_PRIORITIES
    out = frozenset(allowed)
    if not out <= ALL_PRIORITIES:
        raise ValueError(f"need {nid}: priorities {sorted(out)} not among {list(NEED_LEVELS)}")
    return out


def valid_triples(visible: VisiblePart, pool: Sequence[PoolNeed]) -> ValidTriples:
    """Every valid (L1, L2, L3) triple of ``pool`` needs for ``visible`` (module docstring).

    Triples come in a fixed order: by the L1 need's position in ``pool``, then L2's, then L3's.
    Needs on attributes that are not shown, or not open, are ignored.
    """
    values = np.asarray(visible.values, dtype=np.int64).reshape(len(visible.values), -1)
    n_candidates = values.shape[0]
    zeros = dict.fromkeys(visible.attributes, 0.0)
    empty = ValidTriples((), (), (0.0,) * n_candidates, zeros, (zeros, zeros, zeros))
    eligible = _eligible(visible, values)
    if eligible is None:
        return empty
    score = _favored_scores(visible, values)
    best_of = best_lookup(eligible, score[eligible])

    # one row per usable pool need: its column, eligible mask and opening bit
    open_cols = {visible.column(a) for a in visible.open_attributes}
    rows: list[int] = []
    cols: list[int] = []
    sats: list[np.ndarray] = []
    open_keys = set(visible.open_attributes)
    for k, need in enumerate(pool):
        if need.attribute not in visible.attributes:
            continue
        col = visible.column(need.attribute)
        if col not in open_cols or need.conflicts & open_keys:
            continue
        rows.append(k)
        cols.append(col)
        sats.append(np.array([text in need.satisfied for text in visible.levels[col]], bool))
    if not rows:
        return empty
    col_arr = np.array(cols)
    width = max(len(s) for s in sats)
    sat = np.zeros((len(rows), width), bool)
    for r, s in enumerate(sats):
        sat[r, : len(s)] = s
    bits = sat[np.arange(len(rows))[:, None], values[:, col_arr].T]  # (needs, candidates)
    opening = bits[:, visible.opening].astype(np.int8)
    mask = bits[:, eligible].astype(np.int64) @ (1 << np.arange(N_ELIGIBLE))
    size = _POPCOUNT[mask]
    allowed = np.array([[lv in pool[k].priorities for lv in NEED_LEVELS] for k in rows], bool)

    pick = [
        np.flatnonzero(allowed[:, p] & (opening == _OPENING_BITS[p]) & (size == _SIZES[p]))
        for p in range(3)
    ]
    i1, i2, i3 = _join(pick, mask, col_arr, best_of)
    clash = _clash_matrix(pool, rows)
    if clash is not None:
        keep = ~(clash[i1, i2] | clash[i1, i3] | clash[i2, i3])
        i1, i2, i3 = i1[keep], i2[keep], i3[keep]
    if not i1.size:
        return empty
    triple_mask = mask[i1] & mask[i2] & mask[i3]
    bests = best_of[triple_mask]
    ids = [need.id for need in pool]
    row = np.asarray(rows)
    triples = tuple(
        (ids[a], ids[b], ids[c]) for a, b, c in zip(row[i1], row[i2], row[i3], strict=True)
    )
    count = len(triples)
    posterior = np.bincount(bests, minlength=n_candidates) / count
    hits = np.zeros(len(visible.attributes))
    levels = []
    for i in (i1, i2, i3):
        at_level = np.bincount(col_arr[i], minlength=len(visible.attributes))
        hits += at_level
        levels.append({a: float(at_level[j] / count) for j, a in enumerate(visible.attributes)})
    share = {a: float(hits[j] / count) for j, a in enumerate(visible.attributes)}
    return ValidTriples(
        triples=triples,
        bests=tuple(int(b) for b in bests),
        posterior=tuple(float(p) for p in posterior),
        need_share=share,
        level_share=tuple(levels),
    )


def _clash_matrix(pool: Sequence[PoolNeed], rows: Sequence[int]) -> np.ndarray | None:
    """``clash[a, b]``: usable rows ``a`` and ``b`` are needs that conflict (None: no pair)."""
    index = {pool[k].id: r for r, k in enumerate(rows)}
    pairs = [
        (r, index[ref]) for r, k in enumerate(rows) for ref in pool[k].conflicts if ref in index
    ]
    if not pairs:
        return None
    clash = np.zeros((len(rows), len(rows)), bool)
    for a, b in pairs:
        clash[a, b] = clash[b, a] = True
    return clash


def _eligible(visible: VisiblePart, values: np.ndarray) -> np.ndarray | None:
    """Shown indices of the 8 eligible candidates, or None when the need-free rules of 3.2 fail
    (11 candidates, 2 violators, the opening meeting the requirement and strictly first on the
    favored attribute among the candidates that do)."""
    if values.shape[0] != N_CANDIDATES:
        return None
    meets = np.isin(values[:, visible.column(visible.requirement)], visible.requirement_levels)
    if not meets[visible.opening] or meets.sum() != N_ELIGIBLE + 1:
        return None
    eligible = np.flatnonzero(meets & (np.arange(N_CANDIDATES) != visible.opening))
    score = _favored_scores(visible, values)
    if (score[eligible] >= score[visible.opening]).any():
        return None
    return eligible


def _favored_scores(visible: VisiblePart, values: np.ndarray) -> np.ndarray:
    level = values[:, visible.column(visible.favored)]
    return level if visible.better == "higher" else -level


def best_lookup(eligible: np.ndarray, score: np.ndarray) -> np.ndarray:
    """For each 8-bit mask with two eligible candidates: the shown index of the one ahead on the
    favored attribute (-1 when they tie, or the mask does not have two)."""
    out = np.full(1 << N_ELIGIBLE, -1, dtype=np.int64)
    for a in range(N_ELIGIBLE):
        for b in range(a + 1, N_ELIGIBLE):
            if score[a] != score[b]:
                out[(1 << a) | (1 << b)] = eligible[a] if score[a] > score[b] else eligible[b]
    return out


def _join(
    pick: list[np.ndarray], mask: np.ndarray, col: np.ndarray, best_of: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row indices (L1, L2, L3) of the valid triples, from the per-priority candidate rows."""
    p1, p2, p3 = pick
    a, b = np.meshgrid(p1, p2, indexing="ij")
    a, b = a.ravel(), b.ravel()
    keep = (col[a] != col[b]) & (_POPCOUNT[mask[a] & mask[b]] == _SIZES[3])
    a, b = a[keep], b[keep]
    ab = mask[a] & mask[b]
    ok = (
        (col[a][:, None] != col[p3][None, :])
        & (col[b][:, None] != col[p3][None, :])
        & (_POPCOUNT[mask[a][:, None] & mask[p3][None, :]] == _SIZES[4])
        & (_POPCOUNT[mask[b][:, None] & mask[p3][None, :]] == _SIZES[5])
    )
    triple = ab[:, None] & mask[p3][None, :]
    ok &= (_POPCOUNT[triple] == _SIZES[6]) & (best_of[triple] >= 0)
    i, k = np.nonzero(ok)
    return a[i], b[i], p3[k]


def scenario_triples(scenario: Scenario, pool: Domain | Sequence[PoolNeed]) -> ValidTriples:
    """``valid_triples`` of ``scenario``'s visible part, with ``pool`` a domain (its whole need
    pool, every priority allowed unless its file says otherwise) or a list of pool needs."""
    needs = need_pool(pool) if isinstance(pool, Domain) else pool
    return valid_triples(visible_part(scenario), needs)


def true_triple(scenario: Scenario, pool: Sequence[PoolNeed]) -> tuple[str, str, str] | None:
    """The pool need ids of ``scenario``'s hidden needs (for checks and audits, never for an
    attacker): on the need's attribute, the pool need with the same statement, else the one
    whose satisfying level texts split the shown levels the same way. None when some need has
    no such pool need, or several and no statement to tell them apart."""
    out = []
    for need in scenario.needs:
        attribute = scenario.attributes[scenario.attribute_index(need.attribute)]
        same = [p for p in pool if p.attribute == need.attribute]
        found = [p.id for p in same if p.statement and p.statement == need.statement]
        if not found:
            shown = set(attribute.levels)
            texts = {attribute.levels[i] for i in need.satisfied_by}
            found = [p.id for p in same if p.satisfied & shown == texts]
        if len(found) != 1:
            return None
        out.append(found[0])
    return tuple(out)  # type: ignore[return-value]
