"""Training environments: the env, the numeric wrappers and the factored actions, stacked.

``make_env`` builds (inside out)::

    Hear2ActEnv(EnvConfig)              (RL_ENV: the train split, no audio disk cache)
    -> StructuredObservation            (what the words said; state with S)
    -> ProsodyFeatures                  (with A: audio -> prosody, prosody_delta; text dropped)
       or LogMelObservation             (with A and a learned encoder: audio -> logmel)
    -> ShuffleOptions                   (training only: a fresh option order every episode)
    -> RLObservation(EncoderSpec)       (flat Box; action_masks())
    -> FactoredActions                  (Discrete(22))
    -> BudgetEndIsTerminal              (the scored end at the action budget is terminal)
    -> Monitor                          (optional: episode returns for SB3)

The env reports the end of the 20-action budget as ``truncated``, but that end is scored (the
current recommendation is final) and the observation carries the action count, so it is a true
end of the task. SB3 treats ``truncated`` as a time limit and adds the discounted value of the
final observation to the last reward, which here rewards running out the budget (a trained
agent then learns to never confirm). ``BudgetEndIsTerminal`` reports it as ``terminated``.

``ShuffleOptions`` is data augmentation for training: the 384 training scenarios are few enough
for a network to recognise a scenario from its option table and memorise which position holds
the best option (train return far above test return, fewer actions than any policy that must
ask could use). Showing the options in a fresh random order every episode (the observation's
rows and the RECOMMEND option are mapped consistently) removes that shortcut. The evaluation
adapter plays the env's own order.

Audio envs are built with ``audio_cache=False`` by default: during training every user turn is
a fresh utterance (its voice variation is a fresh draw), so a disk cache would only grow.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from hear2act_agents.rl.actions import FactoredActions
from hear2act_agents.rl.encoding import EncoderSpec, RLObservation
from hear2act_env.config import EnvConfig, SpeechConfig
from hear2act_env.env import Hear2ActEnv
from hear2act_env.protocol.engine import N_OPTIONS, Act
from hear2act_env.seeding import derive_seed
from hear2act_env.wrappers.metrics import RecordHear2ActMetrics
from hear2act_env.wrappers.prosody import N_PROSODY, ProsodyFeatures
from hear2act_env.wrappers.structured import StructuredObservation

__all__ = [
    "BudgetEndIsTerminal",
    "ShuffleOptions",
    "base_env",
    "env_thunks",
    "fit_prosody_scaler",
    "make_env",
    "numeric_env",
]


class BudgetEndIsTerminal(gym.Wrapper):
    """Report the env's scored budget end as ``terminated`` (``info["budget_end"]`` = True)."""

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if truncated and not terminated:
            info = {**info, "budget_end": True}
            return obs, reward, True, False, info
        return obs, reward, terminated, truncated, info


class ShuffleOptions(gym.Wrapper):
    """Present the 11 options of a numeric (structured) observation in a random order.

    At every reset a permutation is drawn (seeded by ``reset(seed=...)``); ``fit``, ``favored``
    and ``current`` are given in that order and a RECOMMEND of shown position ``p`` recommends the
    env's option ``perm[p]``. Everything else passes through.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._rng = np.random.default_rng()
        self.perm = np.arange(N_OPTIONS)
        self.inverse = np.arange(N_OPTIONS)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        if seed is not None:
            self._rng = np.random.default_rng([seed, 0x5F0])
        self.perm = self._rng.permutation(N_OPTIONS)
        self.inverse = np.argsort(self.perm)
        obs, info = self.env.reset(seed=seed, options=options)
        return self._view(obs), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        act = np.array(action, dtype=np.int64).reshape(-1)
        if act.shape == (3,) and act[0] == Act.RECOMMEND and 0 <= act[1] < N_OPTIONS:
            act[1] = self.perm[act[1]]
        obs, reward, terminated, truncated, info = self.env.step(act)
        return self._view(obs), reward, terminated, truncated, info

    def _view(self, obs: dict[str, Any]) -> dict[str, Any]:
        out = dict(obs)
        out["fit"] = np.asarray(obs["fit"])[self.perm]
        out["favored"] = np.asarray(obs["favored"])[self.perm]
        out["current"] = int(self.inverse[int(np.asarray(obs["current"]))])
        return out


#: The env settings RL starts from: the train split, audio rendered without a disk cache.
RL_ENV = EnvConfig(split="train", speech=SpeechConfig(audio_cache=False))


def rl_env_config(config: EnvConfig | None = None, **settings: Any) -> EnvConfig:
    """``config`` (default ``RL_ENV``) with ``settings`` (``EnvConfig`` keys, speech keys flat)."""
    return (RL_ENV if config is None else config).replace(**settings)


def base_env(config: EnvConfig | None = None, **settings: Any) -> Hear2ActEnv:
    """The raw env of ``rl_env_config(config, **settings)``."""
    return Hear2ActEnv(rl_env_config(config, **settings))


def numeric_env(env: gym.Env, spec: EncoderSpec | None = None) -> gym.Env:
    """The numeric ``Dict`` view of a raw env: structured keys (+ state, + prosody with A, or
    + logmel with A when ``spec`` has a learned audio encoder)."""
    if "audio" in env.observation_space.spaces:  # type: ignore[attr-defined]
        structured = StructuredObservation(env, keep_text=True)
        if spec is not None and spec.learned:
            from hear2act_env.speech.logmel import LogMelSettings
            from hear2act_env.wrappers.logmel import LogMelObservation

            return LogMelObservation(structured, LogMelSettings.from_dict(spec.logmel))
        return ProsodyFeatures(structured)
    return StructuredObservation(env, keep_text=False)


def make_env(
    config: EnvConfig | None = None,
    *,
    spec: EncoderSpec | None = None,
    prune: bool = True,
    monitor: bool = False,
    shuffle_options: bool = False,
    **settings: Any,
) -> gym.Env:
    """The full training stack (see the module docstring) over the env of
    ``rl_env_config(config, **settings)``."""
    env_config = rl_env_config(config, **settings)
    spec = spec or EncoderSpec.for_access(env_config.access)
    raw = RecordHear2ActMetrics(Hear2ActEnv(env_config))
    env = numeric_env(raw, spec)
    if shuffle_options:
        env = ShuffleOptions(env)
    env = BudgetEndIsTerminal(FactoredActions(RLObservation(env, spec, prune=prune)))
    if monitor:
        from stable_baselines3.common.monitor import Monitor

        env = Monitor(env)
    return env


def env_thunks(n: int, **kwargs: Any) -> list[Callable[[], gym.Env]]:
    """``n`` picklable constructors of ``make_env(**kwargs)`` (for vector envs)."""
    return [functools.partial(make_env, **kwargs) for _ in range(n)]


def fit_prosody_scaler(
    config: EnvConfig, episodes: int = 60, seed: int = 0
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Mean and standard deviation of (``prosody``, ``prosody_delta``) over user turns.

    Plays ``episodes`` seeded episodes of ``config`` (its turn cost set to 0) with a mix of the prober and random
    actions (so every state and reply kind is heard) and pools every observation.
    """
    from hear2act_agents.baselines import ProberPolicy

    env = ProsodyFeatures(
        StructuredObservation(Hear2ActEnv(config.replace(turn_cost=0.0)), keep_text=True),
        drop_text=False,
    )
    rng = np.random.default_rng(seed)
    rows = []
    for e in range(episodes):
        obs, _ = env.reset(seed=derive_seed(seed, e))
        prober = ProberPolicy()
        prober.reset(obs)
        while True:
            rows.append(np.concatenate([obs["prosody"], obs["prosody_delta"]]))
            if rng.random() < 0.3:
                action = rng.integers(0, [4, 11, 9])
            else:
                action = prober.act(obs)
            obs, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
    x = np.stack(rows).astype(np.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 1e-6, scale, 1.0)
    assert mean.shape == (2 * N_PROSODY,)
    return tuple(float(v) for v in mean), tuple(float(v) for v in scale)
