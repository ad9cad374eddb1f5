"""``RecordHear2ActMetrics``: the paper's per-episode metric parts in any loop.

In the style of ``gymnasium.wrappers.RecordEpisodeStatistics``: when an episode ends, ``info``
gets ``"hear2act"``, a dict with the episode's metric parts (``hear2act_env.tally``; the same
function the runner's records come from) plus the scenario, realization, access, fidelity and
reset seed, and a few flat scalars (``MONITOR_KEYS``) for
``stable_baselines3.common.monitor.Monitor(info_keywords=MONITOR_KEYS)``. The last
``buffer_length`` episodes stay in ``episodes``. Inside ``SyncVectorEnv`` / ``AsyncVectorEnv``
the keys follow Gymnasium's vector convention (``infos["hear2act"]`` with the
``infos["_hear2act"]`` mask). Turn the episodes into the report's tables with
``hear2act_env.evaluation.summary.summarize``.
"""

from __future__ import annotations

from collections import deque
from typing import Any, SupportsFloat

import gymnasium as gym

from hear2act_env.tally import EpisodeTally

__all__ = ["INFO_KEY", "MONITOR_KEYS", "RecordHear2ActMetrics"]

INFO_KEY = "hear2act"
#: Flat per-episode scalars for SB3's ``Monitor(info_keywords=MONITOR_KEYS)`` (CSV columns).
MONITOR_KEYS = (
    "hear2act_success",
    "hear2act_accept",
    "hear2act_fullfit",
    "hear2act_premature_closure",
    "hear2act_actions",
)


def flat_scalars(parts: dict[str, Any]) -> dict[str, float]:
    """The ``MONITOR_KEYS`` values of one episode (Accept and FullFit as shares of the agent's
    recommendations, NaN without one)."""
    n = len(parts["recommend_patterns"])
    nan = float("nan")
    return {
        "hear2act_success": float(parts["success"]),
        "hear2act_accept": parts["accepted"] / n if n else nan,
        "hear2act_fullfit": parts["fullfit"] / n if n else nan,
        "hear2act_premature_closure": float(parts["premature_closure"]),
        "hear2act_actions": float(parts["actions"]),
    }


class RecordHear2ActMetrics(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Add the episode's metric parts to the last ``info`` of every episode.

    Works on every registered id, any access condition and intervention, and above other
    wrappers (it reads only ``info``). ``episodes`` holds the last ``buffer_length`` finished
    episodes' dicts.
    """

    def __init__(self, env: gym.Env, buffer_length: int = 100) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, buffer_length=buffer_length)
        gym.Wrapper.__init__(self, env)
        self.episodes: deque[dict[str, Any]] = deque(maxlen=buffer_length)
        self._tally: EpisodeTally | None = None
        self._seed: int | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._tally = EpisodeTally.start(info)
        self._seed = seed
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._tally is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        self._tally.step(info, float(reward), terminated, truncated)
        if terminated or truncated:
            base = self.env.unwrapped
            parts = self._tally.parts()
            parts.update(
                realization=getattr(base, "realization", None),
                access=getattr(base, "access", None),
                fidelity=getattr(base, "state_fidelity", None),
                seed=self._seed,
            )
            info = {**info, INFO_KEY: parts, **flat_scalars(parts)}
            self.episodes.append(parts)
            self._tally = None
        return obs, reward, terminated, truncated, info
