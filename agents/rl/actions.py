"""A factored ``Discrete(22)`` action space over the env's ``MultiDiscrete([4, 11, 9])``.

The env's (act, option, topic) triple has 4 * 11 * 9 = 396 combinations, most of them the same
action (ASK ignores the option, RECOMMEND the topic, CLARIFY and CONFIRM both). The RL agents
act in the 22 distinct actions instead:

| index | action | env triple |
| --- | --- | --- |
| 0 | ask an open question | (0, 0, 0) |
| 1-8 | ask about attribute k (topic k) | (0, 0, k) |
| 9 | clarify | (1, 0, 0) |
| 10-20 | recommend option o (o = index - 10, shown as o + 1) | (2, o, 0) |
| 21 | confirm | (3, 0, 0) |

``to_env`` and ``from_env`` map between the two (``from_env(to_env(i)) == i`` for every i, and
``to_env(from_env(a))`` is ``a`` with its ignored components zeroed). The env itself is unchanged;
``FactoredActions`` is an ``ActionWrapper``.

``action_mask`` says which of the 22 actions an agent may take, from the numeric structured
observation alone (what the dialogue said in words, never the hidden needs or the state):
CLARIFY when the env disallows it is invalid; with ``prune=True`` (the default for training)
actions that can only repeat what was already said are masked as well: asking again about an
attribute already asked (its answer is fixed), CLARIFY once L1 is known, re-recommending the
option under discussion, and recommending an option that misses the requirement or a need
already stated (it cannot be the best fit). The open question and CONFIRM are always allowed.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hear2act_env.protocol.engine import N_OPTIONS, N_TOPICS, Act

__all__ = [
    "ACTION_NAMES",
    "ASK_OPEN",
    "CLARIFY",
    "CONFIRM",
    "FactoredActions",
    "N_ACTIONS",
    "RECOMMEND",
    "action_mask",
    "from_env",
    "to_env",
]

ASK_OPEN = 0
ASK_TOPIC = 1  # 1..8
CLARIFY = ASK_TOPIC + N_TOPICS - 1  # 9
RECOMMEND = CLARIFY + 1  # 10..20
CONFIRM = RECOMMEND + N_OPTIONS  # 21
N_ACTIONS = CONFIRM + 1  # 22
ACTION_NAMES: tuple[str, ...] = (
    ("ask:open",)
    + tuple(f"ask:{k}" for k in range(1, N_TOPICS))
    + ("clarify",)
    + tuple(f"recommend:{o + 1}" for o in range(N_OPTIONS))
    + ("confirm",)
)


def to_env(index: int) -> np.ndarray:
    """The env action (act, option, topic) of factored action ``index``."""
    i = int(index)
    if not 0 <= i < N_ACTIONS:
        raise ValueError(f"action index {i} outside 0..{N_ACTIONS - 1}")
    if i < CLARIFY:
        triple = (Act.ASK, 0, i - ASK_OPEN)
    elif i == CLARIFY:
        triple = (Act.CLARIFY, 0, 0)
    elif i < CONFIRM:
        triple = (Act.RECOMMEND, i - RECOMMEND, 0)
    else:
        triple = (Act.CONFIRM, 0, 0)
    return np.array([int(v) for v in triple], dtype=np.int64)


def from_env(action: Any) -> int:
    """The factored index of an env action (ignored components do not matter)."""
    act, option, topic = (int(v) for v in np.asarray(action).reshape(-1)[:3])
    if act == Act.ASK and 0 <= topic < N_TOPICS:
        return ASK_OPEN + topic
    if act == Act.CLARIFY:
        return CLARIFY
    if act == Act.RECOMMEND and 0 <= option < N_OPTIONS:
        return RECOMMEND + option
    if act == Act.CONFIRM:
        return CONFIRM
    raise ValueError(f"not a valid env action: {action!r}")


def action_mask(obs: dict[str, Any], allow_clarify: bool = True, prune: bool = True) -> np.ndarray:
    """Boolean mask over the 22 actions (True = allowed) from a structured observation.

    Reads only ``fit``, ``current``, ``asked`` and ``revealed`` (``StructuredObservation``).
    """
    mask = np.ones(N_ACTIONS, dtype=bool)
    mask[CLARIFY] = bool(allow_clarify)
    if not prune:
        return mask
    asked = np.asarray(obs["asked"]).astype(bool)
    mask[ASK_TOPIC:CLARIFY] &= ~asked[1:]
    if np.asarray(obs["revealed"])[0]:
        mask[CLARIFY] = False
    fit = np.asarray(obs["fit"])
    ruled_out = (fit < 0).any(axis=1)
    ruled_out[int(np.asarray(obs["current"]))] = True
    mask[RECOMMEND:CONFIRM] &= ~ruled_out
    return mask


class FactoredActions(gym.ActionWrapper):
    """Expose ``Discrete(22)`` (see the module table) over the env's ``MultiDiscrete``."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.action_space = spaces.Discrete(N_ACTIONS)

    def action(self, action: Any) -> np.ndarray:
        return to_env(int(np.asarray(action).reshape(-1)[0]))

    def reverse_action(self, action: Any) -> int:
        return from_env(action)
