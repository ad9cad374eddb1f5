"""The reference perceiver: resolved vs unresolved from prosodic features.

``LogisticModel`` is an L2-regularized logistic regression on standardized features, fit by
Newton's method (IRLS) in numpy. ``evaluate_perception`` renders labelled utterances through a
renderer and an ``AudioCache``, fits on the train pairs and reports test accuracy overall, per
persona and per delivery label (the paper's perception check: humans reach 0.92).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hear2act_env import jsonsafe
from hear2act_env.errors import ConfigError
from hear2act_env.protocol.delivery import STATE_OF_DELIVERY
from hear2act_env.safewrite import write_atomic
from hear2act_env.speech.cache import AudioCache, speak
from hear2act_env.speech.features import FEATURE_NAMES, prosodic_features
from hear2act_env.speech.utterance import Renderer, Utterance

__all__ = [
    "LogisticModel",
    "PerceptionReport",
    "evaluate_perception",
    "features_of",
    "is_resolved",
]


def is_resolved(utt: Utterance) -> bool:
    """Ground truth of an utterance: whether its delivery label belongs to the resolved state."""
    return STATE_OF_DELIVERY[utt.delivery].resolved


@dataclass
class LogisticModel:
    """A standardized logistic-regression classifier: ``P(resolved | features)``."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    feature_names: tuple[str, ...] = FEATURE_NAMES
    l2: float = 1.0

    @classmethod
    def fit(
        cls,
        x: np.ndarray,
        y: np.ndarray,
        *,
        l2: float = 1.0,
        max_iter: int = 100,
        tol: float = 1e-10,
        feature_names: Sequence[str] = FEATURE_NAMES,
    ) -> LogisticModel:
        """Fit by Newton's method; ``l2`` penalizes ``0.5 * l2 * |w|^2`` (not the bias)."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if x.ndim != 2 or len(x) != len(y) or len(y) == 0:
            raise ConfigError(f"fit needs a (n, d) matrix and n labels; got {x.shape}, {y.shape}")
        if not np.all((y == 0) | (y == 1)):
            raise ConfigError("labels must be 0/1 (or booleans)")
        if x.shape[1] != len(feature_names):
            raise ConfigError(f"{x.shape[1]} feature columns but {len(feature_names)} names")
        mean = x.mean(axis=0)
        scale = x.std(axis=0)
        scale = np.where(scale > 1e-12, scale, 1.0)
        z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
        d = z.shape[1]
        theta = np.zeros(d)
        penalty = np.full(d, float(l2))
        penalty[-1] = 0.0
        for _ in range(max_iter):
            p = _sigmoid(z @ theta)
            grad = z.T @ (p - y) + penalty * theta
            hess = (z * (p * (1.0 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(d)
            step = np.linalg.solve(hess, grad)
            theta -= step
            if float(np.max(np.abs(step))) < tol:
                break
        return cls(mean, scale, theta[:-1].copy(), float(theta[-1]), tuple(feature_names), l2)

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        """Log-odds of resolved for each row of ``x``."""
        x = np.asarray(x, dtype=np.float64)
        return ((x - self.mean) / self.scale) @ self.weights + self.bias

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """``P(resolved)`` for each row of ``x``."""
        return _sigmoid(self.decision_function(x))

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Boolean predictions (resolved when ``P >= 0.5``)."""
        return self.decision_function(x) >= 0.0

    def to_dict(self) -> dict:
        """A JSON-ready description."""
        return {
            "kind": "hear2act-logistic-v1",
            "feature_names": list(self.feature_names),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "weights": self.weights.tolist(),
            "bias": self.bias,
            "l2": self.l2,
        }

    @classmethod
    def from_dict(cls, data: dict) -> LogisticModel:
        """Inverse of ``to_dict``."""
        if not isinstance(data, dict):
            raise ConfigError(f"not a hear2act logistic model: a JSON {type(data).__name__}")
        if data.get("kind") != "hear2act-logistic-v1":
            raise ConfigError(f"not a hear2act logistic model: kind={data.get('kind')!r}")
        try:
            names = data["feature_names"]
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise TypeError("feature_names is not a list of names")
            arrays = [np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "weights")]
            bias, l2 = float(data["bias"]), float(data.get("l2", 1.0))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"not a hear2act logistic model: {type(exc).__name__}: {exc}"
            ) from None
        if any(a.shape != (len(names),) for a in arrays):
            raise ConfigError("model arrays do not match its feature names")
        if not all(np.isfinite(a).all() for a in arrays) or not np.isfinite([bias, l2]).all():
            raise ConfigError("not a hear2act logistic model: a weight is not a finite number")
        return cls(*arrays, bias, tuple(names), l2)

    def save(self, path: Path | str) -> None:
        """Write the model as JSON (atomically: an interrupted save leaves no torn file)."""
        write_atomic(path, (json.dumps(self.to_dict(), indent=2) + "\n").encode("utf-8"))

    @classmethod
    def load(cls, path: Path | str) -> LogisticModel:
        """Read a model written by ``save``; a file that is not one (not JSON, nested too deeply,
        missing or ill-typed fields, unreadable) is a ``ConfigError`` naming it."""
        try:
            data = jsonsafe.load_file(path)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the model ({exc.strerror or exc})") from None
        except ValueError as exc:  # not UTF-8, not JSON, too deep, not a regular file
            raise ConfigError(
                f"{path}: not a hear2act logistic model ({type(exc).__name__}); expected the "
                "JSON file that 'hear2act perceive --save-perceiver' writes"
            ) from None
        try:
            return cls.from_dict(data)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None


def _sigmoid(t: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * t))


def features_of(
    utts: Iterable[Utterance], renderer: Renderer, cache: AudioCache | None = None
) -> np.ndarray:
    """Render each utterance (through ``cache`` if given) and stack its prosodic features."""
    rows = []
    for utt in utts:
        wave = speak(renderer, utt, cache)
        rows.append(prosodic_features(wave, renderer.sample_rate))
    if not rows:
        return np.zeros((0, len(FEATURE_NAMES)), dtype=np.float32)
    return np.stack(rows)


@dataclass
class PerceptionReport:
    """Test accuracy of the reference perceiver, overall and per group."""

    accuracy: float
    n_test: int
    train_accuracy: float
    n_train: int
    per_persona: dict[str, float] = field(default_factory=dict)
    per_delivery: dict[str, float] = field(default_factory=dict)
    model: LogisticModel | None = None

    def to_dict(self) -> dict:
        """A JSON-ready summary (the model included)."""
        return {
            "accuracy": self.accuracy,
            "n_test": self.n_test,
            "train_accuracy": self.train_accuracy,
            "n_train": self.n_train,
            "per_persona": dict(self.per_persona),
            "per_delivery": dict(self.per_delivery),
            "model": self.model.to_dict() if self.model is not None else None,
        }


def evaluate_perception(
    train: Sequence[tuple[Utterance, bool]],
    test: Sequence[tuple[Utterance, bool]],
    renderer: Renderer | None = None,
    cache: AudioCache | None = None,
    *,
    l2: float = 1.0,
) -> PerceptionReport:
    """Fit the reference perceiver on ``train`` and measure it on ``test``.

    Each pair is ``(utterance, resolved)``. ``renderer`` defaults to ``EspeakRenderer()`` and
    ``cache`` to ``AudioCache()`` (the default on-disk folder).
    """
    if not train or not test:
        raise ConfigError("evaluate_perception needs non-empty train and test sets")
    if renderer is None:
        from hear2act_env.speech.espeak import EspeakRenderer

        renderer = EspeakRenderer()
    if cache is None:
        cache = AudioCache()
    x_train = features_of((u for u, _ in train), renderer, cache)
    y_train = np.array([bool(y) for _, y in train])
    x_test = features_of((u for u, _ in test), renderer, cache)
    y_test = np.array([bool(y) for _, y in test])
    model = LogisticModel.fit(x_train, y_train, l2=l2)
    correct = model.predict(x_test) == y_test
    return PerceptionReport(
        accuracy=float(correct.mean()),
        n_test=len(test),
        train_accuracy=float((model.predict(x_train) == y_train).mean()),
        n_train=len(train),
        per_persona=_group_accuracy([u.persona for u, _ in test], correct),
        per_delivery=_group_accuracy([u.delivery for u, _ in test], correct),
        model=model,
    )


def _group_accuracy(groups: list[str], correct: np.ndarray) -> dict[str, float]:
    keys = np.array(groups)
    return {g: float(correct[keys == g].mean()) for g in sorted(set(groups))}
