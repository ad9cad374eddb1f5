"""Prior-only attackers: guess ``best`` (or the need attributes) from what is visible before any
question. Each returns per-scenario scores in [0, 1] (expected hits; ties split evenly)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hear2act_env.scenarios.leakage.view import ScenarioView, Truth

__all__ = [
    "ConditionalLogit",
    "cross_validated_scores",
    "eligible_target",
    "heuristic_scores",
    "need_targets",
    "top1",
    "top_k_hits",
]


def top1(scores: np.ndarray, target: int) -> float:
    """Expected top-1 hit of ``argmax(scores)`` with ties broken uniformly at random."""
    top = np.flatnonzero(np.isclose(scores, scores.max()))
    return float(target in top) / len(top)


def top_k_hits(scores: np.ndarray, targets: Sequence[int], k: int) -> float:
    """Expected share of the ``k`` highest-scoring items that are in ``targets`` (ties split)."""
    order = np.sort(scores)[::-1]
    cut = order[k - 1]
    above = scores > cut + 1e-12
    tied = np.isclose(scores, cut)
    take_tied = k - above.sum()
    hits = sum(above[t] for t in targets) + take_tied * sum(tied[t] for t in targets) / tied.sum()
    return float(hits) / k


def heuristic_scores(
    features: Sequence[np.ndarray], truths: Sequence[int], column: int, sign: float
) -> np.ndarray:
    """Per scenario: pick the eligible option with the highest ``sign * feature[column]``."""
    return np.array([top1(sign * f[:, column], t) for f, t in zip(features, truths)])


class ConditionalLogit:
    """A linear scorer over per-item features, trained so that the softmax over a scenario's
    items puts its mass on the targets (multinomial logit with L2, Adam on the full batch).

    Features are standardized over the training set and also taken relative to the
    scenario's mean; ``quadratic`` adds pairwise products of the relative features (a stronger
    attacker). Scenarios may have different item counts (padded and masked).
    """

    def __init__(self, l2: float = 1e-2, steps: int = 400, lr: float = 0.05, quadratic=False):
        self.l2, self.steps, self.lr, self.quadratic = l2, steps, lr, quadratic

    def _expand(self, x: np.ndarray) -> np.ndarray:
        z = (x - self.mean) / self.scale
        within = z - z.mean(axis=0, keepdims=True)
        parts = [z, within]
        if self.quadratic:
            iu = np.triu_indices(z.shape[1])
            parts.append((within[:, :, None] * within[:, None, :])[:, iu[0], iu[1]])
        return np.concatenate(parts, axis=1)

    def fit(
        self, features: Sequence[np.ndarray], targets: Sequence[int | Sequence[int]]
    ) -> ConditionalLogit:
        stacked = np.concatenate(features)
        self.mean = stacked.mean(axis=0)
        self.scale = stacked.std(axis=0) + 1e-9
        xs = [self._expand(f) for f in features]
        n, k, d = len(xs), max(len(x) for x in xs), xs[0].shape[1]
        x = np.zeros((n, k, d))
        mask = np.zeros((n, k), bool)
        y = np.zeros((n, k))
        for i, (xi, t) in enumerate(zip(xs, targets)):
            x[i, : len(xi)], mask[i, : len(xi)] = xi, True
            for j in np.atleast_1d(t):
                y[i, j] += 1.0
        w, m, v = np.zeros(d), np.zeros(d), np.zeros(d)
        for step in range(1, self.steps + 1):
            s = np.where(mask, x @ w, -np.inf)
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            expected = np.einsum("nk,nkd->nd", p * y.sum(axis=1, keepdims=True), x)
            grad = (np.einsum("nk,nkd->nd", y, x) - expected).mean(axis=0) - self.l2 * w
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad**2
            w = w + self.lr * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
        self.w = w
        return self

    def scores(self, x: np.ndarray) -> np.ndarray:
        return self._expand(x) @ self.w


def cross_validated_scores(
    features: Sequence[np.ndarray],
    targets: Sequence[int | Sequence[int]],
    folds: int,
    seed: int,
    **kwargs: object,
) -> list[np.ndarray]:
    """Out-of-fold score vectors per scenario (random folds, seeded)."""
    n = len(features)
    fold_of = np.random.default_rng(seed).permutation(n) % folds
    scores: list[np.ndarray] = [np.zeros(0)] * n
    for k in range(folds):
        train = np.flatnonzero(fold_of != k)
        model = ConditionalLogit(**kwargs).fit(  # type: ignore[arg-type]
            [features[i] for i in train], [targets[i] for i in train]
        )
        for i in np.flatnonzero(fold_of == k):
            scores[i] = model.scores(features[i])
    return scores


def eligible_target(view: ScenarioView, truth: Truth) -> int:
    """Index of ``best`` within ``view.eligible``."""
    return int(np.flatnonzero(view.eligible == truth.best)[0])


def need_targets(view: ScenarioView, truth: Truth) -> list[int]:
    """Indices within ``view.open_columns`` of the three need attributes."""
    return [int(np.flatnonzero(view.open_columns == c)[0]) for c in truth.need_columns]
