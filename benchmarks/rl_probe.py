"""Linear probes on learned audio encoders (docs/results/rl.md, "Does the learned encoder hear it?").

    python benchmarks/rl_probe.py runs/rl/sweep/A+T-prosody-learned-c0.05-s0 [RUN ...] \
        [--per-scenario 6] [--json probe.json]

Fits the reference perceiver (8 prosodic features), untrained control encoders and each run's
encoder probe on the perception check's Prosody-mediated train-split clips and scores them on
its test-split clips (``hear2act_agents.rl.probe``); prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hear2act_agents.rl.probe import markdown, probe_encoders
from hear2act_env.scenarios.bank import load_bank
from hear2act_env.speech.bank_perception import collect_clips


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/rl_probe.py", description=__doc__)
    parser.add_argument("runs", nargs="*", help="run folders trained with --audio-encoder learned")
    parser.add_argument("--per-scenario", type=int, default=6, help="recommendations per scenario")
    parser.add_argument("--strength", type=float, default=1.0, help="prosody strength")
    parser.add_argument(
        "--train-stride", type=int, default=2, help="every k-th train scenario (as perceive)"
    )
    parser.add_argument("--controls", type=int, default=2, help="untrained control encoders")
    parser.add_argument("--json", default=None, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    bank = load_bank()
    train_split = [s for s in bank if s.split == "train"][:: args.train_stride]
    test_split = [s for s in bank if s.split == "test"]
    train = collect_clips(train_split, "prosody", args.strength, args.per_scenario, seed=1)
    test = collect_clips(test_split, "prosody", args.strength, args.per_scenario, seed=2)
    rows = probe_encoders(args.runs, train, test, control_seeds=range(args.controls))
    print(markdown(rows))
    print(
        f"\n{len(train)} train clips, {len(test)} test clips, {time.perf_counter() - start:.0f} s"
    )
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_dict() for r in rows], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
