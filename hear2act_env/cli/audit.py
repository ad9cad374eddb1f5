"""``hear2act audit``: the human perception audit of a renderer (paper, appendix E).

``hear2act audit --out DIR [--annotator NAME]`` makes the audit folder the first time (a
balanced, paired, blind clip set from the test split, rendered by ``--renderer``) or reopens it,
then serves the audit page; ``hear2act audit --score DIR [--json PATH]`` prints the scores in
the layout of the paper's Table 11. See ``hear2act_env/listen/perception_audit.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from hear2act_env.cli import options
from hear2act_env.errors import ConfigError

#: Flags that only mean something when making or serving an audit (not with --score).
_SERVE_ONLY = (
    "clips",
    "seed",
    "renderer",
    "prosody_strength",
    "perceiver",
    "annotator",
    "audio_cache",
)


def run(args: argparse.Namespace) -> int:
    if args.score is not None:
        return _score(args)
    if args.json is not None:
        raise ConfigError("--json: only with --score")
    from hear2act_env.interrupts import Interrupted
    from hear2act_env.listen import server
    from hear2act_env.listen.audit_app import build_app
    from hear2act_env.listen.perception_audit import check_annotator, serving_lock

    if args.annotator is not None:
        check_annotator(args.annotator)
    try:
        with serving_lock(Path(args.out)):  # one server per folder, from before it is made
            return _serve(args, server, build_app)
    except Interrupted as exc:  # while the clips were made: the next run makes them again
        resume = exc.resume or f"run the same command again to make {args.out} and continue"
        raise Interrupted(str(exc), resume=resume) from None


def _serve(args: argparse.Namespace, server: Any, build_app: Any) -> int:
    from hear2act_env.listen.perception_audit import open_or_create

    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    audit, new = open_or_create(
        Path(args.out),
        clips=args.clips,
        seed=args.seed,
        renderer=args.renderer,
        prosody_strength=args.prosody_strength,
        perceiver=args.perceiver,
        cache_dir=args.audio_cache,
        progress=say,
    )
    s = audit.settings
    print(
        f"{'made' if new else 'reopened'} {audit.folder}: {len(audit.clips)} clips "
        f"({audit.renderer['name']}, prosody strength {s['prosody_strength']}, seed {s['seed']}); "
        f"reference perceiver: {audit.perceiver['source']}"
    )
    for name in audit.annotators():
        store = audit.store(name)  # also checks the file (and cuts a torn last line)
        print(f"  {name}: {len(store.labels)} of {store.total} labelled")
    if args.annotator is not None:
        store = audit.store(args.annotator)
        if store.next_clip is None:
            print(
                f"{args.annotator} has labelled every clip; score with: hear2act audit --score {audit.folder}"
            )
    allowed = server.allowed_hosts_for(args.host)
    if allowed is None:
        say(
            f"audit: warning: listening on {args.host}: anyone who can reach it can label "
            "clips (the page has no login)"
        )
    server.serve(
        build_app(audit, args.annotator, allowed_hosts=allowed),
        args.host,
        args.port,
        label="hear2act audit",
        resume=f"labels so far are saved in {audit.labels_dir}; run the same command again "
        "to continue",
    )
    return 0


def _score(args: argparse.Namespace) -> int:
    from hear2act_env.listen.perception_audit import score_audit

    given = [f"--{k.replace('_', '-')}" for k in _SERVE_ONLY if getattr(args, k, None) is not None]
    if given:
        raise ConfigError(f"{given[0]}: not used with --score (the folder records its settings)")
    result = score_audit(Path(args.score))
    print(result.markdown(), end="")
    if args.json is not None:
        import json

        from hear2act_env.atomic import atomic_write

        text = json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
        atomic_write(Path(args.json), text.encode("utf-8"))
        print(f"wrote {args.json}")
    return 0


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit",
        help="the human perception audit of a renderer: label reaction clips in the browser, "
        "then score them (paper, appendix E)",
        description="Make (or reopen) an audit folder of reaction clips from the test split, "
        "half spoken with a resolved and half with an unresolved delivery of the same line, "
        "and serve a page where one annotator labels them; or, with --score, compare the labels "
        "with the truth, with each other and with the reference perceiver (paper, Table 11).",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--out",
        metavar="AUDIT_DIR",
        help="the audit folder to make (first time) or reopen, then serve",
    )
    where.add_argument(
        "--score", metavar="AUDIT_DIR", help="score the labels saved in this audit folder"
    )
    p.add_argument(
        "--clips",
        type=options.int_at_least(2),
        default=None,
        help="clips in a new audit, an even number: half resolved, half unresolved (default: 40)",
    )
    p.add_argument(
        "--seed",
        type=options.int_at_least(0),
        default=None,
        help="seed of the clip draw and of the listening orders (default: 0)",
    )
    options.add_renderer(p, default=None)
    options.add_prosody_strength(p)
    p.add_argument(
        "--perceiver",
        default=None,
        metavar="auto|shipped|train|PATH",
        help="the reference perceiver: auto (default: the shipped one for espeak, else trained "
        "on this renderer's train-split clips), shipped, train, or a model saved by "
        "hear2act perceive --save-perceiver",
    )
    options.add_audio_cache(p)
    p.add_argument(
        "--annotator",
        default=None,
        metavar="NAME",
        help="serve this annotator only (letters, digits, -_.); default: the page asks",
    )
    options.add_listen(p, "label clips")
    p.add_argument(
        "--json", default=None, metavar="PATH", help="with --score: also write JSON here"
    )
    # A reopened folder keeps its own strength: None means "as recorded" (or 1.0 when new).
    p.set_defaults(func=run, prosody_strength=None)
