"""The numeric wrappers pass stable-baselines3's env checker and compute what they claim."""

import warnings

import numpy as np
import pytest
from stable_baselines3.common.env_checker import check_env

from hear2act_agents.rl.encoding import EncoderSpec, RLObservation, encode
from hear2act_agents.rl.envs import make_env, numeric_env
from hear2act_env.env import Hear2ActEnv
from hear2act_env.errors import ConfigError
from hear2act_env.speech.features import FEATURE_NAMES, prosodic_features
from hear2act_env.wrappers.prosody import ProsodyFeatures, ProsodyTracker
from hear2act_env.wrappers.structured import StructuredObservation
from tests.rl.stubs import ToneRenderer


def audio_env(**kw):
    return Hear2ActEnv(access="A+T", renderer=ToneRenderer(), audio_cache=False, **kw)


def check(env):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, warn=True, skip_render_check=True)
    # the (11, 4) "fit" box is not a 1-D vector (fine for MultiInputPolicy); nothing else
    unexpected = [str(w.message) for w in caught if "unconventional shape" not in str(w.message)]
    assert not unexpected, unexpected


@pytest.mark.parametrize("access", ["T", "T+S"])
def test_structured_and_rl_stack_pass_check_env(access):
    check(StructuredObservation(Hear2ActEnv(access=access, split="train")))
    check(make_env(access=access, split="train"))


def test_prosody_wrapper_passes_check_env_and_drops_raw_audio():
    env = ProsodyFeatures(StructuredObservation(audio_env(), keep_text=True))
    check(env)
    keys = set(env.observation_space.spaces)
    assert {"prosody", "prosody_delta"} <= keys
    assert not keys & {"audio", "audio_length", "transcript", "options", "domain"}
    check(make_env(access="A+T", split="train", renderer=ToneRenderer()))


def test_prosody_features_are_those_of_the_latest_turn_and_cached():
    raw = StructuredObservation(audio_env(), keep_text=True)
    env = ProsodyFeatures(raw, keep_audio=True, drop_text=False)
    obs, _ = env.reset(seed=1)
    first = prosodic_features(obs["audio"][: obs["audio_length"]])
    assert np.allclose(obs["prosody"], first) and not obs["prosody_delta"].any()
    obs, *_ = env.step(np.array([0, 0, 3]))
    now = prosodic_features(obs["audio"][: obs["audio_length"]])
    assert obs["prosody"].shape == (len(FEATURE_NAMES),) and obs["prosody"].dtype == np.float32
    assert np.allclose(obs["prosody"], now) and np.allclose(obs["prosody_delta"], now - first)
    misses = env.tracker.misses
    obs2, *_ = env.step(np.array([3, 0, 0]))  # confirm: no new user turn, same audio
    if obs2["audio_length"] == obs["audio_length"]:
        assert env.tracker.misses == misses and env.tracker.hits >= 1


def test_tracker_cache_is_keyed_by_the_samples():
    tracker = ProsodyTracker(cache_size=2)
    wave = ToneRenderer().render(
        type("U", (), {"text": "okay then", "delivery": "warm", "variation": 1})()
    )
    padded = np.zeros(len(wave) + 500, np.float32)
    padded[: len(wave)] = wave
    a = tracker.features(padded, len(wave))
    b = tracker.features(wave.copy(), len(wave))
    assert np.array_equal(a, b) and tracker.misses == 1 and tracker.hits == 1
    assert not tracker.features(np.zeros(100, np.float32), 100).any()


def test_prosody_wrapper_needs_audio():
    with pytest.raises(ConfigError):
        ProsodyFeatures(StructuredObservation(Hear2ActEnv(access="T")))


def test_encoding_layout_and_bounds():
    for access, size in (("T", 86 + 29), ("T+S", 86 + 29 + 5), ("A+T", 86 + 29 + 16)):
        spec = EncoderSpec.for_access(access)
        assert spec.size == size
    env = numeric_env(Hear2ActEnv(access="T+S", split="train"))
    obs, _ = env.reset(seed=0)
    spec = EncoderSpec.for_access("T+S")
    x = encode(obs, spec)
    assert x.shape == (spec.size,) and x.dtype == np.float32
    assert EncoderSpec.from_dict(spec.to_dict()) == spec
    assert EncoderSpec.for_access("T", derived=False).size == 86
    wrapped = RLObservation(env, spec)
    assert wrapped.observation_space.contains(wrapped.reset(seed=0)[0])


def test_shuffled_options_stay_consistent_with_the_env():
    from hear2act_agents.rl.envs import ShuffleOptions

    inner = numeric_env(Hear2ActEnv(access="T", split="train"))
    env = ShuffleOptions(inner)
    obs, info = env.reset(seed=4)
    assert sorted(env.perm) == list(range(11)) and not np.array_equal(env.perm, np.arange(11))
    plain = numeric_env(Hear2ActEnv(access="T", split="train")).reset(seed=4)[0]
    assert np.array_equal(obs["fit"], plain["fit"][env.perm])
    assert env.perm[obs["current"]] == plain["current"]
    shown = int(np.flatnonzero(obs["fit"][:, 0] > 0)[0])
    obs, _, _, _, info = env.step(np.array([2, shown, 0]))
    assert info["last_turn"]["option"] == env.perm[shown] and obs["current"] == shown


def test_budget_end_is_terminal_for_the_learner():
    env = make_env(access="T", split="train", max_actions=3)
    env.reset(seed=0)
    for _ in range(3):
        _, _, terminated, truncated, info = env.step(0)  # open questions
    assert terminated and not truncated and info["budget_end"]
    assert info["final_option"] >= 0


def test_state_onehot_passes_check_env_and_matches_the_state():
    from hear2act_env.wrappers import StateOneHot

    env = StateOneHot(StructuredObservation(Hear2ActEnv(access="T+S")))
    check(env)
    assert env.observation_space["state"].shape == (5,)
    base = StructuredObservation(Hear2ActEnv(access="T+S"))
    obs, _ = env.reset(seed=4)
    ref, _ = base.reset(seed=4)
    seen = set()
    for option in range(6):  # recommend options in turn: the state changes along the way
        assert obs["state"].dtype == np.float32 and obs["state"].sum() == 1.0
        assert int(np.argmax(obs["state"])) == int(ref["state"])
        seen.add(int(ref["state"]))
        obs, *_ = env.step(np.array([2, option, 0]))
        ref, *_ = base.step(np.array([2, option, 0]))
    assert len(seen) >= 2


def test_state_onehot_needs_a_state_key():
    from hear2act_env.wrappers import StateOneHot

    with pytest.raises(ConfigError, match="'state'"):
        StateOneHot(StructuredObservation(Hear2ActEnv(access="T")))
