"""The value of a setting typed as text (``--setting KEY=VALUE``): one rule for every command.

The text is read as JSON (``64``, ``0.5``, ``true``, ``["END"]``,
``{"chat_template_kwargs": {"enable_thinking": false}}``), else as a TOML value (``'END'``,
``{ enable_thinking = false }``), else it is the string itself (a bare word: ``cuda``,
``Qwen/Qwen3-8B``). ``null``, a date, a number that is not finite, text nested deeper than ``MAX_DEPTH`` and text that
reads as several values stay text (checked, with the rest, by the setting's own type later). So
``--setting max_tokens=64`` and a run file's ``max_tokens = 64`` are the same value, stored and
compared as the integer 64; a string that looks like a number is quoted
(``--setting 'name="64"'``).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["setting_value"]

#: Deepest nesting read from one value (the JSON reader's own cap).
MAX_DEPTH = 32


def setting_value(text: str) -> Any:
    """``text`` as the value it writes (see the module docstring)."""
    from hear2act_env import jsonsafe

    try:
        value = jsonsafe.loads(text, max_depth=MAX_DEPTH)
    except ValueError:
        value = _toml_value(text)
    return text if value is None or not _plain(value, MAX_DEPTH) else value


def _plain(value: Any, depth: int) -> bool:
    """Whether ``value`` is JSON data (no date) nesting at most ``depth`` deep with only finite
    numbers."""
    if depth < 0:
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_plain(v, depth - 1) for v in value.values())
    if isinstance(value, list):
        return all(_plain(v, depth - 1) for v in value)
    return isinstance(value, str | int | bool)  # not a TOML date or time


def _toml_value(text: str) -> Any:
    """``text`` as one TOML value, or None when it is not exactly one."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            return None
    if "\n" in text or "\r" in text:
        return None
    try:
        table = tomllib.loads(f"v = {text}")
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return None
    return table.get("v") if list(table) == ["v"] else None
