"""``StateOneHot``: the ``state`` tag (access with S) as a float one-hot vector.

The env gives ``state`` as ``Discrete(5)`` (0 withheld, then the four delivery states of
``protocol.delivery``). SB3's ``MultiInputPolicy`` one-hots a ``Discrete`` by itself; this
wrapper is for everything else that wants a fixed-size float input (flattening, custom
networks, other RL libraries). Every other key is passed through unchanged.

    env = StateOneHot(StructuredObservation(gym.make("Hear2Act-Prosody-TextState-v0")))
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hear2act_env.errors import ConfigError

__all__ = ["StateOneHot"]


class StateOneHot(gym.ObservationWrapper):
    """Replace ``state`` (``Discrete(n)``) by ``Box(0, 1, (n,), float32)`` holding its one-hot."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        base = env.observation_space
        state = base.spaces.get("state") if isinstance(base, spaces.Dict) else None
        if not isinstance(state, spaces.Discrete):
            raise ConfigError(
                "StateOneHot needs a Dict observation with a Discrete 'state' key (an access "
                f"condition with S, e.g. T+S); got {base}"
            )
        self.n_states = int(state.n)
        self.observation_space = spaces.Dict(
            {
                **base.spaces,
                "state": spaces.Box(0.0, 1.0, (self.n_states,), np.float32),
            }
        )

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        onehot = np.zeros(self.n_states, np.float32)
        onehot[int(observation["state"])] = 1.0
        return {**observation, "state": onehot}
