"""pass^k and pass@k over repeated runs of each scenario (docs/protocol.md#passk-and-passk).

For a cell (agent, realization, condition) whose scenario ``s`` has ``n`` finished runs with
``c`` successes, the unbiased estimators over the C(n, k) subsets of k of those runs are

- pass^k (all k succeed): C(c, k) / C(n, k)
- pass@k (at least one of k succeeds): 1 - C(n - c, k) / C(n, k)

and the cell's figure is their mean over scenarios (in percent), with a 95% CI from the
scenario-level bootstrap of ``hear2act_env.bootstrap.mean_ci`` (2,000 resamples, seed 0).
Errored episodes are left out as in every other metric: a scenario counts only its finished
runs, and a scenario with fewer than k finished runs is left out of pass^k and pass@k for that
k (``left_out`` counts them). Without errors every scenario has n = runs, so pass^1 = pass@1 =
Success.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb

from hear2act_env.bootstrap import N_RESAMPLES, Estimate, mean_ci
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.records import EpisodeRecord

__all__ = ["PassK", "pass_all", "pass_any", "pass_k", "pass_k_curve", "runs_of", "tally"]


@dataclass(frozen=True)
class PassK:
    """pass^k and pass@k (percent, 95% CI) of one cell for one k. ``scenarios``: those with at
    least k finished runs (the estimates' ``n``); ``left_out``: those with fewer."""

    k: int
    pass_all: Estimate
    pass_any: Estimate
    scenarios: int
    left_out: int


def _check(n: int, c: int, k: int) -> None:
    if not 1 <= k <= n:
        raise ConfigError(f"k: got {k}, expected 1 <= k <= n = {n} (finished runs)")
    if not 0 <= c <= n:
        raise ConfigError(f"c: got {c}, expected 0 <= c <= n = {n} (successes among the runs)")


def pass_all(n: int, c: int, k: int) -> float:
    """pass^k of one scenario with ``c`` successes in ``n`` runs: C(c, k) / C(n, k)."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def pass_any(n: int, c: int, k: int) -> float:
    """pass@k of one scenario with ``c`` successes in ``n`` runs: 1 - C(n - c, k) / C(n, k)."""
    _check(n, c, k)
    return 1 - comb(n - c, k) / comb(n, k)


def tally(records: Sequence[EpisodeRecord]) -> dict[str, tuple[int, int]]:
    """Per scenario (first-seen order): finished runs and successes among them. A scenario
    whose every run errored is (0, 0)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in records:
        counts = out[r.key.scenario]
        if r.error is None:
            counts[0] += 1
            counts[1] += bool(r.success)
    return {s: (n, c) for s, (n, c) in out.items()}


def runs_of(records: Sequence[EpisodeRecord]) -> int:
    """How many runs the cell played per scenario: its distinct run indices, errored included."""
    return len({r.key.run for r in records})


def pass_k(
    records: Sequence[EpisodeRecord], k: int, resamples: int = N_RESAMPLES, seed: int = 0
) -> PassK:
    """pass^k and pass@k of one cell's records, each with a scenario-bootstrap CI."""
    if k < 1:
        raise ConfigError(f"k: got {k}, expected >= 1")
    tallied = list(tally(records).values())
    counts = [(n, c) for n, c in tallied if n >= k]
    left_out = len(tallied) - len(counts)
    every = [100 * pass_all(n, c, k) for n, c in counts]
    some = [100 * pass_any(n, c, k) for n, c in counts]
    return PassK(
        k, mean_ci(every, resamples, seed), mean_ci(some, resamples, seed), len(counts), left_out
    )


def pass_k_curve(
    records: Sequence[EpisodeRecord], resamples: int = N_RESAMPLES, seed: int = 0
) -> list[PassK]:
    """``pass_k`` for k = 1 .. the cell's runs."""
    return [pass_k(records, k, resamples, seed) for k in range(1, runs_of(records) + 1)]
