"""The ``hear2act`` command (the ``hear2act_cli`` package, repository folder ``cli/``): one
parser, one module per command group. It is the one package that imports both the environment
(``hear2act_env``) and the agents (``hear2act_agents``); neither imports it.

``demo`` (demo.py); ``render``, ``perceive`` (speech.py); ``scenarios``, with the bank's
``scenarios leakage`` audit (scenarios.py); ``benchmark``, ``eval``, ``report`` (evaluate.py);
``train``, ``rl-eval`` (rl.py); ``view`` (view.py), ``play`` (play.py), ``audit`` (audit.py).
Shared flags live in options.py.

One word per meaning: *play* is a person playing the assistant in the browser (``play``);
an agent *runs* episodes (``demo``, ``eval``, ``benchmark``, ``rl-eval``); *audit* is the
human perception audit (``audit``), and ``scenarios leakage`` measures what prior-only
attackers get from a bank. Every handler returns an exit status (``status``: 0 done, 3 some episodes
errored); a ``Hear2ActError`` becomes a one-line message and exit status 2; SIGINT or SIGTERM
stops the command with status 130 and a line saying how to resume (``hear2act_env.interrupts``).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable

from hear2act_cli.status import EXIT_BAD_CONFIG, EXIT_INTERRUPTED
from hear2act_env import interrupts
from hear2act_env.errors import Hear2ActError

__all__ = ["build_parser", "console_main", "main"]


def _commands() -> tuple[Callable[[argparse._SubParsersAction], None], ...]:
    from hear2act_cli import audit, demo, evaluate, export, play, rl, scenarios, speech, view

    return (
        demo.add,
        speech.add_render,
        speech.add_perceive,
        scenarios.add,
        evaluate.add_benchmark,
        evaluate.add_eval,
        evaluate.add_report,
        export.add_export_results,
        rl.add_train,
        rl.add_rl_eval,
        view.add,
        play.add,
        audit.add,
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``hear2act``."""
    parser = argparse.ArgumentParser(
        prog="hear2act", description="Hear2Act benchmark environment tools"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in _commands():
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one ``hear2act`` command; return its exit status (see ``hear2act_cli.status``)."""
    with interrupts.handling_signals():
        try:
            args = build_parser().parse_args(argv)
            return int(args.func(args))
        except (interrupts.Interrupted, KeyboardInterrupt) as exc:
            resume = getattr(exc, "resume", None)
            print(f"hear2act: interrupted; {resume or 'nothing more was started'}", file=sys.stderr)
            return EXIT_INTERRUPTED
        except Hear2ActError as exc:
            print(f"hear2act: error: {exc}", file=sys.stderr)
            return EXIT_BAD_CONFIG
        except OSError as exc:  # a file the command needed, named by the OS
            where = f": {exc.filename}" if exc.filename else ""
            print(f"hear2act: error: {exc.strerror or exc}{where}", file=sys.stderr)
            return EXIT_BAD_CONFIG


def console_main() -> None:
    """The console script: ``main`` with its status as the process's exit status. After an
    interrupt the process ends at once if calls are still in flight in worker threads
    (abandoning them: their episodes were not written and run again on resume)."""
    try:
        code = main()
    except KeyboardInterrupt:  # before the handlers were in place
        code = EXIT_INTERRUPTED
    main_thread = threading.main_thread()
    busy = [t for t in threading.enumerate() if t is not main_thread and not t.daemon]
    if code == EXIT_INTERRUPTED and busy:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
