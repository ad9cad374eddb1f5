"""Bank v4 dialogue (docs/protocol.md#user-engine): the user never says anything false about
the option at hand, restatements read as sentences, and the assistant asks in words."""

import dataclasses

import numpy as np
import pytest

from hear2act_env.env import Hear2ActEnv
from hear2act_env.protocol.catalog import possible_turns
from hear2act_env.protocol.engine import ReplyKind
from hear2act_env.protocol.realizer import assistant_line

ASK, CLARIFY, RECOMMEND, CONFIRM = range(4)
WANT = "Whatever I book has to let me check a suitcase."


@pytest.fixture
def v4(scenario):
    """The scenario with bank v4 words: a question per attribute and the L1 need's ``want``."""
    attributes = tuple(
        dataclasses.replace(a, ask=f"Does the {a.label} matter to you?")
        for a in scenario.attributes
    )
    l1 = dataclasses.replace(scenario.needs[0], want=WANT)
    return dataclasses.replace(scenario, attributes=attributes, needs=(l1, *scenario.needs[1:]))


def play(scenario, actions):
    env = Hear2ActEnv(realization="prosody", access="T+S", scenarios=[scenario])
    _, info = env.reset(seed=0)
    out = []
    for act in actions:
        obs, _, _, _, info = env.step(np.array(act))
        out.append((obs["transcript"].rsplit("\nUser: ", 1)[-1], info))
    return env, info, out


def test_clarify_on_an_option_that_meets_l1_says_the_need_not_a_complaint(v4):
    _, info, turns = play(v4, [(CLARIFY, 0, 0)])
    assert info["truth"]["patterns"][info["truth"]["attractive"]][1] == "1"  # meets L1
    user, info = turns[0]
    assert user == WANT and info["truth"]["reply"] == ReplyKind.CLARIFY_MET.value
    assert v4.needs[0].hint not in user


def test_clarify_on_an_option_that_fails_l1_says_the_need_too(v4):
    env = Hear2ActEnv(realization="prosody", access="T+S", scenarios=[v4])
    _, info = env.reset(seed=0)
    fails = next(i for i, p in enumerate(info["truth"]["patterns"]) if p[:2] == "r0")
    obs, *_ = env.step(np.array([RECOMMEND, fails, 0]))
    assert obs["transcript"].endswith(v4.needs[0].hint)  # the refusal says what is wrong
    obs, *_, info = env.step(np.array([CLARIFY, 0, 0]))
    # asked what they need, the user says the need, not the complaint again
    assert obs["transcript"].rsplit("\nUser: ", 1)[-1] == WANT
    assert info["truth"]["reply"] == ReplyKind.CLARIFY.value


def test_v4_acceptances_accept_and_unneeded_attributes_are_not_priorities(v4, scenario):
    from hear2act_env.protocol.realizer import ACCEPTANCE_POOL, ACCEPTANCE_POOL_V4, templates_for

    assert "Okay, got it." in ACCEPTANCE_POOL and "Okay, got it." not in ACCEPTANCE_POOL_V4
    assert templates_for(scenario, ReplyKind.ACCEPT) == ACCEPTANCE_POOL  # bank v3 unchanged
    assert templates_for(v4, ReplyKind.ACCEPT) == ACCEPTANCE_POOL_V4
    distractor = next(
        t + 1
        for t, a in enumerate(v4.attributes)
        if a.key not in {n.attribute for n in v4.needs}
        and a.key not in (v4.requirement.attribute, v4.favored.attribute)
    )
    _, _, turns = play(v4, [(ASK, 0, distractor)])
    assert turns[0][0] in templates_for(v4, ReplyKind.ASK_DISTRACTOR)
    assert "care" not in turns[0][0] and "mind" not in turns[0][0]


def test_a_bank_v3_scenario_keeps_its_dialogue(scenario):
    _, info, turns = play(scenario, [(CLARIFY, 0, 0), (ASK, 0, 1)])
    assert turns[0][0] == scenario.needs[0].hint
    assert info["truth"]["reply"] != ReplyKind.CLARIFY_MET.value
    assert assistant_line(scenario, ASK, 0, 1, True).startswith("What about ")


def test_the_assistant_asks_with_the_attribute_question(v4):
    for topic, attribute in enumerate(v4.attributes, 1):
        assert assistant_line(v4, ASK, 0, topic, True) == attribute.ask


def test_restatements_read_as_one_sentence(v4):
    env = Hear2ActEnv(realization="prosody", access="T+S", scenarios=[v4])
    _, info = env.reset(seed=0)
    fails = next(i for i, p in enumerate(info["truth"]["patterns"]) if p[:2] == "r0")
    env.step(np.array([RECOMMEND, fails, 0]))
    env.step(np.array([ASK, 0, 0]))  # the open question reveals (or restates) the L1 need
    obs, *_ = env.step(np.array([ASK, 0, 0]))  # asked again: restated
    user = obs["transcript"].rsplit("\nUser: ", 1)[-1]
    # restated to "anything else?", the L1 need is said as the need (its want), one sentence
    assert user in ("Like I said, w" + WANT[1:], "As I mentioned, w" + WANT[1:])


def test_every_turn_the_catalog_prerenders_is_one_the_engine_can_say(v4):
    texts = {t for t, _, _ in possible_turns(v4, "prosody")}
    assert WANT in texts
    assert not any(t.startswith(("Like I said. ", "As I mentioned. ")) for t in texts)
    assert v4.needs[0].hint not in texts  # the complaint is never said bare to a question


def test_old_scenario_files_keep_their_bytes(scenario):
    data = scenario.to_dict()
    assert "ask" not in data["attributes"][0] and "want" not in data["needs"][0]
    v4 = dataclasses.replace(
        scenario,
        attributes=tuple(dataclasses.replace(a, ask="Is it close?") for a in scenario.attributes),
    )
    assert type(scenario).from_dict(v4.to_dict()) == v4
    assert v4.bank_format == 4 and scenario.bank_format == 3


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Remember, it needs at least a 4.4-star rating.", "it needs at least a 4.4-star rating."),
        ("Just a reminder, nothing rated under 4 stars.", "nothing rated under 4 stars."),
        ("Remember: I'm only looking at free entry.", "I'm only looking at free entry."),
        ("That one is too far.", "that one is too far."),
        ("Remembering the fee matters.", "remembering the fee matters."),
        ("Just so you know, the fee matters.", "the fee matters."),
        ("Keep in mind: two bedrooms at least.", "two bedrooms at least."),
    ],
)
def test_a_restated_reminder_is_not_framed_twice(text, expected):
    from hear2act_env.protocol.realizer import _continued

    assert _continued(text) == expected
