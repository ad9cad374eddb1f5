"""argparse subcommands for RL: ``train`` and ``rl-eval`` (wired into ``hear2act`` by its CLI).

    add_train_parser(subparsers)     # hear2act train --access T+S --turn-cost 0.05 ...
    add_rl_eval_parser(subparsers)   # hear2act rl-eval runs/rl/x [runs/rl/y ...] --out ...
    add_rl_parsers(subparsers)       # both

Each handler returns an exit status; errors are ``ConfigError`` (a ``Hear2ActError``). The
module also runs on its own: ``python -m agents.rl.cli train ...``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from hear2act_env.env import ACCESS
from hear2act_env.errors import ConfigError, Hear2ActError
from hear2act_env.protocol.engine import REALIZATIONS

__all__ = [
    "add_rl_eval_parser",
    "add_rl_parsers",
    "add_train_parser",
    "default_run_name",
    "evaluate_models",
    "load_policy",
    "make_rl_agent",
]

DEFAULT_TURN_COST = 0.05  # kept equal to agents.rl.training.DEFAULT_TURN_COST (light import)


def load_policy(path: str | Path) -> Any:
    """The ``Policy`` of a saved run (see ``agents.rl.policy.load_policy``)."""
    from agents.rl.policy import load_policy as _load

    return _load(path)


def make_rl_agent(spec: str) -> Any:
    """An RL agent from ``ppo:PATH`` (see ``agents.rl.policy.make_rl_agent``)."""
    from agents.rl.policy import make_rl_agent as _make

    return _make(spec)


def default_run_name(access: str, realization: str, turn_cost: float, seed: int) -> str:
    """Folder name of a run, e.g. ``prosody-T+S-c0.05-s0``."""
    return f"{realization}-{access}-c{turn_cost:g}-s{seed}"


# -- train ----------------------------------------------------------------------------------
def _train(args: argparse.Namespace) -> int:
    from agents.rl.training import train

    out = (
        Path(args.out)
        if args.out
        else Path(args.root)
        / default_run_name(args.access, args.realization, args.turn_cost, args.seed)
    )
    options: dict[str, Any] = {
        "mask": not args.no_mask,
        "derived": not args.no_derived,
        "shuffle_options": not args.no_shuffle,
        "eval_every": args.eval_every,
        "eval_episodes": args.eval_episodes,
        "eval_split": args.eval_split,
        "split": args.split,
        "vec": args.vec,
        "n_envs": args.n_envs,
        "torch_threads": args.threads,
    }
    if args.scenarios:
        options["scenarios"] = args.scenarios
    if args.init_from:
        options["init_from"] = args.init_from
    if args.max_actions is not None:
        options["env_kwargs"] = {"max_actions": args.max_actions}
    result = train(
        args.access,
        args.realization,
        args.turn_cost,
        args.timesteps,
        args.seed,
        out,
        progress=not args.quiet,
        **options,
    )
    print(
        f"model: {result.model_path}  config: {result.config_path}  "
        f"curve: {result.progress_path}  wall: {result.wall_s:.0f} s"
    )
    return 0


def add_train_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``train``: one (Maskable)PPO run, saved as model.zip + config.json."""
    p = subparsers.add_parser(
        "train",
        help="train a PPO agent (stable-baselines3) on the train split",
        description="Train a MaskablePPO agent on the structured (+state, +prosody) view.",
    )
    p.add_argument("--access", default="T", choices=list(ACCESS), help="default: T")
    p.add_argument("--realization", default="prosody", choices=list(REALIZATIONS))
    p.add_argument(
        "--turn-cost",
        type=float,
        default=DEFAULT_TURN_COST,
        help=f"reward per action (default {DEFAULT_TURN_COST})",
    )
    p.add_argument("--timesteps", type=int, default=300_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--out",
        default=None,
        help="run folder (default: ROOT/<realization>-<access>-c<cost>-s<seed>)",
    )
    p.add_argument("--root", default="runs/rl", help="parent of the default run folder")
    p.add_argument("--scenarios", default=None, help="a scenario file instead of the shipped bank")
    p.add_argument("--split", default="train", choices=["train", "test", "all"])
    p.add_argument("--max-actions", type=int, default=None, help="action budget (default 20)")
    p.add_argument("--n-envs", type=int, default=0, help="parallel envs (0: 8 text, 4 audio)")
    p.add_argument("--vec", default="auto", choices=["auto", "dummy", "subproc"])
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
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
    p.add_argument("--eval-every", type=int, default=10_000)
    p.add_argument("--eval-episodes", type=int, default=100, help="0: no learning-curve eval")
    p.add_argument("--eval-split", default="test", choices=["train", "test", "all"])
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_train)
    return p


# -- rl-eval --------------------------------------------------------------------------------
def evaluate_models(
    models: list[str],
    out: str | Path,
    split: str = "test",
    runs: int = 1,
    realizations: list[str] | None = None,
    access: list[str] | None = None,
    turn_cost: float | None = None,
    scenarios: str | None = None,
    baselines: tuple[str, ...] = (),
    backend: str = "serial",
    workers: int = 1,
    progress: bool = True,
) -> list[Any]:
    """Play each model through ``run_grid``, by default in its own realization, access and
    turn cost; with ``baselines``, also those rule agents in T and T+S at each model's
    (realization, turn cost).

    Each model's episodes go to ``out/<run folder name>.jsonl`` and each baseline cell to
    ``out/baselines-<realization>-<access>-c<cost>.jsonl`` (resumable); returns every record.
    """
    from agents.rl.policy import agent_factory, resolve_run
    from hear2act_env.evaluation.runner import GridConfig, run_grid

    out = Path(out)
    records: list[Any] = []
    cells: set[tuple[str, str, float, str | None]] = set()

    def grid(agents: tuple[str, ...], realization: str, acc: str, cost: float, scen, path):
        kwargs: dict[str, Any] = {"turn_cost": cost}
        if "A" in acc:
            kwargs["audio_cache"] = False
        config = GridConfig(
            agents=agents,
            realizations=(realization,),
            conditions=((acc, "correct"),),
            split=split,
            runs=runs,
            env_kwargs=kwargs,
            scenario_file=scen,
        )
        return run_grid(
            config, path, agent_factory, backend=backend, workers=workers, progress=progress
        )

    for m in models:
        path = m.partition(":")[2] if m.startswith(("ppo:", "rl:", "maskable-ppo:")) else m
        model_path, config_path = resolve_run(path)
        run = json.loads(config_path.read_text(encoding="utf-8"))["config"]
        cost = float(run["turn_cost"] if turn_cost is None else turn_cost)
        scen = scenarios if scenarios is not None else training_scenarios(config_path)
        for r in realizations or [run["realization"]]:
            for a in access or [run["access"]]:
                name = model_path.parent.name
                if realizations or access or turn_cost is not None:
                    name += f"@{r}-{a}-c{cost:g}"
                records += grid((f"ppo:{path}",), r, a, cost, scen, out / f"{name}.jsonl")
                cells.add((r, a, cost, scen))
    if baselines:
        for r, cost, scen in sorted({(r, c, s) for r, _, c, s in cells}, key=str):
            for a in ("T", "T+S"):
                path = out / f"baselines-{r}-{a}-c{cost:g}.jsonl"
                records += grid(tuple(baselines), r, a, cost, scen, path)
    return records


def training_scenarios(config_path: Path) -> str | None:
    """The scenario file a run was trained on, for evaluating it: None (the packaged bank)
    when the run's recorded checksum is the packaged bank's (wherever its copy was), else the
    recorded path, which must exist."""
    from hear2act_env.scenarios.bank import bank_checksum

    saved = json.loads(config_path.read_text(encoding="utf-8"))
    path = saved["config"].get("scenarios")
    if path is None or saved.get("scenarios_sha256") == bank_checksum():
        return None
    if Path(path).is_file():
        return path
    raise ConfigError(
        f"{config_path}: the run was trained on {path!r}, which is not here and is not the "
        "packaged bank; pass --scenarios with that file"
    )


def _rl_eval(args: argparse.Namespace) -> int:
    from hear2act_env.evaluation.report import report

    records = evaluate_models(
        args.models,
        args.out,
        split=args.split,
        runs=args.runs,
        realizations=args.realizations,
        access=args.access,
        turn_cost=args.turn_cost,
        scenarios=args.scenarios,
        baselines=tuple(args.baselines or ()),
        backend=args.backend,
        workers=args.workers,
        progress=not args.quiet,
    )
    if not records:
        raise ConfigError("rl-eval: no episodes were played")
    print(report(records, Path(args.out), plots=not args.no_plots))
    return 0


def add_rl_eval_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``rl-eval``: evaluate trained models through the runner, with a report."""
    p = subparsers.add_parser(
        "rl-eval",
        help="evaluate trained RL models through the evaluation runner",
        description="Play saved models (run folders, model.zip files or ppo:PATH specs) on a "
        "split and report Success/Accept/FullFit, return and actions with bootstrap CIs.",
    )
    p.add_argument("models", nargs="+", help="run folders, model.zip files or ppo:PATH")
    p.add_argument("--out", default="runs/rl/eval", help="results folder (resumes if present)")
    p.add_argument("--split", default="test", choices=["train", "test", "all"])
    p.add_argument("--runs", type=int, default=1, help="episodes per scenario")
    p.add_argument("--realizations", nargs="*", choices=list(REALIZATIONS), default=None)
    p.add_argument("--access", nargs="*", choices=list(ACCESS), default=None)
    p.add_argument("--turn-cost", type=float, default=None, help="default: each model's own")
    p.add_argument("--scenarios", default=None, help="default: each model's training file")
    p.add_argument("--baselines", nargs="*", help="rule agents to add (e.g. prober state-aware)")
    p.add_argument("--backend", default="serial", choices=["serial", "thread", "process", "ray"])
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_rl_eval)
    return p


def add_rl_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Register every RL subcommand."""
    add_train_parser(subparsers)
    add_rl_eval_parser(subparsers)


def main(argv: list[str] | None = None) -> int:
    """``python -m agents.rl.cli {train,rl-eval} ...``."""
    parser = argparse.ArgumentParser(prog="python -m agents.rl.cli", description=__doc__)
    add_rl_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except Hear2ActError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
