"""The RL observations read what was said (and the voice with A), never the hidden needs or the
state unless S is granted."""

import numpy as np
import pytest

from hear2act_agents.rl.actions import CLARIFY, RECOMMEND, action_mask, to_env
from hear2act_agents.rl.encoding import EncoderSpec, encode
from hear2act_env.conditions import Access
from hear2act_env.env import Hear2ActEnv
from hear2act_env.scenarios.bank import load_bank
from hear2act_env.wrappers.prosody import ProsodyFeatures
from hear2act_env.wrappers.structured import StructuredObservation
from tests.rl.stubs import ToneRenderer, hidden_twin

SCENARIO = load_bank()[0]
TWIN = hidden_twin(SCENARIO)


def numeric(access, scenario, renderer=None):
    with_audio = Access.parse(access).audio
    kw = {"renderer": renderer, "audio_cache": False} if with_audio else {}
    env = Hear2ActEnv(realization="prosody", access=access, scenarios=[scenario], **kw)
    if with_audio:
        return ProsodyFeatures(StructuredObservation(env, keep_text=True))
    return StructuredObservation(env)


def actions_that_keep_l3_unsaid(seed):
    """Random actions except the open question, asking about L3's attribute and confirming."""
    l3_topic = 1 + SCENARIO.attribute_index(SCENARIO.needs[2].attribute)
    allowed = [i for i in range(1, 9) if i != l3_topic] + [CLARIFY] + list(range(RECOMMEND, 21))
    return np.random.default_rng(seed).choice(allowed, size=12)


def play_pair(access, seed, renderer=None):
    """Observations and true states of the same seeded actions in SCENARIO and its twin."""
    out = []
    for scenario in (SCENARIO, TWIN):
        env = numeric(access, scenario, renderer)
        obs, info = env.reset(seed=seed)
        trace = [(obs, info["truth"]["state"])]
        for i in actions_that_keep_l3_unsaid(seed):
            obs, _, term, trunc, info = env.step(to_env(i))
            trace.append((obs, info["truth"]["state"]))
            if term or trunc:
                break
        out.append(trace)
    return out


def equal(a, b, keys):
    return all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in keys)


@pytest.mark.parametrize("seed", range(4))
def test_text_observation_ignores_hidden_needs_and_state(seed):
    spec = EncoderSpec.for_access("T")
    a, b = play_pair("T", seed)
    assert len(a) == len(b)
    assert any(sa != sb for (_, sa), (_, sb) in zip(a, b)), "the twins must differ in state"
    for (oa, _), (ob, _) in zip(a, b):
        assert set(oa) == set(ob) and "state" not in oa
        assert equal(oa, ob, oa.keys())
        assert np.array_equal(encode(oa, spec), encode(ob, spec))
        assert np.array_equal(action_mask(oa), action_mask(ob))


def test_with_s_the_state_shows_and_only_there():
    a, b = play_pair("T+S", 1)
    assert any(int(oa["state"]) != int(ob["state"]) for (oa, _), (ob, _) in zip(a, b))
    for (oa, _), (ob, _) in zip(a, b):
        assert equal(oa, ob, [k for k in oa if k != "state"])


def test_audio_observation_depends_on_the_state_only_through_the_voice():
    # a voice that ignores the delivery: the twins are indistinguishable
    a, b = play_pair("A+T", 2, ToneRenderer(use_delivery=False))
    for (oa, _), (ob, _) in zip(a, b):
        assert equal(oa, ob, oa.keys())
    # a voice that carries the delivery: only the prosodic keys differ
    a, b = play_pair("A+T", 2, ToneRenderer(use_delivery=True))
    assert any(not equal(oa, ob, ["prosody"]) for (oa, _), (ob, _) in zip(a, b))
    for (oa, _), (ob, _) in zip(a, b):
        assert "state" not in oa and "audio" not in oa
        assert equal(oa, ob, [k for k in oa if not k.startswith("prosody")])


def test_without_s_no_key_is_a_function_of_the_state_tag():
    env = StructuredObservation(Hear2ActEnv(access="T+S"))
    spec = EncoderSpec.for_access("T")
    obs, _ = env.reset(seed=0)
    changed = dict(obs, state=(int(obs["state"]) % 4) + 1)
    assert np.array_equal(encode(obs, spec), encode(changed, spec))
    assert not np.array_equal(
        encode(obs, EncoderSpec.for_access("T+S")), encode(changed, EncoderSpec.for_access("T+S"))
    )
