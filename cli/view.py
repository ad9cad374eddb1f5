"""``hear2act view``: results as a static site (``hear2act_env.listen.view.site``).

The replays use the renderer and audio cache of this command line: a results folder's
manifest may name a shipped renderer (espeak, piper), never code to import or a folder to
write; its episodes that need more are listed as not replayable, with the reason.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hear2act_cli import options
from hear2act_env.errors import ConfigError


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


def _renderer(spec: str | None) -> Any:
    """The renderer of ``--renderer`` (None: unset), made now so that a bad spec stops here."""
    if spec is None:
        return None
    from hear2act_env.speech.renderers import make_renderer

    return make_renderer(spec, "--renderer")


def _audio_cache(text: str | None) -> Path | None:
    if text is None:
        return None
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--audio-cache: {path} is not a folder; expected a folder for clips")
    return path


def _print_some(lines: tuple[str, ...], head: str, what: str) -> None:
    for line in lines[:5]:  # a path or a name may hold what the terminal cannot print
        print(f"{head}: {line}".encode("utf-8", "backslashreplace").decode("utf-8"))
    if len(lines) > 5:
        print(f"{head}: {len(lines) - 5} more {what} (listed on the index page)")


def run(args: argparse.Namespace) -> int:
    from hear2act_env.listen.view.site import build_site

    options.refuse_blank_paths(args, ("out", "audio_cache"))
    audio_cache = _audio_cache(args.audio_cache)
    summary = build_site(
        args.results,
        args.out,
        scenarios=args.scenarios,
        max_pages=args.max_pages,
        compress_audio=not args.wav,
        plots=not args.no_plots,
        seed=args.seed,
        renderer=_renderer(args.renderer),
        audio_cache=audio_cache,
    )
    _print_some(summary.unread, "not read", "lines or files")
    _print_some(summary.skipped, "no page", "episodes")
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
        "--scenarios",
        nargs="+",
        default=None,
        metavar="ID",
        help="build the pages of these scenarios' episodes (default: a spread of scenarios up "
        "to --max-pages)",
    )
    p.add_argument(
        "--max-pages",
        type=_max_pages,
        default=400,
        metavar="N",
        help="episode pages to build when no --scenarios are given, or 'all' (default: 400)",
    )
    p.add_argument("--wav", action="store_true", help="write WAV clips instead of Ogg Vorbis")
    options.add_no_plots(p)
    p.add_argument(
        "--renderer",
        default=None,
        metavar="SPEC",
        help="the voice of the replays: espeak, piper, or MODULE:NAME (imported: name only "
        "code you trust); replaces the one a manifest names (default: the manifest's if it is "
        "espeak or piper, espeak if it names none; a manifest naming any other is never "
        "imported: its episodes are listed as not replayable)",
    )
    p.add_argument(
        "--audio-cache",
        default=None,
        metavar="DIR",
        help="audio cache folder of the replays (default: $HEAR2ACT_CACHE_DIR or "
        "~/.cache/hear2act-env/audio); a manifest's audio_cache is never written: without "
        "this option, its episodes are listed as not replayable",
    )
    p.add_argument(
        "--seed",
        type=options.int_at_least(0),
        default=0,
        help="seed of the scenario choice (default: 0)",
    )
    p.set_defaults(func=run)
