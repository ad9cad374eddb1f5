"""The factored action space and its masks."""

import itertools

import numpy as np
import pytest
from gymnasium import spaces

from hear2act_agents.rl.actions import (
    ACTION_NAMES,
    ASK_OPEN,
    CLARIFY,
    CONFIRM,
    N_ACTIONS,
    RECOMMEND,
    FactoredActions,
    action_mask,
    from_env,
    to_env,
)
from hear2act_env.env import Hear2ActEnv
from hear2act_env.wrappers.structured import StructuredObservation


def test_round_trip_every_factored_action():
    assert N_ACTIONS == 22 == len(ACTION_NAMES)
    triples = {tuple(to_env(i)) for i in range(N_ACTIONS)}
    assert len(triples) == N_ACTIONS
    for i in range(N_ACTIONS):
        assert from_env(to_env(i)) == i


def test_every_env_triple_maps_to_the_action_it_means():
    for act, option, topic in itertools.product(range(4), range(11), range(9)):
        i = from_env(np.array([act, option, topic]))
        canonical = to_env(i)
        assert canonical[0] == act
        if act == 0:
            assert canonical[2] == topic
        if act == 2:
            assert canonical[1] == option


@pytest.mark.parametrize("bad", [[4, 0, 0], [2, 11, 0], [0, 0, 9], [-1, 0, 0]])
def test_from_env_rejects_invalid(bad):
    with pytest.raises(ValueError):
        from_env(np.array(bad))
    with pytest.raises(ValueError):
        to_env(N_ACTIONS)


def test_wrapper_plays_the_same_episode_as_the_env():
    plain = Hear2ActEnv(split="train")
    wrapped = FactoredActions(Hear2ActEnv(split="train"))
    assert wrapped.action_space == spaces.Discrete(N_ACTIONS)
    plain.reset(seed=3)
    wrapped.reset(seed=3)
    for i in (ASK_OPEN, 3, CLARIFY, RECOMMEND + 4, ASK_OPEN, CONFIRM):
        a = plain.step(to_env(i))
        b = wrapped.step(i)
        assert a[0] == b[0] and a[1:4] == b[1:4]
        assert a[4]["last_turn"] == b[4]["last_turn"]
        if a[2] or a[3]:
            break
    assert wrapped.reverse_action(to_env(RECOMMEND + 2)) == RECOMMEND + 2


def test_masks_only_prune_what_words_settled():
    env = StructuredObservation(Hear2ActEnv(split="train"))
    obs, info = env.reset(seed=5)
    m = action_mask(obs)
    assert m[ASK_OPEN] and m[CONFIRM] and m[CLARIFY]
    current = int(obs["current"])
    assert not m[RECOMMEND + current]  # re-recommending the current option
    violators = np.flatnonzero(obs["fit"][:, 0] < 0)  # miss the stated requirement
    assert len(violators) == 2 and not m[RECOMMEND + violators].any()
    assert not action_mask(obs, allow_clarify=False)[CLARIFY]
    assert action_mask(obs, prune=False).all()
    obs, *_ = env.step(to_env(4))  # ask about attribute 4
    assert not action_mask(obs)[4] and action_mask(obs)[5]
    obs, *_ = env.step(to_env(CLARIFY))  # L1 now said: clarify again is pruned
    assert obs["revealed"][0] == 1 and not action_mask(obs)[CLARIFY]
    # the best option is never masked: it meets everything that can be said
    best = info["truth"]["best"]
    assert action_mask(obs)[RECOMMEND + best] or best == int(obs["current"])
