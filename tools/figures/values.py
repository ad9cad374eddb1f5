"""Numbers and text: normalizing quotes, finding one in a line, and the line a text-file
key selects."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal

from .errors import FigureError

_NUM = r"[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
NUM_RE = re.compile(_NUM)
#: A point estimate followed by its interval: ``0.146 [0.146, 0.147]``, ``87.3% [84.4%, 90.2%]``.
CI_RE = re.compile(rf"(?<![\w.]){_NUM}%?[ \t]*\[\s*{_NUM}%?\s*,\s*{_NUM}%?\s*\]")
_THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_PERCENT_RE = re.compile(r"(?<=\d)%")


def norm(text: str) -> str:
    """Whitespace runs as one space, thousands separators dropped, a Unicode minus as ``-``."""
    text = _THOUSANDS_RE.sub("", text.replace("\u2212", "-"))
    return " ".join(text.split())


def occurs(needle: str, haystack: str) -> bool:
    """``needle`` occurs in ``haystack`` (both normalized), not inside a longer number."""
    pattern = re.escape(needle)
    if needle[:1].isdigit():
        pattern = r"(?<![\d.+-])" + pattern
    if needle[-1:].isdigit():
        pattern += r"(?!\.?\d)"
    return re.search(pattern, haystack) is not None


def in_line(quoted: str, line: str) -> bool:
    """A quote from a text file's line: as ``occurs``, but a leading ``+`` of the quote and
    a ``%`` right after a number (on either side) are left out of the comparison."""
    quoted = _PERCENT_RE.sub("", norm(quoted))
    if quoted.startswith("+") and quoted[1:2].isdigit():
        quoted = quoted[1:]
    return bool(quoted) and occurs(quoted, _PERCENT_RE.sub("", line))


def select_line(lines: Sequence[str], key: str, shown: str) -> int:
    """The index of the one line of ``lines`` (normalized) that a text-file ``key`` selects.

    ``A && B`` selects the line holding both pieces; ``S >> K`` the first line holding K after
    the single line holding S (a section heading), and so on for each further ``>>``."""
    steps = [[norm(p) for p in step.split(" && ")] for step in key.split(" >> ")]
    if not all(all(step) for step in steps):
        raise FigureError(f"key {key!r}: an empty piece")
    hits = [i for i, line in enumerate(lines) if all(p in line for p in steps[0])]
    if len(hits) != 1:
        which = (
            "no line"
            if not hits
            else f"{len(hits)} lines ({', '.join(str(i + 1) for i in hits[:8])})"
        )
        raise FigureError(f"key {key!r} matches {which} of {shown}; expected one")
    index = hits[0]
    for step in steps[1:]:
        after = [i for i in range(index + 1, len(lines)) if all(p in lines[i] for p in step)]
        if not after:
            raise FigureError(
                f"key {key!r}: no line after line {index + 1} of {shown} holds {' && '.join(step)!r}"
            )
        index = after[0]
    return index


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def decimals(token: str) -> int:
    return len(token.split(".", 1)[1]) if "." in token else 0


def token_value(token: str) -> Decimal:
    return Decimal(token.replace(",", "").replace("\u2212", "-").lstrip("+"))
