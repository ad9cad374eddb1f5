"""``hear2act scenarios``: list, show, validate, export and build scenario banks, and measure
what a bank leaks to an agent that never asks (``leakage``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hear2act_cli import options
from hear2act_cli.outputs import writable_dir, writable_file
from hear2act_env import safewrite
from hear2act_env.errors import ConfigError
from hear2act_env.protocol.engine import REALIZATIONS


def run(args: argparse.Namespace) -> int:
    from hear2act_env.scenarios import bank
    from hear2act_env.scenarios.show import describe_scenario, domain_table

    options.refuse_blank_paths(args, ("scenario_file", "out", "json", "domains", "audio_cache"))
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

        clips = _clip_export(args)
        out = _export_target(args.out, args.format, clips is not None)
        written = export_bank(scenarios, out, args.format, clips)
        wavs = [p for p in written if p.suffix == ".wav"]
        for path in written:
            if path.suffix != ".wav":
                print(f"wrote {path}")
        if wavs:
            print(f"wrote {len(wavs)} WAV files in {wavs[0].parent}")
    return 0


#: The ``scenarios export`` flags that only mean something with ``--audio``.
_AUDIO_ONLY = ("realizations", "limit", "renderer", "audio_cache")


def _clip_export(args: argparse.Namespace):  # noqa: ANN202 - a ClipExport or None
    """The clips ``--audio`` asks for (None without it); its flags refused without it."""
    if not args.audio:
        for name in _AUDIO_ONLY:
            if getattr(args, name) is not None:
                flag = "--" + name.replace("_", "-")
                raise ConfigError(f"{flag}: only with --audio (the clips' options)")
        return None
    if args.format != "hf":
        raise ConfigError(f"--audio: only with --format hf (got --format {args.format})")
    from hear2act_env.scenarios.export import ClipExport
    from hear2act_env.speech.cache import AudioCache
    from hear2act_env.speech.renderers import make_renderer

    if args.audio_cache is not None:
        writable_dir("--audio-cache", args.audio_cache)
    return ClipExport(
        realizations=tuple(args.realizations or REALIZATIONS),
        renderer=make_renderer(args.renderer or "espeak"),
        cache=AudioCache(args.audio_cache) if args.audio_cache is not None else None,
        limit=args.limit or 0,
    )


def _export_target(out: str, fmt: str, audio: bool = False) -> Path:
    """``--out`` checked before the export: a writable file (jsonl), or a writable folder whose
    ``data/train.jsonl``, ``data/test.jsonl`` and ``README.md`` can be written (hf), and with
    ``audio`` the parquet files and ``audio/test/metadata.jsonl`` too."""
    if fmt == "jsonl":
        return writable_file("--out", out)
    folder = writable_dir("--out", out)
    names = ["data/train.jsonl", "data/test.jsonl", "README.md"]
    if audio:
        from hear2act_env.scenarios.export import AUDIO_DIR, CLIPS_PARQUET

        names += ["data/train.parquet", "data/test.parquet", CLIPS_PARQUET]
        names.append(f"{AUDIO_DIR}/metadata.jsonl")
    for name in names:
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
    exp.add_argument(
        "--audio",
        action="store_true",
        help="with --format hf: also the perception check's test clips (the held-out test "
        "voices) as WAV files and the dataset's 'clips' config",
    )
    exp.add_argument(
        "--realizations",
        nargs="+",
        choices=REALIZATIONS,
        default=None,
        help="with --audio: the clips of prosody (Prosody-mediated) and/or explicit (Explicit "
        "lexical) (default: both)",
    )
    exp.add_argument(
        "--limit",
        type=options.int_at_least(0),
        default=None,
        metavar="N",
        help="with --audio: the clips of the first N test scenarios only (0: all)",
    )
    options.add_renderer(exp, None)
    options.add_audio_cache(exp)
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
