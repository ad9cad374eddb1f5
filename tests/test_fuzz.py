"""Property-based fuzz: random action sequences keep the protocol's invariants."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hear2act_env.env import Hear2ActEnv
from hear2act_env.protocol.engine import state_of_pattern

CODES = {"resolved": 1, "reluctant": 2, "concern": 3, "rejection": 4}
ENVS = {r: Hear2ActEnv(realization=r, access="T+S") for r in ("prosody", "explicit")}
actions = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 10), st.integers(0, 8)), min_size=1, max_size=30
)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    realization=st.sampled_from(["prosody", "explicit"]),
    acts=actions,
)
def test_invariants(seed, realization, acts):
    env = ENVS[realization]
    obs, info = env.reset(seed=seed)
    revealed = set(info["truth"]["revealed"])
    current = info["truth"]["attractive"]
    n = 0
    for act in acts:
        obs, reward, term, trunc, info = env.step(np.array(act))
        n += 1
        assert obs["turn"] == n <= 20
        assert set(info["truth"]["revealed"]) >= revealed  # revealed needs never shrink
        revealed = set(info["truth"]["revealed"])
        if act[0] == 2:
            current = act[1]
        pattern = info["truth"]["patterns"][current]
        assert info["truth"]["pattern"] == pattern
        assert CODES[info["truth"]["state"]] == int(state_of_pattern(pattern)) == obs["state"]
        assert reward in (0.0, 1.0)
        assert reward == 0.0 or (term or trunc)
        if term or trunc:
            assert info["final_option"] == current
            assert info["is_success"] == (current == info["truth"]["best"]) == (reward == 1.0)
            assert trunc == (not term and n == 20)
            break
        assert not info["is_success"] and info["final_option"] == -1
