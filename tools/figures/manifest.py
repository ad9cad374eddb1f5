"""Reading the manifest (docs/data/SOURCES.json) and checking the claims of each entry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hear2act_env import jsonsafe

from .claims import CLAIMS, renderer_revision
from .errors import FigureError
from .layout import DATA_DIR, MANIFEST
from .report import Problem, Report

_ENTRY_FIELDS = {"command", "claims", "historical", "note"}


class ManifestReader:
    """The manifest part of the checker: the entries of each data file and their claims."""

    data_dir: Path
    report: Report
    entries: dict[str, dict[str, Any]]
    _claims: dict[str, object]

    def claim(self, name: str, detail: str | None = None) -> object:
        label = name if detail is None else f"{name}.{detail}"
        if label not in self._claims:
            try:
                if detail is None:
                    self._claims[label] = CLAIMS[name].compute()
                else:
                    self._claims[label] = renderer_revision(detail)
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
            elif claim in CLAIMS:
                spec = CLAIMS[claim]
                if not spec.valid(wanted):
                    bad(f"claims.{claim}: expected {spec.expected}, got {wanted!r}")
                    continue
                pairs = [(claim, None, wanted, spec.prefix)]
            else:
                bad(
                    f"claims: unknown claim {claim!r} (known: {', '.join([*CLAIMS, 'renderer_revisions'])})"
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
