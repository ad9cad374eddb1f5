"""The exact prior-only optimum of a scenario bank (docs/domains.md#bank-v3-the-table-first-the-needs-last; issue 33, item 2).

For each scenario the valid need triples of its visible part are re-enumerated from the domain
files alone (``hear2act_env.scenarios.exact``). If the needs were drawn uniformly among them,
every valid triple is equally likely given what an agent sees, and the **Bayes-optimal
prior-only attacker** names the eligible candidate that the most valid triples make ``best``
(ties split evenly). Figures, each a mean over scenarios with a 95% scenario-bootstrap CI:

- **exact top-1, expected**: per scenario the posterior of the attacker's pick, i.e.
  ``best_posterior`` (what the attacker wins on average when the needs are drawn uniformly
  among the valid triples; this is the figure bank v3 is held to);
- **exact top-1, realized**: whether the pick is the shipped ``best`` (1/k when it ties with
  k-1 others and the shipped best is among them);
- **exact need top-3**: the share of the three true need attributes among the three open
  attributes with the largest need share (ties split evenly), realized on the shipped needs
  and expected (the sum of the three largest shares over 3), against chance (3 in the number
  of open attributes);
- **structure solver**: the same count without the pool. Every *split* of every open column is
  a candidate need: any non-empty proper subset of the levels that the requirement-meeting
  candidates show in that column, as the satisfying set (the violators' values do not matter
  to the patterns, so each split is one distinct way to cut the 9 candidates), at any
  priority. Its top-1 and need top-3 are scored on the shipped needs, and its own expected
  top-1 (mean of its largest share) is shown beside.

A scenario whose visible part admits no valid triple (never, for a valid scenario drawn from
the domain files it is audited against) gets the uniform guess over its eligible candidates;
it is counted in ``no_valid``. ``python -m hear2act_env.scenarios.leakage.exact`` prints the
table for the shipped bank with timings.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

from hear2act_env.bootstrap import Estimate, mean_ci
from hear2act_env.errors import ConfigError
from hear2act_env.protocol.scenario import Role, Scenario
from hear2act_env.scenarios.domain import Domain
from hear2act_env.scenarios.exact import (
    PoolNeed,
    ValidTriples,
    VisiblePart,
    true_triple,
    valid_triples,
    visible_part,
)
from hear2act_env.scenarios.leakage.attackers import top1, top_k_hits
from hear2act_env.scenarios.quality import scenario_pool

__all__ = [
    "NEED_EXPECTED",
    "NEED_REALIZED",
    "STRUCT_NEED",
    "STRUCT_OWN",
    "STRUCT_TOP1",
    "TOP1_EXPECTED",
    "TOP1_REALIZED",
    "ExactAudit",
    "ExactFigure",
    "ScenarioExact",
    "exact_audit",
    "exact_table",
    "split_pool",
]


@dataclass(frozen=True)
class ExactFigure:
    """One figure: a mean over scenarios with its CI, and chance (None: no chance level)."""

    label: str
    estimate: Estimate
    chance: float | None


@dataclass(frozen=True)
class ScenarioExact:
    """One scenario's enumeration: valid triples (pool and structure), and whether the shipped
    triple is among the pool's valid ones (None: not recognizable in the pool)."""

    id: str
    count: int
    best_posterior: float
    possible_bests: int
    structure_count: int
    truth_valid: bool | None


@dataclass(frozen=True)
class ExactAudit:
    """The exact prior-only figures of a bank, with the per-scenario counts and timings
    (``seconds``: pool building, exact enumeration, structure enumeration, all for the bank)."""

    bank: str
    n_scenarios: int
    figures: tuple[ExactFigure, ...]
    scenarios: tuple[ScenarioExact, ...]
    seconds: dict[str, float]

    @property
    def mean_count(self) -> float:
        """Mean number of valid (pool) triples per scenario."""
        return float(np.mean([s.count for s in self.scenarios]))

    @property
    def median_count(self) -> float:
        """Median number of valid (pool) triples per scenario."""
        return float(np.median([s.count for s in self.scenarios]))

    @property
    def single_best(self) -> float:
        """Share of scenarios in which every valid triple names the same ``best``."""
        return float(np.mean([s.possible_bests == 1 for s in self.scenarios]))

    @property
    def no_valid(self) -> tuple[str, ...]:
        """Scenarios whose visible part admits no valid triple of the pool."""
        return tuple(s.id for s in self.scenarios if s.count == 0)

    @property
    def truth_missing(self) -> tuple[str, ...]:
        """Scenarios whose shipped triple is not among the valid ones, or not in the pool."""
        return tuple(s.id for s in self.scenarios if not s.truth_valid)

    def figure(self, label: str) -> ExactFigure:
        """The figure called ``label``."""
        return next(f for f in self.figures if f.label == label)


#: The figures' labels, in the order of ``ExactAudit.figures``.
TOP1_EXPECTED = "exact Bayes top-1, expected (mean best_posterior)"
TOP1_REALIZED = "exact Bayes top-1, realized on the shipped needs"
NEED_REALIZED = "exact need top-3, realized on the shipped needs"
NEED_EXPECTED = "exact need top-3, expected"
STRUCT_TOP1 = "structure solver top-1, realized on the shipped needs"
STRUCT_OWN = "structure solver top-1, its own expectation"
STRUCT_NEED = "structure solver need top-3, realized on the shipped needs"
#: Per priority: the same need top-3 for the L1 need alone, the L2 need alone, the L3 need alone
#: (the attacker ranks the open attributes by that priority's share of the valid triples).
LEVEL_EXPECTED = {level: f"exact {level} need top-3, expected" for level in ("L1", "L2", "L3")}
LEVEL_REALIZED = {
    level: f"exact {level} need top-3, realized on the shipped needs"
    for level in ("L1", "L2", "L3")
}


def split_pool(visible: VisiblePart) -> tuple[PoolNeed, ...]:
    """The structure solver's candidate needs: every split of every open column (module
    docstring), with ids ``"attribute:{level|level}"``."""
    values = np.asarray(visible.values)
    req = visible.column(visible.requirement)
    meets = np.isin(values[:, req], visible.requirement_levels)
    out = []
    for key in visible.open_attributes:
        j = visible.column(key)
        texts = [visible.levels[j][v] for v in np.unique(values[meets, j])]
        for size in range(1, len(texts)):
            for subset in combinations(texts, size):
                out.append(PoolNeed(f"{key}:{{{'|'.join(subset)}}}", key, frozenset(subset)))
    return tuple(out)


def exact_audit(
    scenarios: Sequence[Scenario] | None = None,
    *,
    domains: str | Path | None = None,
    pools: Mapping[str, Sequence[PoolNeed]] | None = None,
    seed: int = 0,
    structure: bool = True,
    bank: str | None = None,
) -> ExactAudit:
    """The exact figures of ``scenarios`` (default: the shipped bank) against the need pools of
    the domain files in ``domains`` (default: the shipped ones), or against ``pools`` (domain id
    -> pool needs) when given; ``structure=False`` skips the structure solver; ``seed`` seeds
    the bootstrap."""
    from hear2act_env.scenarios.bank import load_bank

    if scenarios is None:
        scenarios = load_bank()
        bank = bank or "the shipped bank"
    if not scenarios:
        raise ConfigError("exact audit: no scenarios")
    clock = time.perf_counter()
    if pools is not None:
        by_domain = dict(pools)
        missing = sorted({s.domain for s in scenarios} - set(by_domain))
        scenario_pools = [by_domain.get(s.domain, ()) for s in scenarios]
    else:
        loaded = _domains(domains)
        missing = sorted({s.domain for s in scenarios} - set(loaded))
        scenario_pools = [
            scenario_pool(loaded[s.domain], s) if s.domain in loaded else () for s in scenarios
        ]
    if missing:
        raise ConfigError(f"exact audit: no need pool (domain file) for domains {missing}")
    seconds = {"pools": time.perf_counter() - clock}

    visibles = [visible_part(s) for s in scenarios]
    clock = time.perf_counter()
    exact = [valid_triples(v, pool) for v, pool in zip(visibles, scenario_pools)]
    seconds["exact"] = time.perf_counter() - clock
    clock = time.perf_counter()
    struct = [valid_triples(v, split_pool(v)) for v in visibles] if structure else []
    seconds["structure"] = time.perf_counter() - clock

    cols: dict[str, list[float]] = {
        label: []
        for label in (TOP1_EXPECTED, TOP1_REALIZED, NEED_REALIZED, NEED_EXPECTED)
        + tuple(
            x for level in LEVEL_EXPECTED for x in (LEVEL_REALIZED[level], LEVEL_EXPECTED[level])
        )
        + ((STRUCT_TOP1, STRUCT_OWN, STRUCT_NEED) if structure else ())
    }
    top1_chance, need_chance, rows = [], [], []
    for i, (s, v, ex) in enumerate(zip(scenarios, visibles, exact)):
        eligible = _eligible(s)
        best = s.role_index(Role.BEST)
        open_keys = v.open_attributes
        needs = [open_keys.index(n.attribute) for n in s.needs]
        top1_chance.append(1 / len(eligible))
        need_chance.append(3 / len(open_keys))
        cols[TOP1_EXPECTED].append(ex.best_posterior if ex.count else 1 / len(eligible))
        cols[TOP1_REALIZED].append(_top1(ex, eligible, best))
        shares = np.array([ex.need_share[k] for k in open_keys])
        cols[NEED_REALIZED].append(top_k_hits(shares, needs, 3))
        cols[NEED_EXPECTED].append(
            float(np.sort(shares)[::-1][:3].sum() / 3) if ex.count else need_chance[-1]
        )
        for k, level in enumerate(LEVEL_EXPECTED):
            at = np.array([ex.level_share[k][key] for key in open_keys]) if ex.count else None
            if at is None:
                cols[LEVEL_REALIZED[level]].append(need_chance[-1])
                cols[LEVEL_EXPECTED[level]].append(need_chance[-1])
                continue
            cols[LEVEL_REALIZED[level]].append(3 * top_k_hits(at, [needs[k]], 3))
            cols[LEVEL_EXPECTED[level]].append(float(np.sort(at)[::-1][:3].sum()))
        if structure:
            st = struct[i]
            cols[STRUCT_TOP1].append(_top1(st, eligible, best))
            cols[STRUCT_OWN].append(st.best_posterior if st.count else 1 / len(eligible))
            shares = np.array([st.need_share[k] for k in open_keys])
            cols[STRUCT_NEED].append(top_k_hits(shares, needs, 3))
        truth = true_triple(s, scenario_pools[i])
        rows.append(
            ScenarioExact(
                id=s.id,
                count=ex.count,
                best_posterior=ex.best_posterior,
                possible_bests=len(ex.possible_bests),
                structure_count=struct[i].count if structure else 0,
                truth_valid=None if truth is None else truth in set(ex.triples),
            )
        )

    c1, c3 = float(np.mean(top1_chance)), float(np.mean(need_chance))
    chance = {TOP1_EXPECTED: c1, TOP1_REALIZED: c1, STRUCT_TOP1: c1, STRUCT_OWN: c1}
    chance |= {NEED_REALIZED: c3, NEED_EXPECTED: c3, STRUCT_NEED: c3}
    chance |= dict.fromkeys([*LEVEL_EXPECTED.values(), *LEVEL_REALIZED.values()], c3)
    figures = tuple(
        ExactFigure(label, mean_ci(values, seed=seed), chance[label])
        for label, values in cols.items()
    )
    return ExactAudit(
        bank=bank or "scenarios",
        n_scenarios=len(scenarios),
        figures=figures,
        scenarios=tuple(rows),
        seconds=seconds,
    )


def _domains(domains: str | Path | None) -> dict[str, Domain]:
    """Domain id -> domain, from the domain files in ``domains`` (default: the shipped)."""
    from hear2act_env.scenarios.domain import domain_files, load_domain

    files = domain_files(domains)
    if not files:
        raise ConfigError(f"domains: {domains!r} holds no domain files (*.json)")
    return {d.id: d for d in (load_domain(path) for path in files)}


def _eligible(s: Scenario) -> np.ndarray:
    """Shown indices of the requirement-meeting candidates other than the opening."""
    opening = s.role_index(Role.ATTRACTIVE)
    return np.array(
        [i for i, c in enumerate(s.candidates) if i != opening and s.meets_requirement(c)]
    )


def _top1(result: ValidTriples, eligible: np.ndarray, best: int) -> float:
    """The Bayes pick's hit on ``best``: argmax of the posterior over the eligible candidates,
    ties split evenly (all tied, i.e. uniform, when nothing is valid)."""
    posterior = np.asarray(result.posterior)[eligible]
    where = np.flatnonzero(eligible == best)
    return top1(posterior, int(where[0])) if where.size else 0.0


def exact_table(audit: ExactAudit) -> str:
    """``audit`` as a Markdown table, with the counts below it."""
    lines = [
        f"Exact prior-only audit of {audit.bank} ({audit.n_scenarios} scenarios)",
        "",
        "| figure | value [95% CI] | chance |",
        "| --- | --- | --- |",
    ]
    for f in audit.figures:
        e = f.estimate
        chance = "-" if f.chance is None else f"{f.chance:.3f}"
        lines.append(f"| {f.label} | {e.value:.3f} [{e.low:.3f}, {e.high:.3f}] | {chance} |")
    counts = np.array([s.count for s in audit.scenarios])
    lines += [
        "",
        f"Valid triples per scenario: mean {audit.mean_count:.2f}, median "
        f"{audit.median_count:g}, min {counts.min()}, max {counts.max()}; a single possible "
        f"best in {audit.single_best:.1%} of scenarios; max best_posterior "
        f"{max(s.best_posterior for s in audit.scenarios):.3f}.",
    ]
    if any(s.structure_count for s in audit.scenarios):
        struct = np.array([s.structure_count for s in audit.scenarios])
        lines.append(
            f"Structure solver: {struct.mean():.1f} consistent triples per scenario (median "
            f"{np.median(struct):g})."
        )
    lines.append(
        f"No valid triple: {len(audit.no_valid)}; shipped triple not among the valid ones: "
        f"{len(audit.truth_missing)}"
        + (f" ({', '.join(audit.truth_missing[:10])})" if audit.truth_missing else "")
        + "."
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the exact audit of the shipped bank, with timings."""
    parser = argparse.ArgumentParser(
        prog="python -m hear2act_env.scenarios.leakage.exact", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--no-structure", action="store_true", help="skip the structure solver")
    args = parser.parse_args(argv)
    clock = time.perf_counter()
    audit = exact_audit(seed=args.seed, structure=not args.no_structure)
    total = time.perf_counter() - clock
    print(exact_table(audit))
    print()
    print(
        "Timings: "
        + ", ".join(f"{k} {v:.2f} s" for k, v in audit.seconds.items())
        + f"; whole audit (bank loading and bootstrap included) {total:.2f} s."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
