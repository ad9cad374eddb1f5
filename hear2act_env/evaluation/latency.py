"""How long model calls took: the median and 95th percentile of the seconds per call, per
(agent, realization, condition), read from the agent logs beside results files
(``agent_logs``). Calls the response cache answered are left out (they took the time of a file
read, not of the model), so a rerun from the cache keeps its first run's figures only where
the log of that first run is the one kept."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hear2act_env.evaluation.agent_logs import load_agent_logs

__all__ = ["Latency", "call_seconds", "latency_of", "read_latencies"]

Cell = tuple[str, str, str]  # (agent, realization, condition)


@dataclass(frozen=True)
class Latency:
    """Seconds per model call over ``calls`` calls: median and 95th percentile (linear
    interpolation between the nearest calls)."""

    calls: int
    p50: float
    p95: float


def latency_of(seconds: Sequence[float]) -> Latency | None:
    """The summary of ``seconds`` (None when there is no call)."""
    if not seconds:
        return None
    values = np.asarray(seconds, dtype=float)
    return Latency(len(values), float(np.percentile(values, 50)), float(np.percentile(values, 95)))


def call_seconds(
    paths: Sequence[str | Path], renames: Mapping[str, Mapping[str, str]] | None = None
) -> dict[Cell, list[float]]:
    """The seconds of every uncached model call, per cell, over the logs beside ``paths``
    (an episode logged in two files counts once: the first file's, as its record);
    ``renames[path][agent]``: the label a file's episodes of that agent take
    (``identity.split_mixed``)."""
    out: dict[Cell, list[float]] = {}
    seen: set[str] = set()
    for path in paths:
        mine = (renames or {}).get(str(path), {})
        for entry in load_agent_logs(path).values():
            key = entry.get("key") or {}
            agent, realization, condition = (
                key.get(k) for k in ("agent", "realization", "condition")
            )
            if not all(isinstance(v, str) for v in (agent, realization, condition)):
                continue  # a line of another shape: no cell to count it in
            if entry.get("error") is not None:
                continue  # the report's figures leave errored episodes out, so do these
            agent = mine.get(agent, agent)
            episode = f"{agent}|{realization}|{condition}|{key.get('scenario')}|{key.get('run')}"
            if episode in seen:
                continue
            seen.add(episode)
            cell = out.setdefault((agent, realization, condition), [])
            for turn in entry.get("turns", []):
                for call in turn.get("calls", []):
                    if not call.get("cached"):
                        cell.append(float(call.get("latency_s", 0)))
    return out


def read_latencies(
    paths: Sequence[str | Path], renames: Mapping[str, Mapping[str, str]] | None = None
) -> dict[Cell, Latency]:
    """``latency_of`` each cell of ``call_seconds`` that has an uncached call."""
    return {
        cell: summary
        for cell, seconds in call_seconds(paths, renames).items()
        if (summary := latency_of(seconds)) is not None
    }
