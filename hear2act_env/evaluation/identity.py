"""What makes two results of one agent name comparable: its configuration (issue "a row is one
model with one configuration").

Records carry the agent's name, not the settings it ran with; the manifest beside each results
file holds those. ``configuration`` is the part of a manifest's grid that changes what an agent
answers: its options other than the transport ones (``runner.TRANSPORT_SETTINGS``), the env
settings other than which scenarios run, and the reference perceiver. ``config_hash`` names a
configuration in 8 hex digits. ``split_mixed`` gives one agent name run with two configurations
two rows: each file's records of that name are labelled ``NAME@HASH`` (before a first-stage
suffix: ``M@HASH+stage1``), and ``describe`` says in words what each hash stands for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hear2act_env.constants import DEFAULT_PROMPT
from hear2act_env.errors import ConfigError

__all__ = [
    "ConfigLabels",
    "config_hash",
    "configuration",
    "agent_configs",
    "label_agent",
    "relabel",
    "read_manifest",
    "split_mixed",
]

#: Env settings that choose which episodes run, not how an agent is asked: files that differ
#: only there hold parts of one grid (more runs, other scenarios) and merge.
EPISODE_CHOICE = ("split", "scenarios")
#: Agent options given at their default value: the same configuration as not given (a run that
#: names the default prompt template, or sampling seed 0, is a run that names none).
DEFAULTS: dict[str, Any] = {"prompt": DEFAULT_PROMPT, "sampling_seed": 0}


def configuration(config: Mapping[str, Any]) -> dict[str, Any]:
    """The answer-changing part of a manifest's ``config`` (flat ``agent_options.KEY`` and
    ``env.KEY`` keys, and ``perceiver``), as ``runner`` reads stored configurations."""
    from hear2act_env.evaluation.runner import TRANSPORT_SETTINGS, _normalized

    data = _normalized(dict(config))
    out: dict[str, Any] = {"perceiver": data.get("perceiver")}
    options = data.get("agent_options") or {}
    for key, value in options.items() if isinstance(options, dict) else ():
        if key not in TRANSPORT_SETTINGS and not _is_default(key, value):
            out[f"agent_options.{key}"] = value
    for key, value in (data.get("env") or {}).items():
        if key not in EPISODE_CHOICE:
            out[f"env.{key}"] = value
    return out


def config_hash(config: Mapping[str, Any]) -> str:
    """8 hex digits of the SHA-256 of a configuration (``configuration``'s output) as canonical
    JSON: equal configurations, whatever the order of their keys, get one hash."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def label_agent(agent: str, digest: str) -> str:
    """``agent`` with its configuration's hash: ``M@HASH``, the hash before a first-stage suffix
    (``M+stage1`` -> ``M@HASH+stage1``) so that the row still reads as that model's variant."""
    from hear2act_env.evaluation.usage import split_agent

    model, _stage = split_agent(agent)
    return f"{model}@{digest}{agent[len(model) :]}"


def relabel(record: Any, labels: Mapping[str, str]) -> Any:
    """``record`` (an ``EpisodeRecord``) under the label ``labels`` gives its agent (a file's
    ``ConfigLabels.renames`` entry), or unchanged when it gives none."""
    from dataclasses import replace

    if record.key.agent not in labels:
        return record
    return replace(record, key=replace(record.key, agent=labels[record.key.agent]))


@dataclass
class ConfigLabels:
    """What ``split_mixed`` found: ``renames[path][agent]`` is the label that file's records of
    ``agent`` take; ``described[label]`` what sets that configuration apart, in words."""

    renames: dict[str, dict[str, str]] = field(default_factory=dict)
    described: dict[str, str] = field(default_factory=dict)

    def notes(self) -> list[str]:
        """One line per relabelled row, for the report's notes."""
        return [f"{label}: {text}" for label, text in sorted(self.described.items())]


def split_mixed(manifests: Sequence[tuple[str, Mapping[str, Any]]], option: str) -> ConfigLabels:
    """The labels that keep one agent name run with two configurations in two rows, from
    ``(results path, manifest's config)`` pairs. Agents with one configuration keep their name.
    A manifest that names no agents gives none a configuration; an unreadable configuration
    among several files is a ``ConfigError`` naming the file."""
    labels = ConfigLabels()
    if len(manifests) < 2:
        return labels  # nothing merges
    seen: dict[str, dict[str, tuple[dict[str, Any], list[str]]]] = {}
    for path, agents, mine, digest in _configured(manifests, option):
        for agent in agents:
            seen.setdefault(agent, {}).setdefault(digest, (mine, []))[1].append(path)
    for agent, by_hash in seen.items():
        if len(by_hash) < 2:
            continue
        configs = [c for c, _ in by_hash.values()]
        differ = sorted(
            k for k in set().union(*configs) if len({_key(c.get(k)) for c in configs}) > 1
        )
        for digest, (config, paths) in by_hash.items():
            label = label_agent(agent, digest)
            for path in paths:
                labels.renames.setdefault(path, {})[agent] = label
            labels.described[label] = ", ".join(
                f"{_name(k)}={_short(config.get(k))}" for k in differ
            )
    return labels


def _configured(
    manifests: Sequence[tuple[str, Mapping[str, Any]]], option: str | None
) -> Iterator[tuple[str, list[str], dict[str, Any], str]]:
    """``(path, agents, configuration, hash)`` of each manifest that names its agents. An
    unreadable configuration is a ``ConfigError`` naming the file when ``option`` names the
    command that needs it, else skipped."""
    for path, config in manifests:
        agents = config.get("agents")
        if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
            continue  # a manifest that names no agents gives none a configuration
        try:
            mine = configuration(config)
            digest = config_hash(mine)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            if option is None:
                continue
            raise ConfigError(
                f"{option}: {path}: its manifest's configuration is unreadable "
                f"({type(exc).__name__}), so it cannot be checked against the other files; "
                "report that folder on its own"
            ) from None
        yield path, agents, mine, digest


def agent_configs(
    manifests: Sequence[tuple[str, Mapping[str, Any]]], labels: ConfigLabels | None = None
) -> dict[str, Any]:
    """``aggregate.AgentConfig`` per row label (an agent's name, or its ``split_mixed`` label)
    from ``(results path, manifest's config)`` pairs; a manifest whose configuration is
    unreadable gives its agents none."""
    from hear2act_env.evaluation.aggregate import AgentConfig

    out: dict[str, Any] = {}
    for path, agents, mine, digest in _configured(manifests, None):
        renames = labels.renames.get(path, {}) if labels else {}
        for agent in agents:
            out.setdefault(renames.get(agent, agent), AgentConfig(digest, mine))
    return out


def _is_default(key: str, value: Any) -> bool:
    return key in DEFAULTS and type(value) is type(DEFAULTS[key]) and value == DEFAULTS[key]


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _name(key: str) -> str:
    """A configuration key as people write it (``agent_options.temperature`` -> ``temperature``)."""
    return key.removeprefix("agent_options.")


def _short(value: Any, width: int = 40) -> str:
    if value is None:
        return "unset"
    text = json.dumps(value, default=repr) if not isinstance(value, str) else value
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
