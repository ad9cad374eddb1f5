"""The runner's progress line: episodes done, their rate, an ETA, and model calls and tokens.

``format_progress`` is a pure function of counts and elapsed seconds (tested with made-up
numbers); ``Progress`` keeps the counts as records reach the driver and rewrites one line of
stderr with ``\\r``, at most twice a second. Rates and the ETA count only the episodes run by
this invocation, not the ones a resumed run found already recorded. Model calls and tokens come
from the records' ``agent_stats`` (agents that report none, such as the rule baselines, show
none), and ``errors`` counts the episodes that ended with an error.
"""

from __future__ import annotations

import math
import shutil
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TextIO

from hear2act_env.evaluation.records import EpisodeRecord

__all__ = ["Counts", "Progress", "format_duration", "format_progress", "format_rate"]

#: Width of the bar in characters.
BAR = 20
#: Seconds between two redraws (the last episode always redraws).
REDRAW_S = 0.5


@dataclass
class Counts:
    """What a run has done so far. ``done`` includes the ``resumed`` episodes (found already
    recorded); ``calls``, ``tokens`` and ``errors`` cover this run's episodes only, and
    ``calls`` stays None until a record reports model calls."""

    total: int
    done: int = 0
    resumed: int = 0
    calls: int | None = None
    tokens: int = 0
    errors: int = 0

    def add(self, records: Iterable[EpisodeRecord]) -> None:
        """Count finished records (cheap: a few dict lookups per record)."""
        for r in records:
            self.done += 1
            if r.error is not None:
                self.errors += 1
            stats = r.agent_stats
            if "calls" in stats:
                self.calls = (self.calls or 0) + int(stats.get("calls") or 0)
                self.tokens += int(stats.get("prompt_tokens") or 0)
                self.tokens += int(stats.get("completion_tokens") or 0)


def format_rate(per_second: float) -> str:
    """A rate with two significant digits below 10 (``0.31``, ``0.0042``, ``2.5``), whole
    numbers from 10 up (``12``, ``340``), shortened from 1000 (``45.6k``); never ``0`` for a
    positive rate."""
    if per_second <= 0 or not math.isfinite(per_second):
        return "0"
    if per_second >= 999.5:
        return _amount(round(per_second))
    if per_second >= 10:
        return f"{per_second:.0f}"
    decimals = max(1, 1 - math.floor(math.log10(per_second)))
    return f"{per_second:.{decimals}f}"


def format_duration(seconds: float) -> str:
    """``h:mm:ss`` (hours grow past 9 as needed)."""
    whole = max(0, int(round(seconds)))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def _amount(n: int) -> str:
    """A count in at most four characters of digits: 950, 12.3k, 4.1M."""
    if n < 1000:
        return str(n)
    for unit, size in (("k", 1e3), ("M", 1e6), ("G", 1e9)):
        if n < size * 1000 or unit == "G":
            value = n / size
            return f"{value:.1f}{unit}" if value < 100 else f"{value:.0f}{unit}"
    raise AssertionError("unreachable")


def format_progress(counts: Counts, elapsed_s: float, bar: int = BAR) -> str:
    """The progress line (no ``\\r``), e.g. ``[####      ] 12/48 episodes, 0.31/s, ETA
    0:01:56 | 240 calls (6.2/s), 18.3k tokens (470/s), 1 error``.

    The rate is this run's episodes over ``elapsed_s``; the ETA is ``--`` until one of them has
    finished in a positive time (``0:00:00`` once every episode is done). The calls part
    appears once a record reports model calls; the errors part once an episode errored.
    ``bar=0`` leaves the bar out."""
    total, done = max(counts.total, 0), min(max(counts.done, 0), max(counts.total, 0))
    filled = bar * done // total if total else bar
    ran = max(done - counts.resumed, 0)
    measurable = elapsed_s > 0 and ran > 0
    rate = ran / elapsed_s if measurable else 0.0
    if done >= total:
        eta = format_duration(0)
    elif measurable:
        eta = format_duration((total - done) / rate)
    else:
        eta = "--"
    speed = f"{format_rate(rate)}/s" if measurable else "--/s"
    line = f"[{'#' * filled:<{bar}}] " if bar > 0 else ""
    line += f"{done}/{total} episodes, {speed}, ETA {eta}"
    extra = []
    if counts.calls is not None:
        for n, what in ((counts.calls, "calls"), (counts.tokens, "tokens")):
            per = f" ({format_rate(n / elapsed_s)}/s)" if elapsed_s > 0 else ""
            extra.append(f"{_amount(n)} {what}{per}")
    if counts.errors:
        extra.append(f"{counts.errors} error{'s' if counts.errors != 1 else ''}")
    return line + (" | " + ", ".join(extra) if extra else "")


class Progress:
    """The progress line on ``stream`` (stderr by default) while a grid runs; does nothing
    when not ``enabled``."""

    def __init__(self, total: int, done: int, enabled: bool, stream: TextIO | None = None) -> None:
        self.counts = Counts(total=total, done=done, resumed=done)
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self.last = -math.inf  # the first finished chunk draws at once
        self.width = 0  # the longest line drawn, to blank a shorter one's leftovers
        self.columns = shutil.get_terminal_size((200, 24)).columns if enabled else 200

    def update(self, records: Iterable[EpisodeRecord]) -> None:
        self.counts.add(records)
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.last > REDRAW_S or self.counts.done >= self.counts.total:
            self.last = now
            room = max(self.columns - 1, 20)  # a line that wraps is not rewritten by \r
            line = format_progress(self.counts, now - self.start)
            if len(line) > room:
                line = format_progress(self.counts, now - self.start, bar=0)[:room]
            self.width = max(self.width, len(line))
            print(f"\r{line:<{self.width}}", end="", file=self.stream, flush=True)

    def close(self) -> None:
        if self.enabled and self.width:  # end the line drawn (none when nothing ran)
            print(file=self.stream)
