"""Renderers by name: the env, the benchmark's audio grid and its perceiver."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import hear2act_env  # noqa: F401 - registers the ids
from hear2act_cli import main
from hear2act_env.conditions import Condition
from hear2act_env.config import EnvConfig, SpeechConfig
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.runner import GridConfig, run_grid
from hear2act_env.speech.features import FEATURE_NAMES
from hear2act_env.speech.renderers import RENDERERS, make_renderer

pytest.importorskip("espeakng_loader")


def test_short_names_and_module_specs():
    assert set(RENDERERS) >= {"espeak", "piper"}
    assert make_renderer("espeak").name == make_renderer(RENDERERS["espeak"]).name
    for bad in ("nonsense", "no_such_module_x:y", "os:getcwd", 3):
        with pytest.raises(ConfigError, match="renderer"):
            make_renderer(bad, "renderer")  # type: ignore[arg-type]


def test_env_takes_a_renderer_name_and_refuses_a_bad_one_at_construction():
    a = gym.make("Hear2Act-Prosody-v0", renderer="espeak", audio_cache=False)
    b = gym.make("Hear2Act-Prosody-v0", audio_cache=False)
    oa, _ = a.reset(seed=5)
    ob, _ = b.reset(seed=5)
    np.testing.assert_array_equal(oa["audio"], ob["audio"])
    for bad in ("nope", 123, object()):
        with pytest.raises(ConfigError, match="renderer"):
            gym.make("Hear2Act-Prosody-v0", renderer=bad)


def _saved_model(path, bias: float) -> str:
    n = len(FEATURE_NAMES)
    model = {
        "kind": "hear2act-logistic-v1",
        "feature_names": list(FEATURE_NAMES),
        "mean": [0.0] * n,
        "scale": [1.0] * n,
        "weights": [0.0] * n,
        "bias": bias,
        "l2": 1.0,
    }
    path.write_text(json.dumps(model))
    return str(path)


def test_the_grid_reads_the_voice_with_the_perceiver_it_is_given(tmp_path):
    # a perceiver that hears every reply as resolved makes the state-aware agent confirm the
    # opening (a 110 option) at once: it never succeeds; the shipped one mostly does
    deaf = _saved_model(tmp_path / "always-resolved.json", bias=50.0)
    common = dict(
        agents=("state-aware",),
        realizations=("prosody",),
        conditions=(Condition.parse("A+T/inferred"),),
        env=EnvConfig.from_kwargs(split="test", audio_cache=False),
    )
    fooled = run_grid(GridConfig(**common, perceiver=deaf), tmp_path / "a.jsonl", _agents())
    shipped = run_grid(GridConfig(**common), tmp_path / "b.jsonl", _agents())
    assert len(fooled) == len(shipped) == 96
    assert sum(r.success for r in fooled) == 0
    assert sum(r.success for r in shipped) > 48
    manifest = json.loads((tmp_path / "a.manifest.json").read_text())
    assert json.dumps(manifest).count("always-resolved.json") >= 1


def _agents():
    from hear2act_agents.registry import make_agent

    return make_agent


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--renderer", "nope"], "--renderer"),
        (["--renderer", "hear2act_env.speech.espeak:EspeakRenderer"], "--perceiver"),
        (["--perceiver", "/no/such/model.json"], "--perceiver"),
    ],
)
def test_benchmark_refuses_a_voice_it_cannot_read(tmp_path, capsys, argv, message):
    try:
        rc = main(["benchmark", "--out", str(tmp_path / "out"), "--no-plots", *argv])
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_each_shipped_renderer_is_read_with_its_own_shipped_perceiver():
    import argparse

    from hear2act_cli.evaluate import _voice_of
    from hear2act_env.speech.perception import LogisticModel
    from hear2act_env.speech.renderers import SHIPPED_PERCEIVERS

    for name, path in SHIPPED_PERCEIVERS.items():
        assert LogisticModel.load(path).feature_names == tuple(FEATURE_NAMES), name
    assert _voice_of(argparse.Namespace(renderer="espeak", perceiver=None)) == (
        SpeechConfig(),
        None,
    )
    pytest.importorskip("piper")
    voice, perceiver = _voice_of(argparse.Namespace(renderer="piper", perceiver=None))
    assert voice == SpeechConfig(renderer="piper")
    assert perceiver == "piper"  # a name in the manifest: portable across installs

    from hear2act_env.evaluation.runner import _perceiver_path

    assert _perceiver_path("piper") == str(SHIPPED_PERCEIVERS["piper"])
    assert _perceiver_path("my/model.json") == "my/model.json"
    assert _perceiver_path(None) is None
