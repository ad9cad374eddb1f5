"""Agent logs: the sidecar JSONL beside a results file, one line per episode of a model agent.

``results.jsonl`` gets ``results.log.jsonl``: each line holds the episode's key (``id``, the
same string as the records' resume key), its outcome (``success``, ``error``), and the agent's
``episode_log()``: ``prompts`` (each distinct system prompt once, by digest; messages refer to
it with ``{"role": "system", "ref": DIGEST}``) and ``turns`` (per turn, the model calls with
their messages, raw reply, latency in seconds, tokens, ``cached`` (whether the response cache
answered) and ``audio_clips`` (recordings sent), the last two also when false or 0; the parsed
action, its text and the parse outcome). Logs written before those two were always kept lack
them when false or 0, and read the same. The runner writes a line as the episode
finishes, before its record. A resumed run appends a new line for an episode it runs again;
reading keeps, per key, the latest line of a finished episode (else the latest line).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

from hear2act_env import jsonsafe
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.jsonl import jsonl_lines
from hear2act_env.evaluation.records import EpisodeRecord

__all__ = [
    "check_entry",
    "find_episode_log",
    "format_episode_log",
    "load_agent_logs",
    "log_line",
    "log_path",
]


def log_path(results: str | Path) -> Path:
    """The agent log beside a results file (``results.jsonl`` -> ``results.log.jsonl``)."""
    results = Path(results)
    stem = results.name[: -len(".jsonl")] if results.name.endswith(".jsonl") else results.name
    return results.with_name(f"{stem}.log.jsonl")


def log_line(record: EpisodeRecord, log: dict[str, Any]) -> str:
    """One JSON line for an episode's log."""
    key = record.key
    head = {
        "id": key.id(),
        "key": {
            "agent": key.agent,
            "realization": key.realization,
            "condition": key.condition,
            "scenario": key.scenario,
            "run": key.run,
        },
        "seed": record.seed,
        "success": record.success,
        "error": record.error,
        "error_kind": record.error_kind,
    }
    return json.dumps({**head, **log}, ensure_ascii=False, sort_keys=True, default=str)


def load_agent_logs(results: str | Path) -> dict[str, dict[str, Any]]:
    """The logs beside ``results`` by episode id ({} when there is no log file)."""
    path = log_path(results)
    out: dict[str, dict[str, Any]] = {}
    for number, text, is_last in jsonl_lines(path, "agent log"):
        try:
            entry = check_entry(jsonsafe.loads(text) if text is not None else None)
        except ValueError:
            if not is_last:
                warnings.warn(f"{path}:{number}: skipped a corrupt log line", stacklevel=2)
            continue
        kept = out.get(entry["id"])
        if kept is None or kept.get("error") is not None or entry.get("error") is None:
            out[entry["id"]] = entry
    return out


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"not a log entry: {what}")


def _count(value: Any) -> bool:
    """Whether ``value`` is a count (a token or clip count): an integer >= 0, or absent."""
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)


def check_entry(entry: Any) -> dict[str, Any]:
    """``entry`` if it has the shape of a log line (``log_line``) where ``format_episode_log``
    reads it, else a ``ValueError`` saying what is off: a log may come from someone else."""
    _need(isinstance(entry, dict) and isinstance(entry.get("id"), str), "no id")
    _need(isinstance(entry.get("key", {}), dict), "key is not an object")
    prompts = entry.get("prompts", {})
    _need(isinstance(prompts, dict), "prompts is not an object")
    turns = entry.get("turns", [])
    _need(isinstance(turns, list) and all(isinstance(t, dict) for t in turns), "turns")
    for turn in turns:
        calls = turn.get("calls", [])
        _need(isinstance(calls, list) and all(isinstance(c, dict) for c in calls), "calls")
        for call in calls:
            usage = call.get("usage") or {}
            _need(isinstance(usage, dict), "usage is not an object")
            _need(
                all(_count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens")), "tokens"
            )
            _need(_count(call.get("audio_clips")), "audio_clips")
            latency = call.get("latency_s", 0)
            _need(
                isinstance(latency, int | float)
                and not isinstance(latency, bool)
                and math.isfinite(latency)
                and latency >= 0,
                "latency_s",
            )
            messages = call.get("messages", [])
            _need(isinstance(messages, list), "messages is not a list")
            for m in messages:
                _need(isinstance(m, dict), "a message is not an object")
                _need("ref" not in m or isinstance(m["ref"], str), "a message's ref")
    return entry


def find_episode_log(results: str | Path, query: str) -> dict[str, Any]:
    """The log of one episode: ``query`` is its id (``agent|realization|access|fidelity|
    scenario|run``, as in the records) or any part of it that only one logged episode has
    (e.g. a scenario id when one agent and condition were run). Several or no matches are a
    ``ConfigError`` listing what there is."""
    logs = load_agent_logs(results)
    if not logs:
        raise ConfigError(
            f"--episode: no agent log beside {results} (expected {log_path(results)}); only "
            "model agents (openai:, hf:, qwen2-audio:, qwen2.5-omni:) write one"
        )
    if query in logs:
        return logs[query]
    parts = [p for p in query.split("|") if p]
    matches = [k for k in logs if all(p in k.split("|") for p in parts)]
    if len(matches) == 1:
        return logs[matches[0]]
    ids = sorted(matches or logs)
    shown = ", ".join(ids[:12]) + (f" and {len(ids) - 12} more" if len(ids) > 12 else "")
    what = f"{len(matches)} episodes match" if matches else "no logged episode matches"
    raise ConfigError(  # one line, as every error of the command
        f"--episode: {what} {query!r}; give one id (agent|realization|access|fidelity|"
        f"scenario|run), e.g. {shown}"
    )


def format_episode_log(entry: dict[str, Any], full: bool = False) -> str:
    """A readable view of one episode's log: each turn's calls (the latest user message, the
    reply, latency and tokens; ``full`` prints every message and the system prompt) and the
    action taken."""
    key = entry.get("key", {})
    outcome = (
        f"error ({entry.get('error_kind')}): {entry['error']}"
        if entry.get("error")
        else ("success" if entry.get("success") else "failure")
    )
    lines = [
        f"episode {entry.get('id')}",
        f"agent {key.get('agent')}, {key.get('realization')}, {key.get('condition')}, "
        f"scenario {key.get('scenario')}, run {key.get('run')}, seed {entry.get('seed')}: "
        f"{outcome}",
    ]
    prompts = entry.get("prompts", {})
    if full:
        for ref, text in prompts.items():
            lines += [f"--- system prompt {ref}", text]
    totals = [0, 0]
    for turn in entry.get("turns", []):
        lines.append(
            f"--- turn {turn.get('turn')}: {turn.get('action_text', '(no action)')} "
            f"[{turn.get('outcome')}]"
        )
        if turn.get("perceived"):
            lines.append(f"  perceived: {turn['perceived']}")
        for call in turn.get("calls", []):
            usage = call.get("usage") or {}
            totals[0] += int(usage.get("prompt_tokens", 0))
            totals[1] += int(usage.get("completion_tokens", 0))
            tokens = (
                f"{usage.get('prompt_tokens')}+{usage.get('completion_tokens')} tokens"
                if usage
                else "tokens not reported"
            )
            clips = int(call.get("audio_clips") or 0)  # absent in older logs: none sent
            audio = f", {clips} clip{'s' if clips != 1 else ''}" if clips else ""
            cached = ", from cache" if call.get("cached") else ""
            lines.append(
                f"  {call.get('stage', 'call')} call: {call.get('latency_s', 0):.3f} s, "
                f"{tokens}{audio}{cached}"
            )
            messages = call.get("messages", [])
            shown = messages if full else [m for m in messages if m.get("role") != "system"][-1:]
            for m in shown:
                content = prompts.get(m["ref"], "") if "ref" in m else m.get("content", "")
                text = content if full else _tail(str(content), 600)
                lines.append(f"  [{m.get('role')}] " + text.replace("\n", "\n    "))
            if call.get("error"):
                lines.append(f"  no answer: {call['error']}")
            else:
                lines.append(f"  [reply] {call.get('reply')}")
        if turn.get("audio_clips_dropped"):
            lines.append(f"  ({turn['audio_clips_dropped']} earlier recording(s) left out)")
    lines.append(f"tokens: {totals[0]} prompt, {totals[1]} completion")
    return "\n".join(lines)


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]
