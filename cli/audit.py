"""``hear2act audit``: the perception audit of a renderer, by people and models (paper,
appendix E).

``hear2act audit --out DIR [--annotator NAME]`` makes the audit folder the first time (a
balanced, paired, blind clip set from the test split, rendered by ``--renderer``; with
``--context`` each clip comes with the dialogue before it) or reopens it, then serves the audit
page; ``hear2act audit --out DIR --model SPEC`` has an audio LLM label the folder's clips
instead (``hear2act_agents.audit_labeller``); ``hear2act audit --score DIR [--json PATH]``
prints the scores of people and models in the layout of the paper's Table 11. See
``hear2act_env/listen/audit/folder.py`` and ``audit_scores.py``.

Exit statuses (``hear2act_cli.status``): 0 done; 2 a bad argument or unusable file, found
before anything is made, labelled or served (an empty path option, a model that cannot hear,
a served model that fails its probe); 3 with ``--model``, a call failed mid-run after the
backend's retries (the labels so far are saved; the same command continues); 130 stopped by a
signal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from hear2act_cli import options
from hear2act_cli.outputs import writable_dir, writable_file
from hear2act_cli.status import EXIT_EPISODE_ERRORS, EXIT_OK
from hear2act_env.errors import ConfigError, InfrastructureError

#: Flags that only mean something when making or serving an audit (not with --score).
_SERVE_ONLY = (
    "clips",
    "seed",
    "renderer",
    "prosody_strength",
    "perceiver",
    "annotator",
    "audio_cache",
    "context",
    "model",
)
#: Flags that only mean something with --model.
_MODEL_ONLY = ("base_url", "setting", "trust_audio", "no_probe")
#: The options that name a path, and what each expects: an empty or blank one is refused
#: before anything is read, made or served (``Path("")`` is the current folder).
_PATHS = {
    "out": "a folder to write the audit to",
    "score": "an audit folder to score",
    "json": "a file to write the scores to",
    "audio_cache": "a folder for the audio cache",
    "perceiver": "auto, shipped, train or a saved perceiver file",
}
#: The command's exit statuses, for its --help.
EXIT_STATUSES = (
    "exit status: 0 done; 2 a bad argument or unusable file, found before anything is made, "
    "labelled or served (a served --model that fails its probe too); 3 with --model, a call "
    "failed mid-run after retries (the labels so far are saved: run the same command again "
    "to continue); 130 stopped by a signal"
)


def check_paths(args: argparse.Namespace) -> None:
    """A ``ConfigError`` naming the first path option (``_PATHS``) given as an empty or blank
    string, with its value and what it expects."""
    for key, expected in _PATHS.items():
        value = getattr(args, key, None)
        if isinstance(value, str) and not value.strip():
            shown = f" ({value!r})" if value else ""
            flag = "--" + key.replace("_", "-")
            raise ConfigError(f"{flag}: got an empty path{shown}; expected {expected}")


def run(args: argparse.Namespace) -> int:
    """Run ``hear2act audit``; returns its exit status (``EXIT_STATUSES``)."""
    check_paths(args)  # first: an empty path would read, make or serve the current folder
    if args.score is not None:
        return _score(args)
    if args.json is not None:
        raise ConfigError("--json: only with --score")
    if args.model is None:
        given = [k for k in _MODEL_ONLY if getattr(args, k, None) not in (None, False)]
        if given:
            raise ConfigError(f"--{given[0].replace('_', '-')}: only with --model")
    elif args.annotator is not None:
        raise ConfigError("--annotator: a person's name; with --model the model labels")
    from hear2act_env.interrupts import Interrupted
    from hear2act_env.listen import server
    from hear2act_env.listen.audit.app import build_app
    from hear2act_env.listen.audit.folder import check_annotator, serving_lock

    if args.annotator is not None:
        check_annotator(args.annotator)
    model = _model(args) if args.model is not None else None  # refused before any file
    folder = writable_dir("--out", args.out)
    try:
        with serving_lock(folder):  # one server per folder, from before it is made
            if model is not None:
                return _label(args, folder, *model)
            return _serve(args, folder, server, build_app)
    except Interrupted as exc:  # while the clips were made: the next run makes them again
        resume = exc.resume or f"run the same command again to make {args.out} and continue"
        raise Interrupted(str(exc), resume=resume) from None


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _open(args: argparse.Namespace, folder: Path) -> Any:
    """Make or reopen ``folder`` (``--out``) and say which (the caller holds its lock)."""
    from hear2act_env.listen.audit.folder import open_or_create

    audit, new = open_or_create(
        folder,
        clips=args.clips,
        seed=args.seed,
        renderer=args.renderer,
        prosody_strength=args.prosody_strength,
        perceiver=args.perceiver,
        context=args.context,
        cache_dir=args.audio_cache,
        progress=_say,
    )
    s = audit.settings
    heard = "with the dialogue before each clip" if audit.context else "without context"
    print(
        f"{'made' if new else 'reopened'} {audit.folder}: {len(audit.clips)} clips "
        f"({audit.renderer['name']}, prosody strength {s['prosody_strength']}, seed {s['seed']}, "
        f"{heard}); reference perceiver: {audit.perceiver['source']}"
    )
    return audit


def _serve(args: argparse.Namespace, folder: Path, server: Any, build_app: Any) -> int:
    audit = _open(args, folder)
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
        _say(
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
    return EXIT_OK


def _model(args: argparse.Namespace) -> tuple[Any, dict[str, str]]:
    """``--model``'s backend and settings, checked: it takes audio, and a served one answers
    and hears (unless ``--no-probe``/``--trust-audio``)."""
    from hear2act_agents.audit_labeller import require_audio
    from hear2act_agents.llm.factory import (
        REMOTE_PREFIXES,
        check_backend_settings,
        hears_audio,
        make_backend,
        split_spec,
    )
    from hear2act_cli.run_config import flag_texts

    settings = flag_texts(args.setting or [])
    spec = args.model
    prefix, _ = split_spec(spec)
    check_backend_settings(spec, settings, base_url=args.base_url)
    if not hears_audio(spec, settings):  # known from the spec alone: load nothing first
        require_audio(None, spec)
    backend = make_backend(spec, base_url=args.base_url, trust_audio=args.trust_audio, **settings)
    require_audio(backend, spec)
    if prefix in REMOTE_PREFIXES:  # a server that is down, or does not hear, stops it here
        backend.check_before_run(probe=not args.no_probe)
    return backend, settings


def _label(args: argparse.Namespace, folder: Path, backend: Any, settings: dict[str, str]) -> int:
    """``--model``: the model labels the clips it has not labelled yet (the serving lock is
    held throughout, so no page serves the folder meanwhile). A call that fails after the
    backend's retries (the server went down mid-run) stops it with one line saying how many
    labels are saved: ``EXIT_EPISODE_ERRORS``, as ``eval`` exits when episodes errored (a
    server down at the start fails the probe in ``_model`` instead: a ``ConfigError``)."""
    from hear2act_agents.audit_labeller import label_audit

    spec = args.model
    audit = _open(args, folder)
    try:
        done = label_audit(audit, backend, spec, settings, progress=_say)
    except InfrastructureError as exc:  # its message says what is saved and how to resume
        _say(f"hear2act: error: {exc}")
        return EXIT_EPISODE_ERRORS
    print(
        f"{done.model.name}: labelled {done.labelled_now} clip(s) now, {done.labelled} of "
        f"{done.total} in all ({done.no_answer} without a usable answer), in "
        f"{audit.folder}/models/{done.model.slug}.jsonl; score with: hear2act audit --score "
        f"{audit.folder}"
    )
    return EXIT_OK


def _score(args: argparse.Namespace) -> int:
    from hear2act_env.listen.audit.scores import score_audit

    given = [f"--{k.replace('_', '-')}" for k in _SERVE_ONLY if getattr(args, k, None) is not None]
    if given:
        raise ConfigError(f"{given[0]}: not used with --score (the folder records its settings)")
    json_path = writable_file("--json", args.json) if args.json is not None else None
    result = score_audit(Path(args.score))
    print(result.markdown(), end="")
    if json_path is not None:
        import json

        from hear2act_env.safewrite import write_atomic

        text = json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
        write_atomic(json_path, text.encode("utf-8"))
        print(f"wrote {json_path}")
    return EXIT_OK


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit",
        help="the perception audit of a renderer: people label reaction clips in the browser "
        "(or a model labels them), then score them (paper, appendix E)",
        description="Make (or reopen) an audit folder of reaction clips from the test split, "
        "half spoken with a resolved and half with an unresolved delivery of the same line, "
        "and serve a page where one annotator labels them; with --model, have an audio LLM "
        "label them instead; with --score, compare the labels with the truth, with each other "
        "and with the reference perceiver (paper, Table 11).",
        epilog=EXIT_STATUSES,
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--out",
        metavar="AUDIT_DIR",
        help="the audit folder to make (first time) or reopen, then serve",
    )
    where.add_argument(
        "--score",
        metavar="AUDIT_DIR",
        help="score the labels people and models saved in this audit folder",
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
    p.add_argument(
        "--context",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a new audit shows people (and gives models) the dialogue turns before each clip, "
        "as the paper's annotators had them (default: no); the folder records which",
    )
    options.add_audio_cache(p)
    p.add_argument(
        "--model",
        default=None,
        metavar="SPEC",
        help="label the clips with this audio LLM instead of serving the page: openai:MODEL or "
        "litellm:PROVIDER/MODEL with --setting send_audio=true, qwen2-audio:PATH, "
        "qwen2.5-omni:PATH; it gets the instructions people get; resumes where it stopped",
    )
    p.add_argument(
        "--base-url",
        default=None,
        help="with --model: API root of an OpenAI-compatible server (openai: and litellm:)",
    )
    p.add_argument(
        "--setting",
        action="append",
        metavar="KEY=JSON",
        help="with --model: a backend setting (send_audio=true, temperature=0, max_tokens=16, "
        "device=cuda); repeatable. Settings that change answers make another model row "
        "(timeouts, retries, concurrency and device do not)",
    )
    p.add_argument(
        "--no-probe",
        action="store_true",
        help="with --model: skip the one request sent to an openai:/litellm: server first (the "
        "check that it hears audio still runs, unless --trust-audio)",
    )
    p.add_argument(
        "--trust-audio",
        action="store_true",
        help="with --model: skip the check that the server hears the audio it is sent",
    )
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
