"""The RL experiment of docs/rl.md: what is the voice worth, as a function of the turn cost?

Three steps, each resumable (finished runs and episodes are skipped), run from the repository
root:

    python benchmarks/rl_sweep.py train  --root runs/rl/sweep --scenario-file runs/bank/bank.jsonl
    python benchmarks/rl_sweep.py eval   --root runs/rl/sweep --runs 5
    python benchmarks/rl_sweep.py report --root runs/rl/sweep --img docs/img

``train`` runs ``hear2act train`` once per (realization, access, turn cost) in subprocesses
(``--jobs`` at a time), logging to ``<run>/train.log``. ``eval`` plays every finished run on the
test split through the evaluation runner at its own turn cost (``--runs`` episodes per
scenario), plus the rule baselines prober (T) and state-aware (T+S) at the same costs.
``report`` prints the Markdown tables and draws the plots (``rl_sweep_report.py``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rl_sweep_report import ACCESSES, BASELINES, COSTS, REALIZATIONS, finished_runs, report_sweep

from hear2act_agents.rl.evaluation import evaluate_models
from hear2act_cli.rl import default_run_name as run_name
from hear2act_env.conditions import Access
from hear2act_env.evaluation.records import EpisodeRecord


# -- train ----------------------------------------------------------------------------------
def train_sweep(
    root: Path,
    realizations: Sequence[str],
    accesses: Sequence[str],
    costs: Sequence[float],
    timesteps: int,
    audio_timesteps: int,
    seed: int,
    jobs: int,
    scenarios: str | None,
    extra: Sequence[str] = (),
    audio_init: str | None = "T",
    chain_above: float | None = 0.05,
    audio_encoder: str = "features",
) -> None:
    """Train every missing run, ``jobs`` processes at a time.

    Warm starts (each waits for its source run):

    - with ``audio_init`` (an access condition, default T), each run with audio starts from
      that condition's run of the same realization, turn cost and seed (with
      ``audio_encoder="learned"`` too: that trains the learned-encoder arm of each audio
      access, in folders named ``...-learned-...``);
    - with ``chain_above`` (default 0.05), each text run whose turn cost is above it starts
      from the same condition's run at the next lower cost of ``costs`` (a cost curriculum:
      from scratch, PPO at high costs falls into the "confirm at once" local optimum).
    """
    todo: list[tuple[Path, list[str], Path | None]] = []
    for access in sorted(accesses, key=lambda a: Access.parse(a).audio):  # text runs first
        for realization in realizations:
            for cost in costs:
                with_audio = Access.parse(access).audio
                encoder = audio_encoder if with_audio else "features"
                out = root / run_name(realization, access, cost, seed, encoder)
                if (out / "model.zip").is_file():
                    continue
                steps = audio_timesteps if with_audio else timesteps
                cmd = [sys.executable, "-m", "hear2act_cli", "train", "--access", access]
                cmd += ["--realization", realization, "--turn-cost", f"{cost:g}"]
                cmd += ["--timesteps", str(steps), "--seed", str(seed), "--out", str(out)]
                if with_audio:
                    cmd += ["--audio-encoder", encoder]
                if scenarios:
                    cmd += ["--scenario-file", scenarios]
                needs = None
                lower = [c for c in sorted(costs) if c < cost]
                if with_audio and audio_init:
                    needs = root / run_name(realization, audio_init, cost, seed)
                elif chain_above is not None and cost > chain_above and lower:
                    needs = root / run_name(realization, access, lower[-1], seed)
                if needs is not None:
                    cmd += ["--init-from", str(needs)]
                todo.append((out, [*cmd, *extra], needs))
    running: list[tuple[Path, subprocess.Popen, Any]] = []
    print(f"{len(todo)} runs to train, {jobs} at a time", flush=True)
    while todo or running:
        ready = [t for t in todo if t[2] is None or (t[2] / "model.zip").is_file()]
        pending = {r[0] for r in running} | {t[0] for t in todo}
        blocked = [
            t
            for t in todo
            if t not in ready and t[2] not in pending and not (t[2] / "train.log").exists()
        ]
        for t in blocked:  # its source is not being trained (here or elsewhere): skip it
            print(f"skip {t[0].name}: no run {t[2]}", flush=True)
            todo.remove(t)
        while ready and len(running) < jobs:
            item = ready.pop(0)
            todo.remove(item)
            out, cmd, _ = item
            out.mkdir(parents=True, exist_ok=True)
            log = (out / "train.log").open("w", encoding="utf-8")
            print(f"start {out.name} (pid ", end="", flush=True)
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            print(f"{proc.pid})", flush=True)
            running.append((out, proc, log))
        time.sleep(5)
        for item in list(running):
            out, proc, log = item
            if proc.poll() is not None:
                log.close()
                running.remove(item)
                status = "done" if proc.returncode == 0 else f"FAILED ({proc.returncode})"
                print(f"{status} {out.name}", flush=True)


# -- evaluate -------------------------------------------------------------------------------
def evaluate_sweep(root: Path, runs: int, split: str = "test") -> list[EpisodeRecord]:
    """Evaluate every finished run (and the baselines) into ``root/eval``."""
    models = [str(p) for p in finished_runs(root)]
    return evaluate_models(
        models, root / "eval", split=split, runs=runs, baselines=tuple(BASELINES), progress=True
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/rl_sweep.py", description=__doc__)
    sub = parser.add_subparsers(dest="step", required=True)
    t = sub.add_parser("train", help="train the missing runs of the sweep")
    t.add_argument("--root", default="runs/rl/sweep")
    t.add_argument("--realizations", nargs="*", default=list(REALIZATIONS))
    t.add_argument("--access", nargs="*", default=list(ACCESSES))
    t.add_argument("--costs", nargs="*", type=float, default=list(COSTS))
    t.add_argument("--timesteps", type=int, default=200_000, help="text conditions")
    t.add_argument("--audio-timesteps", type=int, default=100_000, help="conditions with A")
    t.add_argument(
        "--audio-init",
        default="T",
        help="warm-start audio runs from this condition's run ('' = from scratch)",
    )
    t.add_argument("--seed", type=int, default=0)
    t.add_argument(
        "--audio-encoder",
        default="features",
        choices=["features", "learned"],
        help="how the audio runs hear (their run folders say -learned for a learned encoder)",
    )
    t.add_argument("--jobs", type=int, default=2)
    t.add_argument(
        "--scenario-file", default=None, help="a scenario file (default: the shipped bank)"
    )
    t.add_argument(
        "--chain-above",
        type=float,
        default=0.05,
        help="warm-start text runs above this cost from the next lower cost (negative: never)",
    )
    t.add_argument("extra", nargs=argparse.REMAINDER, help="after --: more 'train' options")
    e = sub.add_parser("eval", help="evaluate every finished run and the baselines")
    e.add_argument("--root", default="runs/rl/sweep")
    e.add_argument("--runs", type=int, default=5)
    e.add_argument("--split", default="test")
    r = sub.add_parser("report", help="tables (Markdown) and plots")
    r.add_argument("--root", default="runs/rl/sweep")
    r.add_argument("--img", default="docs/img")
    r.add_argument("--ablation", nargs="*", default=[], help="more run folders for the curves")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.step == "train":
        extra = [x for x in args.extra if x != "--"]
        train_sweep(
            root,
            args.realizations,
            args.access,
            args.costs,
            args.timesteps,
            args.audio_timesteps,
            args.seed,
            args.jobs,
            args.scenario_file,
            extra,
            args.audio_init or None,
            args.chain_above if args.chain_above >= 0 else None,
            args.audio_encoder,
        )
    elif args.step == "eval":
        records = evaluate_sweep(root, args.runs, args.split)
        print(f"{len(records)} episodes in {root / 'eval'}")
    else:
        print(report_sweep(root, Path(args.img), [Path(a) for a in args.ablation]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
