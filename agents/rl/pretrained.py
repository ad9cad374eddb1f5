"""The PPO models shipped with the package (``agents/rl/models``), addressable by name.

Three policies of the turn-cost experiment (docs/results/rl.md), trained on the train split under the
Prosody-mediated realization at the default turn cost (0.05), seed 0: ``prosody-T-c0.05``
(transcript only), ``prosody-A+T-c0.05`` (transcript and prosodic features, warm-started from
the T policy) and ``prosody-T+S-c0.05`` (transcript and the true state tag). Each folder is a
run folder as written by ``hear2act_agents.rl.train`` (``model.zip``, ``config.json``, ``progress.csv``);
the sweep trained them on a copy of the packaged bank (same SHA-256, recorded in the config),
so their ``config.scenarios`` is set to null (the packaged bank).

    from hear2act_agents.rl import load_policy
    policy = load_policy("prosody-A+T-c0.05")        # a shipped name, or any run folder
    # agent spec for the runner and the CLI: "ppo:prosody-A+T-c0.05"
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["MODELS_DIR", "pretrained", "pretrained_path"]

MODELS_DIR = Path(__file__).resolve().parent / "models"


def pretrained() -> dict[str, Path]:
    """Name -> run folder of every shipped model."""
    if not MODELS_DIR.is_dir():
        return {}
    return {p.name: p for p in sorted(MODELS_DIR.iterdir()) if (p / "model.zip").is_file()}


def pretrained_path(name: str) -> Path | None:
    """The run folder of the shipped model ``name``, or None when there is none by that name."""
    return pretrained().get(name)
