"""Scenario-level bootstrap primitives: percentile intervals over resampled scenarios.

A leaf module (numpy only), shared by the evaluation reports and the scenario audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["LEVEL", "N_RESAMPLES", "Estimate", "draws", "estimate", "mean_ci"]

N_RESAMPLES = 2000
LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A point value with its percentile interval."""

    value: float
    low: float
    high: float
    n: int  # scenarios

    def __str__(self) -> str:
        if np.isnan(self.value):
            return "-"
        return f"{self.value:.1f} [{self.low:.1f}, {self.high:.1f}]"


def draws(n: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, n) scenario indices drawn with replacement (seeded)."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def estimate(point: float, samples: np.ndarray, n: int) -> Estimate:
    """An ``Estimate`` from a point value and its bootstrap samples (NaN samples dropped)."""
    alpha = (1 - LEVEL) / 2
    samples = samples[~np.isnan(samples)]
    low, high = np.quantile(samples, [alpha, 1 - alpha]) if samples.size else (np.nan, np.nan)
    return Estimate(float(point), float(low), float(high), n)


def mean_ci(
    per_scenario: Sequence[float] | np.ndarray, resamples: int = N_RESAMPLES, seed: int = 0
) -> Estimate:
    """The mean of one score per scenario, with a scenario-level bootstrap CI."""
    values = np.asarray(per_scenario, dtype=np.float64)
    if values.size == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    index = draws(len(values), resamples, seed)
    return estimate(float(values.mean()), values[index].mean(axis=1), len(values))
