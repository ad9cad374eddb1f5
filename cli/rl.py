"""``hear2act train`` and ``hear2act rl-eval``: reinforcement learning (``pip install
"hear2act-env[rl]"``; stable-baselines3 and torch load only when a command runs)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hear2act_cli import options
from hear2act_cli.outputs import writable_dir
from hear2act_env.conditions import ACCESS, SPLIT_CHOICES
from hear2act_env.config import EnvConfig
from hear2act_env.errors import ConfigError
from hear2act_env.interrupts import Interrupted
from hear2act_env.protocol.engine import REALIZATIONS


def default_run_name(
    access: str, realization: str, turn_cost: float, seed: int, audio_encoder: str = "features"
) -> str:
    """Folder name of a run, e.g. ``prosody-T+S-c0.05-s0`` (``prosody-A+T-learned-c0.05-s0``
    with a learned audio encoder)."""
    encoder = "-learned" if audio_encoder == "learned" else ""
    return f"{realization}-{access}{encoder}-c{turn_cost:g}-s{seed}"


#: The largest ``--seed`` of ``train``: numpy and torch take an unsigned 32-bit seed.
MAX_TRAIN_SEED = 2**32 - 1
#: Upper bounds of ``train``'s sizes: far above any real run, low enough that a typo is
#: refused at once instead of training, or making environments, without end.
MAX_TIMESTEPS = 10**10
MAX_N_ENVS = 256
MAX_THREADS = 1024
MAX_EVAL_EPISODES = 100_000
#: ``train``'s options that name a path: an empty or blank one is refused, never read as the
#: current folder or as "not given".
_TRAIN_PATHS = ("out", "root", "scenario_file", "init_from", "tensorboard")


def _check_train_args(args: argparse.Namespace) -> None:
    """A ``ConfigError`` for a blank path option or a seed numpy cannot take."""
    options.refuse_blank_paths(args, _TRAIN_PATHS)
    if args.seed > MAX_TRAIN_SEED:
        raise ConfigError(
            f"--seed: got {args.seed}, expected an integer from 0 to {MAX_TRAIN_SEED}"
        )


def _train_env(args: argparse.Namespace) -> EnvConfig:
    """The env a ``train`` command's flags name, checked by ``EnvConfig``'s rules alone."""
    from hear2act_agents.rl.training import train_env

    env: dict[str, Any] = {
        "access": args.access,
        "realization": args.realization,
        "turn_cost": args.turn_cost,
        "split": args.split,
        "scenarios": args.scenario_file,
    }
    if args.max_actions is not None:
        env["max_actions"] = args.max_actions
    return train_env(**env)


def train(args: argparse.Namespace) -> int:
    from hear2act_agents.rl.training import train as train_run

    _check_train_args(args)
    env = _train_env(args)  # refused here, before any folder is made
    out = writable_dir(
        "--out" if args.out is not None else "--root",
        Path(args.out)
        if args.out is not None
        else Path(args.root)
        / default_run_name(
            args.access, args.realization, args.turn_cost, args.seed, args.audio_encoder
        ),
    )
    settings: dict[str, Any] = {
        "mask": not args.no_mask,
        "derived": not args.no_derived,
        "shuffle_options": not args.no_shuffle,
        "eval_every": args.eval_every,
        "eval_episodes": args.eval_episodes,
        "eval_split": args.eval_split,
        "vec": args.vec,
        "n_envs": args.n_envs,
        "torch_threads": args.threads,
        "audio_encoder": args.audio_encoder,
    }
    if args.init_from is not None:
        settings["init_from"] = args.init_from
    if args.tensorboard is not None:
        settings["tensorboard"] = args.tensorboard
    try:
        result = train_run(env, args.timesteps, args.seed, out, progress=not args.quiet, **settings)
    except (Interrupted, KeyboardInterrupt) as exc:
        raise Interrupted(
            str(exc) or "interrupted",
            resume=f"training stopped before the end; no model was saved in {out} (its "
            "progress.csv holds the rollouts so far): run the same command again to train anew",
        ) from None
    print(
        f"model: {result.model_path}  config: {result.config_path}  "
        f"curve: {result.progress_path}  wall: {result.wall_s:.0f} s"
    )
    return 0


def add_train(sub: argparse._SubParsersAction) -> None:
    from hear2act_agents.rl.training import DEFAULT_TURN_COST

    p = sub.add_parser(
        "train",
        help="train a PPO agent (stable-baselines3) on the train split",
        description="Train a MaskablePPO agent on the structured (+state, +prosody) view.",
    )
    p.add_argument("--access", default="T", choices=ACCESS, help="access condition (default: T)")
    p.add_argument(
        "--realization",
        default="prosody",
        choices=REALIZATIONS,
        help="prosody or explicit (default: prosody)",
    )
    p.add_argument(
        "--turn-cost",
        type=options.env_number("turn_cost"),
        default=DEFAULT_TURN_COST,
        help=f"reward subtracted per action (default: {DEFAULT_TURN_COST})",
    )
    p.add_argument(
        "--timesteps",
        type=options.int_in(1, MAX_TIMESTEPS),
        default=300_000,
        help="env steps to train (default: 300000)",
    )
    p.add_argument(
        "--seed", type=options.int_at_least(0), default=0, help="training seed (default: 0)"
    )
    p.add_argument(
        "--out",
        default=None,
        help="run folder (default: ROOT/<realization>-<access>-c<cost>-s<seed>)",
    )
    p.add_argument(
        "--root", default="runs/rl", help="parent of the default run folder (default: runs/rl)"
    )
    options.add_scenario_file(p)
    options.add_split(p, "train")
    p.add_argument(
        "--max-actions",
        type=options.int_at_least(1),
        default=None,
        help="action budget (default: 20)",
    )
    p.add_argument(
        "--n-envs",
        type=options.int_in(0, MAX_N_ENVS),
        default=0,
        help="parallel envs (default 0: 8 for text, 4 for audio)",
    )
    p.add_argument(
        "--vec",
        default="auto",
        choices=["auto", "dummy", "subproc"],
        help="vector env kind (default: auto)",
    )
    p.add_argument(
        "--threads",
        type=options.int_in(1, MAX_THREADS),
        default=1,
        help="torch threads (default: 1)",
    )
    p.add_argument(
        "--audio-encoder",
        default="features",
        choices=["features", "learned"],
        help="with audio: the 8 handcrafted prosodic features (default) or a convolutional "
        "encoder over log-mel spectrograms trained with the policy",
    )
    p.add_argument("--no-mask", action="store_true", help="plain PPO without action masks")
    p.add_argument("--no-derived", action="store_true", help="leave out the derived features")
    p.add_argument(
        "--no-shuffle", action="store_true", help="no option-order augmentation in training"
    )
    p.add_argument(
        "--init-from",
        default=None,
        help="warm start from a run folder whose observation is a prefix (e.g. T for A+T)",
    )
    p.add_argument(
        "--eval-every",
        type=options.int_at_least(1),
        default=10_000,
        help="steps between learning-curve evaluations (default: 10000)",
    )
    p.add_argument(
        "--eval-episodes",
        type=options.int_in(0, MAX_EVAL_EPISODES),
        default=100,
        help="episodes per learning-curve evaluation, 0 for none (default: 100)",
    )
    p.add_argument(
        "--eval-split",
        default="test",
        choices=SPLIT_CHOICES,
        help="split of the learning-curve evaluation (default: test)",
    )
    p.add_argument(
        "--tensorboard",
        default=None,
        metavar="DIR",
        help="also log SB3's figures and the hear2act/* metrics to TensorBoard in DIR "
        "(needs the tensorboard package; a CSV goes to RUN/sb3/ in any case)",
    )
    options.add_quiet(p)
    p.set_defaults(func=train)


def rl_eval(args: argparse.Namespace) -> int:
    from hear2act_agents.registry import agent_kind
    from hear2act_agents.rl.evaluation import evaluate_models
    from hear2act_cli import status
    from hear2act_env.evaluation.report import report

    options.refuse_blank_paths(args, ("out", "scenario_file"))
    writable_dir("--out", args.out)
    for name in args.baselines or ():  # an unknown agent stops here, not in every episode
        agent_kind(name)
    records = evaluate_models(
        args.models,
        args.out,
        split=args.split,
        runs=args.runs,
        realizations=args.realizations,
        access=args.access,
        turn_cost=args.turn_cost,
        scenario_file=args.scenario_file,
        baselines=tuple(args.baselines or ()),
        backend=args.backend,
        workers=args.workers,
        progress=not args.quiet,
    )
    if not records:
        raise ConfigError("rl-eval: no episodes were played")
    print(report(records, Path(args.out), plots=not args.no_plots))
    return status.of_records(records)


def add_rl_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rl-eval",
        help="evaluate trained RL models through the evaluation runner",
        description="Run saved models (run folders, model.zip files, shipped model names or "
        "ppo:PATH specs) on a split and report Success/Accept/FullFit, return and actions "
        "with bootstrap CIs.",
    )
    p.add_argument(
        "models", nargs="+", help="run folders, model.zip files, shipped names or ppo:PATH"
    )
    options.add_out(p, "runs/rl/eval", "results folder, resumed if present")
    options.add_split(p, "test")
    options.add_runs(p)
    options.add_realizations(p, None)
    options.add_access(p, None)
    p.add_argument(
        "--turn-cost",
        type=options.env_number("turn_cost"),
        default=None,
        help="turn cost (default: each model's own)",
    )
    options.add_scenario_file(p, "each model's training file")
    p.add_argument(
        "--baselines", nargs="+", default=None, help="rule agents to add (e.g. prober state-aware)"
    )
    options.add_backend(p, "serial", 1)
    options.add_no_plots(p)
    options.add_quiet(p)
    p.set_defaults(func=rl_eval)
