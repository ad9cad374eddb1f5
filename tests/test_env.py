import pickle
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hear2act_env
from hear2act_env import ENV_IDS, Hear2ActEnv
from hear2act_env.errors import ConfigError
from hear2act_env.wrappers import StructuredObservation

ASK, CLARIFY, RECOMMEND, CONFIRM = range(4)


def rollout(env, seed, actions):
    obs, info = env.reset(seed=seed)
    out = [(obs, info)]
    for a in actions:
        obs, r, term, trunc, info = env.step(np.array(a))
        out.append((obs, r, term, trunc, info))
        if term or trunc:
            break
    return out


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_gymnasium_check_env(env_id):
    env = gym.make(env_id).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a checker warning (e.g. obs not in its space) fails
        check_env(env, skip_render_check=False)


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_every_observation_is_in_the_space_without_casting(env_id):
    env = gym.make(env_id, disable_env_checker=True)
    env.action_space.seed(3)
    obs, _ = env.reset(seed=3)
    for _ in range(6):
        for key, space in env.observation_space.spaces.items():
            if isinstance(space, gym.spaces.Box):
                assert isinstance(obs[key], np.ndarray), (key, type(obs[key]))
            assert space.contains(obs[key]), key
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_sb3_check_env_on_structured_view(env_id):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3_check_env(StructuredObservation(gym.make(env_id).unwrapped), warn=True)
    # the (11, 4) "fit" box is not a 1-D vector (fine for MultiInputPolicy); nothing else
    unexpected = [str(w.message) for w in caught if "unconventional shape" not in str(w.message)]
    assert not unexpected


def test_make_with_module_prefix_without_prior_import():
    code = "import gymnasium as gym; e = gym.make('hear2act_env:Hear2Act-Prosody-Text-v0'); print(e.reset(seed=1)[0]['turn'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_import_is_light():
    code = "import sys, hear2act_env; print(sorted(m for m in ('torch','transformers','ray','torchaudio') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_same_seed_same_episode():
    actions = [
        (ASK, 0, 0),
        (RECOMMEND, 3, 0),
        (ASK, 0, 2),
        (CLARIFY, 0, 0),
        (RECOMMEND, 7, 0),
        (CONFIRM, 0, 0),
    ]
    a = rollout(gym.make("Hear2Act-Prosody-TextState-v0"), 11, actions)
    b = rollout(gym.make("Hear2Act-Prosody-TextState-v0"), 11, actions)
    assert [x[0] for x in a] == [x[0] for x in b]
    assert [x[-1] for x in a] == [x[-1] for x in b]
    c = rollout(gym.make("Hear2Act-Prosody-TextState-v0"), 12, actions)
    assert [x[0]["transcript"] for x in a] != [x[0]["transcript"] for x in c]


@pytest.mark.parametrize("realization", ["prosody", "explicit"])
def test_matched_rollouts_across_access_and_fidelity(realization):
    actions = [(ASK, 0, 0), (RECOMMEND, 2, 0), (ASK, 0, 5), (RECOMMEND, 9, 0), (ASK, 0, 0)]
    runs = []
    for access, fidelity in (
        ("T", "correct"),
        ("T+S", "correct"),
        ("T+S", "shuffled"),
        ("T+S", "none"),
    ):
        env = Hear2ActEnv(realization=realization, access=access, state_fidelity=fidelity)
        runs.append(rollout(env, 5, actions))
    transcripts = [[x[0]["transcript"] for x in run] for run in runs]
    assert all(t == transcripts[0] for t in transcripts)
    assert all(run[0][1]["scenario_id"] == runs[0][0][1]["scenario_id"] for run in runs)


def test_scenario_selection_and_split():
    env = Hear2ActEnv(split="test")
    ids = {env.reset(seed=s)[1]["scenario_id"] for s in range(40)}
    assert all(i.endswith(("-09", "-10")) for i in ids) and len(ids) > 3
    sid = next(iter(ids))
    assert Hear2ActEnv(scenario=sid).reset(seed=3)[1]["scenario_id"] == sid
    other = sorted(ids)[-1]
    assert env.reset(seed=0, options={"scenario": other})[1]["scenario_id"] == other


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"realization": "loud"}, "realization"),
        ({"access": "X"}, "access"),
        ({"state_fidelity": "random"}, "state_fidelity"),
        ({"max_actions": 0}, "max_actions"),
        ({"turn_cost": -1}, "turn_cost"),
        ({"split": "dev"}, "split"),
        ({"scenario": "nope-01"}, "scenario"),
        ({"render_mode": "human"}, "render_mode"),
        ({"scenarios": []}, "scenarios"),
        ({"prosody_strength": 3}, "prosody_strength"),
        ({"max_audio_seconds": 0}, "max_audio_seconds"),
    ],
)
def test_bad_arguments_name_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        Hear2ActEnv(**kwargs)


@pytest.mark.parametrize("access", ["A", "A+T", "A+T+S"])
def test_audio_observations(access):
    env = Hear2ActEnv(access=access, audio_cache=False)
    obs, info = env.reset(seed=6)
    n = int(obs["audio_length"])
    assert obs["audio"].dtype == np.float32 and obs["audio"].shape == (15 * 16000,)
    assert 16000 * 0.3 < n < 15 * 16000 and np.abs(obs["audio"][:n]).max() > 0.01
    assert not obs["audio"][n:].any()
    lines = obs["transcript"].splitlines()
    assert (
        lines[0].startswith("User: ") and "[user audio]" not in lines[0]
    )  # the request stays text
    assert (lines[-1] == "User: [user audio]") is (access == "A")
    assert ("state" in obs) is access.endswith("S")


def test_same_seed_same_waveform_bit_for_bit(tmp_path):
    a = Hear2ActEnv(access="A+T", audio_cache=tmp_path / "a")
    b = Hear2ActEnv(access="A+T", audio_cache=False)
    for env in (a, b):
        env.reset(seed=21)
    for action in ([0, 0, 0], [2, 3, 0], [0, 0, 2]):
        oa, ob = a.step(np.array(action))[0], b.step(np.array(action))[0]
        assert oa["audio"].tobytes() == ob["audio"].tobytes()
    c = Hear2ActEnv(access="A+T", audio_cache=tmp_path / "a")  # served from the disk cache
    oc = c.reset(seed=21)[0]
    assert oc["audio"].tobytes() == a.reset(seed=21)[0]["audio"].tobytes()


@pytest.mark.parametrize(
    "bad",
    [
        np.array([5, 0, 0]),
        np.array([2, 11, 0]),
        np.array([0, 0, 9]),
        np.array([-1, 0, 0]),
        [1, 2],
        "ask",
        None,
        np.array([0.5, 1, 1]),
    ],
)
def test_invalid_actions_cost_a_turn_and_change_nothing(bad):
    env = Hear2ActEnv(access="T+S")
    _, info0 = env.reset(seed=2)
    obs, r, term, trunc, info = env.step(bad)
    assert info["invalid_action"] and not term and not trunc and r == 0
    assert obs["turn"] == 1 and obs["transcript"].endswith(
        ("Sorry, I didn't catch that.", "Sorry?")
    )
    assert (
        info["truth"]["revealed"] == info0["truth"]["revealed"]
        and info["truth"]["state"] == info0["truth"]["state"]
    )
    obs, *_ = env.step(np.array([RECOMMEND, info["truth"]["best"], 0]))
    assert obs["state"] == 1


def test_clarify_invalid_for_spoken_assistants():
    env = Hear2ActEnv(allow_clarify=False)
    env.reset(seed=0)
    info = env.step(np.array([CLARIFY, 0, 0]))[-1]
    assert info["invalid_action"] and info["truth"]["revealed"] == []


def test_truncation_scores_current_recommendation():
    env = Hear2ActEnv(max_actions=3, turn_cost=0.1)
    _, info = env.reset(seed=4)
    best = info["truth"]["best"]
    results = [env.step(np.array(a)) for a in [(ASK, 0, 0), (ASK, 0, 1), (RECOMMEND, best, 0)]]
    _, r, term, trunc, info = results[-1]
    assert trunc and not term and info["final_option"] == best and info["is_success"]
    assert r == pytest.approx(0.9) and results[0][1] == pytest.approx(-0.1)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(np.array([ASK, 0, 0]))


def test_state_fidelity_interventions():
    actions = [(RECOMMEND, o, 0) for o in range(11)] + [(ASK, 0, 0)] * 4
    true = [x[-1]["truth"]["state"] for x in rollout(Hear2ActEnv(access="T+S"), 9, actions)]
    codes = {"resolved": 1, "reluctant": 2, "concern": 3, "rejection": 4}
    for fidelity, expect in (("none", 0), ("always_resolved", 1), ("always_unresolved", 2)):
        run = rollout(Hear2ActEnv(access="T+S", state_fidelity=fidelity), 9, actions)
        assert {x[0]["state"] for x in run} == {expect}
    run = rollout(Hear2ActEnv(access="T+S", state_fidelity="shuffled"), 9, actions)
    shown = [x[0]["state"] for x in run]
    assert shown != [codes[t] for t in true]
    correct = rollout(Hear2ActEnv(access="T+S"), 9, actions)
    assert [x[0]["state"] for x in correct] == [codes[t] for t in true]


def test_shuffled_shows_the_tag_of_a_uniformly_drawn_option():
    """Over seeds, the tag shown on the opening follows the scenario's option states (2 of 11
    resolved: best and safe), not the opening's own state (reluctant, never resolved)."""
    env = Hear2ActEnv(access="T+S", state_fidelity="shuffled", scenario="city-hotels-09")
    shown = [env.reset(seed=s)[0]["state"] for s in range(2000)]
    options = [int(x) for x in env.unwrapped._engine.facts.states]  # noqa: SLF001 - test oracle
    for code in set(options):
        expected = options.count(code) / len(options)
        assert abs(shown.count(code) / len(shown) - expected) < 0.035, code
    assert shown.count(1) > 0  # it can say "resolved" on the opening


def test_pickle_mid_episode_continues_identically():
    env = Hear2ActEnv(access="T+S")
    env.reset(seed=8)
    env.step(np.array([ASK, 0, 0]))
    clone = pickle.loads(pickle.dumps(env))
    for a in [(RECOMMEND, 4, 0), (ASK, 0, 0), (ASK, 0, 3)]:
        assert env.step(np.array(a))[0] == clone.step(np.array(a))[0]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_vector_envs_carry_text(kind):
    fns = [lambda: gym.make("Hear2Act-Prosody-Text-v0") for _ in range(2)]
    vec = (
        gym.vector.SyncVectorEnv(fns)
        if kind == "sync"
        else gym.vector.AsyncVectorEnv(fns, shared_memory=False)
    )
    obs, _ = vec.reset(seed=[3, 4])
    single = [gym.make("Hear2Act-Prosody-Text-v0").reset(seed=s)[0]["transcript"] for s in (3, 4)]
    assert list(obs["transcript"]) == single
    obs, *_ = vec.step(np.array([[ASK, 0, 0], [ASK, 0, 0]]))
    assert all(t.count("User:") == 3 for t in obs["transcript"])
    vec.close()


def test_render_ansi_has_state_tags():
    env = gym.make("Hear2Act-Explicit-Text-v0", render_mode="ansi")
    env.reset(seed=0)
    env.step(np.array([ASK, 0, 0]))
    text = env.render()
    assert "[reluctant/" in text and text.startswith("User: ")


def test_step_before_reset_raises():
    with pytest.raises(gym.error.ResetNeeded):
        Hear2ActEnv().step(np.array([0, 0, 0]))


def test_version_matches_the_distribution():
    from importlib.metadata import version

    assert hear2act_env.__version__ == version("hear2act-env")


def test_a_long_episode_keeps_the_transcript_within_its_space():
    """With a budget of 1,000 actions the dialogue outgrows the ``Text`` space: the
    observation keeps the request and the latest turns, and stays in the space."""
    import gymnasium as gym
    import numpy as np

    env = gym.make("Hear2Act-Prosody-Text-v0", max_actions=1000)
    obs, _ = env.reset(seed=0)
    first = obs["transcript"].splitlines()[0]
    for _ in range(400):
        obs, _, terminated, truncated, _ = env.step(np.array([0, 0, 0]))
        assert env.observation_space["transcript"].contains(obs["transcript"])
        if terminated or truncated:
            break
    lines = obs["transcript"].splitlines()
    assert lines[0] == first and "earlier lines not shown" in lines[1]
    assert len(obs["transcript"]) <= 32_768


AGENT_INFO = {"is_success", "final_option", "invalid_action", "last_turn", "scenario_id", "actions"}


def test_the_truth_sits_under_one_key_and_the_rest_is_what_an_agent_knows():
    env = Hear2ActEnv(access="T", scenario="city-hotels-09")
    _, info = env.reset(seed=0)
    assert set(info) == AGENT_INFO | {"truth"}
    assert set(info["last_turn"]) == {"act", "option", "topic"}
    assert {"state", "delivery", "reply", "revealed", "pattern", "best", "patterns"} <= set(
        info["truth"]
    )


@pytest.mark.parametrize("realization", ["prosody", "explicit"])
def test_info_outside_truth_cannot_tell_a_resolved_accept_from_a_reluctant_one(realization):
    """Recommend the best option (resolved) or one that misses only L2 (reluctant under
    prosody, a concern under explicit): apart from the option the agent itself named, every
    key an agent may read is the same; only ``truth`` differs."""
    seen = {}
    for target in ("best", "misses L2"):
        env = Hear2ActEnv(access="T", realization=realization, scenario="city-hotels-09")
        _, info = env.reset(seed=0)
        patterns = info["truth"]["patterns"]
        best = info["truth"]["best"]
        option = (
            best
            if target == "best"
            else patterns.index(next(p for p in patterns if p[0] == "r" and p[1:] == "101"))
        )
        _, _, _, _, info = env.step([2, option, 0])
        seen[target] = info
    visible = [{k: v for k, v in i.items() if k != "truth"} for i in seen.values()]
    for v in visible:
        v["last_turn"] = {k: x for k, x in v["last_turn"].items() if k != "option"}
    assert visible[0] == visible[1]
    assert seen["best"]["truth"]["state"] == "resolved"
    assert seen["misses L2"]["truth"]["state"] in ("reluctant", "concern")
