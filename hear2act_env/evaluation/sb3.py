"""``Hear2ActMetricsCallback``: the paper's metrics in stable-baselines3's logger while training.

Needs ``stable_baselines3`` (``pip install "hear2act-env[rl]"``); importing ``hear2act_env``
never imports this module. Each env of the vector env must be wrapped in
``wrappers.RecordHear2ActMetrics`` (``hear2act train`` does it). At the end of every rollout the
callback records, over the episodes that ended during it: ``hear2act/success`` (%),
``hear2act/accept`` and ``hear2act/fullfit`` (% of the agent's recommendations),
``hear2act/premature_closure`` (%), ``hear2act/actions`` (mean) and ``hear2act/episodes``; they
reach every output of the model's logger (stdout, CSV, TensorBoard) at its next dump.
"""

from __future__ import annotations

from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from hear2act_env.wrappers.metrics import INFO_KEY

__all__ = ["Hear2ActMetricsCallback", "rollout_metrics"]


def rollout_metrics(episodes: list[dict[str, Any]]) -> dict[str, float]:
    """The logged figures of a list of episode dicts (``info["hear2act"]``)."""
    n = len(episodes)
    recs = sum(len(e["recommend_patterns"]) for e in episodes)
    nan = float("nan")
    return {
        "success": 100.0 * sum(e["success"] for e in episodes) / n if n else nan,
        "accept": 100.0 * sum(e["accepted"] for e in episodes) / recs if recs else nan,
        "fullfit": 100.0 * sum(e["fullfit"] for e in episodes) / recs if recs else nan,
        "premature_closure": 100.0 * sum(e["premature_closure"] for e in episodes) / n
        if n
        else nan,
        "actions": sum(e["actions"] for e in episodes) / n if n else nan,
        "episodes": float(n),
    }


class Hear2ActMetricsCallback(BaseCallback):
    """Log Success, Accept, FullFit, premature closure and actions per rollout."""

    def __init__(self, prefix: str = "hear2act", verbose: int = 0) -> None:
        super().__init__(verbose)
        self.prefix = prefix
        self._episodes: list[dict[str, Any]] = []
        self.history: list[dict[str, float]] = []  # one entry per logged rollout

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", ()):
            parts = info.get(INFO_KEY)
            if parts is not None:
                self._episodes.append(parts)
        return True

    def _on_rollout_end(self) -> None:
        if not self._episodes:
            return
        figures = rollout_metrics(self._episodes)
        for name, value in figures.items():
            self.logger.record(f"{self.prefix}/{name}", value)
        self.history.append({"timesteps": float(self.num_timesteps), **figures})
        self._episodes = []
