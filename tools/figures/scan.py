"""Scanning a page or docstring: markers, code spans and fenced blocks, the block after a
figblock marker, unmarked CIs, and the docstrings of a Python file."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .errors import FigureError
from .layout import DATA_DIR
from .report import Problem, Report
from .values import CI_RE


@dataclass
class _Marker:
    start: int
    end: int
    kind: str  # "open", "close", "block"
    historical: bool
    spec: str


_LOOSE_RE = re.compile(r"<!--\s*/?\s*fig", re.IGNORECASE)
_TOKEN_RE = re.compile(
    r"<!--(?P<close>/)?(?P<kind>fig|figblock)(?P<hist>-historical)?(?::(?P<spec>[^\n]*?))?-->"
)
_FENCE_RE = re.compile(r"^[ \t]*(```|~~~)")
_CODE_SPAN_RE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


class Scanner:
    """The scanning part of the checker, which supplies ``check_inline`` and ``check_block``."""

    report: Report

    def scan(self, path: str, text: str, first_line: int = 1) -> int:
        """Check the markers of one page (or docstring) and look for unmarked CIs; return the
        number of markers."""
        report = self.report

        def line_of(pos: int) -> int:
            return first_line + text.count("\n", 0, pos)

        def problem(pos: int, message: str) -> None:
            report.problems.append(Problem(path, line_of(pos), message))

        code = _code_ranges(text)
        tokens: list[_Marker] = []
        for loose in _LOOSE_RE.finditer(text):
            if _inside(loose.start(), code):
                continue
            match = _TOKEN_RE.match(text, loose.start())
            if match is None:
                end = text.find("-->", loose.start())
                shown = text[loose.start() : end + 3 if end >= 0 else loose.start() + 40]
                problem(
                    loose.start(),
                    f"malformed marker {shown.splitlines()[0]!r}: expected <!--fig:FILE#KEY-->, "
                    "<!--/fig-->, <!--figblock:FILE--> (or a -historical one) on one line",
                )
                continue
            if match["close"]:
                if match["kind"] != "fig" or match["hist"] or match["spec"] is not None:
                    problem(
                        match.start(),
                        f"malformed marker {match[0]!r}: the closing one is <!--/fig-->",
                    )
                    continue
                kind = "close"
            else:
                if match["spec"] is None:
                    problem(
                        match.start(),
                        f"malformed marker {match[0]!r}: expected {match['kind']}:FILE...",
                    )
                    continue
                kind = "open" if match["kind"] == "fig" else "block"
            tokens.append(
                _Marker(match.start(), match.end(), kind, bool(match["hist"]), match["spec"] or "")
            )

        masked = list(text)
        files_markers = 0
        opened: _Marker | None = None
        for token in tokens:
            if token.kind == "open":
                if opened is not None:
                    problem(opened.start, "marker not closed with <!--/fig--> before the next one")
                opened = token
            elif token.kind == "close":
                if opened is None:
                    problem(token.start, "<!--/fig--> without an opening marker")
                    continue
                files_markers += 1
                quoted = text[opened.end : token.start]
                try:
                    self.check_inline(opened.spec, quoted, opened.historical)
                except FigureError as exc:
                    problem(opened.start, str(exc))
                _mask(masked, opened.start, token.end)
                opened = None
            else:
                if opened is not None:
                    problem(opened.start, "marker not closed with <!--/fig--> before the next one")
                    opened = None
                files_markers += 1
                block, block_end = _block_after(text, token.end)
                numbered = [(line_of(pos), line) for pos, line in block]
                try:
                    for number, line in self.check_block(token.spec, token.historical, numbered):
                        report.problems.append(
                            Problem(
                                path,
                                number,
                                f"figure differs: this line of the block is in no line of "
                                f"{DATA_DIR}/{token.spec.strip()}: {line.strip()[:120]!r}",
                            )
                        )
                except FigureError as exc:
                    problem(token.start, str(exc))
                _mask(masked, token.start, block_end)
        if opened is not None:
            problem(opened.start, "marker not closed with <!--/fig-->")
        report.markers += files_markers

        plain = "".join(masked)
        for match in CI_RE.finditer(plain):
            problem(
                match.start(),
                f"unmarked figure {match[0]!r}: quote it from {DATA_DIR}/ with "
                "<!--fig:FILE#KEY-->...<!--/fig--> (or a figblock)",
            )
        return files_markers


def _mask(chars: list[str], start: int, end: int) -> None:
    for i in range(start, min(end, len(chars))):
        if chars[i] != "\n":
            chars[i] = " "


def _inside(pos: int, ranges: Sequence[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in ranges)


def _code_ranges(text: str) -> list[tuple[int, int]]:
    """Character ranges of fenced code blocks and inline code spans."""
    ranges: list[tuple[int, int]] = []
    pos = 0
    fence_start: int | None = None
    for line in text.splitlines(keepends=True):
        if _FENCE_RE.match(line):
            if fence_start is None:
                fence_start = pos
            else:
                ranges.append((fence_start, pos + len(line)))
                fence_start = None
        elif fence_start is None:
            for match in _CODE_SPAN_RE.finditer(line):
                ranges.append((pos + match.start(), pos + match.end()))
        pos += len(line)
    if fence_start is not None:
        ranges.append((fence_start, pos))
    return ranges


def _block_after(text: str, pos: int) -> tuple[list[tuple[int, str]], int]:
    """The block after a figblock marker: the lines of the fenced block that opens on the next
    non-blank line, or else the run of non-blank lines there. Returns ((position, line), ...)
    and the position where the block ends."""
    line_end = text.find("\n", pos)
    if line_end < 0:
        return [], len(text)
    pos = line_end + 1
    lines: list[tuple[int, str]] = []
    offsets = []
    for line in text[pos:].splitlines(keepends=True):
        offsets.append((pos, line))
        pos += len(line)
    i = 0
    while i < len(offsets) and not offsets[i][1].strip():
        i += 1
    if i == len(offsets):
        return [], pos
    if _FENCE_RE.match(offsets[i][1]):
        for start, line in offsets[i + 1 :]:
            if _FENCE_RE.match(line):
                return lines, start + len(line)
            if line.strip():
                lines.append((start, line.rstrip("\n")))
        return lines, pos
    end = offsets[i][0]
    for start, line in offsets[i:]:
        if not line.strip():
            break
        lines.append((start, line.rstrip("\n")))
        end = start + len(line)
    return lines, end


def docstrings(source: str) -> Iterator[tuple[int, str]]:
    """(first line, source text) of each module, class and function docstring literal."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if not node.body or not isinstance(node.body[0], ast.Expr):
            continue
        literal = node.body[0].value
        if not (isinstance(literal, ast.Constant) and isinstance(literal.value, str)):
            continue
        first, last = literal.lineno, literal.end_lineno or literal.lineno
        chunk = lines[first - 1 : last]
        chunk[-1] = chunk[-1][: literal.end_col_offset]
        chunk[0] = " " * literal.col_offset + chunk[0][literal.col_offset :]
        yield first, "".join(chunk)
