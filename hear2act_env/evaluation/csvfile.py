"""The CSV tables a report writes (conditions, differences, pass^k, usage, leaderboard).

Each table is written whole through ``safewrite`` (a temporary file, then a rename: never
through a link in the folder), and every text cell that a spreadsheet would run as a formula
(starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, and not a number) is
written with a leading apostrophe, so an agent or model name taken from a results file stays
text when the table is opened.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
from collections.abc import Iterable, Iterator
from typing import Any

from hear2act_env import safewrite
from hear2act_env.cells import neutral_cell

__all__ = ["CsvTable", "table"]


class CsvTable:
    """Rows collected in memory (``writerow`` as ``csv.writer`` has it), cells neutralised."""

    def __init__(self) -> None:
        self._buffer = io.StringIO(newline="")
        self._writer = csv.writer(self._buffer)

    def writerow(self, row: Iterable[Any]) -> None:
        """Add one row."""
        self._writer.writerow([neutral_cell(v) for v in row])

    def text(self) -> str:
        """The table so far, as CSV text."""
        return self._buffer.getvalue()


@contextlib.contextmanager
def table(path: str | os.PathLike[str]) -> Iterator[CsvTable]:
    """A ``CsvTable`` written to ``path`` (``safewrite.write_text``) when the block ends
    without an error; nothing is written otherwise."""
    rows = CsvTable()
    yield rows
    safewrite.write_text(path, rows.text())
