"""The sweep script's evaluation and report on two tiny runs, run as a user runs it."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib", reason="MaskablePPO needs sb3-contrib")

from hear2act_agents.rl.training import train, train_env  # noqa: E402
from hear2act_cli.rl import default_run_name  # noqa: E402

TINY = {"n_envs": 2, "n_steps": 64, "batch_size": 64, "n_epochs": 1, "eval_every": 64}
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "rl_sweep.py"


def sweep(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow  # a small sweep trained and evaluated: about 15 s
def test_sweep_evaluation_and_report(tmp_path):
    root = tmp_path / "sweep"
    for access in ("T", "T+S"):
        train(
            train_env(access=access, turn_cost=0.1),
            128,
            0,
            root / default_run_name(access, "prosody", 0.1, 0),
            progress=False,
            eval_episodes=1,
            **TINY,
        )
    assert "episodes in" in sweep("eval", "--root", str(root), "--runs", "1")
    names = {p.name for p in (root / "eval").glob("*.jsonl")}
    assert "prosody-T-c0.1-s0.jsonl" in names and "baselines-prosody-T+S-c0.1.jsonl" in names
    text = sweep("report", "--root", str(root), "--img", str(tmp_path / "img"))
    assert "| prosody | 0.1 | PPO(T) |" in text and "| prosody | 0.1 | PPO(T+S) |" in text
    assert "| prosody | 0.1 | PPO(T+S) - PPO(T) | 1 |" in text and "prober (T)" in text
    headline = text.split("\n\n")[1].splitlines()
    assert headline[0].startswith("| realization | turn cost | mean actions PPO(T) |")
    row = headline[2].split(" | ")  # no A+T run: its columns are '-'
    assert row[:2] == ["| prosody", "0.1"] and row[3] == "-" and row[5] == "-"
    assert (tmp_path / "img" / "rl_return_vs_turn_cost.png").is_file()
    assert (tmp_path / "img" / "rl_learning_curves.png").is_file()
    assert "immediate CONFIRM if resolved" in text
