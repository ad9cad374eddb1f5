"""What makes two results of one agent name comparable: its configuration (issue "a row is one
model with one configuration").

Records carry the agent's name, not the settings it ran with; the manifest beside each results
file holds those. ``configuration`` is the part of a manifest's grid that changes what an agent
answers: its options other than the transport ones (``runner.TRANSPORT_SETTINGS``), the env
settings other than which scenarios run, and the reference perceiver. ``refuse_mixed`` stops a
report that would merge one agent name run with two configurations into one row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hear2act_env.errors import ConfigError

__all__ = ["configuration", "read_manifest", "refuse_mixed"]

#: Env settings that choose which episodes run, not how an agent is asked: files that differ
#: only there hold parts of one grid (more runs, other scenarios) and merge.
EPISODE_CHOICE = ("split", "scenarios")


def configuration(config: Mapping[str, Any]) -> dict[str, Any]:
    """The answer-changing part of a manifest's ``config`` (flat ``agent_options.KEY`` and
    ``env.KEY`` keys, and ``perceiver``), as ``runner`` reads stored configurations."""
    from hear2act_env.evaluation.runner import TRANSPORT_SETTINGS, _normalized

    data = _normalized(dict(config))
    out: dict[str, Any] = {"perceiver": data.get("perceiver")}
    options = data.get("agent_options") or {}
    for key, value in options.items() if isinstance(options, dict) else ():
        if key not in TRANSPORT_SETTINGS:
            out[f"agent_options.{key}"] = value
    for key, value in (data.get("env") or {}).items():
        if key not in EPISODE_CHOICE:
            out[f"env.{key}"] = value
    return out


def refuse_mixed(manifests: Sequence[tuple[str, Mapping[str, Any]]], option: str) -> None:
    """``ConfigError`` when one agent name appears in two results files whose manifests
    (``(results path, manifest's config)`` pairs) give it different configurations: their
    records would merge into one row. A single file, or a manifest naming no agents, is not
    compared."""
    if len(manifests) < 2:
        return  # nothing merges
    first: dict[str, tuple[str, dict[str, Any]]] = {}
    for path, config in manifests:
        agents = config.get("agents")
        if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
            continue  # a manifest that names no agents gives none a configuration
        try:
            mine = configuration(config)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ConfigError(
                f"{option}: {path}: its manifest's configuration is unreadable "
                f"({type(exc).__name__}), so it cannot be checked against the other files; "
                "report that folder on its own"
            ) from None
        for agent in agents:
            if agent not in first:
                first[agent] = (path, mine)
                continue
            other_path, other = first[agent]
            changed = sorted(k for k in set(mine) | set(other) if mine.get(k) != other.get(k))
            if changed:
                shown = ", ".join(
                    f"{k}: {_short(other.get(k))} in {other_path}, {_short(mine.get(k))} in {path}"
                    for k in changed[:3]
                )
                raise ConfigError(
                    f"{option}: agent {agent!r} was run with two configurations ({shown}); "
                    "their records would merge into one row: report each folder on its own, "
                    "or rerun one under another agent name"
                )


def _short(value: Any, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def read_manifest(path: str | Path) -> dict[str, Any] | None:
    """The manifest beside results file ``path`` (``results.manifest.json`` for
    ``results.jsonl``), or None when there is no readable one (results written without one)."""
    from hear2act_env import jsonsafe

    try:
        man = Path(path).with_suffix(".manifest.json")  # ValueError: a path with no name
        data = jsonsafe.load_file(man)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
