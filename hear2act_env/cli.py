"""The ``hear2act`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym

from hear2act_env.env import DEFAULT_PROSODY_STRENGTH
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
    if args.save_audio:
        _save_examples(Path(args.save_audio), args.seed)
    return 0


def _save_examples(folder: Path, seed: int) -> None:
    """A few WAVs per delivery label: one accepting line in two voices and two variations."""
    from hear2act_env.protocol.delivery import DELIVERIES
    from hear2act_env.protocol.realizer import ACCEPTANCE_POOL
    from hear2act_env.protocol.scenario import PERSONAS
    from hear2act_env.speech.cache import AudioCache
    from hear2act_env.speech.espeak import EspeakRenderer
    from hear2act_env.speech.utterance import Utterance
    from hear2act_env.speech.wav import write_wav

    renderer, cache = EspeakRenderer(), AudioCache()
    line = ACCEPTANCE_POOL[seed % len(ACCEPTANCE_POOL)]
    n = 0
    for label in DELIVERIES:
        for persona, variation in ((PERSONAS[0], 0), (PERSONAS[3], 1)):
            audio = cache.render(renderer, Utterance(line, label, persona, variation))
            write_wav(folder / f"{label}_{persona}_v{variation}.wav", audio)
            n += 1
    print(f"saved {n} WAVs of {line!r} ({len(DELIVERIES)} labels x 2 voices) to {folder}/")


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="play one seeded episode and print the transcript with state tags"
    )
    p.add_argument("--env", default="Hear2Act-Prosody-Text-v0", choices=sorted(ENV_IDS))
    p.add_argument("--agent", default="prober", help="a baseline agent name (default: prober)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scenario", default=None, help="a scenario id (default: drawn with the seed)")
    p.add_argument(
        "--save-audio",
        default=None,
        metavar="DIR",
        help="also save example WAVs per delivery label",
    )
    p.set_defaults(func=_demo)


def _render(args: argparse.Namespace) -> int:
    from hear2act_env.scenarios.bank import load_bank
    from hear2act_env.speech.prerender import prerender, utterances

    scenarios = [s for s in load_bank() if args.split == "all" or s.split == args.split]
    if args.limit:
        scenarios = scenarios[: args.limit]
    utts = utterances(scenarios, args.realizations, args.prosody_strength)
    summary = prerender(utts, args.cache_dir, workers=args.workers)
    print(
        f"{summary.utterances} utterances ({summary.rendered} newly rendered), "
        f"{summary.audio_seconds / 3600:.2f} h of audio, {summary.wall_seconds:.1f} s wall"
    )
    return 0


def _add_render(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "render", help="pre-render every utterance the bank can produce into the audio cache"
    )
    p.add_argument("--split", default="all", choices=["train", "test", "all"])
    p.add_argument(
        "--realizations",
        nargs="+",
        default=["prosody", "explicit"],
        choices=["prosody", "explicit"],
    )
    p.add_argument("--limit", type=int, default=0, help="only the first N scenarios")
    p.add_argument("--prosody-strength", type=float, default=DEFAULT_PROSODY_STRENGTH)
    p.add_argument(
        "--cache-dir",
        default=None,
        help="default: $HEAR2ACT_CACHE_DIR or ~/.cache/hear2act-env/audio",
    )
    p.add_argument("--workers", type=int, default=2)
    p.set_defaults(func=_render)


def _perceive(args: argparse.Namespace) -> int:
    from hear2act_env.scenarios.bank import load_bank
    from hear2act_env.speech.bank_perception import ANCHORS, perception_check
    from hear2act_env.speech.cache import AudioCache

    bank = load_bank()
    train = [s for s in bank if s.split == "train"][:: args.train_stride]
    test = [s for s in bank if s.split == "test"]
    cache = AudioCache(args.cache_dir)
    anchors = ", ".join(f"{k} {v:.2f}" for k, v in ANCHORS.items())
    main_check = perception_check(
        train, test, args.prosody_strength, cache=cache, per_scenario=args.per_scenario
    )
    print(
        f"Resolved vs unresolved, reference prosody classifier (strength {args.prosody_strength}); paper anchors on Qwen3-TTS: {anchors}"
    )
    personas = sorted({p for r in main_check.reports.values() for p in r.per_persona})
    print(f"{'realization':<12}{'accuracy':>9}{'n_test':>8}" + "".join(f"{p:>8}" for p in personas))
    for name, r in main_check.reports.items():
        print(
            f"{name:<12}{r.accuracy:>9.3f}{r.n_test:>8}"
            + "".join(f"{r.per_persona.get(p, float('nan')):>8.2f}" for p in personas)
        )
    if args.save:
        from hear2act_env.speech.bank_perception import train_reference

        train_reference(
            train, args.prosody_strength, cache=cache, per_scenario=args.per_scenario
        ).save(args.save)
        print(f"saved the reference perceiver to {args.save}")
    print("\naccuracy against prosody_strength (Prosody-mediated):")
    for strength in args.curve:
        check = perception_check(
            train, test, strength, ("prosody",), cache=cache, per_scenario=args.per_scenario
        )
        print(f"  strength {strength:4.2f}: {check.reports['prosody'].accuracy:.3f}")
    return 0


def _add_perceive(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "perceive", help="the perception check: can a prosody classifier hear the state?"
    )
    p.add_argument("--prosody-strength", type=float, default=DEFAULT_PROSODY_STRENGTH)
    p.add_argument("--curve", type=float, nargs="*", default=[0.0, 0.25, 0.5, 0.75, 1.0, 1.5])
    p.add_argument(
        "--per-scenario", type=int, default=6, help="random recommendations per scenario"
    )
    p.add_argument("--train-stride", type=int, default=2, help="use every k-th train scenario")
    p.add_argument("--cache-dir", default=None)
    p.add_argument(
        "--save",
        default=None,
        metavar="JSON",
        help="also fit the reference perceiver on train clips and save it",
    )
    p.set_defaults(func=_perceive)


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
    from hear2act_env.evaluation.runner import (
        AUDIO_CONDITIONS,
        TEXT_CONDITIONS,
        GridConfig,
        run_grid,
    )

    out = Path(args.out)
    agents = tuple(args.agents or AGENTS)
    text = GridConfig(agents=agents, conditions=TEXT_CONDITIONS, split=args.split, runs=args.runs)
    records = run_grid(
        text, out / "results.jsonl", make_agent, backend=args.backend, workers=args.workers
    )
    audio_agents = tuple(a for a in agents if a in AUDIO_BENCHMARK_AGENTS)
    if audio_agents and not args.no_audio:
        # the voice, read by the reference perceiver (T+S-hat), for the agents that use a state
        audio = GridConfig(
            agents=audio_agents, conditions=AUDIO_CONDITIONS, split=args.split, runs=args.runs
        )
        records += run_grid(
            audio,
            out / "results-audio.jsonl",
            make_agent,
            backend=args.backend,
            workers=args.workers,
        )
    print(report(records, out, plots=not args.no_plots))
    print(f"\nresults: {out}/results*.jsonl; tables and plots: {out}/")
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
    p.add_argument("--no-audio", action="store_true", help="skip the audio (inferred-state) grid")
    p.set_defaults(func=_benchmark)


#: Baselines whose behaviour depends on a state, run in the benchmark's audio grid.
AUDIO_BENCHMARK_AGENTS = ("state-aware", "prober")


def _eval(args: argparse.Namespace) -> int:
    from agents.registry import AgentFactory
    from hear2act_env.evaluation.report import report
    from hear2act_env.evaluation.runner import GridConfig, run_grid

    options: dict[str, object] = {}
    if args.base_url:
        options["base_url"] = args.base_url
    if args.perceiver:
        options["perceiver"] = args.perceiver
    if args.spoken:
        options["allow_clarify"] = False
    if args.response_cache:
        options["cache_dir"] = args.response_cache
    for item in args.setting or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--setting: got {item!r}, expected KEY=VALUE")
        options[key] = _number(value)
    conditions = tuple((a, "correct") for a in args.access)
    config = GridConfig(
        agents=tuple(args.agent),
        realizations=tuple(args.realizations),
        conditions=conditions,
        split=args.split,
        scenarios=tuple(args.scenarios) if args.scenarios else None,
        runs=args.runs,
        env_kwargs={"allow_clarify": False} if args.spoken else {},
        agent_options=options,
    )
    out = Path(args.out)
    records = run_grid(
        config,
        out / "results.jsonl",
        AgentFactory(options),
        backend=args.backend,
        workers=args.workers,
    )
    print(report(records, out, plots=not args.no_plots))
    return 0


def _number(text: str) -> object:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _add_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate model agents (LLM, audio LLM, RL) through the runner")
    p.add_argument(
        "--agent",
        action="append",
        required=True,
        help="openai:MODEL, hf:PATH, qwen2-audio:PATH, qwen2.5-omni:PATH, ppo:PATH or a baseline; repeatable",
    )
    p.add_argument(
        "--base-url", default=None, help="API root of an OpenAI-compatible server (openai: agents)"
    )
    p.add_argument(
        "--perceiver",
        default=None,
        help="self, affect:PATH or prosody:PATH: the audio is read into one sentence (T+S-hat, generic affect)",
    )
    p.add_argument(
        "--access", nargs="+", default=["T", "T+S"], choices=["T", "A", "A+T", "T+S", "A+T+S"]
    )
    p.add_argument(
        "--realizations",
        nargs="+",
        default=["prosody", "explicit"],
        choices=["prosody", "explicit"],
    )
    p.add_argument("--split", default="test", choices=["train", "test", "all"])
    p.add_argument("--scenarios", nargs="*", help="scenario ids (default: the whole split)")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--spoken", action="store_true", help="spoken assistant: no CLARIFY action")
    p.add_argument(
        "--response-cache", default=None, help="folder of the on-disk LLM response cache"
    )
    p.add_argument(
        "--setting",
        action="append",
        help="KEY=VALUE passed to the agent factory (temperature=0, max_concurrency=8, device=cuda, ...)",
    )
    p.add_argument("--out", default="hear2act-eval")
    p.add_argument("--backend", default="thread", choices=["serial", "thread", "process", "ray"])
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=_eval)


def _report(args: argparse.Namespace) -> int:
    from hear2act_env.evaluation.report import report
    from hear2act_env.evaluation.runner import load_records

    records = [r for path in args.results for r in load_records(path)]
    if not records:
        raise ConfigError(f"results: no records in {args.results}")
    out = Path(args.out) if args.out else Path(args.results[0]).parent
    print(report(records, out, plots=not args.no_plots))
    return 0


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="tables, CSV and plots from results JSONL files")
    p.add_argument("results", nargs="+", help="one or more results JSONL files")
    p.add_argument(
        "--out", default=None, help="folder for CSV and PNG (default: beside the results)"
    )
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=_report)


def _add_rl(sub: argparse._SubParsersAction) -> None:
    """``train`` and ``rl-eval`` come from ``agents.rl`` (their heavy imports stay lazy)."""
    from agents.rl.cli import add_rl_parsers

    add_rl_parsers(sub)


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_demo,
    _add_render,
    _add_perceive,
    _add_scenarios,
    _add_benchmark,
    _add_eval,
    _add_report,
    _add_rl,
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
