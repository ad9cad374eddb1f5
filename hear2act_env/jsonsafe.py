"""JSON reads with a bounded nesting depth, for every file or body that comes from outside.

``json.loads`` on a deeply nested text ends in a ``RecursionError`` (or, downstream, in code
that walks the value); ``loads`` turns both into a ``ValueError`` that callers already handle
as "not valid JSON", so a hostile results line, manifest, cache entry or request body is a named
error, never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["MAX_DEPTH", "JSONDepthError", "check_depth", "load_file", "loads"]

#: The deepest nesting any file this package reads legitimately has is under 10.
MAX_DEPTH = 64


class JSONDepthError(ValueError):
    """A JSON value nests deeper than allowed."""


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> Any:
    """``value`` itself when no list or dict in it nests deeper than ``max_depth``."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            raise JSONDepthError(f"JSON nests deeper than {max_depth} levels")
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return value


def loads(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(text)``, with nesting deeper than ``max_depth`` a ``JSONDepthError``."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONDepthError(f"JSON nests deeper than {max_depth} levels") from None
    return check_depth(value, max_depth)


#: The largest JSON file ``load_file`` reads (manifests, perceivers, configs are far smaller).
MAX_FILE_BYTES = 256 * 1024 * 1024


def load_file(path: str | Path, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of the regular file at ``path`` (UTF-8), depth-bounded like ``loads``. A
    FIFO, a device or a file over ``MAX_FILE_BYTES`` is a ``ValueError`` (``UnreadableFile``),
    never waited on or read without end; a file that cannot be opened, an ``OSError``."""
    from hear2act_env.boundedio import read_regular

    return loads(read_regular(path, MAX_FILE_BYTES).decode("utf-8"), max_depth)
