"""Where the check looks: the data folder, its manifest, and the pages and Python files
it scans."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = "docs/data"
MANIFEST = "SOURCES.json"
#: Packages whose docstrings are scanned (module, class and function docstrings).
DOCSTRING_ROOTS = ("hear2act_env", "agents")


def pages(root: Path) -> list[Path]:
    found = [root / "README.md"] if (root / "README.md").is_file() else []
    docs = root / "docs"
    data = (root / DATA_DIR).resolve()
    if docs.is_dir():
        found += sorted(
            p for p in docs.rglob("*.md") if p.is_file() and not p.resolve().is_relative_to(data)
        )
    return found


def python_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for package in DOCSTRING_ROOTS:
        if (root / package).is_dir():
            files += sorted(p for p in (root / package).rglob("*.py") if p.is_file())
    return files
