"""The ``hear2act`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym

from hear2act_env.errors import ConfigError, Hear2ActError
from hear2act_env.registration import ENV_IDS


def _demo(args: argparse.Namespace) -> int:
    from agents.registry import make_agent
    from hear2act_env.evaluation.rollout import play, wrap_for

    policy = make_agent(args.agent)
    env = wrap_for(gym.make(args.env, render_mode="ansi", disable_env_checker=True), policy)
    rollout = play(env, policy, seed=args.seed, scenario=args.scenario)
    last = rollout.infos[-1]
    print(f"# {args.env}  scenario {last['scenario_id']}  agent {policy.name}  seed {args.seed}")
    print(env.render())
    final = last["final_option"]
    print(
        f"final option: {final + 1 if final is not None else None}  "
        f"best: {last['truth']['best'] + 1}  success: {last['is_success']}  "
        f"actions: {last['actions']}  revealed: {', '.join(last['revealed']) or 'none'}"
    )
    return 0


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="play one seeded episode and print the transcript with state tags"
    )
    p.add_argument("--env", default="Hear2Act-Prosody-Text-v0", choices=sorted(ENV_IDS))
    p.add_argument("--agent", default="prober", help="a baseline agent name (default: prober)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scenario", default=None, help="a scenario id (default: drawn with the seed)")
    p.set_defaults(func=_demo)


def _scenarios(args: argparse.Namespace) -> int:
    from hear2act_env.scenarios import bank
    from hear2act_env.scenarios.show import describe_scenario, domain_table

    if args.action == "validate":
        scenarios = bank.load_scenarios(args.path)
        print(f"ok: {args.path}: {len(scenarios)} valid scenarios")
        return 0
    if args.action == "build":
        digest = bank.write_bank(bank.build_bank())
        print(f"wrote {bank.BANK_PATH} (sha256 {digest})")
        return 0
    scenarios = bank.load_scenarios(args.path) if args.path else bank.load_bank()
    if args.action == "list":
        print(domain_table(scenarios))
    elif args.action == "show":
        by_id = {s.id: s for s in scenarios}
        if args.id not in by_id:
            raise ConfigError(f"id: no scenario {args.id!r}; try 'hear2act scenarios list'")
        print(describe_scenario(by_id[args.id]))
    else:
        from hear2act_env.scenarios.export import export_bank

        for path in export_bank(scenarios, Path(args.out), args.format):
            print(f"wrote {path}")
    return 0


def _add_scenarios(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scenarios", help="list, show, validate or export scenarios")
    actions = p.add_subparsers(dest="action", required=True)
    ls = actions.add_parser("list", help="domains with their counts and splits")
    ls.add_argument("--path", default=None, help="a scenario file instead of the shipped bank")
    show = actions.add_parser("show", help="one scenario with roles and patterns")
    show.add_argument("id")
    show.add_argument("--path", default=None)
    val = actions.add_parser("validate", help="check a JSON/JSONL scenario file")
    val.add_argument("path")
    exp = actions.add_parser(
        "export", help="export the bank as JSONL or a Hugging Face dataset folder"
    )
    exp.add_argument("--format", choices=["jsonl", "hf"], default="jsonl")
    exp.add_argument("--out", required=True, help="output file (jsonl) or folder (hf)")
    exp.add_argument("--path", default=None)
    actions.add_parser(
        "build", help="regenerate the shipped bank from the domain files (maintainers)"
    )
    p.set_defaults(func=_scenarios)


def _benchmark(args: argparse.Namespace) -> int:
    from agents.registry import AGENTS, make_agent
    from hear2act_env.evaluation.report import report
    from hear2act_env.evaluation.runner import TEXT_CONDITIONS, GridConfig, run_grid

    out = Path(args.out)
    config = GridConfig(
        agents=tuple(args.agents or AGENTS),
        conditions=TEXT_CONDITIONS,
        split=args.split,
        runs=args.runs,
    )
    records = run_grid(
        config, out / "results.jsonl", make_agent, backend=args.backend, workers=args.workers
    )
    print(report(records, out, plots=not args.no_plots))
    print(f"\nresults: {out / 'results.jsonl'}; tables and plots: {out}/")
    return 0


def _add_benchmark(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("benchmark", help="run the baselines over the scenario bank and report")
    p.add_argument("--out", default="hear2act-benchmark", help="output folder (resumes if present)")
    p.add_argument("--agents", nargs="*", help="agent names (default: every baseline)")
    p.add_argument("--split", default="all", choices=["train", "test", "all"])
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--backend", default="process", choices=["serial", "thread", "process", "ray"])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=_benchmark)


def _report(args: argparse.Namespace) -> int:
    from hear2act_env.evaluation.report import report
    from hear2act_env.evaluation.runner import load_records

    records = load_records(args.results)
    if not records:
        raise ConfigError(f"results: no records in {args.results}")
    out = Path(args.out) if args.out else Path(args.results).parent
    print(report(records, out, plots=not args.no_plots))
    return 0


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="tables, CSV and plots from a results JSONL")
    p.add_argument("results")
    p.add_argument(
        "--out", default=None, help="folder for CSV and PNG (default: beside the results)"
    )
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=_report)


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_demo,
    _add_scenarios,
    _add_benchmark,
    _add_report,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``hear2act``."""
    parser = argparse.ArgumentParser(
        prog="hear2act", description="Hear2Act benchmark environment tools"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hear2act`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except Hear2ActError as exc:
        print(f"hear2act: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
