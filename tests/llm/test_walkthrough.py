"""The walk-through of docs/llm_agents.md, run as written against the fake server.

The ``bash {.walkthrough}`` block is read from the guide and every ``hear2act`` command in it
runs through ``hear2act_cli.main``; only what points at the real world changes: the
server's address and model name (the fake server's ``labeller``, an audio model that hears,
plays episodes and labels clips), two scenarios instead of 96, a 4-clip audit. So the guide's
commands, flags and files (the example run configs, the episode id of step 4) are what is
tested, and the walk ends in a leaderboard row with pass^3 and the model's row in the audit.
"""

from __future__ import annotations

import csv
import re
import shlex
from pathlib import Path

from hear2act_cli import main

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "llm_agents.md"
SCENARIOS = ["city-hotels-09", "airport-rides-09"]
MODEL, URL = "Qwen/Qwen2.5-Omni-7B", "http://127.0.0.1:8000/v1"


def walkthrough() -> list[str]:
    """The commands of the guide's walk-through block, continuation lines joined."""
    block = re.search(r"```bash \{\.walkthrough\}\n(.*?)\n```", GUIDE.read_text(), re.S)
    assert block, "docs/llm_agents.md has a ```bash {.walkthrough} block"
    text = block[1].replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_the_guide_walks_from_a_served_model_to_its_leaderboard_and_audit_rows(
    server, tmp_path, monkeypatch, capsys
):
    commands = walkthrough()
    assert commands[0] == f"vllm serve {MODEL} --port 8000"  # the one step outside hear2act
    monkeypatch.chdir(tmp_path)  # the run files' relative folders land here
    examples = tmp_path / "docs" / "examples"
    examples.mkdir(parents=True)
    for config in (ROOT / "docs" / "examples").glob("*.toml"):  # pointed at the fake server
        text = config.read_text().replace(URL, server).replace(MODEL, "labeller")
        (examples / config.name).write_text(text)
    (tmp_path / "prices.toml").write_text('["openai:labeller"]\nprompt = 0.05\ncompletion = 0.25\n')
    outputs = []
    for command in commands[1:]:
        argv = shlex.split(command.replace(URL, server).replace(MODEL, "labeller"))
        assert argv[0] == "hear2act", command
        if argv[1] == "eval":  # two scenarios instead of 96
            argv += ["--scenarios", *SCENARIOS, "--workers", "2"]
        if argv[1] == "audit" and "--model" in argv:
            argv += ["--clips", "4", "--audio-cache", str(tmp_path / "audio")]
        capsys.readouterr()
        assert main(argv[1:]) == 0, command
        outputs.append(capsys.readouterr().out)
    printed, _, _, episode, board, labelled, score = outputs
    assert "runs = 3" in printed and 'agents = ["openai:labeller"]' in printed
    assert "openai:labeller|prosody|A+T|correct|city-hotels-09|2" in episode
    # the leaderboard: one row, its T+S-hat column (the two-stage run) and pass^3
    rows = list(csv.DictReader((tmp_path / "runs" / "leaderboard" / "leaderboard.csv").open()))
    prosody = [r for r in rows if r.get("realization") == "prosody"]
    assert [r["model"] for r in prosody] == ["openai:labeller"], rows
    row = prosody[0]
    for column in ("success_t_pct", "pass^3_t_pct", "apt_minus_t_pp", "tpshat_self_minus_t_pp"):
        assert row[column] != "", column  # filled: T, pass^3, A+T and the two-stage T+S-hat
    assert row["tpshat_self_minus_t_n"] == row["pass^3_t_n"] == "6"  # 2 scenarios x 3 runs
    assert float(row["cost_usd"]) > 0 and row["errored"] == "0"
    assert "| pass^3 T |" in board and "| T+S-hat(self) - T |" in board
    # the audit: 4 clips labelled by the model, scored in its own column
    assert "labelled 4 clip(s) now, 4 of 4" in labelled
    assert "heard with the dialogue before each clip" in score
    assert "| Reference perceiver | openai:labeller (" in score
