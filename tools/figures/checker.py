"""The check: reading data files, checking each marker against them, and ``check`` that
runs it all."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from hear2act_env import jsonsafe

from .errors import FigureError
from .json_keys import SCALE_RE, compare_json, resolve_json
from .layout import DATA_DIR, MANIFEST, pages, python_files
from .manifest import ManifestReader
from .report import Problem, Report
from .scan import Scanner, docstrings
from .values import in_line, norm, occurs, select_line


class _Checker(Scanner, ManifestReader):
    """One run of the check: the report, the manifest entries and what it has read so far."""

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
            self._lines[name] = [norm(line) for line in text.splitlines()]
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
        if not norm(quoted):
            raise FigureError(f"marker {spec!r} quotes nothing")
        if path.suffix == ".json":
            scale = None
            match = SCALE_RE.match(key)
            if match:
                key, scale = match["path"], Decimal(match["scale"])
            value = resolve_json(self.json_document(name.strip(), path), key.strip())
            compare_json(value, quoted, scale, f"{name.strip()}#{key.strip()}")
            return
        lines = self.text_lines(name.strip(), path)
        index = select_line(lines, key, f"{DATA_DIR}/{name.strip()}")
        line = lines[index]
        if not in_line(quoted, line):
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
            (n, text) for n, text in block if not any(occurs(norm(text), line) for line in lines)
        ]


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
    for page in pages(root):
        shown = page.relative_to(root).as_posix()
        found = checker.scan(shown, page.read_text(encoding="utf-8"))
        report.files_scanned += 1
        report.files_with_markers += found > 0
    for module in python_files(root):
        shown = module.relative_to(root).as_posix()
        found = 0
        try:
            for first, text in docstrings(module.read_text(encoding="utf-8")):
                found += checker.scan(shown, text, first)
        except SyntaxError as exc:
            report.problems.append(Problem(shown, exc.lineno or 1, f"cannot parse: {exc.msg}"))
        report.files_scanned += 1
        report.files_with_markers += found > 0
    report.problems.sort()
    return report
