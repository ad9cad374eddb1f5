"""Measured figures quoted in the documentation, checked against the data files that hold them.

    python -m tools.figures check [--root .]

Every measured figure quoted in README.md, in docs/**/*.md (docs/data/ excepted) and in the
docstrings of hear2act_env/ and agents/ comes from a file under docs/data/ that the command
which measured it wrote, and is quoted inside a marker: an HTML comment, invisible once the
page is rendered::

    <!--fig:FILE#KEY-->QUOTED TEXT<!--/fig-->

FILE is a path relative to docs/data/ (never absolute, never through ``..`` or a link that
leads out). The text between the two comments may wrap over lines. KEY picks one figure:

* In a JSON file, a path of parts joined by dots. A part is a key of an object, or an index
  into a list (``figures.3.estimate``); brackets after a part refine it: ``[3]`` an index,
  ``["a.b"]`` a key holding dots, ``[field=value]`` the single item of a list of objects whose
  ``field`` equals ``value`` (several brackets in a row must all hold:
  ``figures[attacker=ranker (linear)][scenarios=test].estimate``). A part that selects no item,
  or several, is an error. A final ``*100`` (any number) scales numbers, for percentages.
  What KEY reaches decides what QUOTED must be:

  - a number: QUOTED is that number rounded to as many decimals as QUOTED shows (``0.897`` for
    0.89705...; thousands separators and a leading ``+`` allowed, a trailing ``%`` with
    ``*100``);
  - a list of numbers: ``[lo, hi]`` (any length), each rounded the same way;
  - an estimate, an object with the numbers ``value``, ``low`` and ``high`` (or with one of
    the numbers ``value``, ``accuracy``, ``mean`` and a two-number list ``ci``): ``v [lo, hi]``;
  - a string: QUOTED occurs in it.

* In any other file (tables and logs written by commands), KEY is a literal piece of exactly
  one line (several pieces joined by `` && `` must all occur in it). Where the same row label
  comes back in several tables of one file, ``HEADING >> ROW`` picks the first line holding
  ROW after the one line holding HEADING (``>>`` may repeat). QUOTED must occur in that
  line, and not as part of a longer number. Both sides are compared with whitespace runs as
  one space, thousands separators dropped and a ``%`` after a number left out; a leading
  ``+`` of QUOTED is left out too.

A block copied from a text data file, a fenced code block or a table, is quoted whole with
``<!--figblock:FILE-->`` on the line before it: each of its non-blank lines must occur in
some line of FILE.

docs/data/SOURCES.json, the manifest, gives for each data file the command that writes it
and the code version it claims (``claims``): ``bank_sha256`` (a prefix of the SHA-256 of the
shipped bank's bytes, as ``hear2act_env.scenarios.bank.load_bank`` computes it),
``bank_version`` (``BANK_VERSION``), ``prosody_table`` and ``voices`` (prefixes of the prosody
and voice table digests), ``renderer_revisions`` ({renderer name: its revision, the first part
of its ``version``}) and ``package_version``. The check recomputes each claim from the code; a
data file whose claims do not hold is stale: run its command again. A file kept from an
earlier version on purpose (a comparison) says ``"historical": true``; its claims are not
recomputed, and it is quoted with ``fig-historical`` / ``figblock-historical`` instead, so
that whoever reads the page source sees it. A plain marker on a historical file, or a
historical one on a current file, is an error; so is a data file without an entry, and an
entry without a file.

A bootstrap CI (``0.146 [0.146, 0.147]``, ``87.3 [84.4, 90.2]``) outside any marker, code
blocks included, is an error too: a copy that escaped the check. Markers inside code spans or
fenced code blocks are not read, so a page can show the syntax.

Exit status 0 with a one-line summary, or 1 with one ``FILE:LINE: problem`` line each.
Keys are parsed, never evaluated; only the standard library and ``hear2act_env`` are used.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from hear2act_env import jsonsafe
from hear2act_env.errors import Hear2ActError

__all__ = ["FigureError", "Problem", "Report", "check", "main"]

DATA_DIR = "docs/data"
MANIFEST = "SOURCES.json"
#: Packages whose docstrings are scanned (module, class and function docstrings).
DOCSTRING_ROOTS = ("hear2act_env", "agents")


class FigureError(Hear2ActError, ValueError):
    """A marker, key or manifest entry that cannot be read, or a figure that does not hold."""


@dataclass(frozen=True, order=True)
class Problem:
    """One finding, printed as ``FILE:LINE: message``."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class Report:
    """What a check found: counts for the summary line and the problems."""

    markers: int = 0
    files_with_markers: int = 0
    files_scanned: int = 0
    data_files: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        return (
            f"figures: {self.markers} markers in {self.files_with_markers} files "
            f"({self.files_scanned} scanned), {self.data_files} data files: "
            + ("all agree" if self.ok else f"{len(self.problems)} problems")
        )


# --------------------------------------------------------------------------- numbers and text

_NUM = r"[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_NUM_RE = re.compile(_NUM)
#: A point estimate followed by its interval: ``0.146 [0.146, 0.147]``, ``87.3% [84.4%, 90.2%]``.
_CI_RE = re.compile(rf"(?<![\w.]){_NUM}%?[ \t]*\[\s*{_NUM}%?\s*,\s*{_NUM}%?\s*\]")
_THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_PERCENT_RE = re.compile(r"(?<=\d)%")


def _norm(text: str) -> str:
    """Whitespace runs as one space, thousands separators dropped, a Unicode minus as ``-``."""
    text = _THOUSANDS_RE.sub("", text.replace("\u2212", "-"))
    return " ".join(text.split())


def _occurs(needle: str, haystack: str) -> bool:
    """``needle`` occurs in ``haystack`` (both normalized), not inside a longer number."""
    pattern = re.escape(needle)
    if needle[:1].isdigit():
        pattern = r"(?<![\d.+-])" + pattern
    if needle[-1:].isdigit():
        pattern += r"(?!\.?\d)"
    return re.search(pattern, haystack) is not None


def _in_line(quoted: str, line: str) -> bool:
    """A quote from a text file's line: as ``_occurs``, but a leading ``+`` of the quote and
    a ``%`` right after a number (on either side) are left out of the comparison."""
    quoted = _PERCENT_RE.sub("", _norm(quoted))
    if quoted.startswith("+") and quoted[1:2].isdigit():
        quoted = quoted[1:]
    return bool(quoted) and _occurs(quoted, _PERCENT_RE.sub("", line))


def select_line(lines: Sequence[str], key: str, shown: str) -> int:
    """The index of the one line of ``lines`` (normalized) that a text-file ``key`` selects.

    ``A && B`` selects the line holding both pieces; ``S >> K`` the first line holding K after
    the single line holding S (a section heading), and so on for each further ``>>``."""
    steps = [[_norm(p) for p in step.split(" && ")] for step in key.split(" >> ")]
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


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _decimals(token: str) -> int:
    return len(token.split(".", 1)[1]) if "." in token else 0


def _token_value(token: str) -> Decimal:
    return Decimal(token.replace(",", "").replace("\u2212", "-").lstrip("+"))


# --------------------------------------------------------------------------- JSON keys

_SCALE_RE = re.compile(r"^(?P<path>.*?)\s*\*\s*(?P<scale>\d+(?:\.\d+)?)$")
_PART_RE = re.compile(r"(?P<name>[^\[\]]*)(?P<brackets>(?:\[[^\[\]]*\])*)")
_MISSING = object()


def _split_key(key: str) -> list[str]:
    """The dot-separated parts of a JSON key (dots inside brackets do not split)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(key):
        if char == "[":
            depth += 1
            if depth > 1:
                raise FigureError(f"key {key!r}: brackets inside brackets")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise FigureError(f"key {key!r}: ']' without '['")
        elif char == "." and depth == 0:
            parts.append(key[start:i])
            start = i + 1
    if depth:
        raise FigureError(f"key {key!r}: '[' without ']'")
    parts.append(key[start:])
    return parts


def _field_equals(value: object, wanted: str) -> bool:
    if isinstance(value, str):
        return _norm(value) == _norm(wanted)
    if isinstance(value, bool):
        return wanted.strip() == ("true" if value else "false")
    if _is_number(value):
        try:
            return Decimal(wanted.strip()) == Decimal(repr(value))
        except ArithmeticError:
            return False
    return False


def _select(node: Any, filters: list[tuple[str, str]], where: str) -> tuple[Any, str]:
    shown = "".join(f"[{f}={v}]" for f, v in filters)
    if not isinstance(node, list):
        raise FigureError(f"{where or 'the file'} is not a list: {shown} selects from lists")
    hits = [
        i
        for i, item in enumerate(node)
        if isinstance(item, dict)
        and all(_field_equals(item.get(f, _MISSING), v) for f, v in filters)
    ]
    if len(hits) != 1:
        which = "no item" if not hits else f"{len(hits)} items ({', '.join(map(str, hits[:8]))})"
        raise FigureError(f"{where}{shown} selects {which} of {len(node)}; expected exactly one")
    return node[hits[0]], f"{where}[{hits[0]}]"


def _step(node: Any, name: str, where: str) -> tuple[Any, str]:
    if isinstance(node, dict):
        if name not in node:
            keys = ", ".join(sorted(node)[:12]) + (", ..." if len(node) > 12 else "")
            raise FigureError(f"{where or 'the file'} has no key {name!r} (it has: {keys})")
        return node[name], f"{where}.{name}" if where else name
    if isinstance(node, list):
        if not name.isdigit():
            raise FigureError(
                f"{where or 'the file'} is a list: expected an index or [field=value], got {name!r}"
            )
        index = int(name)
        if index >= len(node):
            raise FigureError(
                f"{where or 'the file'}: index {index} out of range (0-{len(node) - 1})"
            )
        return node[index], f"{where}.{index}" if where else str(index)
    raise FigureError(f"{where} is a {type(node).__name__}: it has no part {name!r}")


def resolve_json(document: Any, key: str) -> Any:
    """The value ``key`` (a JSON key as in the module doc, without ``*SCALE``) selects."""
    node, where = document, ""
    for part in _split_key(key):
        match = _PART_RE.fullmatch(part)
        if match is None or not part:
            raise FigureError(f"key {key!r}: empty or malformed part {part!r}")
        if match["name"]:
            node, where = _step(node, match["name"], where)
        filters: list[tuple[str, str]] = []
        for inner in re.findall(r"\[([^\[\]]*)\]", match["brackets"]):
            if inner.isdigit() or (len(inner) >= 2 and inner[0] == inner[-1] == '"'):
                if filters:
                    node, where = _select(node, filters, where)
                    filters = []
                name = inner if inner.isdigit() else inner[1:-1]
                if not inner.isdigit() and not isinstance(node, dict):
                    raise FigureError(f"{where or 'the file'} is not an object: [{inner}]")
                node, where = _step(node, name, where)
            elif "=" in inner and inner.split("=", 1)[0].strip():
                name, wanted = inner.split("=", 1)
                filters.append((name.strip(), wanted))
            else:
                raise FigureError(
                    f'key {key!r}: [{inner}] is neither an index, a "key" nor field=value'
                )
        if filters:
            node, where = _select(node, filters, where)
    return node


def _estimate(value: Any) -> list[float] | None:
    """[point, low, high] of an estimate object, else None."""
    if not isinstance(value, dict):
        return None
    if all(_is_number(value.get(k)) for k in ("value", "low", "high")):
        return [value["value"], value["low"], value["high"]]
    ci = value.get("ci")
    if isinstance(ci, list) and len(ci) == 2 and all(_is_number(x) for x in ci):
        points = [k for k in ("value", "accuracy", "mean") if _is_number(value.get(k))]
        if len(points) == 1:
            return [value[points[0]], ci[0], ci[1]]
    return None


def compare_json(value: Any, quoted: str, scale: Decimal | None, key: str) -> None:
    """Raise ``FigureError`` unless ``quoted`` states ``value`` (see the module doc)."""
    text = _norm(quoted)
    if isinstance(value, str):
        if not _occurs(text, _norm(value)):
            raise FigureError(f"quoted {quoted!r} does not occur in {key} = {value!r}")
        return
    if _is_number(value):
        numbers, form = [value], "#"
    elif isinstance(value, list) and value and all(_is_number(v) for v in value):
        numbers, form = list(value), "[" + ",".join("#" * len(value)) + "]"
    elif _estimate(value) is not None:
        numbers, form = _estimate(value), "#[#,#]"
    else:
        raise FigureError(
            f"{key} is {type(value).__name__} {str(value)[:60]!r}: a marker quotes a number, a "
            "list of numbers, an estimate (value, low, high) or a string"
        )
    tokens = _NUM_RE.findall(text)
    skeleton = _NUM_RE.sub("#", text).replace(" ", "")
    if "%" in skeleton:
        if scale != 100:
            raise FigureError(f"quoted {quoted!r}: '%' needs a key ending in *100")
        skeleton = skeleton.replace("#%", "#")
    shape = form.replace("#", "N")
    if skeleton != form:
        raise FigureError(f"quoted {quoted!r} is not of the form {shape} that {key} gives")
    factor = scale if scale is not None else Decimal(1)
    expected = [
        f"{Decimal(repr(float(n))) * factor:.{_decimals(t)}f}" for n, t in zip(numbers, tokens)
    ]
    if any(_token_value(t) != Decimal(e) for t, e in zip(tokens, expected)):
        replacements = iter(expected)
        said = _NUM_RE.sub(lambda _: next(replacements), text)
        raise FigureError(
            f"figure differs: quoted {quoted!r}, the data gives {said!r} ({key} = {value})"
        )


# --------------------------------------------------------------------------- claims


def _bank_sha256() -> str:
    from hear2act_env.scenarios.bank import BANK_PATH

    return hashlib.sha256(BANK_PATH.read_bytes()).hexdigest()


def _bank_version() -> int:
    from hear2act_env.scenarios.bank import BANK_VERSION

    return BANK_VERSION


def _prosody_table() -> str:
    from hear2act_env.speech.prosody import table_digest

    return table_digest()


def _voices() -> str:
    from hear2act_env.speech.voices import voices_digest

    return voices_digest()


def _package_version() -> str:
    import hear2act_env

    return hear2act_env.__version__


def _renderer_revision(name: str) -> str:
    from hear2act_env.speech.renderers import RENDERERS, make_renderer

    if name not in RENDERERS:
        raise FigureError(f"no shipped renderer {name!r} (expected one of {', '.join(RENDERERS)})")
    return str(make_renderer(name).version).split("+", 1)[0]


_HEX_RE = re.compile(r"[0-9a-f]{8,64}")


@dataclass(frozen=True)
class _Claim:
    """A claim of the manifest: what it may hold, how the code computes it now, and whether
    the manifest may give a prefix of it."""

    valid: Callable[[object], bool]
    expected: str
    compute: Callable[[], object]
    prefix: bool


def _is_hex(value: object) -> bool:
    return isinstance(value, str) and _HEX_RE.fullmatch(value) is not None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


_CLAIMS: dict[str, _Claim] = {
    "bank_sha256": _Claim(_is_hex, "8-64 hex digits", _bank_sha256, True),
    "bank_version": _Claim(_is_int, "an integer", _bank_version, False),
    "prosody_table": _Claim(_is_hex, "8-64 hex digits", _prosody_table, True),
    "voices": _Claim(_is_hex, "8-64 hex digits", _voices, True),
    "package_version": _Claim(_is_text, "a version string", _package_version, False),
}
_ENTRY_FIELDS = {"command", "claims", "historical", "note"}


# --------------------------------------------------------------------------- the check


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


class _Checker:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.data_dir = root / DATA_DIR
        self.report = Report()
        self.entries: dict[str, dict[str, Any]] = {}
        self._json: dict[str, Any] = {}
        self._lines: dict[str, list[str]] = {}
        self._claims: dict[str, object] = {}

    # ---- data files

    def data_file(self, name: str) -> Path:
        if not name:
            raise FigureError("no FILE before '#'")
        if "\\" in name or name.startswith("/") or re.match(r"[A-Za-z]:", name):
            raise FigureError(f"{name!r}: expected a path relative to {DATA_DIR}/")
        if any(part in ("", ".", "..") for part in name.split("/")):
            raise FigureError(f"{name!r}: expected a path inside {DATA_DIR}/ (no '..' or '.')")
        path = self.data_dir / name
        if not path.resolve().is_relative_to(self.data_dir.resolve()):
            raise FigureError(f"{name!r}: leads out of {DATA_DIR}/ (through a link)")
        if name == MANIFEST:
            raise FigureError(f"{DATA_DIR}/{MANIFEST} is the manifest, not a data file")
        if not path.is_file():
            raise FigureError(f"{DATA_DIR}/{name}: no such data file")
        return path

    def json_document(self, name: str, path: Path) -> Any:
        if name not in self._json:
            try:
                self._json[name] = jsonsafe.loads(path.read_text(encoding="utf-8"))
            except (ValueError, OSError) as exc:
                self._json[name] = FigureError(f"{DATA_DIR}/{name}: not readable JSON ({exc})")
        if isinstance(self._json[name], FigureError):
            raise self._json[name]
        return self._json[name]

    def text_lines(self, name: str, path: Path) -> list[str]:
        if name not in self._lines:
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError) as exc:
                raise FigureError(f"{DATA_DIR}/{name}: not readable text ({exc})") from None
            self._lines[name] = [_norm(line) for line in text.splitlines()]
        return self._lines[name]

    def _historical_rule(self, name: str, historical: bool, tag: str) -> None:
        entry = self.entries.get(name)
        if entry is None:
            return  # reported once, on the data file
        if entry.get("historical") is True and not historical:
            raise FigureError(
                f"{DATA_DIR}/{name} is historical (kept from an earlier version): quote it with "
                f"<!--{tag}-historical:...-->"
            )
        if historical and entry.get("historical") is not True:
            raise FigureError(f"{DATA_DIR}/{name} is current, not historical: use <!--{tag}:...-->")

    def check_inline(self, spec: str, quoted: str, historical: bool) -> None:
        name, hash_, key = spec.partition("#")
        if not hash_ or not key.strip():
            raise FigureError(f"marker {spec!r}: expected FILE#KEY")
        path = self.data_file(name.strip())
        self._historical_rule(name.strip(), historical, "fig")
        if not _norm(quoted):
            raise FigureError(f"marker {spec!r} quotes nothing")
        if path.suffix == ".json":
            scale = None
            match = _SCALE_RE.match(key)
            if match:
                key, scale = match["path"], Decimal(match["scale"])
            value = resolve_json(self.json_document(name.strip(), path), key.strip())
            compare_json(value, quoted, scale, f"{name.strip()}#{key.strip()}")
            return
        lines = self.text_lines(name.strip(), path)
        index = select_line(lines, key, f"{DATA_DIR}/{name.strip()}")
        line = lines[index]
        if not _in_line(quoted, line):
            raise FigureError(
                f"figure differs: quoted {quoted.strip()!r} is not in line {index + 1} of "
                f"{DATA_DIR}/{name.strip()}: {line[:160]!r}"
            )

    def check_block(
        self, spec: str, historical: bool, block: list[tuple[int, str]]
    ) -> list[tuple[int, str]]:
        """The block lines (line number, text) that occur in no line of the data file."""
        name = spec.strip()
        if "#" in name:
            raise FigureError(f"figblock {spec!r}: expected a FILE alone (no #KEY)")
        path = self.data_file(name)
        self._historical_rule(name, historical, "figblock")
        if path.suffix == ".json":
            raise FigureError(f"figblock {spec!r}: a block quotes a text file, not JSON")
        if not block:
            raise FigureError(f"figblock {spec!r}: no block follows (a fenced block or lines)")
        lines = self.text_lines(name, path)
        return [
            (n, text) for n, text in block if not any(_occurs(_norm(text), line) for line in lines)
        ]

    # ---- scanning

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
        for match in _CI_RE.finditer(plain):
            problem(
                match.start(),
                f"unmarked figure {match[0]!r}: quote it from {DATA_DIR}/ with "
                "<!--fig:FILE#KEY-->...<!--/fig--> (or a figblock)",
            )
        return files_markers

    # ---- manifest

    def claim(self, name: str, detail: str | None = None) -> object:
        label = name if detail is None else f"{name}.{detail}"
        if label not in self._claims:
            try:
                if detail is None:
                    self._claims[label] = _CLAIMS[name].compute()
                else:
                    self._claims[label] = _renderer_revision(detail)
            except Exception as exc:  # any failure to compute it is reported
                self._claims[label] = FigureError(f"cannot compute {label} from the code: {exc}")
        value = self._claims[label]
        if isinstance(value, FigureError):
            raise value
        return value

    def load_manifest(self) -> None:
        path = self.data_dir / MANIFEST
        shown = f"{DATA_DIR}/{MANIFEST}"
        problems = self.report.problems
        if not path.is_file():
            problems.append(Problem(shown, 1, "missing: the manifest of the data files"))
            return
        text = path.read_text(encoding="utf-8")
        try:
            doc = jsonsafe.loads(text)
        except ValueError as exc:
            problems.append(Problem(shown, 1, f"not valid JSON: {exc}"))
            return
        if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
            problems.append(Problem(shown, 1, 'expected an object with "files": {NAME: entry}'))
            return
        for extra in sorted(set(doc) - {"about", "files"}):
            problems.append(Problem(shown, _line_in(text, extra), f"unknown field {extra!r}"))
        for name, entry in doc["files"].items():
            line = _line_in(text, name)

            def bad(message: str, line: int = line, name: str = name) -> None:
                problems.append(Problem(shown, line, f"{name}: {message}"))

            if not isinstance(entry, dict):
                bad("expected an object with command and claims")
                continue
            self.entries[name] = entry
            for extra in sorted(set(entry) - _ENTRY_FIELDS):
                bad(f"unknown field {extra!r} (expected {', '.join(sorted(_ENTRY_FIELDS))})")
            if not isinstance(entry.get("command"), str) or not entry["command"].strip():
                bad("command: expected the command that writes the file")
            if "historical" in entry and not isinstance(entry["historical"], bool):
                bad(f"historical: expected true or false, got {entry['historical']!r}")
            claims = entry.get("claims")
            if not isinstance(claims, dict) or not claims:
                bad('claims: expected the code version the file claims, e.g. {"bank_sha256": ...}')
                continue
            if not (self.data_dir / name).is_file():
                bad(f"no such file under {DATA_DIR}/")
            self._check_claims(name, entry, claims, bad)

    def _check_claims(
        self, name: str, entry: dict, claims: dict, bad: Callable[[str], None]
    ) -> None:
        stale: list[str] = []
        for claim, wanted in claims.items():
            if claim == "renderer_revisions":
                if (
                    not isinstance(wanted, dict)
                    or not wanted
                    or not all(isinstance(k, str) and isinstance(v, str) for k, v in wanted.items())
                ):
                    bad("claims.renderer_revisions: expected {renderer name: revision}")
                    continue
                pairs = [(f"renderer {r}", r, v, False) for r, v in wanted.items()]
            elif claim in _CLAIMS:
                spec = _CLAIMS[claim]
                if not spec.valid(wanted):
                    bad(f"claims.{claim}: expected {spec.expected}, got {wanted!r}")
                    continue
                pairs = [(claim, None, wanted, spec.prefix)]
            else:
                bad(
                    f"claims: unknown claim {claim!r} (known: {', '.join([*_CLAIMS, 'renderer_revisions'])})"
                )
                continue
            if entry.get("historical") is True:
                continue
            for label, detail, value, prefix in pairs:
                try:
                    now = self.claim(claim if detail is None else "renderer", detail)
                except FigureError as exc:
                    bad(str(exc))
                    continue
                holds = str(now).startswith(value) if prefix else now == value
                if not holds:
                    stale.append(
                        f"claims {label} {value}, the code has {str(now)[: max(12, len(str(value)))]}"
                    )
        for message in stale:
            self.report.problems.append(
                Problem(
                    f"{DATA_DIR}/{name}",
                    1,
                    f"stale: {message}; measure it again ({entry.get('command', '?')}) or mark it "
                    f"historical in {MANIFEST}",
                )
            )

    def data_files(self) -> list[str]:
        if not self.data_dir.is_dir():
            return []
        return sorted(
            p.relative_to(self.data_dir).as_posix()
            for p in self.data_dir.rglob("*")
            if p.is_file() and p.name != MANIFEST and not p.name.startswith(".")
        )


def _line_in(text: str, name: str) -> int:
    pos = text.find(f'"{name}"')
    return text.count("\n", 0, pos) + 1 if pos >= 0 else 1


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


def _docstrings(source: str) -> Iterator[tuple[int, str]]:
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


def _pages(root: Path) -> list[Path]:
    pages = [root / "README.md"] if (root / "README.md").is_file() else []
    docs = root / "docs"
    data = (root / DATA_DIR).resolve()
    if docs.is_dir():
        pages += sorted(
            p for p in docs.rglob("*.md") if p.is_file() and not p.resolve().is_relative_to(data)
        )
    return pages


def _python_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for package in DOCSTRING_ROOTS:
        if (root / package).is_dir():
            files += sorted(p for p in (root / package).rglob("*.py") if p.is_file())
    return files


def check(root: str | Path = ".") -> Report:
    """Run every check under ``root`` (the repository); the problems are sorted by file."""
    root = Path(root)
    checker = _Checker(root)
    report = checker.report
    checker.load_manifest()
    files = checker.data_files()
    report.data_files = len(files)
    for name in files:
        if name not in checker.entries:
            report.problems.append(
                Problem(
                    f"{DATA_DIR}/{name}",
                    1,
                    f"no entry in {DATA_DIR}/{MANIFEST} (the command that writes it and the code "
                    "version it claims)",
                )
            )
    for page in _pages(root):
        shown = page.relative_to(root).as_posix()
        found = checker.scan(shown, page.read_text(encoding="utf-8"))
        report.files_scanned += 1
        report.files_with_markers += found > 0
    for module in _python_files(root):
        shown = module.relative_to(root).as_posix()
        found = 0
        try:
            for first, text in _docstrings(module.read_text(encoding="utf-8")):
                found += checker.scan(shown, text, first)
        except SyntaxError as exc:
            report.problems.append(Problem(shown, exc.lineno or 1, f"cannot parse: {exc.msg}"))
        report.files_scanned += 1
        report.files_with_markers += found > 0
    report.problems.sort()
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.figures",
        description="Check the measured figures quoted in the docs against docs/data/.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("check", help="check every marker, the manifest and unmarked CIs")
    run.add_argument("--root", default=".", help="the repository (default: .)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not root.is_dir():
        print(f"--root: {root} is not a folder", file=sys.stderr)
        return 2
    report = check(root)
    for problem in report.problems:
        print(problem)
    print(report.summary())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
