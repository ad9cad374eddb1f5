"""The lexical view says only what the words said.

Twin scenarios differ only in L1's satisfying set (by a level no option holds): after the L1
hint alone, the lexical view (and the structured observation) must be the same for both.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hear2act_env import Hear2ActEnv
from hear2act_env.scenarios.bank import load_bank
from hear2act_env.wrappers.structured import StructuredObservation

RECOMMEND, ASK = 2, 0


def _twins():
    for s in load_bank():
        l1 = s.needs[0]
        col = s.attribute_index(l1.attribute)
        held = {c.values[col] for c in s.candidates}
        free = [v for v in range(len(s.attributes[col].levels)) if v not in held]
        free = [v for v in free if v not in l1.satisfied_by]
        if free and len(l1.satisfied_by) + 1 < len(s.attributes[col].levels):
            other = dataclasses.replace(l1, satisfied_by=(*l1.satisfied_by, free[0]))
            return s, dataclasses.replace(s, needs=(other, *s.needs[1:]))
    pytest.skip("no scenario with a free L1 level")


def _after_l1_hint(scenario):
    env = Hear2ActEnv(scenarios=[scenario])
    env.reset(seed=0)
    option = next(
        i for i, c in enumerate(scenario.candidates) if scenario.pattern(c).startswith("r0")
    )
    _, _, _, _, info = env.step(np.array([RECOMMEND, option, 0]))
    assert info["truth"]["reply"] == "reject_l1"
    return env, env.lexical_view(), option


def _comparable(view):
    return (view.known_needs, view.ruled_out, view.current, view.surface, view.asked)


def test_twins_look_the_same_after_the_hint():
    a, b = _twins()
    (ea, va, option), (eb, vb, _) = _after_l1_hint(a), _after_l1_hint(b)
    assert _comparable(va) == _comparable(vb)
    assert "L1" not in va.known_needs and "L1" in va.ruled_out
    column, levels = va.ruled_out["L1"]
    assert levels == {a.candidates[option].values[column]}
    oa = StructuredObservation(ea).observation({})
    ob = StructuredObservation(eb).observation({})
    assert all(np.array_equal(oa[k], ob[k]) for k in oa)


def test_structured_fit_marks_only_the_turned_down_value_until_the_answer():
    a, _ = _twins()
    env, _, option = _after_l1_hint(a)
    wrapped = StructuredObservation(env)
    obs = wrapped.observation({})
    col = a.attribute_index(a.needs[0].attribute)
    values = np.array([c.values[col] for c in a.candidates])
    rejected = values[option]
    assert (obs["fit"][:, 1] == np.where(values == rejected, -1.0, 0.0)).all()
    assert obs["revealed"][0] == 1
    topic = col + 1  # ask about L1's attribute: the answer names the satisfying levels
    env.step(np.array([ASK, 0, topic]))
    obs = wrapped.observation({})
    sat = set(a.needs[0].satisfied_by)
    assert (obs["fit"][:, 1] == np.where(np.isin(values, list(sat)), 1.0, -1.0)).all()
