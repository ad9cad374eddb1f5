"""Stopping on SIGINT and SIGTERM: no new work after the signal, a second one exits at once.

``handling_signals()`` (entered by the ``hear2act`` command) installs the handlers. The first
signal sets a process-wide stop flag; outside a ``cooperative()`` section it also raises
``KeyboardInterrupt`` in the main thread (which no ``except Exception`` swallows), inside one
the loop that
entered it polls ``requested()`` and winds down itself (the runner: it starts no new episode,
writes what finished and raises ``Interrupted``). Code that talks to a model calls
``raise_if_requested()`` before each request and sleeps with ``sleep()``, so no new call starts
after the signal. A second signal ends the process at once with status 130.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from hear2act_env.errors import Hear2ActError

__all__ = [
    "EXIT_INTERRUPTED",
    "Interrupted",
    "cooperative",
    "handling_signals",
    "raise_if_requested",
    "request",
    "requested",
    "reset",
    "sleep",
]

#: The exit status of a command stopped by a signal (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130

_STOP = threading.Event()
_STATE: dict[str, Any] = {"cooperative": 0, "signal": None}


class Interrupted(Hear2ActError):
    """The run was stopped by SIGINT or SIGTERM (never an episode's or an agent's failure)."""

    def __init__(self, message: str = "interrupted", resume: str | None = None) -> None:
        super().__init__(message)
        #: One line telling how to carry on (printed by the command), e.g. "rerun ... to resume".
        self.resume = resume


def requested() -> bool:
    """Whether a stop was requested (a signal arrived, or ``request()`` was called)."""
    return _STOP.is_set()


def request() -> None:
    """Ask every cooperative loop and model call to stop (what the first signal does)."""
    _STOP.set()


def reset() -> None:
    """Clear the stop flag (a new command in the same process, or a test)."""
    _STOP.clear()
    _STATE["signal"] = None


def raise_if_requested() -> None:
    """Raise ``Interrupted`` when a stop was requested: call it before starting new work."""
    if _STOP.is_set():
        raise Interrupted(f"stopped by {_STATE['signal'] or 'a stop request'}")


def sleep(seconds: float) -> None:
    """Sleep up to ``seconds``, waking (with ``Interrupted``) as soon as a stop is requested."""
    if _STOP.wait(max(0.0, seconds)):
        raise_if_requested()


@contextlib.contextmanager
def cooperative() -> Iterator[None]:
    """Within this block a first signal only sets the flag: the caller polls ``requested()``."""
    _STATE["cooperative"] += 1
    try:
        yield
    finally:
        _STATE["cooperative"] -= 1


def _handle(signum: int, frame: Any) -> None:  # noqa: ARG001 - the signal module's signature
    name = signal.Signals(signum).name
    if _STOP.is_set():  # the second signal: exit now, whatever is in flight
        try:
            sys.stderr.write(f"\nhear2act: {name} again: exiting at once\n")
            sys.stderr.flush()
        finally:
            os._exit(EXIT_INTERRUPTED)
    _STATE["signal"] = name
    _STOP.set()
    sys.stderr.write(
        f"\nhear2act: {name} received: stopping (no new work starts; press Ctrl-C again to "
        "exit at once)\n"
    )
    sys.stderr.flush()
    if not _STATE["cooperative"]:
        raise KeyboardInterrupt(f"stopped by {name}")


@contextlib.contextmanager
def handling_signals() -> Iterator[None]:
    """Install the SIGINT and SIGTERM handlers for the block (main thread only; elsewhere, or
    where signals cannot be set, the block runs with the handlers as they are)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reset()
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, _handle)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
