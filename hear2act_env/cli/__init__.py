"""The ``hear2act`` command: one parser, one module per command group.

``demo`` (demo.py); ``render``, ``perceive`` (speech.py); ``scenarios`` (scenarios.py);
``benchmark``, ``eval``, ``report`` (evaluate.py); ``train``, ``rl-eval`` (rl.py); ``view``
(view.py), ``play`` (play.py), ``audit`` (audit.py). Shared flags
live in options.py. Every handler returns an exit status; a ``Hear2ActError`` becomes a one-line
message and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from hear2act_env.errors import Hear2ActError

__all__ = ["build_parser", "main"]


def _commands() -> tuple[Callable[[argparse._SubParsersAction], None], ...]:
    from hear2act_env.cli import audit, demo, evaluate, play, rl, scenarios, speech, view

    return (
        demo.add,
        speech.add_render,
        speech.add_perceive,
        scenarios.add,
        evaluate.add_benchmark,
        evaluate.add_eval,
        evaluate.add_report,
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
    """Entry point of the ``hear2act`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except Hear2ActError as exc:
        print(f"hear2act: error: {exc}", file=sys.stderr)
        return 2
