"""``hear2act scenarios``: list, show, validate, export and build scenario banks, and measure
what a bank leaks to an agent that never asks (``leakage``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hear2act_cli import options
from hear2act_cli.outputs import writable_dir, writable_file
from hear2act_env import safewrite
from hear2act_env.errors import ConfigError


def run(args: argparse.Namespace) -> int:
    from hear2act_env.scenarios import bank
    from hear2act_env.scenarios.show import describe_scenario, domain_table

    options.refuse_blank_paths(args, ("scenario_file", "out", "json", "domains"))
    if args.action == "validate":
        scenarios = bank.load_scenarios(args.path)
        print(f"ok: {args.path}: {len(scenarios)} valid scenarios")
        return 0
    if args.action == "build":
        digest = bank.write_bank(bank.build_bank())
        print(f"wrote {bank.BANK_PATH} (sha256 {digest})")
        return 0
    if args.action == "leakage":
        return leakage(args)
    scenarios = bank.load_scenarios(args.scenario_file) if args.scenario_file else bank.load_bank()
    if args.action == "list":
        print(domain_table(scenarios))
    elif args.action == "show":
        by_id = {s.id: s for s in scenarios}
        if args.id not in by_id:
            raise ConfigError(f"id: no scenario {args.id!r}; try 'hear2act scenarios list'")
        print(describe_scenario(by_id[args.id]))
    else:
        from hear2act_env.scenarios.export import export_bank

        out = _export_target(args.out, args.format)
        for path in export_bank(scenarios, out, args.format):
            print(f"wrote {path}")
    return 0


def _export_target(out: str, fmt: str) -> Path:
    """``--out`` checked before the export: a writable file (jsonl), or a writable folder whose
    ``data/train.jsonl``, ``data/test.jsonl`` and ``README.md`` can be written (hf)."""
    if fmt == "jsonl":
        return writable_file("--out", out)
    folder = writable_dir("--out", out)
    for name in ("data/train.jsonl", "data/test.jsonl", "README.md"):
        writable_file("--out", folder / name)
    return folder


def leakage(args: argparse.Namespace) -> int:
    """Run the prior-only attackers against a bank; exit 1 when a figure is above its limit."""
    import json

    from hear2act_env.scenarios import bank
    from hear2act_env.scenarios.leakage import run_audit

    source = args.scenario_file
    scenarios = bank.load_scenarios(source) if source else bank.load_bank()
    if args.json:
        writable_file("--json", args.json)
    report = run_audit(
        scenarios,
        bank=source or "the shipped bank",
        episode_env=None if args.no_episodes else text_env_factory(source or scenarios),
        semantic=not args.no_semantic,
        domains=args.domains,
    )
    print(report.table())
    if args.json:
        safewrite.write_text(args.json, json.dumps(report.to_dict(), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 1 if report.violations() else 0


def text_env_factory(scenarios: object):  # noqa: ANN201 - a zero-argument env factory
    """A factory of ``Hear2Act-Prosody-Text-v0`` envs over ``scenarios`` (a scenario file or
    a list of scenarios): what ``run_audit`` runs its zero-question episodes on."""

    def make():  # noqa: ANN202
        import gymnasium as gym

        import hear2act_env  # noqa: F401 - registers the ids

        return gym.make("Hear2Act-Prosody-Text-v0", scenarios=scenarios, disable_env_checker=True)

    return make


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scenarios", help="list, show, validate, export or build scenarios; measure bank leakage"
    )
    actions = p.add_subparsers(dest="action", required=True)
    ls = actions.add_parser("list", help="domains with their counts and splits")
    options.add_scenario_file(ls)
    show = actions.add_parser("show", help="one scenario with roles and patterns")
    show.add_argument("id", help="scenario id, e.g. city-hotels-09")
    options.add_scenario_file(show)
    val = actions.add_parser("validate", help="check a JSON/JSONL scenario file")
    val.add_argument("path", metavar="SCENARIO_FILE", help="the JSON/JSONL scenario file to check")
    exp = actions.add_parser(
        "export", help="export the bank as JSONL or a Hugging Face dataset folder"
    )
    exp.add_argument(
        "--format", choices=["jsonl", "hf"], default="jsonl", help="output format (default: jsonl)"
    )
    exp.add_argument("--out", required=True, help="output file (jsonl) or folder (hf)")
    options.add_scenario_file(exp)
    actions.add_parser(
        "build", help="regenerate the shipped bank from the domain files (maintainers)"
    )
    leak = actions.add_parser(
        "leakage",
        help="how much prior-only attackers (which never ask) get from a bank; exit 1 if a "
        "figure is above its limit",
    )
    options.add_scenario_file(leak)
    leak.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON")
    leak.add_argument(
        "--no-semantic", action="store_true", help="skip the MiniLM attacker (needs the llm extra)"
    )
    leak.add_argument(
        "--no-episodes",
        action="store_true",
        help="skip the zero-question episodes (the ranker's pick recommended and confirmed in "
        "the env)",
    )
    leak.add_argument(
        "--domains",
        default=None,
        metavar="FOLDER",
        help="the domain files the bank was generated from (default: the shipped ones), read by "
        "the attackers that know which levels the domain's needs favor",
    )
    p.set_defaults(func=run)
