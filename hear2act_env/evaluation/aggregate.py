"""One file with every figure of a report: ``aggregate.json``.

``hear2act eval`` writes it beside ``results.jsonl`` when a run ends, and ``hear2act report``
into its ``--out`` folder. It holds, per cell (agent, realization, condition), every metric
with its value, 95% scenario-bootstrap interval and ``n`` (scenarios), the paired
differences against T, pass^k and pass@k for each k, model calls, tokens, cost and latency;
and, per agent, the configuration it ran with and that configuration's hash
(``identity.config_hash``, the ``@HASH`` of a relabelled row). A number that is not defined
(a rate over no episode) is ``null``. ``FORMAT`` names the layout; a change to it gets a new
name.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hear2act_env import safewrite
from hear2act_env.bootstrap import Estimate
from hear2act_env.evaluation.passk import runs_of
from hear2act_env.evaluation.records import EpisodeRecord

__all__ = ["FORMAT", "AgentConfig", "aggregate", "write_aggregate"]

FORMAT = "hear2act-aggregate/1"


@dataclass(frozen=True)
class AgentConfig:
    """The configuration an agent (a row label) ran with and its hash."""

    hash: str
    config: dict[str, Any]


def _number(value: float) -> float | None:
    return None if value is None or math.isnan(value) or math.isinf(value) else round(value, 6)


def _estimate(e: Estimate) -> dict[str, Any]:
    return {
        "value": _number(e.value),
        "ci_low": _number(e.low),
        "ci_high": _number(e.high),
        "n": e.n,
    }


def aggregate(
    records: Sequence[EpisodeRecord],
    *,
    rows: Sequence[Any],
    differences: Sequence[Any],
    passk: Sequence[Any],
    usage: Sequence[Any],
    configs: Mapping[str, AgentConfig] | None = None,
    bank: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The aggregate as JSON data, from a report's rows (``report.condition_rows``,
    ``difference_rows``, ``passk_rows``, ``usage.usage_rows``)."""
    from hear2act_env import __version__

    configs = configs or {}
    by_cell: dict[tuple[str, str, str], list[EpisodeRecord]] = {}
    for r in records:
        by_cell.setdefault((r.key.agent, r.key.realization, r.key.condition), []).append(r)

    def cell(row: Any) -> dict[str, Any]:
        found = configs.get(row.agent)
        return {
            "agent": row.agent,
            "realization": row.realization,
            "condition": row.condition,
            "config_hash": found.hash if found else None,
        }

    cells = []
    for row in rows:
        recs = by_cell.get((row.agent, row.realization, row.condition), [])
        cells.append(
            {
                **cell(row),
                "episodes": row.n,
                "errors": row.errors,
                "scenarios": len({r.key.scenario for r in recs}),
                "runs": runs_of(recs) if recs else 0,
                "metrics": {name: _estimate(e) for name, e in row.values.items()},
            }
        )
    return {
        "format": FORMAT,
        "hear2act_env": __version__,
        "bank": dict(bank) if bank else None,
        "episodes": len(records),
        "errors": sum(r.error is not None for r in records),
        "configurations": {
            agent: {"hash": c.hash, "config": c.config} for agent, c in sorted(configs.items())
        },
        "cells": cells,
        "differences": [
            {
                **cell(d),
                "episodes": d.n,
                "errors": d.errors,
                "metrics": {name: _estimate(e) for name, e in d.values.items()},
            }
            for d in differences
        ],
        "pass_k": [
            {
                **cell(p),
                "runs": p.runs,
                "errors": p.errors,
                "curve": [
                    {
                        "k": point.k,
                        "pass_all": _estimate(point.pass_all),
                        "pass_any": _estimate(point.pass_any),
                        "scenarios": point.scenarios,
                        "left_out": point.left_out,
                    }
                    for point in p.curve
                ],
            }
            for p in passk
        ],
        "usage": [_usage(u, cell(u)) for u in usage],
    }


def _usage(u: Any, head: dict[str, Any]) -> dict[str, Any]:
    data = asdict(u)
    latency = data.pop("latency")
    for name in ("agent", "realization", "condition"):
        data.pop(name)
    data["cost"] = _number(data["cost"]) if data["cost"] is not None else None
    return {**head, **data, "latency_s": latency}


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinity in it as None (a manifest may come from anyone and
    JSON has no such numbers)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def write_aggregate(data: Mapping[str, Any], path: Path) -> Path:
    """Write ``data`` (``aggregate``) to ``path`` atomically, as sorted, indented JSON."""
    text = json.dumps(
        _finite(dict(data)), indent=1, sort_keys=True, allow_nan=False, ensure_ascii=False
    )
    return safewrite.write_atomic(path, (text + "\n").encode("utf-8"))
