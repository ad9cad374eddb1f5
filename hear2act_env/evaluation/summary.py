"""The report's tables, with paired scenario-bootstrap CIs, from any loop's episodes.

``episodes`` are the dicts that ``wrappers.RecordHear2ActMetrics`` puts in ``info["hear2act"]``
(and keeps in its ``episodes`` queue). Each becomes an ``EpisodeRecord`` keyed by agent,
realization, condition, scenario and run (the n-th episode of that scenario under that agent
and condition), so the same tables, CSVs and plots as ``hear2act report`` follow, and
``write_records`` saves them in the format ``hear2act report`` reads. Paired differences
between conditions pair episodes by (agent, realization, scenario, run): play the same
scenarios in each condition.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hear2act_env.conditions import Condition
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.records import (
    EpisodeKey,
    EpisodeRecord,
    RecordError,
    check_record,
    record_from_parts,
)
from hear2act_env.evaluation.report import Row, condition_rows, difference_rows, report
from hear2act_env.safewrite import write_atomic

__all__ = ["Summary", "records_from_episodes", "summarize", "write_records"]

_REQUIRED = ("success", "recommend_patterns", "counts", "scenario_id", "realization", "access")


def records_from_episodes(
    episodes: Iterable[dict[str, Any]],
    agent: str = "agent",
    condition: str | Condition | None = None,
) -> list[EpisodeRecord]:
    """Records from the wrapper's episode dicts. ``condition`` overrides the one the episodes
    carry (e.g. ``"A+T/inferred"`` for a perceiver wrapper the env cannot see). Each record is
    checked as a results line is (``records.check_record``): a value no episode has (NaN, a
    negative count, ...) is a ``RecordError`` naming the episode and the field."""
    override = Condition.parse(condition) if condition is not None else None
    runs: Counter[tuple] = Counter()
    out = []
    for i, parts in enumerate(episodes):
        missing = [k for k in _REQUIRED if k not in parts]
        if missing:
            raise ConfigError(
                f"episodes[{i}]: missing {missing}; expected the dicts of "
                "RecordHear2ActMetrics (info['hear2act'])"
            )
        cond = override or Condition.of(parts["access"], parts.get("fidelity") or "correct")
        access, fidelity = cond.pair()
        cell = (agent, parts["realization"], access, fidelity, parts["scenario_id"])
        key = EpisodeKey(*cell, run=runs[cell])
        runs[cell] += 1
        record = record_from_parts(key, parts, privileged=False, agent_stats={})
        if parts.get("seed") is not None:
            record = replace(record, seed=int(parts["seed"]))
        try:
            out.append(check_record(record))
        except RecordError as exc:  # checked as a results line is: no NaN or odd count
            raise RecordError(f"episodes[{i}]: {exc}") from None
    return out


@dataclass(frozen=True)
class Summary:
    """Tables of one set of episodes: per-condition rows, paired differences, printable text."""

    records: list[EpisodeRecord]
    rows: list[Row]
    differences: list[Row]
    text: str

    def __str__(self) -> str:
        return self.text


def summarize(
    episodes: Iterable[dict[str, Any]] | Sequence[EpisodeRecord],
    agent: str = "agent",
    condition: str | Condition | None = None,
    out: str | Path | None = None,
    plots: bool = False,
) -> Summary:
    """Success, Accept, FullFit (and the behaviour metrics) with 95% CIs, paired differences
    against T, as ``hear2act report`` prints them; with ``out``, CSVs (and plots) there."""
    items = list(episodes)
    records = (
        items
        if items and all(isinstance(r, EpisodeRecord) for r in items)
        else records_from_episodes(items, agent, condition)
    )
    if not records:
        raise ConfigError("episodes: nothing to summarize (no finished episode)")
    text = report(records, Path(out) if out is not None else None, plots=plots)
    return Summary(records, condition_rows(records), difference_rows(records), text)


def write_records(
    episodes: Iterable[dict[str, Any]],
    path: str | Path,
    agent: str = "agent",
    condition: str | Condition | None = None,
) -> Path:
    """Write the episodes as a results JSONL file (what ``hear2act report`` reads)."""
    records = records_from_episodes(episodes, agent, condition)
    path = Path(path)
    write_atomic(path, "".join(r.to_json() + "\n" for r in records).encode("utf-8"))
    return path
