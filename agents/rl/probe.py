"""Does a learned audio encoder hear the state? A linear probe on its clip embedding.

The clips are those of the perception check (``speech.bank_perception.collect_clips``: the
user's reactions to recommendations whose state is resolved, reluctant or concern, balanced
50/50, train-split clips to fit, test-split clips to score). For each clip, one at a time:

- **reference perceiver**: the project's logistic regression on the 8 handcrafted prosodic
  features (``speech.perception``), the figure an audio policy with ``features`` can reach;
- **encoder probe**: the same logistic regression on the embedding ``e(x)`` of a trained
  run's ``LogMelEncoder`` (its ``features_extractor.embed``) of the clip's log-mel spectrogram;
- **untrained control**: the same on an encoder with the architecture and SB3's initialisation
  (orthogonal, gain sqrt 2) but no training: random convolutional features are often linearly
  separable already, so a trained encoder has learned something only where it beats this.

Accuracies come with 95% bootstrap intervals over test clips (``bootstrap.mean_ci``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env.bootstrap import Estimate, mean_ci
from hear2act_env.errors import ConfigError
from hear2act_env.speech.cache import speak
from hear2act_env.speech.utterance import Renderer, Utterance

__all__ = ["ProbeRow", "encoder_of", "probe_encoders", "untrained_encoder"]


@dataclass
class ProbeRow:
    """One classifier's test accuracy."""

    name: str
    accuracy: Estimate
    train_accuracy: float
    n_train: int
    n_test: int
    dims: int
    per_persona: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        a = self.accuracy
        return {
            "name": self.name,
            "accuracy": a.value,
            "ci": [a.low, a.high],
            "train_accuracy": self.train_accuracy,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "dims": self.dims,
            "per_persona": dict(self.per_persona),
        }


def encoder_of(run: str | Path) -> tuple[Any, Any]:
    """``(LogMelEncoder, LogMelSettings)`` of a trained run with a learned audio encoder."""
    from hear2act_agents.rl.audio_encoder import AudioTextExtractor
    from hear2act_agents.rl.encoding import EncoderSpec
    from hear2act_agents.rl.policy import _load
    from hear2act_env.speech.logmel import LogMelSettings

    model, config = _load(run)
    spec = EncoderSpec.from_dict(config["encoder"])
    extractor = getattr(model.policy, "features_extractor", None)
    if not spec.learned or not isinstance(extractor, AudioTextExtractor):
        raise ConfigError(
            f"run: {run} has no learned audio encoder (trained with --audio-encoder "
            f"{spec.audio_encoder})"
        )
    return extractor.encoder, LogMelSettings.from_dict(spec.logmel)


def untrained_encoder(settings: Any = None, seed: int = 0) -> Any:
    """A ``LogMelEncoder`` with SB3's initialisation and no training (the control)."""
    import torch
    from stable_baselines3.common.policies import ActorCriticPolicy

    from hear2act_agents.rl.audio_encoder import LogMelEncoder
    from hear2act_env.speech.logmel import LogMelSettings

    settings = settings or LogMelSettings()
    torch.manual_seed(seed)
    encoder = LogMelEncoder(settings.n_mels)
    encoder.apply(lambda m: ActorCriticPolicy.init_weights(m, gain=float(np.sqrt(2))))
    return encoder


def _waves(utts: Sequence[Utterance], renderer: Renderer, cache: Any) -> list[np.ndarray]:
    return [speak(renderer, u, cache) for u in utts]


def _embed(encoder: Any, settings: Any, waves: Sequence[np.ndarray]) -> np.ndarray:
    import torch

    from hear2act_env.speech.logmel import LogMelTransform

    transform = LogMelTransform(settings)
    x = torch.as_tensor(np.stack([transform(w) for w in waves]))
    with torch.no_grad():
        return encoder(x).numpy().astype(np.float64)


def _row(
    name: str,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    personas: Sequence[str],
) -> ProbeRow:
    from hear2act_env.speech.perception import LogisticModel

    names = tuple(f"x{i}" for i in range(x_train.shape[1]))
    model = LogisticModel.fit(x_train, y_train, feature_names=names)
    correct = (model.predict(x_test) == y_test).astype(np.float64)
    keys = np.array(personas)
    return ProbeRow(
        name,
        mean_ci(correct),
        float((model.predict(x_train) == y_train).mean()),
        len(y_train),
        len(y_test),
        x_train.shape[1],
        {p: float(correct[keys == p].mean()) for p in sorted(set(personas))},
    )


def probe_encoders(
    runs: Sequence[str | Path],
    train: Sequence[tuple[Utterance, bool]],
    test: Sequence[tuple[Utterance, bool]],
    renderer: Renderer | None = None,
    cache: Any = None,
    control_seeds: Sequence[int] = (0,),
) -> list[ProbeRow]:
    """The reference perceiver, the untrained controls and each run's probe, on the same clips.

    ``train`` / ``test`` are ``(utterance, resolved)`` pairs (``collect_clips``); ``renderer``
    defaults to espeak-ng and ``cache`` to the default ``AudioCache``.
    """
    from hear2act_env.speech.perception import features_of

    if not train or not test:
        raise ConfigError("probe: needs non-empty train and test clip sets")
    if renderer is None:
        from hear2act_env.speech.espeak import EspeakRenderer

        renderer = EspeakRenderer()
    if cache is None:
        from hear2act_env.speech.cache import AudioCache

        cache = AudioCache()
    u_train, u_test = [u for u, _ in train], [u for u, _ in test]
    y_train = np.array([bool(y) for _, y in train])
    y_test = np.array([bool(y) for _, y in test])
    personas = [u.persona for u in u_test]
    w_train, w_test = _waves(u_train, renderer, cache), _waves(u_test, renderer, cache)
    rows = [
        _row(
            "reference perceiver (8 prosodic features)",
            features_of(u_train, renderer, cache).astype(np.float64),
            y_train,
            features_of(u_test, renderer, cache).astype(np.float64),
            y_test,
            personas,
        )
    ]
    encoders = [
        (f"untrained encoder (seed {s})", untrained_encoder(None, s), None) for s in control_seeds
    ]
    for run in runs:
        encoder, settings = encoder_of(run)
        encoders.append((f"encoder of {Path(run).name}", encoder, settings))
    for name, encoder, settings in encoders:
        x_train, x_test = _embed(encoder, settings, w_train), _embed(encoder, settings, w_test)
        rows.append(_row(name, x_train, y_train, x_test, y_test, personas))
    return rows


def markdown(rows: Sequence[ProbeRow]) -> str:
    """The probe table of docs/results/rl.md."""
    personas = sorted({p for r in rows for p in r.per_persona})
    lines = [
        "| classifier | inputs | test accuracy [95% CI] | train accuracy | "
        + " | ".join(personas)
        + " |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in personas) + " |",
    ]
    for r in rows:
        a = r.accuracy
        cells = [f"{r.per_persona.get(p, float('nan')):.2f}" for p in personas]
        lines.append(
            f"| {r.name} | {r.dims} | {a.value:.3f} [{a.low:.3f}, {a.high:.3f}] | "
            f"{r.train_accuracy:.3f} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)
