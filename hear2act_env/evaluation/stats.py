"""Paired, scenario-level bootstrap (docs/protocol.md#metrics): 2,000 resamples, 95% percentile CIs.

Records are grouped by scenario; a resample draws scenarios with replacement and recomputes the
metric as sum(numerators) / sum(denominators) over the drawn scenarios' episodes. A paired
difference uses the same draw for both conditions, on the keys present (without error) in both.
Pooled figures weight models (agents) equally: the statistic is the mean over models of each
model's value, every model resampled with the same scenario draw.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from hear2act_env.bootstrap import N_RESAMPLES, Estimate
from hear2act_env.bootstrap import draws as _draws
from hear2act_env.bootstrap import estimate as _estimate
from hear2act_env.evaluation.metrics import Metric
from hear2act_env.evaluation.records import EpisodeRecord


def _by_scenario(
    records: Sequence[EpisodeRecord], metric: Metric, scenarios: list[str]
) -> np.ndarray:
    """(n_scenarios, 2) sums of numerators and denominators."""
    index = {s: i for i, s in enumerate(scenarios)}
    out = np.zeros((len(scenarios), 2))
    num, den = metric.parts(records)
    for r, a, b in zip(records, num, den):
        out[index[r.key.scenario]] += (a, b)
    return out


def _ratio(sums: np.ndarray, draws: np.ndarray | None, scale: float) -> np.ndarray | float:
    if draws is None:
        den = sums[:, 1].sum()
        return scale * sums[:, 0].sum() / den if den else np.nan
    num = sums[draws, 0].sum(axis=1)
    den = sums[draws, 1].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return scale * num / den


#: The estimate of a cell with no error-free episode.
_EMPTY = Estimate(float("nan"), float("nan"), float("nan"), 0)


def _valid(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    return [r for r in records if r.error is None]


def paired_keys(a: Sequence[EpisodeRecord], b: Sequence[EpisodeRecord]) -> int:
    """How many error-free episodes the two cells share (agent, realization, scenario, run)."""
    return len({_match_key(r) for r in _valid(a)} & {_match_key(r) for r in _valid(b)})


def bootstrap(
    records: Sequence[EpisodeRecord], metric: Metric, resamples: int = N_RESAMPLES, seed: int = 0
) -> Estimate:
    """The metric over ``records`` with a scenario-level bootstrap CI."""
    records = _valid(records)
    if not records:
        return _EMPTY
    scenarios = sorted({r.key.scenario for r in records})
    sums = _by_scenario(records, metric, scenarios)
    draws = _draws(len(scenarios), resamples, seed)
    return _estimate(
        _ratio(sums, None, metric.scale), _ratio(sums, draws, metric.scale), len(scenarios)
    )


def _match_key(r: EpisodeRecord) -> tuple:
    return (r.key.agent, r.key.realization, r.key.scenario, r.key.run)


def paired_difference(
    a: Sequence[EpisodeRecord],
    b: Sequence[EpisodeRecord],
    metric: Metric,
    resamples: int = N_RESAMPLES,
    seed: int = 0,
) -> Estimate:
    """metric(b) - metric(a) on matched keys (agent, realization, scenario, run), with a paired CI."""
    a_by = {_match_key(r): r for r in _valid(a)}
    b_by = {_match_key(r): r for r in _valid(b)}
    common = sorted(set(a_by) & set(b_by))
    if not common:
        raise ValueError(
            "paired_difference: the two conditions share no error-free episode (agent, "
            "realization, scenario, run); nothing to pair"
        )
    ra = [a_by[k] for k in common]
    rb = [b_by[k] for k in common]
    scenarios = sorted({k[2] for k in common})
    sa, sb = _by_scenario(ra, metric, scenarios), _by_scenario(rb, metric, scenarios)
    draws = _draws(len(scenarios), resamples, seed)
    point = _ratio(sb, None, metric.scale) - _ratio(sa, None, metric.scale)
    samples = _ratio(sb, draws, metric.scale) - _ratio(sa, draws, metric.scale)
    return _estimate(point, samples, len(scenarios))


def pooled(
    records: Sequence[EpisodeRecord], metric: Metric, resamples: int = N_RESAMPLES, seed: int = 0
) -> Estimate:
    """Mean over agents of each agent's metric (equal weights), scenario-level bootstrap."""
    records = _valid(records)
    if not records:
        return _EMPTY
    scenarios = sorted({r.key.scenario for r in records})
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        groups[r.key.agent].append(r)
    draws = _draws(len(scenarios), resamples, seed)
    sums = [_by_scenario(g, metric, scenarios) for g in groups.values()]
    with warnings.catch_warnings():  # a metric undefined for every agent stays NaN quietly
        warnings.simplefilter("ignore", RuntimeWarning)
        point = np.nanmean([_ratio(s, None, metric.scale) for s in sums])
        samples = np.nanmean(np.stack([_ratio(s, draws, metric.scale) for s in sums]), axis=0)
    return _estimate(float(point), samples, len(scenarios))
