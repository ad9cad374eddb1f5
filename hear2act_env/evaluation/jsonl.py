"""Reading the runner's append-only JSONL files (results, agent logs)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from hear2act_env.errors import ConfigError

__all__ = ["jsonl_lines"]


def jsonl_lines(path: Path, what: str) -> Iterator[tuple[int, str | None, bool]]:
    """``(line number, text, is_last)`` for each non-blank line of ``path`` (nothing when it
    does not exist); ``text`` is None for a line that is not UTF-8. ``is_last`` marks the final
    line, which a killed run may have left torn (readers drop it quietly and name any other
    bad line). A file that cannot be read, or that is not a regular file (a folder, a FIFO, a
    device: nothing is read from those), is a ``ConfigError`` naming ``what`` it should be."""
    if not path.exists():
        return
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)  # a FIFO would block, a device never end
        if regular:
            lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        raise ConfigError(
            f"{what}: cannot read {path} ({type(exc).__name__}); expected a {what} JSONL file"
        ) from None
    if not regular:
        raise ConfigError(f"{what}: {path} is not a regular file; expected a {what} JSONL file")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for i, line in enumerate(lines):
        if line.strip():
            try:
                text: str | None = line.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            yield i + 1, text, i == last
