"""Untrusted text (agent, model and annotator names read from results and label files) made
safe inside the tables a command writes: a CSV cell a spreadsheet would run as a formula gets a
leading apostrophe (``neutral_cell``); a Markdown cell or heading can neither leave its line nor
add a column or raw HTML (``markdown_text``)."""

from __future__ import annotations

import unicodedata
from typing import Any

__all__ = ["markdown_text", "neutral_cell"]

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def neutral_cell(value: Any) -> Any:
    """``value``, with an apostrophe before a text a spreadsheet would run as a formula."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _is_number(value):
        return "'" + value
    return value


#: Characters a Markdown cell or heading shows as a space: control characters and line or
#: paragraph separators (a newline would end the row and could start a heading).
_MARKDOWN_BREAKS = frozenset({"Cc", "Zl", "Zp"})
#: Characters escaped with a backslash: the escape itself, the cell separator, and ``<`` (raw
#: HTML or an autolink).
_MARKDOWN_ESCAPED = frozenset("\\|<")


def markdown_text(text: str) -> str:
    """``text`` as one Markdown table cell or heading: a backslash before ``\\``, ``|`` and
    ``<``, a space for each control character or line break. Leading ``#``, ``>``, ``-`` or
    ``=`` are then harmless: the text cannot leave its line."""
    out = []
    for ch in text:
        if ch in _MARKDOWN_ESCAPED:
            out.append("\\" + ch)
        elif unicodedata.category(ch) in _MARKDOWN_BREAKS:
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)
