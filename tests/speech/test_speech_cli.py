"""The speech commands and the inferred-state wrapper, end to end on small inputs."""

import wave

import numpy as np
import pytest

from hear2act_cli import main
from hear2act_env.env import Hear2ActEnv
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.runner import GridConfig
from hear2act_env.wrappers.inferred_state import InferredState


def test_demo_saves_wavs_per_label(tmp_path, capsys):
    assert main(["demo", "--seed", "1", "--save-audio", str(tmp_path)]) == 0
    files = sorted(tmp_path.glob("*.wav"))
    assert len(files) == 26 and {f.name.split("_")[0] for f in files} >= {
        "hesitant",
        "enthusiastic",
        "concerned",
    }
    with wave.open(str(files[0])) as fh:
        assert fh.getframerate() == 16000 and fh.getnchannels() == 1 and fh.getnframes() > 1000


def test_render_reports_counts(tmp_path, capsys):
    args = [
        "render",
        "--limit",
        "1",
        "--realizations",
        "prosody",
        "--audio-cache",
        str(tmp_path),
        "--workers",
        "1",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    n = int(out.split()[0])
    assert n > 100 and f"({n} newly rendered)" in out
    assert main(args) == 0  # everything is cached now
    assert "(0 newly rendered)" in capsys.readouterr().out


def test_inferred_state_reads_the_voice():
    env = InferredState(Hear2ActEnv(access="A+T", audio_cache=False))
    assert "audio" not in env.observation_space.spaces and "state" in env.observation_space.spaces
    agree = total = 0
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        for option in range(11):
            obs, *_, info = env.step(np.array([2, option, 0]))
            if info["truth"]["state"] in ("resolved", "reluctant", "concern"):
                total += 1
                agree += (obs["state"] == 1) == (info["truth"]["state"] == "resolved")
    assert total > 50 and agree / total > 0.8  # the reference perceiver hears the state


def test_inferred_condition_needs_audio():
    with pytest.raises(ConfigError, match="access must include A"):
        GridConfig(agents=("eager",), conditions=(("T", "inferred"),))


@pytest.mark.slow
def test_perceive_prints_accuracy_and_curve(capsys):
    assert (
        main(["perceive", "--curve", "0", "1", "--per-scenario", "3", "--train-stride", "4"]) == 0
    )
    out = capsys.readouterr().out
    assert "humans 0.92" in out and "strength 0.00" in out and "prosody" in out
