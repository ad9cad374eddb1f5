import numpy as np

from hear2act_env.env import Hear2ActEnv
from hear2act_env.protocol.catalog import possible_turns


def test_every_turn_an_episode_produces_is_in_the_catalog():
    rng = np.random.default_rng(0)
    for realization in ("prosody", "explicit"):
        env = Hear2ActEnv(realization=realization)
        for episode in range(25):
            env.reset(seed=episode)
            catalog = set(possible_turns(env.scenario, realization))
            turns = [env._last_turn]
            for _ in range(20):
                action = rng.integers(0, [4, 11, 9])
                *_, term, trunc, _info = env.step(action)
                if term or trunc:
                    break
                turns.append(env._last_turn)
            for t in turns:
                assert (t.text, t.delivery, t.draw.variation) in catalog
