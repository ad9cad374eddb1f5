"""EnvConfig: one set of rules for every env setting, JSON round trips, old files still load."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import numpy as np
import pytest

import hear2act_env  # noqa: F401 - registers the ids
from hear2act_env.config import EnvConfig, SpeechConfig, stored_settings
from hear2act_env.env import Hear2ActEnv
from hear2act_env.errors import ConfigError, Hear2ActError
from hear2act_env.evaluation.runner import GridConfig, run_grid
from hear2act_env.registration import ENV_IDS


class _Voice:
    """A renderer object with a chosen sample rate (silence)."""

    name, version = "silence", "1"

    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate

    def render(self, utterance):
        return np.zeros(1600, np.float32)


BAD = [
    ({"realization": "loud"}, "realization"),
    ({"access": "S"}, "access"),
    ({"state_fidelity": "sometimes"}, "state_fidelity"),
    ({"allow_clarify": "no"}, "allow_clarify"),
    ({"turn_cost": True}, "turn_cost"),
    ({"turn_cost": -0.1}, "turn_cost"),
    ({"turn_cost": float("nan")}, "turn_cost"),
    ({"turn_cost": "0.05"}, "turn_cost"),
    ({"max_actions": 0}, "max_actions"),
    ({"max_actions": 2.5}, "max_actions"),
    ({"max_actions": True}, "max_actions"),
    ({"max_actions": 10**30}, "max_actions"),  # beyond any Discrete space
    ({"turn_cost": 10**400}, "turn_cost"),  # too large for a float
    ({"split": "dev"}, "split"),
    ({"scenario": ""}, "scenario"),
    ({"scenarios": 7}, "scenarios"),
    ({"render_mode": "human"}, "render_mode"),
    ({"prosody_strength": 2.5}, "prosody_strength"),
    ({"prosody_strength": True}, "prosody_strength"),
    ({"max_audio_seconds": 0}, "max_audio_seconds"),
    ({"max_audio_seconds": 121}, "max_audio_seconds"),
    ({"audio_cache": 3}, "audio_cache"),
    ({"renderer": 3}, "renderer"),
    ({"renderer": "nothing-like-a-renderer"}, "renderer"),
    ({"renderer": _Voice(22050)}, "22050"),
    ({"colour": "blue"}, "colour"),
]


@pytest.mark.parametrize("kwargs,named", BAD, ids=[str(k) for k, _ in BAD])
def test_one_rule_per_setting_wherever_it_comes_from(kwargs, named):
    """The same ConfigError (naming the field) from EnvConfig, gym.make and the env class."""
    for make in (
        lambda: EnvConfig.from_kwargs(**kwargs),
        lambda: gym.make("Hear2Act-Prosody-Text-v0", **kwargs),
        lambda: Hear2ActEnv(**kwargs),
    ):
        with pytest.raises(ConfigError, match=named) as info:
            make()
        assert isinstance(info.value, Hear2ActError)


def test_a_renderer_object_gets_the_sample_rate_check_a_name_gets():
    assert EnvConfig.from_kwargs(renderer=_Voice(16000)).speech.renderer.sample_rate == 16000
    with pytest.raises(ConfigError, match="renders at 22050 Hz, expected 16000"):
        Hear2ActEnv(access="A+T", renderer=_Voice(22050))


def test_json_round_trip_and_pickling():
    config = EnvConfig(access="A+T+S", turn_cost=0.05, max_actions=12, split="test").replace(
        renderer="piper", prosody_strength=0.5, audio_cache=False, max_audio_seconds=9
    )
    assert EnvConfig.from_json(config.to_json()) == config
    assert json.loads(config.to_json())["speech"]["renderer"] == "piper"
    assert pickle.loads(pickle.dumps(config)) == config
    with pytest.raises(ConfigError, match="unknown key"):
        EnvConfig.from_dict({**config.to_dict(), "extra": 1})
    with pytest.raises(ConfigError, match="speech: unknown key"):
        EnvConfig.from_dict({"speech": {"voice": "x"}})
    with pytest.raises(ConfigError, match="not valid JSON"):
        EnvConfig.from_json("{")


def test_what_json_cannot_hold_is_refused_by_name():
    written = EnvConfig.from_kwargs(renderer=_Voice(16000)).to_dict()["speech"]["renderer"]
    assert written == f"{__name__}:_Voice"  # its class, as a MODULE:NAME spec
    scenarios = Hear2ActEnv(split="test").scenarios[:2]
    with pytest.raises(ConfigError, match="scenarios"):
        EnvConfig(scenarios=scenarios).to_json()


def test_gym_make_builds_one_config_and_an_id_cannot_be_silently_overridden():
    env = gym.make("Hear2Act-Prosody-Text-v0", turn_cost=0.05, renderer="piper")
    assert env.unwrapped.config == EnvConfig(turn_cost=0.05).replace(renderer="piper")
    mine = EnvConfig(realization="explicit", access="T+S", turn_cost=0.2)
    assert gym.make("Hear2Act-Explicit-TextState-v0", config=mine).unwrapped.config == mine
    with pytest.raises(ConfigError, match="realization"):  # the id says explicit
        gym.make("Hear2Act-Explicit-TextState-v0", config=EnvConfig(access="T+S"))
    with pytest.raises(ConfigError, match="access"):
        gym.make("Hear2Act-Prosody-v0", config=EnvConfig(access="T"))
    with pytest.raises(ConfigError, match="config: got dict"):
        Hear2ActEnv(config={"turn_cost": 0.1})  # type: ignore[arg-type]


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_every_id_is_its_kwargs_as_a_config(env_id):
    env = gym.make(env_id)
    assert env.unwrapped.config == EnvConfig.from_kwargs(**ENV_IDS[env_id])


def test_same_config_same_episode():
    config = EnvConfig(split="test", turn_cost=0.05)
    a, b = Hear2ActEnv(config), Hear2ActEnv(EnvConfig.from_json(config.to_json()))
    obs_a, _ = a.reset(seed=3)
    obs_b, _ = b.reset(seed=3)
    assert obs_a["transcript"] == obs_b["transcript"] and obs_a["options"] == obs_b["options"]


def test_old_files_load_through_the_compatibility_reader():
    legacy = {
        "agents": ["prober"],
        "split": "test",
        "scenario_file": None,
        "env_kwargs": {"turn_cost": 0.05, "allow_clarify": False},
    }
    env = EnvConfig.from_stored(legacy)
    assert env == EnvConfig(split="test", turn_cost=0.05, allow_clarify=False)
    grid = GridConfig.from_dict({**legacy, "conditions": [["T", "correct"]], "runs": 1})
    assert grid.env == env and grid.split == "test"
    assert GridConfig.from_dict(grid.to_dict()) == grid
    with pytest.raises(ConfigError, match="env_kwargs"):
        EnvConfig.from_stored({"env_kwargs": [1]})
    settings, problems = stored_settings({"env_kwargs": {"access": "T", "turn_cost": 1}})
    assert settings == [("env_kwargs.turn_cost", "turn_cost", 1)]
    assert problems and "env_kwargs.access" in problems[0]


def test_the_grid_leaves_cell_settings_to_its_cells():
    with pytest.raises(ConfigError, match="env.access"):
        GridConfig(agents=("prober",), env=EnvConfig(access="T+S"))
    with pytest.raises(ConfigError, match="env: got dict"):
        GridConfig(agents=("prober",), env={"split": "test"})  # type: ignore[arg-type]


def test_a_run_resumes_over_a_manifest_written_before_envconfig(tmp_path):
    """An output folder of version 0.1.0 (flat manifest) resumes: nothing is run again, and a
    changed env setting is still refused."""
    sid = Hear2ActEnv(split="test").scenarios[0].id
    config = GridConfig(
        agents=("prober",),
        realizations=("prosody",),
        conditions=("T",),
        scenarios=(sid,),
        env=EnvConfig(split="test"),
    )
    out = tmp_path / "results.jsonl"
    first = run_grid(config, out, _agents, progress=False)
    manifest_path = out.with_suffix(".manifest.json")
    manifest = json.loads(manifest_path.read_text())
    env = manifest["config"].pop("env")
    manifest["config"].update(split=env["split"], scenario_file=None, env_kwargs={})
    manifest_path.write_text(json.dumps(manifest))
    again = run_grid(config, out, _agents, progress=False)
    assert [r.to_json() for r in again] == [r.to_json() for r in first]
    assert len(out.read_text().splitlines()) == 1
    assert "env" in json.loads(manifest_path.read_text())["config"]  # rewritten in today's form
    changed = GridConfig(
        agents=("prober",),
        realizations=("prosody",),
        conditions=("T",),
        scenarios=(sid,),
        env=EnvConfig(split="test", turn_cost=0.1),
    )
    with pytest.raises(ConfigError, match="env"):
        run_grid(changed, out, _agents, progress=False)


def _agents(name: str):
    from hear2act_agents.registry import make_agent

    return make_agent(name)


def test_speech_config_alone():
    assert SpeechConfig(audio_cache=True).audio_cache is True
    assert SpeechConfig(max_audio_seconds=1).max_audio_samples == 16000


def test_env_config_and_speech_config_are_exported_from_the_package():
    from hear2act_env.config import EnvConfig as Inner
    from hear2act_env.config import SpeechConfig as InnerSpeech

    assert hear2act_env.EnvConfig is Inner and hear2act_env.SpeechConfig is InnerSpeech
    assert {"EnvConfig", "SpeechConfig"} <= set(hear2act_env.__all__)


@pytest.mark.parametrize("cost", ["11", "100", "1e6"])
def test_turn_cost_flags_take_what_env_config_takes(cost):
    """One rule: a flag no longer caps the cost at 10 where EnvConfig takes any finite >= 0."""
    from hear2act_cli import build_parser

    for argv in (["train"], ["play", "--name", "x"], ["rl-eval", "some-model"]):
        args = build_parser().parse_args([*argv, "--turn-cost", cost])
        assert args.turn_cost == EnvConfig(turn_cost=float(cost)).turn_cost


@pytest.mark.parametrize("cost", ["-1", "nan", "inf", "1e400", "x"])
def test_turn_cost_flags_refuse_what_env_config_refuses(cost, capsys):
    from hear2act_cli import build_parser

    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["train", "--turn-cost", cost])
    assert info.value.code == 2 and "--turn-cost" in capsys.readouterr().err


def test_train_takes_the_env_rule_for_turn_cost_and_no_bool_for_a_number():
    pytest.importorskip("stable_baselines3")
    from hear2act_agents.rl.training import TrainConfig, train, train_env

    with pytest.raises(ConfigError, match="turn_cost"):
        train(train_env(turn_cost=True), timesteps=1, out_dir="/nonexistent-never-written")
    with pytest.raises(ConfigError, match="timesteps"):
        TrainConfig(timesteps=True)
    assert TrainConfig(env=train_env(turn_cost=1)).turn_cost == 1.0
    with pytest.raises(ConfigError, match="env: got dict|expected an EnvConfig|env"):
        TrainConfig(env=42)
    # training keeps only training fields: the env's settings are the env's
    with pytest.raises(TypeError):
        TrainConfig(access="T+S")
