"""Generic visible features: per eligible option (for best-option attackers) and per attribute
(for need-attribute detection). Generic means they work in any domain: counts of shared values,
how common a value is, ranks, positions, lengths; no attribute names."""

from __future__ import annotations

import numpy as np

from hear2act_env.scenarios.leakage.view import ScenarioView

__all__ = ["COLUMN_FEATURES", "OPTION_FEATURES", "column_features", "option_features"]

#: Per eligible option; heuristics pick the eligible option with the most (or fewest) of each.
OPTION_FEATURES: tuple[str, ...] = (
    "shared_with_opening",
    "shared_with_violators",
    "shared_with_all",
    "shared_with_eligible",
    "modal_values",
    "unique_values",
    "value_commonness",
    "favored_rank",
    "position",
    "description_length",
    "desirable_values",
    "desirability",
    "level_index",
    "shared_with_last_on_favored",
    "shared_with_closest_ahead",
)

#: Per open attribute (neither the requirement's nor the favored one).
COLUMN_FEATURES: tuple[str, ...] = (
    "distinct_values",
    "distinct_eligible_values",
    "top_share",
    "entropy",
    "opening_value_shared",
    "violator_values_shared",
    "eligible_agree_with_opening",
    "levels",
    "unused_levels",
    "desirability_spread",
)


def option_features(view: ScenarioView) -> np.ndarray:
    """(n_eligible, len(OPTION_FEATURES)) raw features of the eligible options."""
    values, cols = view.values, view.open_columns
    sub = values[:, cols]
    n = len(values)
    same = sub[:, None, :] == sub[None, :, :]  # (n, n, cols)
    np.einsum("iic->ic", same)[:] = False  # an option does not share with itself
    elig = view.eligible
    in_elig = np.zeros(n, bool)
    in_elig[elig] = True
    counts_all = same.sum(axis=1)  # (n, cols): other options with the same value
    counts_elig = same[:, in_elig, :].sum(axis=1)
    rank = view.favored_rank[elig]
    last = int(elig[np.flatnonzero(rank == rank.max())[-1]])  # lowest on the favored attribute
    rows = []
    for i in elig:
        modal = sum(
            counts_elig[i, c] + in_elig[i] >= np.bincount(sub[elig, c]).max()
            for c in range(len(cols))
        )
        desir = view.desirability[i, cols]
        col_mean = view.desirability[:, cols].mean(axis=0)
        rows.append(
            [
                same[i, view.opening].sum(),
                same[i, view.violators].sum(),
                counts_all[i].sum(),
                counts_elig[i].sum(),
                modal,
                (counts_all[i] == 0).sum(),
                np.log1p(counts_all[i]).sum(),
                view.favored_rank[i],
                i,
                view.description_length[i],
                (desir > col_mean + 1e-9).sum(),
                desir.sum(),
                (values[i, cols] / np.maximum(view.n_levels[cols] - 1, 1)).sum(),
                same[i, last].sum() if i != last else -1.0,
                _closest_ahead(i, elig, same, view.favored_rank),
            ]
        )
    return np.asarray(rows, dtype=np.float64)


def _closest_ahead(i: int, elig: np.ndarray, same: np.ndarray, rank: np.ndarray) -> float:
    """Values ``i`` shares with its most alike eligible option that it is ahead of on the favored
    attribute (the "twin" attack: ``best`` and ``safe`` meet the same needs, and ``best`` is
    ahead); -1 when ``i`` is ahead of none."""
    behind = [j for j in elig if j != i and rank[j] > rank[i]]
    return float(max(same[i, j].sum() for j in behind)) if behind else -1.0


def column_features(view: ScenarioView) -> np.ndarray:
    """(n_open_columns, len(COLUMN_FEATURES)) raw features of the open attributes."""
    rows = []
    elig = view.eligible
    for c in view.open_columns:
        col = view.values[:, c]
        counts = np.bincount(col, minlength=view.n_levels[c])
        p = counts[counts > 0] / counts.sum()
        opening = col[view.opening]
        others = np.delete(col, view.opening)
        rows.append(
            [
                (counts > 0).sum(),
                len(set(col[elig].tolist())),
                counts.max() / counts.sum(),
                -(p * np.log(p)).sum(),
                (others == opening).sum(),
                sum((np.delete(col, v) == col[v]).sum() for v in view.violators),
                (col[elig] == opening).sum(),
                view.n_levels[c],
                (counts == 0).sum(),
                view.desirability[:, c].std(),
            ]
        )
    return np.asarray(rows, dtype=np.float64)
