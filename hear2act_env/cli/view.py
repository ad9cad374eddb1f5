"""``hear2act view``: results as a static site (``hear2act_env.listen.site``)."""

from __future__ import annotations

import argparse

from hear2act_env.cli import options


def _max_pages(text: str) -> int | None:
    if text == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a number >= 1 or 'all'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"got {value}, expected a number >= 1 or 'all'")
    return value


def run(args: argparse.Namespace) -> int:
    from hear2act_env.listen.site import build_site

    summary = build_site(
        args.results,
        args.out,
        scenarios=args.scenario,
        max_pages=args.max_pages,
        compress_audio=not args.wav,
        plots=not args.no_plots,
        seed=args.seed,
    )
    for reason in summary.skipped[:5]:
        print(f"no page: {reason}")
    if len(summary.skipped) > 5:
        print(f"no page for {len(summary.skipped) - 5} more episodes (same reasons)")
    print(
        f"wrote {summary.out}/index.html: {summary.episodes} episodes listed, {summary.pages} "
        f"episode pages, {summary.compare_pages} compare pages, {summary.clips} audio clips. "
        "Open it in a browser (no server needed)."
    )
    return 0


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "view",
        help="results as a static site: tables, plots, every episode with its audio",
    )
    p.add_argument(
        "results", nargs="+", help="results.jsonl files, or folders of results*.jsonl files"
    )
    options.add_out(p, "hear2act-site", "the site's folder (rebuilt if it holds a site)")
    p.add_argument(
        "--scenario",
        action="append",
        default=None,
        metavar="ID",
        help="build the pages of this scenario's episodes (repeatable; default: a spread of "
        "scenarios up to --max-pages)",
    )
    p.add_argument(
        "--max-pages",
        type=_max_pages,
        default=400,
        metavar="N",
        help="episode pages to build when no --scenario is given, or 'all' (default: 400)",
    )
    p.add_argument("--wav", action="store_true", help="write WAV clips instead of Ogg Vorbis")
    options.add_no_plots(p)
    p.add_argument(
        "--seed",
        type=options.int_at_least(0),
        default=0,
        help="seed of the scenario choice (default: 0)",
    )
    p.set_defaults(func=run)
