"""``StructuredObservation``: a numeric view of what the dialogue has said in words.

Built only from the env's ``lexical_view()`` (the option table, the requirement and favored direction from
the request, the needs whose words were spoken, the latest reply's surface class); the state is
included only when the env's access grants S. Works with stable-baselines3 (``MultiInputPolicy``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hear2act_env.lexical import SURFACES
from hear2act_env.protocol.engine import N_OPTIONS, N_TOPICS

N_CONSTRAINTS = 4  # requirement, L1, L2, L3


class StructuredObservation(gym.ObservationWrapper):
    """Replace the text observation by numeric arrays (keys below).

    - ``fit`` (11, 4) in {-1, 0, 1}: per option, whether it meets the requirement, L1, L2, L3
      (1 meets, -1 misses, 0 need not yet said).
    - ``favored`` (11,) in [0, 1]: each option's standing on the favored attribute (1 = best).
    - ``current``: the option under discussion; ``surface``: the latest reply's surface class
      (``lexical.SURFACES``); ``revealed`` (3,): which needs were said; ``asked`` (9,): topics
      asked; ``turn`` (1,): actions taken / budget; ``state`` (only with S): as in the env.
    With ``keep_text=True`` the env's text keys are kept as well (not for SB3).
    Only what the words said (``Hear2ActEnv.lexical_view``): after the L1 hint alone,
    ``fit[:, 1]`` is -1 for the options whose L1 value the user turned down and 0 elsewhere,
    until the need's statement or answer names its satisfying levels.
    """

    def __init__(self, env: gym.Env, keep_text: bool = False) -> None:
        super().__init__(env)
        self.keep_text = keep_text
        base = env.observation_space
        assert isinstance(base, spaces.Dict)
        obs: dict[str, spaces.Space[Any]] = {
            "fit": spaces.Box(-1.0, 1.0, (N_OPTIONS, N_CONSTRAINTS), np.float32),
            "favored": spaces.Box(0.0, 1.0, (N_OPTIONS,), np.float32),
            "current": spaces.Discrete(N_OPTIONS),
            "surface": spaces.Discrete(len(SURFACES)),
            "revealed": spaces.MultiBinary(3),
            "asked": spaces.MultiBinary(N_TOPICS),
            "turn": spaces.Box(0.0, 1.0, (1,), np.float32),
        }
        if "state" in base.spaces:
            obs["state"] = base.spaces["state"]
        if keep_text:
            obs.update({k: v for k, v in base.spaces.items() if k not in obs})
        self.observation_space = spaces.Dict(obs)

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        env = self.env.unwrapped
        view = env.lexical_view()  # type: ignore[attr-defined]
        values = view.values
        fit = np.zeros((N_OPTIONS, N_CONSTRAINTS), np.float32)
        pos, sat = view.requirement
        fit[:, 0] = _signs(values[:, pos], sat)
        revealed = np.zeros(3, np.int8)
        for level, (p, s) in view.known_needs.items():
            k = int(level[1])
            fit[:, k] = _signs(values[:, p], s)
            revealed[k - 1] = 1
        for level, (p, out) in view.ruled_out.items():  # known by direction only
            k = int(level[1])
            fit[:, k] = -np.isin(values[:, p], list(out)).astype(np.float32)
            revealed[k - 1] = 1
        fav_pos, sign = view.favored
        col = values[:, fav_pos].astype(np.float32)
        top = max(view.n_levels[fav_pos] - 1, 1)
        favored = col / top if sign > 0 else 1.0 - col / top
        asked = np.zeros(N_TOPICS, np.int8)
        asked[list(view.asked)] = 1
        out: dict[str, Any] = {
            "fit": fit,
            "favored": favored.astype(np.float32),
            "current": view.current,
            "surface": SURFACES.index(view.surface),
            "revealed": revealed,
            "asked": asked,
            "turn": np.array([view.actions / env.max_actions], np.float32),  # type: ignore[attr-defined]
        }
        if "state" in observation:
            out["state"] = observation["state"]
        if self.keep_text:
            out.update({k: v for k, v in observation.items() if k not in out})
        return out


def _signs(column: np.ndarray, satisfied: frozenset[int]) -> np.ndarray:
    """+1 where the level is in ``satisfied``, -1 elsewhere."""
    return np.array([1.0 if v in satisfied else -1.0 for v in column.tolist()], np.float32)
