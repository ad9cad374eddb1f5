"""Print scenarios for the reading protocol (docs/results/scenarios.md): each in full and one
episode that exercises every kind of user line.

``python -m tools.bank_v4.read --scenario-file F --seed S --n 20 [--split all]`` draws ``n``
scenario ids with ``seed`` and prints for each: the request, the 11 options, the hidden needs
(statement, want, hint), and an Explicit-realization episode: the opening, CLARIFY, a targeted
question on every attribute, the open question, a recommendation of every option, the open
question and CLARIFY again, and CONFIRM of the last option suggested.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from hear2act_env.env import Hear2ActEnv
from hear2act_env.scenarios.bank import load_scenarios

ASK, CLARIFY, RECOMMEND, CONFIRM = range(4)


def episode(scenario) -> str:
    """The transcript of the scripted episode on ``scenario``."""
    env = Hear2ActEnv(realization="explicit", access="T", scenarios=[scenario], max_actions=40)
    obs, _ = env.reset(seed=0)
    actions = [(CLARIFY, 0, 0)] + [(ASK, 0, t) for t in range(1, 9)] + [(ASK, 0, 0)]
    actions += [(RECOMMEND, o, 0) for o in range(11)] + [(ASK, 0, 0), (CLARIFY, 0, 0)]
    actions += [(CONFIRM, 0, 0)]  # on the last option suggested: taken, or declined
    for act in actions:
        obs, _, term, trunc, _ = env.step(np.array(act))
        if term or trunc:
            break
    return obs["transcript"]


def show(scenario) -> str:
    lines = [f"=== {scenario.id} ({scenario.split})", scenario.request, "", scenario.options_text()]
    lines.append("")
    for need in scenario.needs:
        lines.append(f"{need.level} on {need.attribute}: {need.statement}")
        lines.append(f"    want: {need.want or '-'} | hint: {need.hint}")
    lines += ["", episode(scenario), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenario-file", type=Path, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--n", type=int, default=20)
    args = parser.parse_args(argv)
    scenarios = load_scenarios(args.scenario_file)
    rng = np.random.default_rng(args.seed)
    picked = sorted(int(i) for i in rng.choice(len(scenarios), size=args.n, replace=False))
    print(f"seed {args.seed}: {[scenarios[i].id for i in picked]}\n")
    for i in picked:
        print(show(scenarios[i]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
