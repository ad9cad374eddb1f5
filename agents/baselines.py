"""Rule baselines. All but ``RandomPolicy`` and ``EagerPolicy`` read the structured view
(``wrappers.StructuredObservation``): what the dialogue has said in words."""

from __future__ import annotations

from typing import Any

import numpy as np

from hear2act_env.errors import ConfigError
from hear2act_env.lexical import SURFACES
from hear2act_env.policy import Policy
from hear2act_env.protocol.delivery import State
from hear2act_env.protocol.engine import N_ACTS, N_OPTIONS, N_TOPICS, Act

ACCEPTING = (SURFACES.index("accept"), SURFACES.index("nothing_else"))
NOTHING_ELSE = SURFACES.index("nothing_else")
OPEN = 0
SPOKEN_ACTS = np.array([int(Act.ASK), int(Act.RECOMMEND), int(Act.CONFIRM)])


def action(act: Act, option: int = 0, topic: int = 0) -> np.ndarray:
    """An action array."""
    return np.array([int(act), option, topic], dtype=np.int64)


def best_known_fit(obs: dict[str, Any]) -> int:
    """Option meeting the requirement and most said needs, then best on the favored attribute."""
    fit, favored = obs["fit"], obs["favored"]
    met = (fit[:, 1:] >= 0).sum(axis=1)
    key = (fit[:, 0] > 0) * 1000 + met * 10 + favored
    return int(np.argmax(key))


def fits_known(obs: dict[str, Any], option: int) -> bool:
    """Whether ``option`` meets the requirement and every need said so far."""
    return bool(np.all(obs["fit"][option] >= 0))


class RandomPolicy(Policy):
    """Uniformly random actions (seeded per episode); never CLARIFY when ``allow_clarify`` is
    False (a spoken assistant)."""

    name = "random"
    observation_kind = "text"

    def __init__(self, allow_clarify: bool = True) -> None:
        self.allow_clarify = allow_clarify
        self._rng = np.random.default_rng(0)

    def reset(self, observation: dict[str, Any], seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        if self.allow_clarify:
            return self._rng.integers(0, [N_ACTS, N_OPTIONS, N_TOPICS]).astype(np.int64)
        act = self._rng.choice(SPOKEN_ACTS)
        option, topic = self._rng.integers(0, [N_OPTIONS, N_TOPICS])
        return np.array([act, option, topic], dtype=np.int64)


class EagerPolicy(Policy):
    """Confirms the opening recommendation at once: the premature closer."""

    name = "eager"
    observation_kind = "text"

    def reset(self, observation: dict[str, Any], seed: int | None = None) -> None:
        pass

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        return action(Act.CONFIRM)


class ThoroughPolicy(Policy):
    """Asks about every attribute, recommends the best fit of what it learned, then confirms."""

    name = "thorough"
    observation_kind = "structured"

    def reset(self, observation: dict[str, Any], seed: int | None = None) -> None:
        self._recommended = False

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        asked = observation["asked"]
        for topic in range(1, N_TOPICS):
            if not asked[topic]:
                return action(Act.ASK, topic=topic)
        target = best_known_fit(observation)
        if observation["current"] != target or not self._recommended:
            self._recommended = True
            return action(Act.RECOMMEND, option=target)
        return action(Act.CONFIRM)


class _Gatherer(Policy):
    """Shared logic: move to a better known fit when one exists, else ask an open question."""

    observation_kind = "structured"

    def reset(self, observation: dict[str, Any], seed: int | None = None) -> None:
        self._probed_current = False
        self._last_current = int(observation["current"])

    def _track(self, observation: dict[str, Any]) -> None:
        current = int(observation["current"])
        if current != self._last_current:
            self._probed_current = False
            self._last_current = current

    def _gather(self, observation: dict[str, Any]) -> np.ndarray:
        current = int(observation["current"])
        target = best_known_fit(observation)
        if target != current and not fits_known(observation, current):
            return action(Act.RECOMMEND, option=target)
        self._probed_current = True
        return action(Act.ASK, topic=OPEN)


class StateAwarePolicy(_Gatherer):
    """Gathers while the state says unresolved; confirms when it says resolved.

    Without a state (withheld, or access without S) it trusts an accepting reply, as the paper's
    transcript-only LLMs mostly did.
    """

    name = "state-aware"

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        self._track(observation)
        state = int(observation.get("state", 0))
        if state:
            resolved = state == State.RESOLVED
        else:
            resolved = int(observation["surface"]) in ACCEPTING
        if resolved and fits_known(observation, int(observation["current"])):
            return action(Act.CONFIRM)
        return self._gather(observation)


class ProberPolicy(_Gatherer):
    """Transcript only, but checks every accepting reply with an open question before confirming."""

    name = "prober"

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        self._track(observation)
        surface = int(observation["surface"])
        current = int(observation["current"])
        if surface == NOTHING_ELSE and fits_known(observation, current):
            return action(Act.CONFIRM)
        if surface in ACCEPTING and self._probed_current and fits_known(observation, current):
            return action(Act.CONFIRM)
        return self._gather(observation)


class OraclePolicy(Policy):
    """Knows the answer (privileged ground truth): recommends ``best`` and confirms. The ceiling."""

    name = "oracle"
    observation_kind = "privileged"

    def reset(self, observation: dict[str, Any], seed: int | None = None) -> None:
        pass

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        best = int(observation["truth"]["best"])
        if int(observation["current"]) != best:
            return action(Act.RECOMMEND, option=best)
        return action(Act.CONFIRM)


#: Baseline name -> class. None of them but ``random`` could CLARIFY, so only it takes the
#: spoken-assistant option into account.
BASELINES: dict[str, type[Policy]] = {
    "random": RandomPolicy,
    "eager": EagerPolicy,
    "thorough": ThoroughPolicy,
    "state-aware": StateAwarePolicy,
    "prober": ProberPolicy,
    "oracle": OraclePolicy,
}


def make_baseline(spec: str, *, allow_clarify: bool = True) -> Policy:
    """The baseline ``spec`` (a name in ``BASELINES``, optionally as ``baseline:NAME``)."""
    name = spec.removeprefix("baseline:")
    cls = BASELINES.get(name)
    if cls is None:
        raise ConfigError(f"agent: unknown baseline {name!r}; known: {sorted(BASELINES)}")
    if cls is RandomPolicy:
        return RandomPolicy(allow_clarify=allow_clarify)
    return cls()
