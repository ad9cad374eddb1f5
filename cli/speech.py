"""``hear2act render`` and ``hear2act perceive``: the speech channel."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from hear2act_cli import options, status
from hear2act_cli.outputs import writable_dir, writable_file
from hear2act_env.errors import ConfigError
from hear2act_env.protocol.engine import REALIZATIONS

#: The most random recommendations per scenario ``perceive --per-scenario`` takes (each is
#: rendered: more would only be a typo that renders for days).
MAX_PER_SCENARIO = 1000
#: ``AudioCache.entry_problem`` reasons, as ``render`` reports them.
_REASONS = {
    "missing": "not stored (the cache could not be written; see the warning above)",
    "not a regular file": "blocked (a folder, link or other non-file holds the entry's place)",
    "corrupt": "corrupt",
}


def render(args: argparse.Namespace) -> int:
    """Render into the cache; exit 0 when every clip is cached, 3 when some are not."""
    from hear2act_env.scenarios.bank import load_bank, load_scenarios
    from hear2act_env.speech.cache import default_cache_dir
    from hear2act_env.speech.prerender import prerender, utterances
    from hear2act_env.speech.renderers import make_renderer

    options.refuse_blank_paths(args, ("scenario_file", "audio_cache"))
    renderer = make_renderer(args.renderer)  # a bad spec stops here, before any worker starts
    bank = load_scenarios(args.scenario_file) if args.scenario_file else load_bank()
    scenarios = [s for s in bank if args.split == "all" or s.split == args.split]
    if args.limit:
        scenarios = scenarios[: args.limit]
    if args.cross_split:
        return _cross_split(args, scenarios)
    flag = "--audio-cache" if args.audio_cache else "--audio-cache (the default audio cache)"
    root = writable_dir(flag, args.audio_cache or default_cache_dir())
    if args.features:
        writable_dir(flag, root / "features")
    utts = utterances(scenarios, args.realizations, args.prosody_strength)
    summary = prerender(
        utts, root, workers=args.workers, features=args.features, renderer=args.renderer
    )
    print(
        f"{summary.utterances} utterances ({summary.rendered} newly rendered), "
        f"{summary.audio_seconds / 3600:.2f} h of audio, {summary.wall_seconds:.1f} s wall"
    )
    # every clip read back from the disk was a valid entry; a render may not have been stored
    missing = _not_cached(utts, root, renderer) if summary.rendered else Counter()
    if missing:
        reasons = "; ".join(f"{n} {_REASONS.get(why, why)}" for why, n in sorted(missing.items()))
        print(
            f"hear2act: error: {missing.total()} of {len(utts)} clips are not in the cache "
            f"{root}: {reasons}",
            file=sys.stderr,
        )
        return status.EXIT_EPISODE_ERRORS  # some clips could not be cached
    return 0


def _not_cached(utts: list, root: Path, renderer: object) -> Counter[str]:
    """Why each clip of ``utts`` that the cache at ``root`` does not hold is missing."""
    from hear2act_env.speech.cache import AudioCache, cache_key

    cache = AudioCache(root, memory_items=0)
    rate = int(renderer.sample_rate)  # type: ignore[attr-defined]
    found = (cache.entry_problem(cache_key(renderer, u), rate) for u in utts)  # type: ignore[arg-type]
    return Counter(why for why in found if why is not None)


def _cross_split(args: argparse.Namespace, scenarios: list) -> int:
    from hear2act_env.speech.split_check import cross_split_check

    if args.split != "all":
        raise ConfigError(
            f"--cross-split: compares both splits, so --split must be all; got {args.split}"
        )
    from hear2act_env.speech.renderers import make_renderer

    report = cross_split_check(
        scenarios, args.realizations, args.prosody_strength, make_renderer(args.renderer)
    )
    print(report.table())
    print("ok: no test clip was heard in training" if report.ok else "FAILED: see the counts above")
    return 0 if report.ok else 1


def add_render(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "render", help="pre-render every utterance the bank can produce into the audio cache"
    )
    options.add_split(p, "all")
    options.add_realizations(p, REALIZATIONS)
    options.add_scenario_file(p)
    p.add_argument(
        "--limit",
        type=options.int_at_least(0),
        default=0,
        help="only the first N scenarios (0: all)",
    )
    options.add_prosody_strength(p)
    options.add_audio_cache(p)
    options.add_renderer(p)
    options.add_workers(p, 2, "render processes")
    p.add_argument(
        "--features",
        action="store_true",
        help="also compute each clip's prosodic features into the feature cache (audio RL "
        "then starts warm)",
    )
    p.add_argument(
        "--cross-split",
        action="store_true",
        help="instead: count test-split clips identical to a train-split clip (same text, "
        "voice, label and variation; and bit-identical waveforms, rendered without the cache); "
        "exit 1 unless both counts are 0",
    )
    p.set_defaults(func=render)


def perceive(args: argparse.Namespace) -> int:
    from hear2act_env.scenarios.bank import load_bank
    from hear2act_env.speech.bank_perception import ANCHORS, perception_check
    from hear2act_env.speech.cache import AudioCache

    options.refuse_blank_paths(args, ("audio_cache", "save_perceiver", "json"))
    if args.json is not None and not args.ablation:
        raise ConfigError("--json: only with --ablation")
    if args.ablation and args.save_perceiver:
        raise ConfigError(
            "--save-perceiver: not with --ablation (the ablation fits one model per set)"
        )
    from hear2act_env.speech.renderers import make_renderer

    renderer = make_renderer(args.renderer)
    if args.save_perceiver:
        writable_file("--save-perceiver", args.save_perceiver)
    if args.json not in (None, "-"):
        writable_file("--json", args.json)
    bank = load_bank()
    train = [s for s in bank if s.split == "train"][:: args.train_stride]
    test = [s for s in bank if s.split == "test"]
    cache = AudioCache(args.audio_cache)
    voice = {"renderer": renderer, "cache": cache, "per_scenario": args.per_scenario}
    if args.ablation:
        return _ablation(args, train, test, voice)
    anchors = ", ".join(f"{k} {v:.2f}" for k, v in ANCHORS.items())
    main_check = perception_check(train, test, args.prosody_strength, **voice)
    print(
        f"Resolved vs unresolved, reference prosody classifier ({args.renderer}, strength "
        f"{args.prosody_strength}; trained on the train split's voices, tested on the test "
        f"split's held-out voices); paper anchors on Qwen3-TTS: {anchors}"
    )
    personas = sorted({p for r in main_check.reports.values() for p in r.per_persona})
    print(f"{'realization':<12}{'accuracy':>9}{'n_test':>8}" + "".join(f"{p:>8}" for p in personas))
    for name, r in main_check.reports.items():
        print(
            f"{name:<12}{r.accuracy:>9.3f}{r.n_test:>8}"
            + "".join(f"{r.per_persona.get(p, float('nan')):>8.2f}" for p in personas)
        )
    if args.save_perceiver:
        from hear2act_env.speech.bank_perception import train_reference

        train_reference(train, args.prosody_strength, **voice).save(args.save_perceiver)
        print(f"saved the reference perceiver to {args.save_perceiver}")
    print("\naccuracy against prosody_strength (Prosody-mediated):")
    for strength in args.curve:
        check = perception_check(train, test, strength, ("prosody",), **voice)
        print(f"  strength {strength:4.2f}: {check.reports['prosody'].accuracy:.3f}")
    return 0


def _ablation(args: argparse.Namespace, train: list, test: list, voice: dict) -> int:
    from hear2act_env.speech.ablation import bank_ablation

    result = bank_ablation(train, test, args.prosody_strength, **voice)
    if args.json == "-":
        print(result.to_json(), end="")
        return 0
    print(result.table())
    if args.json is not None:
        from pathlib import Path

        from hear2act_env.safewrite import write_atomic

        write_atomic(Path(args.json), result.to_json().encode("utf-8"))
        print(f"wrote {args.json}")
    return 0


def add_perceive(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "perceive", help="the perception check: can a prosody classifier hear the state?"
    )
    options.add_prosody_strength(p)
    p.add_argument(
        "--curve",
        type=options.float_in(0.0, 2.0),
        nargs="*",
        default=[0.0, 0.25, 0.5, 0.75, 1.0, 1.5],
        help="prosody strengths for the accuracy curve (default: 0 0.25 0.5 0.75 1 1.5)",
    )
    p.add_argument(
        "--per-scenario",
        type=options.int_in(1, MAX_PER_SCENARIO),
        default=6,
        help="random recommendations per scenario (default: 6)",
    )
    p.add_argument(
        "--train-stride",
        type=options.int_at_least(1),
        default=2,
        help="use every k-th train scenario (default: 2)",
    )
    options.add_audio_cache(p)
    options.add_renderer(p)
    p.add_argument(
        "--save-perceiver",
        default=None,
        metavar="PATH",
        help="also fit the reference perceiver on train clips and save it as JSON (what "
        "--perceiver of benchmark and audit reads)",
    )
    p.add_argument(
        "--ablation",
        action="store_true",
        help="instead: the cue ablation (the classifier on each feature group alone, the "
        "duration ratio and raw duration) with 95%% CIs, overall and per voice, against the "
        "Voice v2 targets (--curve is not used)",
    )
    p.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="PATH",
        help="with --ablation: print the figures as JSON instead of the table, or with PATH "
        "print the table and write the JSON there",
    )
    p.set_defaults(func=perceive)
