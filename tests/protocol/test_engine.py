"""One test per row of the table in docs/protocol.md#user-engine (user engine + realizer, through the env)."""

import numpy as np
import pytest

from hear2act_env.env import Hear2ActEnv
from hear2act_env.protocol.engine import ReplyKind
from hear2act_env.protocol.realizer import ACCEPTANCE_POOL

ASK, CLARIFY, RECOMMEND, CONFIRM = range(4)


def make(scenario, realization="prosody", **kw):
    env = Hear2ActEnv(realization=realization, access="T+S", scenarios=[scenario], **kw)
    obs, info = env.reset(seed=0)
    return env, info


def step(env, act, option=0, topic=0):
    obs, reward, term, trunc, info = env.step(np.array([act, option, topic]))
    user = obs["transcript"].rsplit("\nUser: ", 1)[-1] if not term else None
    return obs, reward, term, info, user


def option_with(info, predicate):
    return next(i for i, p in enumerate(info["truth"]["patterns"]) if predicate(p))


def topic_of(info, role):
    return info["truth"]["topics"].index(role) + 1


@pytest.mark.parametrize("realization", ["prosody", "explicit"])
def test_recommend_violating_requirement_is_rejected_with_restatement(scenario, realization):
    env, info = make(scenario, realization)
    before = info["truth"]["revealed"]
    o = option_with(info, lambda p: p[0] == "v")
    obs, _, _, info, user = step(env, RECOMMEND, o)
    assert info["truth"]["state"] == "rejection" and obs["state"] == 4
    assert scenario.requirement.restatement in user
    assert info["truth"]["revealed"] == before


@pytest.mark.parametrize("realization", ["prosody", "explicit"])
def test_recommend_violating_l1_is_rejected_with_hint(scenario, realization):
    env, info = make(scenario, realization)
    o = option_with(info, lambda p: p[:2] == "r0")
    _, _, _, info, user = step(env, RECOMMEND, o)
    assert info["truth"]["state"] == "rejection"
    assert scenario.needs[0].hint in user
    assert "L1" in info["truth"]["revealed"]


def test_recommend_violating_l2_explicit_states_it(scenario):
    env, info = make(scenario, "explicit")
    o = option_with(info, lambda p: p[:3] == "r10")
    _, _, _, info, user = step(env, RECOMMEND, o)
    assert info["truth"]["state"] == "concern"
    assert scenario.needs[1].statement in user
    assert "L2" in info["truth"]["revealed"]


def test_recommend_violating_l2_prosody_is_an_acceptance_line(scenario):
    env, info = make(scenario, "prosody")
    o = option_with(info, lambda p: p[:3] == "r10")
    _, _, _, info, user = step(env, RECOMMEND, o)
    assert info["truth"]["state"] == "concern" and info["truth"]["delivery"] == "concerned"
    assert user.split("\n")[0] in ACCEPTANCE_POOL
    assert "L2" not in info["truth"]["revealed"]


def test_recommend_violating_only_l3_explicit_is_qualified_assent(scenario):
    env, info = make(scenario, "explicit")
    o = option_with(info, lambda p: p == "r110")
    _, _, _, info, user = step(env, RECOMMEND, o)
    assert info["truth"]["state"] == "reluctant"
    assert scenario.needs[2].statement in user and user != scenario.needs[2].statement
    assert info["truth"]["delivery"] in ("underwhelmed", "lukewarm", "hesitant", "flat")


def test_recommend_violating_only_l3_prosody_is_an_acceptance_line(scenario):
    env, info = make(scenario, "prosody")
    o = option_with(info, lambda p: p == "r110")
    _, _, _, info, user = step(env, RECOMMEND, o)
    assert info["truth"]["state"] == "reluctant" and user in ACCEPTANCE_POOL
    assert info["truth"]["revealed"] == []


@pytest.mark.parametrize("realization", ["prosody", "explicit"])
def test_recommend_violating_nothing_is_resolved_acceptance(scenario, realization):
    env, info = make(scenario, realization)
    _, _, _, info, user = step(env, RECOMMEND, info["truth"]["best"])
    assert info["truth"]["state"] == "resolved" and user in ACCEPTANCE_POOL
    assert info["truth"]["delivery"] in ("satisfied", "warm", "enthusiastic", "relieved")


@pytest.mark.parametrize("level", [0, 1, 2])
def test_ask_need_attribute_gives_its_answer(scenario, level):
    env, info = make(scenario)
    _, _, _, info, user = step(env, ASK, topic=topic_of(info, f"L{level + 1}"))
    assert user == scenario.needs[level].ask_answer
    assert f"L{level + 1}" in info["truth"]["revealed"]
    assert (
        info["truth"]["state"] == "reluctant"
    )  # still the state of the current (attractive) option


def test_ask_requirement_and_favored_restate(scenario):
    env, info = make(scenario)
    if "requirement" in info["truth"]["topics"]:
        _, _, _, _, user = step(env, ASK, topic=topic_of(info, "requirement"))
        assert user == scenario.requirement.restatement
    if "favored" in info["truth"]["topics"]:
        _, _, _, _, user = step(env, ASK, topic=topic_of(info, "favored"))
        assert user == scenario.favored.restatement
    _, _, _, info, user = step(env, ASK, topic=topic_of(info, "distractor"))
    assert info["truth"]["reply"] == ReplyKind.ASK_DISTRACTOR.value
    assert info["truth"]["revealed"] == []


def test_ask_favored_when_distinct(flights_scenarios):
    s = next(x for x in flights_scenarios if x.favored.attribute != x.requirement.attribute)
    env, info = make(s)
    _, _, _, _, user = step(env, ASK, topic=topic_of(info, "favored"))
    assert user == s.favored.restatement


def test_open_question_reveals_highest_unrevealed_violated_need(scenario):
    env, info = make(scenario)
    o = option_with(info, lambda p: p == "r000")
    step(env, RECOMMEND, o)  # reveals L1 by its hint
    _, _, _, info, user = step(env, ASK, topic=0)
    assert scenario.needs[1].statement in user and "L2" in info["truth"]["revealed"]
    _, _, _, info, user = step(env, ASK, topic=0)
    assert scenario.needs[2].statement in user and info["truth"]["revealed"] == ["L1", "L2", "L3"]
    _, _, _, info, user = step(env, ASK, topic=0)  # all violated needs revealed: restate highest
    assert info["truth"]["reply"] == ReplyKind.OPEN_RESTATE.value
    assert scenario.needs[0].hint in user


def test_open_question_on_requirement_violator_restates_requirement(flights_scenarios):
    # a violator that meets every need (violators' need bits are drawn: not every scenario has one)
    scenario = next(
        s for s in flights_scenarios if any(s.pattern(c) == "v111" for c in s.candidates)
    )
    env, info = make(scenario)
    o = option_with(info, lambda p: p == "v111")
    step(env, RECOMMEND, o)
    _, _, _, info, user = step(env, ASK, topic=0)
    assert scenario.requirement.restatement in user


def test_open_question_on_fitting_option_covers_everything(scenario):
    env, info = make(scenario)
    step(env, RECOMMEND, info["truth"]["best"])
    _, _, _, info, _ = step(env, ASK, topic=0)
    assert info["truth"]["reply"] == ReplyKind.OPEN_NOTHING.value
    assert info["truth"]["revealed"] == []


def test_clarify_gives_l1_hint(scenario):
    env, info = make(scenario)
    _, _, _, info, user = step(env, CLARIFY)
    assert user == scenario.needs[0].hint
    assert info["truth"]["revealed"] == ["L1"] and info["truth"]["state"] == "reluctant"


def test_confirm_after_rejection_is_declined_and_episode_goes_on(scenario):
    env, info = make(scenario)
    step(env, RECOMMEND, option_with(info, lambda p: p[0] == "v"))
    obs, reward, term, info, user = step(env, CONFIRM)
    assert not term and reward == 0 and info["truth"]["state"] == "rejection"
    assert info["truth"]["reply"] == ReplyKind.CONFIRM_DECLINED.value
    assert info["final_option"] == -1


@pytest.mark.parametrize("target", ["best", "attractive"])
def test_confirm_ends_the_episode(scenario, target):
    env, info = make(scenario)
    option = info["truth"][target]
    step(env, RECOMMEND, option)
    obs, reward, term, info, _ = step(env, CONFIRM)
    assert term and info["final_option"] == option
    assert reward == (1.0 if target == "best" else 0.0)
    assert info["is_success"] is (target == "best")


def test_opening_is_attractive_with_a_reluctant_reaction(scenario):
    for realization in ("prosody", "explicit"):
        env, info = make(scenario, realization)
        assert info["last_turn"]["option"] == info["truth"]["attractive"]
        assert info["truth"]["state"] == "reluctant"
        assert ("L3" in info["truth"]["revealed"]) is (realization == "explicit")
