"""The leaderboard: one row per model, Prosody-mediated, with paired CIs.

Columns: Success under T; the paired differences T+S - T, A+T - T, T+S-hat - T (the model's
own two-stage run from the audio: agent ``M+stage1`` under A+T, from ``hear2act eval
--perceiver self``) and T+S-hat(text) - T (the transcript-only control: ``M+stage1-text``,
from ``--perceiver self-text``, under T); the format-error rate (turns whose reply
had no usable action after the re-ask), the truncation rate beside it (the same for replies cut
off at the model's token limit: a setting to raise, not a format failure), errored episodes,
tokens and cost. When the model played each scenario more than once under T (``--runs K``), a
``pass^K T`` column follows Success T: the share of scenarios all K of whose runs succeed
(docs/protocol.md#passk-and-passk). A difference pairs
episodes by (scenario, run) across the model's variants (every variant of a scenario and run
plays from the same seed); ``-`` where a condition was not run. Results of several files merge
(the first record of a key wins); files of different bank versions or banks are refused.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hear2act_env.evaluation import metrics as M
from hear2act_env.evaluation.passk import pass_k, runs_of
from hear2act_env.evaluation.records import EpisodeRecord
from hear2act_env.evaluation.stats import Estimate, bootstrap, paired_difference, paired_keys
from hear2act_env.evaluation.usage import Price, base_model, usage_rows

__all__ = [
    "COLUMNS",
    "LeaderRow",
    "leaderboard_columns",
    "leaderboard_rows",
    "leaderboard_csv",
    "leaderboard_markdown",
]

REALIZATION = "prosody"
#: (column, agent variant, condition) of each paired difference against the model under T.
DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    ("T+S - T", "", "T+S"),
    ("A+T - T", "", "A+T"),
    ("T+S-hat - T", "+stage1", "A+T"),
    ("T+S-hat(text) - T", "+stage1-text", "T"),
)
COLUMNS = (
    "model",
    "Success T",
    *(d[0] for d in DIFFERENCES),
    "format err %",
    "truncated %",
    "errored",
    "tokens",
    "cost $",
)


@dataclass(frozen=True)
class LeaderRow:
    """One model's row: estimates (None where not run) and totals."""

    model: str
    success_t: Estimate | None
    differences: dict[str, Estimate | None]
    format_error_rate: float | None
    truncated_rate: float | None
    errored: int
    tokens: int
    cost: float | None
    #: K, the most runs per scenario of any model under T (the same on every row of a board),
    #: and this model's pass^K under T (None where K is 1 or the model has no run under T).
    runs: int = 1
    pass_k_t: Estimate | None = None

    def cells(self) -> list[str]:
        def est(e: Estimate | None) -> str:
            return "-" if e is None else str(e)

        return [
            self.model,
            est(self.success_t),
            *([est(self.pass_k_t)] if self.runs > 1 else []),
            *(est(self.differences[name]) for name, _, _ in DIFFERENCES),
            "-" if self.format_error_rate is None else f"{100 * self.format_error_rate:.1f}",
            "-" if self.truncated_rate is None else f"{100 * self.truncated_rate:.1f}",
            str(self.errored),
            str(self.tokens) if self.tokens else "-",
            "-" if self.cost is None else f"{self.cost:.4f}",
        ]


def _variant(agent: str) -> str:
    """'' for the model itself, '+stage1' or '+stage1-text' for its two-stage runs."""
    rest = agent[len(base_model(agent)) :]
    return "+stage1-text" if rest.startswith("+stage1-text") else rest[:7]


def leaderboard_rows(
    records: Sequence[EpisodeRecord], prices: dict[str, Price] | None = None
) -> list[LeaderRow]:
    """One row per model (first-seen order) from Prosody-mediated records."""
    records = [r for r in records if r.key.realization == REALIZATION and not r.privileged]
    models = list(dict.fromkeys(base_model(r.key.agent) for r in records))
    usage = usage_rows(records, prices)
    runs = max(
        (
            runs_of([r for r in records if r.key.agent == m and r.key.condition == "T"])
            for m in models
        ),
        default=1,
    )
    rows = []
    for model in models:
        mine = [r for r in records if base_model(r.key.agent) == model]

        def cell(
            variant: str, condition: str, mine: list[EpisodeRecord] = mine, model: str = model
        ) -> list[EpisodeRecord]:
            # the variants share the model's name so that paired keys match
            return [
                replace(r, key=replace(r.key, agent=model))
                for r in mine
                if _variant(r.key.agent) == variant and r.key.condition == condition
            ]

        base = cell("", "T")
        success_t = bootstrap(base, M.SUCCESS) if any(r.error is None for r in base) else None
        pass_k_t = None
        if runs > 1 and success_t is not None:
            estimate = pass_k(base, runs).pass_all
            pass_k_t = estimate if estimate.n else None  # no scenario has K finished runs
        diffs: dict[str, Estimate | None] = {}
        for name, variant, condition in DIFFERENCES:
            other = cell(variant, condition)
            ok = base and other and paired_keys(base, other)
            diffs[name] = paired_difference(base, other, M.SUCCESS) if ok else None
        own = [u for u in usage if base_model(u.agent) == model]
        turns = sum(u.turns for u in own)
        costs = [u.cost for u in own]
        rows.append(
            LeaderRow(
                model,
                success_t,
                diffs,
                sum(u.format_errors for u in own) / turns if turns else None,
                sum(u.truncated for u in own) / turns if turns else None,
                sum(r.error is not None for r in mine),
                sum(u.prompt_tokens + u.completion_tokens for u in own),
                sum(c for c in costs if c is not None) if own and None not in costs else None,
                runs,
                pass_k_t,
            )
        )
    return rows


def leaderboard_columns(rows: Sequence[LeaderRow]) -> tuple[str, ...]:
    """``COLUMNS``, with ``pass^K T`` after Success T when the rows' K is above 1."""
    runs = max((r.runs for r in rows), default=1)
    if runs <= 1:
        return COLUMNS
    return (COLUMNS[0], COLUMNS[1], f"pass^{runs} T", *COLUMNS[2:])


def leaderboard_markdown(rows: Sequence[LeaderRow]) -> str:
    """A Markdown table (Success, pass^K and differences in percent / percentage points, 95%
    CI)."""
    columns = leaderboard_columns(rows)
    lines = [
        "| " + " | ".join(columns) + " |",
        "| " + " | ".join("---" for _ in columns) + " |",
    ]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines)


def leaderboard_csv(rows: Sequence[LeaderRow], path: Path) -> None:
    """One line per model; each estimate as value, low, high (pass^K: ``pass^K_t``, only
    when K is above 1)."""
    runs = max((r.runs for r in rows), default=1)
    header: list[str] = ["model", "success_t", "success_t_low", "success_t_high"]
    if runs > 1:
        header += [f"pass^{runs}_t", f"pass^{runs}_t_low", f"pass^{runs}_t_high"]
    for name, _, _ in DIFFERENCES:
        slug = name.replace(" - ", "_minus_").replace("+", "p").replace("(", "_").replace(")", "")
        header += [slug, f"{slug}_low", f"{slug}_high"]
    header += ["format_error_rate", "truncated_rate", "errored", "tokens", "cost_usd"]

    def est(e: Estimate | None) -> list[Any]:
        return ["", "", ""] if e is None else [f"{e.value:.4f}", f"{e.low:.4f}", f"{e.high:.4f}"]

    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for r in rows:
            line: list[Any] = [r.model, *est(r.success_t)]
            if runs > 1:
                line += est(r.pass_k_t)
            for name, _, _ in DIFFERENCES:
                line += est(r.differences[name])
            line += [
                "" if r.format_error_rate is None else f"{r.format_error_rate:.4f}",
                "" if r.truncated_rate is None else f"{r.truncated_rate:.4f}",
                r.errored,
                r.tokens,
                "" if r.cost is None else f"{r.cost:.6f}",
            ]
            w.writerow(line)
