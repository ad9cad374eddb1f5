"""The command line: ``python -m tools.figures check [--root .]``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .checker import check


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
