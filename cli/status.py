"""Exit statuses of the ``hear2act`` command, one meaning each (docs/evaluation.md, "When things
go wrong", lists them).

- 0: the work finished (every episode of a run finished without an error);
- 2: bad arguments, configuration or an unusable file, found before any work starts;
- 3: the run finished but some episodes errored (their count by kind is printed), or a model
  labelling an audit (``audit --model``) failed mid-run with the labels so far saved;
- 130: stopped by SIGINT or SIGTERM (finished work is on disk; the same command resumes).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable
from typing import Any

from hear2act_env.interrupts import EXIT_INTERRUPTED

__all__ = [
    "EXIT_BAD_CONFIG",
    "EXIT_EPISODE_ERRORS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "of_records",
]

EXIT_OK = 0
EXIT_BAD_CONFIG = 2
EXIT_EPISODE_ERRORS = 3


def of_records(records: Iterable[Any], what: str = "episodes") -> int:
    """``EXIT_OK`` when no record has an error, else ``EXIT_EPISODE_ERRORS`` after one line on
    stderr counting the errored ones by kind (``infrastructure``, ``config``, ``agent``)."""
    records = list(records)
    kinds = Counter(r.error_kind or "agent" for r in records if r.error is not None)
    if not kinds:
        return EXIT_OK
    counted = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
    print(
        f"hear2act: {sum(kinds.values())} of {len(records)} {what} errored ({counted}); they "
        "are left out of every metric: run the same command again to retry them",
        file=sys.stderr,
    )
    return EXIT_EPISODE_ERRORS
