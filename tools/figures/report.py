"""What a check found: the problems (``FILE:LINE: message``) and the summary line."""

from __future__ import annotations

from dataclasses import dataclass, field


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
