"""The sweep's evaluation and report on two tiny runs (tables, paired differences, plots)."""

import pytest

pytest.importorskip("sb3_contrib", reason="MaskablePPO needs sb3-contrib")

from agents.rl.experiment import evaluate_sweep, report_sweep, run_name
from agents.rl.training import train

TINY = {"n_envs": 2, "n_steps": 64, "batch_size": 64, "n_epochs": 1, "eval_every": 64}


def test_sweep_evaluation_and_report(tmp_path):
    root = tmp_path / "sweep"
    for access in ("T", "T+S"):
        train(
            access,
            "prosody",
            0.1,
            128,
            0,
            root / run_name("prosody", access, 0.1, 0),
            progress=False,
            eval_episodes=1,
            **TINY,
        )
    records = evaluate_sweep(root, runs=1)
    assert records and all(r.error is None for r in records)
    agents = {r.key.agent for r in records}
    assert {"prober", "state-aware"} <= agents and sum(a.startswith("ppo:") for a in agents) == 2
    text = report_sweep(root, tmp_path / "img")
    assert "| prosody | 0.1 | PPO(T) |" in text and "| prosody | 0.1 | PPO(T+S) |" in text
    assert "| prosody | 0.1 | PPO(T+S) - PPO(T) | 1 |" in text and "prober (T)" in text
    headline = text.split("\n\n")[1].splitlines()
    assert headline[0].startswith("| realization | turn cost | mean actions PPO(T) |")
    row = headline[2].split(" | ")  # no A+T run: its columns are '-'
    assert row[:2] == ["| prosody", "0.1"] and row[3] == "-" and row[5] == "-"
    assert (tmp_path / "img" / "rl_return_vs_turn_cost.png").is_file()
    assert (tmp_path / "img" / "rl_learning_curves.png").is_file()
    assert "immediate CONFIRM if resolved" in text
