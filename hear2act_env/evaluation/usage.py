"""Model calls, tokens and cost per agent and condition, from the records' agent stats.

Model agents count, per episode, their ``calls``, ``format_errors`` (turns whose reply had no
usable action after the re-ask), ``truncated`` (the same, for a reply cut off at the model's
token limit: finish reason ``length``), ``prompt_tokens`` and ``completion_tokens`` (from the server's ``usage``, or the local tokenizer for local models;
a reply replayed from the response cache counts the tokens it took when it was generated, so a
rerun reports the same figures). A price table turns tokens into cost:

```toml
# prices.toml: US dollars per million tokens, one table per agent (or model) name
["openai:gpt-4o-mini"]
prompt = 0.15
completion = 0.60
```

A table applies to the agent of that name and to its two-stage variants
(``openai:gpt-4o-mini+stage1``, ``...+stage1-text``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hear2act_env.errors import ConfigError
from hear2act_env.evaluation import csvfile
from hear2act_env.evaluation.latency import Latency
from hear2act_env.evaluation.records import EpisodeRecord

__all__ = [
    "Price",
    "UsageRow",
    "base_model",
    "split_agent",
    "format_usage",
    "load_prices",
    "parse_prices",
    "usage_rows",
    "write_usage_csv",
]


@dataclass(frozen=True)
class Price:
    """US dollars per million prompt and completion tokens."""

    prompt: float
    completion: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


#: The largest price file read.
MAX_PRICE_BYTES = 16 * 1024 * 1024


def load_prices(path: str | Path) -> dict[str, Price]:
    """The price table of a TOML file (see the module docstring); errors name the file, the
    table and the field."""
    from hear2act_env.tomlfile import read_toml

    data = read_toml(path, "--prices", MAX_PRICE_BYTES)
    return parse_prices(data, f"--prices: {path}")


#: The highest price taken (US dollars per million tokens): far above any model's, and low enough
#: that a cost stays a finite float.
MAX_PRICE = 1e6


def parse_prices(data: Any, where: str) -> dict[str, Price]:
    """The price table ``data`` (model name -> ``{prompt, completion}``, a TOML file's tables
    or a run file's ``prices`` table); errors start with ``where`` and name the model and the
    field."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: expected a table of model names, each with prompt and completion prices "
            "per million tokens"
        )
    prices = {}
    for model, table in data.items():
        if not isinstance(table, dict):
            raise ConfigError(
                f'{where}: {model!r} must be a table (["{model}"] with prompt and '
                "completion prices per million tokens)"
            )
        extra = sorted(set(table) - {"prompt", "completion"})
        if extra:
            raise ConfigError(
                f"{where}: [{model!r}] has unknown fields {extra}; expected prompt "
                "and completion (US dollars per million tokens)"
            )
        values = []
        for field in ("prompt", "completion"):
            value = table.get(field)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value <= MAX_PRICE  # NaN and inf fail; an int is never converted
            ):
                raise ConfigError(
                    f"{where}: [{model!r}] {field}: got {repr(value)[:60]}, expected a number from 0 "
                    f"to {MAX_PRICE:g} (US dollars per million tokens)"
                )
            values.append(float(value))
        prices[str(model)] = Price(*values)
    return prices


# the first-stage label eval adds to an agent name (``openai:M+stage1``), and the policies'
# own form (``openai:M+stage1:openai:M``)
#: The configuration label ``identity.label_agent`` gives a model run with two configurations.
_CONFIG_TAG = re.compile(r"@[0-9a-f]{8}$")
_LABELED = re.compile(r"\+(stage1-text|stage1|prosody|affect)(?::.*)?$")


def split_agent(agent: str) -> tuple[str, str]:
    """``(model, first-stage label)`` of an agent name: ``"openai:M+prosody"`` ->
    ``("openai:M", "prosody")``; ``""`` for an agent without a first stage."""
    match = _LABELED.search(agent)
    if match is None or match.start() == 0:
        return agent, ""
    return agent[: match.start()], match.group(1)


def base_model(agent: str) -> str:
    """The model an agent name stands for: the name without its first-stage suffix
    (``M+stage1``, ``M+stage1-text``, ``M+prosody``, ``M+affect``, ``M+stage1:M`` -> ``M``) and
    its configuration label (``M@HASH`` -> ``M``), so a price entry for ``M`` prices its
    two-stage runs and each of its configurations too."""
    return _CONFIG_TAG.sub("", split_agent(agent)[0])


@dataclass(frozen=True)
class UsageRow:
    """One cell's model calls and tokens (error-free episodes only)."""

    agent: str
    realization: str
    condition: str
    episodes: int
    turns: int
    calls: int
    format_errors: int
    truncated: int
    prompt_tokens: int
    completion_tokens: int
    calls_without_usage: int
    cost: float | None
    #: seconds per uncached model call (``latency.read_latencies``), None without agent logs
    latency: Latency | None = None

    @property
    def format_error_rate(self) -> float:
        """Share of the agent's turns whose reply had no usable action even after the re-ask."""
        return self.format_errors / self.turns if self.turns else 0.0

    @property
    def truncated_rate(self) -> float:
        """Share of the agent's turns lost to a reply cut off at the token limit."""
        return self.truncated / self.turns if self.turns else 0.0


def usage_rows(
    records: Sequence[EpisodeRecord],
    prices: dict[str, Price] | None = None,
    latencies: Mapping[tuple[str, str, str], Latency] | None = None,
) -> list[UsageRow]:
    """Per (agent, realization, condition) with model-call stats: counts summed over the
    cell's error-free episodes; ``cost`` when ``prices`` has the agent (or its model);
    ``latency`` from ``latencies`` (by cell)."""
    cells: dict[tuple[str, str, str], list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        if r.error is None and "calls" in r.agent_stats:
            cells[(r.key.agent, r.key.realization, r.key.condition)].append(r)
    rows = []
    for (agent, realization, condition), recs in cells.items():

        def total(name: str, recs: list[EpisodeRecord] = recs) -> int:
            return sum(int(r.agent_stats.get(name, 0) or 0) for r in recs)

        prompt, completion = total("prompt_tokens"), total("completion_tokens")
        price = (prices or {}).get(agent) or (prices or {}).get(base_model(agent))
        rows.append(
            UsageRow(
                agent,
                realization,
                condition,
                len(recs),
                sum(r.actions for r in recs),
                total("calls"),
                total("format_errors"),
                total("truncated"),
                prompt,
                completion,
                total("calls_without_usage"),
                price.cost(prompt, completion) if price is not None else None,
                (latencies or {}).get((agent, realization, condition)),
            )
        )
    return rows


def format_usage(rows: Sequence[UsageRow]) -> str:
    """The report's model-call table."""
    w = max([14, *(len(r.agent) + 2 for r in rows)])
    head = (
        f"{'agent':<{w}}{'realization':<12}{'condition':<16}{'n':>6}{'calls/ep':>10}"
        f"{'format err %':>14}{'truncated %':>13}{'prompt tok/ep':>15}{'compl. tok/ep':>15}{'tokens':>12}"
        f"{'cost $':>10}"
    )
    timed = any(r.latency is not None for r in rows)
    if timed:
        head += f"{'p50 s':>8}{'p95 s':>8}"
    lines = ["Model calls and tokens (error-free episodes)", head, "-" * len(head)]
    for r in rows:
        n = max(r.episodes, 1)
        cost = f"{r.cost:.4f}" if r.cost is not None else "-"
        lines.append(
            f"{r.agent:<{w}}{r.realization:<12}{r.condition:<16}{r.episodes:>6}"
            f"{r.calls / n:>10.2f}{100 * r.format_error_rate:>14.1f}"
            f"{100 * r.truncated_rate:>13.1f}{r.prompt_tokens / n:>15.0f}"
            f"{r.completion_tokens / n:>15.0f}{r.prompt_tokens + r.completion_tokens:>12}"
            f"{cost:>10}" + (f"{_seconds(r, 'p50'):>8}{_seconds(r, 'p95'):>8}" if timed else "")
        )
    missing = sum(r.calls_without_usage for r in rows)
    if missing:
        lines.append(f"{missing} calls got no token usage from their server (not counted)")
    if timed:
        lines.append(
            "p50 s / p95 s: seconds per model call, median and 95th percentile (calls "
            "the response cache answered left out)"
        )
    return "\n".join(lines)


def _seconds(row: UsageRow, which: str) -> str:
    return "-" if row.latency is None else f"{getattr(row.latency, which):.2f}"


def write_usage_csv(rows: Sequence[UsageRow], path: Path) -> None:
    """One line per cell."""
    with csvfile.table(path) as w:
        w.writerow(
            [
                "agent",
                "realization",
                "condition",
                "episodes",
                "turns",
                "calls",
                "format_errors",
                "format_error_rate",
                "truncated",
                "truncated_rate",
                "prompt_tokens",
                "completion_tokens",
                "calls_without_usage",
                "cost_usd",
                "latency_calls",
                "latency_p50_s",
                "latency_p95_s",
            ]
        )
        for r in rows:
            w.writerow(
                [
                    r.agent,
                    r.realization,
                    r.condition,
                    r.episodes,
                    r.turns,
                    r.calls,
                    r.format_errors,
                    f"{r.format_error_rate:.4f}",
                    r.truncated,
                    f"{r.truncated_rate:.4f}",
                    r.prompt_tokens,
                    r.completion_tokens,
                    r.calls_without_usage,
                    "" if r.cost is None else f"{r.cost:.6f}",
                    "" if r.latency is None else r.latency.calls,
                    "" if r.latency is None else f"{r.latency.p50:.4f}",
                    "" if r.latency is None else f"{r.latency.p95:.4f}",
                ]
            )
