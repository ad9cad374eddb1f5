"""``hear2act benchmark``, ``eval`` and ``report``: run agents through the runner and report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hear2act_cli import options, status
from hear2act_cli.eval_run import EvalRun
from hear2act_cli.outputs import writable_dir
from hear2act_cli.run_config import EvalOptions
from hear2act_env.conditions import Condition
from hear2act_env.config import EnvConfig, SpeechConfig
from hear2act_env.errors import ConfigError

#: Baselines whose behaviour depends on a state, run in the benchmark's audio grid.
AUDIO_BENCHMARK_AGENTS = ("state-aware", "prober")


#: Episodes per work unit of the benchmark's rule agents (cheap: chunks pay on processes).
BENCHMARK_CHUNK = 32


def benchmark(args: argparse.Namespace) -> int:
    from hear2act_agents.registry import BASELINES, agent_kind, make_agent
    from hear2act_env.evaluation.report import report
    from hear2act_env.evaluation.runner import (
        AUDIO_CONDITIONS,
        TEXT_CONDITIONS,
        GridConfig,
        run_grid,
    )

    options.refuse_blank_paths(args, ("out", "scenario_file", "audio_cache"))
    ray_address = options.ray_address_of(args)
    out = writable_dir("--out", args.out)
    agents = tuple(args.agents or BASELINES)
    for spec in agents:  # an unknown agent stops here, not in every episode
        agent_kind(spec)
    check_trained_models(agents, make_agent)
    audio_agents = tuple(a for a in agents if a in AUDIO_BENCHMARK_AGENTS)
    voice, perceiver = _voice_of(args)
    grids = [("results.jsonl", agents, TEXT_CONDITIONS)]
    if audio_agents and not args.no_audio:
        # the voice, read by the reference perceiver (T+S-hat), for the agents that use a state
        grids.append(("results-audio.jsonl", audio_agents, AUDIO_CONDITIONS))
    records = []
    for name, grid_agents, conditions in grids:
        audio = name == "results-audio.jsonl"
        config = GridConfig(
            agents=grid_agents,
            conditions=conditions,
            runs=args.runs,
            env=EnvConfig(split=args.split, scenarios=args.scenario_file, speech=voice)
            if audio
            else EnvConfig(split=args.split, scenarios=args.scenario_file),
            perceiver=perceiver if audio else None,
        )
        records += run_grid(
            config,
            out / name,
            make_agent,
            backend=args.backend,
            workers=args.workers,
            chunk=BENCHMARK_CHUNK,
            ray_address=ray_address,
            retry_errors=not args.no_retry_errors,
            wait=args.wait,
        )
    print(report(records, out, plots=not args.no_plots))
    print(f"\nresults: {out}/results*.jsonl; tables and plots: {out}/")
    return status.of_records(records)


#: Agent kinds whose spec names a trained model on disk (loaded before the first episode).
_TRAINED_KINDS = ("ppo", "maskable-ppo")


def check_trained_models(specs: Any, factory: Any) -> None:
    """Build each ``ppo:`` / ``maskable-ppo:`` agent once, so a missing or unreadable model is a
    ``ConfigError`` before the first episode (not a config error recorded in every episode)."""
    for spec in specs:
        if spec.partition(":")[0] in _TRAINED_KINDS:
            factory(spec)


def _voice_of(args: argparse.Namespace) -> tuple[SpeechConfig, str | None]:
    """The audio grid's speech settings and reference perceiver, checked now.

    The perceiver is ``--perceiver`` if given, else the one shipped for the renderer, named by
    the renderer (None for espeak: the runner's default); another renderer needs one.
    """
    from hear2act_env.speech.perception import LogisticModel
    from hear2act_env.speech.renderers import make_renderer, shipped_perceiver

    make_renderer(args.renderer)  # a bad spec or a missing extra stops the run here
    voice = SpeechConfig(renderer=None if args.renderer == "espeak" else args.renderer)
    if args.perceiver is None:
        if shipped_perceiver(args.renderer) is None:
            raise ConfigError(
                f"--renderer {args.renderer}: no perceiver ships for this renderer (the default "
                "one was fit on espeak-ng clips); give one fit on its train-split clips with "
                f"--perceiver (hear2act perceive --renderer {args.renderer} --save-perceiver PATH)"
            )
        return voice, (None if args.renderer == "espeak" else args.renderer)
    try:
        LogisticModel.load(args.perceiver)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"--perceiver: cannot load a perceiver from {args.perceiver!r} ({exc}); save one "
            "with hear2act perceive --renderer SPEC --save-perceiver PATH"
        ) from None
    return voice, args.perceiver


def add_benchmark(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("benchmark", help="run the baselines over the scenario bank and report")
    options.add_out(p, "hear2act-benchmark", "output folder, resumed if present")
    p.add_argument(
        "--agents", nargs="+", default=None, help="agent names or specs (default: every baseline)"
    )
    options.add_split(p, "all")
    options.add_scenario_file(p)
    options.add_runs(p)
    options.add_backend(p, "process", 2)
    options.add_ray_address(p)
    options.add_resume(p)
    options.add_no_plots(p)
    options.add_renderer(p)
    p.add_argument(
        "--perceiver",
        default=None,
        metavar="PATH",
        help="reference perceiver of the audio grid, saved by hear2act perceive --save-perceiver "
        "(default: the one shipped for the renderer, espeak or piper; required with any other)",
    )
    p.add_argument(
        "--no-audio", action="store_true", help="skip the audio (voice-inferred state) grid"
    )
    p.set_defaults(func=benchmark)


def evaluate(args: argparse.Namespace) -> int:
    """``hear2act eval``: the flags, over the file of ``--config`` (``run_config``), run; or
    with ``--print-config``, the resolved configuration printed and nothing run."""
    from hear2act_cli import run_config

    resolved, _ = run_config.resolve(args, args.eval_options)
    if args.print_config:
        print(run_config.to_toml(resolved), end="")
        return 0
    return _evaluate(EvalRun.of(resolved), resolved)


def _limited(run: EvalRun) -> tuple[str, ...] | None:
    """The grid's scenario ids: ``--scenarios`` (None: the split's), cut to the first
    ``--limit`` of them, so a limited run is recorded with the exact scenarios it ran."""
    if not run.limit:
        return run.scenarios or None
    if run.scenarios:
        return run.scenarios[: run.limit]
    from hear2act_env.evaluation.runner import GridConfig

    env = EnvConfig(split=run.split, scenarios=run.scenario_file)
    return tuple(GridConfig(agents=("limit",), env=env).scenario_ids()[: run.limit])


def _evaluate(run: EvalRun, resolved: dict[str, Any]) -> int:
    """Run ``run`` (the typed run; ``resolved``, its source, goes to the manifest)."""
    from hear2act_agents.registry import AgentFactory, agent_kind, perceiver_label
    from hear2act_cli.run_config import to_json
    from hear2act_env.evaluation.report import report
    from hear2act_env.evaluation.runner import GridConfig, run_grid

    options.refuse_blank_paths(run, ("out", "response_cache", "scenario_file", "prices"))
    run, resolved = _resolved_paths(run, resolved)
    ray_address = options.ray_address_of(run)
    settings = run.agent_settings()
    kinds = {spec: agent_kind(spec)[1] for spec in run.agents}
    if settings and not any(k.takes_settings for k in kinds.values()):
        raise ConfigError(
            f"settings {sorted(settings)} apply to LLM agents (openai:, litellm:, hf:, "
            f"qwen2-audio:, qwen2.5-omni:), and none is among {run.agents}"
        )
    scenarios = _limited(run)
    label = perceiver_label(settings.get("perceiver"))
    # a first stage is part of what an LLM agent is: its records say so (openai:M+stage1)
    names = tuple(f"{a}+{label}" if label and kinds[a].takes_settings else a for a in run.agents)
    config = GridConfig(
        agents=names,
        realizations=run.realizations,
        conditions=tuple(Condition.of(a) for a in run.access),
        scenarios=scenarios,
        runs=run.runs,
        env=EnvConfig(split=run.split, scenarios=run.scenario_file, allow_clarify=not run.spoken),
        agent_options=settings,
    )
    out = writable_dir("--out", run.out)
    if run.response_cache:
        writable_dir("--response-cache", run.response_cache)
    prices = _prices(run.prices)
    factory = AgentFactory(settings, allow_clarify=not run.spoken)
    _fail_fast(kinds, settings, factory, probe=not run.no_probe)
    _refuse_deaf(run.agents, kinds, config.conditions, settings)
    check_trained_models(run.agents, factory)
    records = run_grid(
        config,
        out / "results.jsonl",
        factory,
        backend=run.backend,
        workers=run.workers,
        retry_errors=not run.no_retry_errors,
        wait=run.wait,
        ray_address=ray_address,
        run_config=to_json(resolved),  # the manifest's "run": eval --config MANIFEST reruns it
    )
    from hear2act_env.evaluation.identity import read_manifest

    results = str(out / "results.jsonl")
    man = read_manifest(results) or {}
    mine = [(results, man["config"])] if isinstance(man.get("config"), dict) else []
    extras = _report_context([results], mine, None, {results: man} if man else {})
    print(report(records, out, plots=not run.no_plots, prices=prices, **extras))
    return status.of_records(records)


def _resolved_paths(run: EvalRun, resolved: dict[str, Any]) -> tuple[EvalRun, dict[str, Any]]:
    """``run`` and its ``resolved`` source with the scenario file as an absolute path, so that
    the manifest names the file the episodes came from wherever the run is resumed, rerun
    (``eval --config MANIFEST``) or viewed from. A manifest written before stored the path as
    typed; resuming it compares that path taken from the current folder (``runner``)."""
    if not run.scenario_file:
        return run, resolved
    import dataclasses

    absolute = str(Path(run.scenario_file).expanduser().absolute())
    fixed = dict(resolved)
    if isinstance(fixed.get("env"), dict) and "scenario_file" in fixed["env"]:
        fixed["env"] = {**fixed["env"], "scenario_file": absolute}
    else:
        fixed["scenario_file"] = absolute
    return dataclasses.replace(run, scenario_file=absolute), fixed


def _refuse_deaf(
    specs: list[str], kinds: dict[str, Any], conditions: tuple, settings: dict[str, object]
) -> None:
    """An LLM agent that cannot take audio, run under a condition that gives audio, would be
    labelled A or A+T without hearing anything: stop before the first episode."""
    from hear2act_agents.llm.factory import hears_audio

    audio = [str(c) for c in conditions if c.access.audio and c.perception is None]
    if not audio or settings.get("perceiver"):
        return
    deaf = [s for s in specs if kinds[s].takes_settings and not hears_audio(s, settings)]
    if deaf:
        raise ConfigError(
            f"--access {' '.join(audio)}: {', '.join(deaf)} cannot take audio (hf: never; "
            "openai: and litellm: only with --setting send_audio=true), so its results would be labelled "
            "with audio it never heard; run it under T / T+S, or give it a first stage "
            "(--perceiver prosody:PATH / affect:PATH) for T+S-hat"
        )


#: Settings the CLI hands to the agent factory that are not backend or policy settings.
_CLI_ONLY = frozenset({"base_url", "perceiver", "cache_dir"})


def _fail_fast(
    kinds: dict[str, Any], settings: dict[str, object], factory: Any, probe: bool
) -> None:
    """Check every LLM agent's settings before the first episode (an unknown or out-of-range
    setting would otherwise be recorded as an error in every episode). ``openai:`` agents are
    built once, and with ``probe`` send one tiny request: a server that is down, refuses the key
    or does not know the model stops the run here."""
    from hear2act_agents.llm.factory import REMOTE_PREFIXES, check_settings

    for spec, kind in kinds.items():
        if kind.takes_settings:
            model_settings = {k: v for k, v in settings.items() if k not in _CLI_ONLY}
            check_settings(spec, model_settings, base_url=settings.get("base_url"))
            if spec.partition(":")[0] in REMOTE_PREFIXES:  # served: probe the server
                factory(spec).backend.check_before_run(probe)


def add_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate model agents (LLM, audio LLM, RL) through the runner")
    p.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="read the run from FILE: TOML whose keys are the flags' names with underscores "
        "(scenario_file, no_probe; --setting as a [settings] table), or a run's "
        "results.manifest.json (or its folder) to run it again there (a server, Ray cluster or "
        "trust_remote_code it used must be given again); flags given here override it",
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved configuration as TOML (what --config reads) and exit",
    )
    p.add_argument(
        "--agents",
        nargs="+",
        action="extend",
        required=True,
        help="agent specs: openai:MODEL, litellm:PROVIDER/MODEL, hf:PATH, qwen2-audio:PATH, "
        "qwen2.5-omni:PATH, ppo:PATH or a baseline name (required, here or in --config)",
    )
    p.add_argument(
        "--base-url",
        default=None,
        help="API root of an OpenAI-compatible server (openai: and litellm: agents)",
    )
    p.add_argument(
        "--perceiver",
        default=None,
        metavar="{self,self-text,affect:PATH,prosody:PATH}",
        help="a first stage for LLM agents: it reads the latest user turn into one sentence "
        "and the decision call gets that sentence instead of the audio. self: the agent's own "
        "audio model hears the recording (T+S-hat; --access A+T); self-text: the same prompt "
        "and call with no recording (the transcript-only control, any model; --access T); "
        "affect:PATH: an audio emotion classifier; prosody:PATH: a saved reference prosody "
        "classifier",
    )
    p.add_argument(
        "--prompt",
        default=None,
        metavar="NAME",
        help="the LLM agents' prompt template, by name: hear2act-v1 (the default) or brief-v1; "
        "a template's wording never changes under its name, and the manifest records it",
    )
    p.add_argument(
        "--seed",
        type=options.int_at_least(0),
        default=None,
        metavar="N",
        help="sampling seed of the LLM agents: every reply is drawn under a seed derived from "
        "the episode's and N (default 0: the episode's own), so another N gives other samples "
        "of the same episodes at temperature > 0",
    )
    options.add_access(p, ("T", "T+S"))
    options.add_realizations(p)
    options.add_split(p, "test")
    p.add_argument("--scenarios", nargs="+", default=None, help="scenario ids (default: the split)")
    p.add_argument(
        "--limit",
        type=options.int_at_least(0),
        default=None,
        metavar="N",
        help="only the first N scenarios (of --scenarios, else of the split, in bank order; "
        "0: all); the manifest records their ids",
    )
    options.add_scenario_file(p)
    options.add_runs(p)
    p.add_argument(
        "--spoken", action="store_true", help="spoken assistant: CLARIFY is not an action"
    )
    p.add_argument(
        "--response-cache", default=None, metavar="DIR", help="on-disk LLM response cache folder"
    )
    p.add_argument(
        "--setting",
        action="append",
        metavar="KEY=VALUE",
        help="an LLM-agent setting, its value read as JSON, else as TOML, else a bare word, "
        "and stored typed as a run file's [settings] (temperature=0, "
        "send_seed=false, max_concurrency=8, device=cuda, "
        'extra_body=\'{"chat_template_kwargs": {"enable_thinking": false}}\'); repeatable',
    )
    options.add_out(p, "hear2act-eval", "output folder, resumed if present")
    p.add_argument(
        "--prices",
        default=None,
        metavar="TOML",
        help="price table (US dollars per million tokens, per model) for the report's cost; "
        'in a run file also the table itself ([prices."openai:M"] with prompt and completion)',
    )
    options.add_backend(p, "thread", 8)
    options.add_ray_address(p)
    options.add_resume(p)
    p.add_argument(
        "--no-probe",
        action="store_true",
        help="skip the one request sent to each openai: server before the run (a server "
        "given audio is still checked to hear it, unless --trust-audio)",
    )
    p.add_argument(
        "--trust-audio",
        action="store_true",
        help="skip the check that an openai: server with send_audio=true hears the audio "
        "(recorded in the manifest; the report says the audio was not checked)",
    )
    options.add_no_plots(p)
    # no defaults in the namespace: what it holds was typed, and overrides --config
    p.set_defaults(func=evaluate, eval_options=EvalOptions.take(p))


def report_results(args: argparse.Namespace) -> int:
    from hear2act_env.evaluation.agent_logs import find_episode_log, format_episode_log
    from hear2act_env.evaluation.report import report
    from hear2act_env.evaluation.runner import load_records

    if args.episode is not None:
        if len(args.results) != 1:
            raise ConfigError("--episode: give one results file")
        print(format_episode_log(find_episode_log(args.results[0], args.episode), args.full))
        return 0
    from hear2act_env.evaluation.identity import read_manifest, split_mixed

    manifests = {p: m for p in args.results if (m := read_manifest(p)) is not None}
    prices = _prices(args.prices) if args.prices else _manifest_prices(manifests)
    configs = [(p, m["config"]) for p, m in manifests.items() if isinstance(m.get("config"), dict)]
    labels = split_mixed(configs, "--leaderboard" if args.leaderboard else "report")
    records = _merged_records(args.results, load_records, labels.renames)
    notes = labels.notes()
    if notes:
        notes = [
            "One agent name ran with more than one configuration; its rows are labelled NAME@HASH:",
            *(f"- {line}" for line in notes),
        ]
    if not records:
        raise ConfigError(f"results: no records in {args.results}")
    out = writable_dir("--out", args.out if args.out else Path(args.results[0]).parent)
    if args.leaderboard:
        from hear2act_env.evaluation.leaderboard import (
            leaderboard_csv,
            leaderboard_markdown,
            leaderboard_rows,
        )
        from hear2act_env.safewrite import write_atomic

        _check_same_bank(args.results)
        rows = leaderboard_rows(records, prices)
        if not rows:
            raise ConfigError(
                f"--leaderboard: no records of a non-privileged agent in {args.results}"
            )
        text = leaderboard_markdown(rows)
        if notes:
            text += "\n\n" + "\n".join(notes)
        write_atomic(out / "leaderboard.md", (text + "\n").encode("utf-8"))
        leaderboard_csv(rows, out / "leaderboard.csv")
        print(text)
        print(f"\nwritten: {out / 'leaderboard.md'}, {out / 'leaderboard.csv'}")
        return 0
    extras = _report_context(args.results, configs, labels, manifests)
    text = report(records, out, plots=not args.no_plots, prices=prices, **extras)
    print(text + ("\n\n" + "\n".join(notes) if notes else ""))
    return 0


def _report_context(
    paths: list[str], configs: list, labels: Any, manifests: dict[str, dict]
) -> dict[str, Any]:
    """What ``report`` adds from beside the records: seconds per model call from the agent
    logs, each row's configuration and hash from the manifests, and the bank when every
    manifest names the same one."""
    from hear2act_env.evaluation.identity import agent_configs
    from hear2act_env.evaluation.latency import read_latencies

    banks = {
        (m.get("bank_version"), m.get("bank_sha256"))
        for m in manifests.values()
        if isinstance(m.get("bank_version"), int) and isinstance(m.get("bank_sha256"), str)
    }
    bank = None
    if len(banks) == 1 and len(manifests) == len(paths):
        version, sha = banks.pop()
        bank = {"version": version, "sha256": sha}
    return {
        "latencies": read_latencies(paths, labels.renames if labels else None),
        "configs": agent_configs(configs, labels),
        "bank": bank,
    }


def _prices(value: str | dict | None) -> dict | None:
    """The price table of ``--prices PATH``, or a run file's ``prices`` table."""
    if value is None:
        return None
    from hear2act_env.evaluation.usage import load_prices, parse_prices

    if isinstance(value, dict):
        return parse_prices(value, "--config: prices")
    return load_prices(value)


def _manifest_prices(manifests: dict[str, dict]) -> dict | None:
    """The price tables the runs carried in their run files (each manifest's ``run.prices``,
    by results path, when it is a table; a price file's path is not opened from a manifest,
    which may come from someone else: give it as ``--prices``). One model priced two ways in
    two manifests is a ``ConfigError``; None when no manifest carries a table."""
    from hear2act_env.evaluation.usage import parse_prices

    found: dict = {}
    source: dict[str, str] = {}
    for path, data in manifests.items():
        run = data.get("run")
        table = run.get("prices") if isinstance(run, dict) else None
        if not isinstance(table, dict):
            continue
        for model, price in parse_prices(table, f"report: {path}: manifest run.prices").items():
            if model in found and found[model] != price:
                raise ConfigError(
                    f"report: {model} is priced two ways by the runs' files (the manifest of "
                    f"{source[model]}: {found[model]}; of {path}: {price}); give one table with "
                    "--prices"
                )
            found.setdefault(model, price)
            source.setdefault(model, path)
    return found or None


def _merged_records(paths: list[str], load, renames: dict | None = None) -> list:  # noqa: ANN001
    """The records of several files, one per key (the first file's record of a key wins);
    ``renames[path][agent]``: the label a file's records of that agent take
    (``identity.split_mixed``)."""
    from hear2act_env.evaluation.identity import relabel

    seen: dict[str, object] = {}
    for path in paths:
        mine = (renames or {}).get(path, {})
        for r in load(path):
            r = relabel(r, mine)
            seen.setdefault(r.key.id(), r)
    return list(seen.values())


def _check_same_bank(paths: list[str]) -> None:
    """Refuse results of different bank versions or banks (their manifests say which); a
    manifest that is unreadable, or whose fields have the wrong type, is a ``ConfigError``
    naming the file and the field (``leaderboard.manifest_bank``)."""
    from hear2act_env import jsonsafe
    from hear2act_env.evaluation.leaderboard import manifest_bank

    banks: dict[tuple[int, str], list[str]] = {}
    for path in paths:
        man = Path(path).with_suffix(".manifest.json")
        try:
            data = jsonsafe.load_file(man)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"--leaderboard: {path} has no readable manifest ({man}: {type(exc).__name__}); "
                "it is needed to check that all results come from one bank version"
            ) from None
        banks.setdefault(manifest_bank(data, f"--leaderboard: {man}"), []).append(path)
    if len(banks) > 1:
        listed = "; ".join(
            f"bank version {v}, sha256 {sha[:12]}: {', '.join(files)}"
            for (v, sha), files in banks.items()
        )
        raise ConfigError(f"--leaderboard: the results come from different banks ({listed})")


def add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="tables, CSV and plots from results JSONL files")
    p.add_argument("results", nargs="+", help="one or more results JSONL files")
    options.add_out(p, None, "folder for CSV and PNG")
    options.add_no_plots(p)
    p.add_argument(
        "--prices",
        default=None,
        metavar="TOML",
        help="price table (US dollars per million prompt / completion tokens, per model) for "
        "the cost column (default: the tables the runs' files carried, from their manifests)",
    )
    p.add_argument(
        "--leaderboard",
        action="store_true",
        help="one row per model and realization: Success under T (and pass^K), paired "
        "differences (T+S, A+T, each first stage of --perceiver runs), format errors, "
        "truncations, episodes, tokens, cost; percent; written as leaderboard.md and .csv",
    )
    p.add_argument(
        "--episode",
        default=None,
        metavar="ID",
        help="print one episode's agent log (its id agent|realization|access|fidelity|"
        "scenario|run, or a part only one logged episode has)",
    )
    p.add_argument(
        "--full", action="store_true", help="with --episode: every message and the system prompt"
    )
    p.set_defaults(func=report_results)
