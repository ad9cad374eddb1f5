"""The leaderboard: one row per model and realization, with paired CIs.

A section per realization (Prosody-mediated, then Explicit lexical: a run plays both). Columns:
Success under T; when the models played each scenario more than once under T (``--runs``),
``pass^K T`` and ``pass@K T`` at the board's common K, the most runs every such model has (the
share of scenarios all K, or at least one, of whose runs succeed;
docs/protocol.md#passk-and-passk; the report's ``passk.csv`` has every k up to each cell's runs);
the paired differences against the model under T: T+S - T, A+T - T, and one column per first
stage of the model's two-stage runs (``hear2act eval --perceiver``, agent ``M+LABEL``):
T+S-hat(self) - T (``M+stage1`` under A+T: the model hears the audio first), T+S-hat(self-text)
- T (``M+stage1-text`` under T: the same first stage without audio), T+S-hat(prosody) - T and
T+S-hat(affect) - T (``M+prosody``, ``M+affect`` under A+T: the reference prosody classifier or
an emotion recognizer as the first stage). Then the format-error rate (turns whose reply had no
usable action after the re-ask) and the truncation rate (the same for replies cut off at the
model's token limit), errored episodes, finished episodes and model turns (the rates'
denominators), tokens and cost, over every run of the model in that realization.

Rows are sorted by Success T, best first (a model not run under T last), within each section.

Units: Success, pass^K and pass@K in percent, differences in percentage points, rates in percent of
turns; every estimate has a 95% scenario-bootstrap CI and its ``n``, the episodes (scenario x
run) it rests on: finished episodes for Success, pairs finished in both cells for a difference,
scenarios x K for pass^K and pass@K (shown ``n=SxK``: S scenarios with K finished runs).
A difference pairs episodes by (scenario, run) across the model's variants (every variant of
a scenario and run plays from the same seed); ``-`` where a condition was not run. Results of
several files merge (the first record of a key wins); files of different bank versions or
banks are refused (``manifest_bank`` reads and checks what each manifest says).

Names come from results files: in the Markdown file every cell and heading is escaped
(``markdown_text``), so a name holding ``|``, a newline or HTML stays one cell of one row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hear2act_env.cells import markdown_text
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation import csvfile
from hear2act_env.evaluation import metrics as M
from hear2act_env.evaluation.passk import pass_k, runs_of
from hear2act_env.evaluation.records import EpisodeRecord
from hear2act_env.evaluation.stats import Estimate, bootstrap, paired_difference, paired_keys
from hear2act_env.evaluation.usage import Price, UsageRow, split_agent, usage_rows

__all__ = [
    "COLUMNS",
    "DIFFERENCES",
    "REALIZATIONS",
    "LeaderRow",
    "common_k",
    "leaderboard_columns",
    "leaderboard_csv",
    "leaderboard_markdown",
    "leaderboard_rows",
    "leaderboard_table",
    "csv_header",
    "manifest_bank",
    "sections",
    "split_agent",
]

#: Realizations in section order, with their titles; others follow in first-seen order.
REALIZATIONS: dict[str, str] = {"prosody": "Prosody-mediated", "explicit": "Explicit lexical"}
#: (column, CSV name, first-stage label of the agent, condition) of each paired difference
#: against the model under T ('' : the model itself).
DIFFERENCES: tuple[tuple[str, str, str, str], ...] = (
    ("T+S - T", "tps_minus_t", "", "T+S"),
    ("A+T - T", "apt_minus_t", "", "A+T"),
    ("T+S-hat(self) - T", "tpshat_self_minus_t", "stage1", "A+T"),
    ("T+S-hat(self-text) - T", "tpshat_self_text_minus_t", "stage1-text", "T"),
    ("T+S-hat(prosody) - T", "tpshat_prosody_minus_t", "prosody", "A+T"),
    ("T+S-hat(affect) - T", "tpshat_affect_minus_t", "affect", "A+T"),
)
COLUMNS = (
    "model",
    "Success T",
    *(d[0] for d in DIFFERENCES),
    "format err %",
    "truncated %",
    "errored",
    "finished",
    "turns",
    "tokens",
    "cost $",
)
#: The units line of the Markdown file and of each section.
UNITS = (
    "Success, pass^K and pass@K in percent, differences in percentage points, each with its "
    "95% scenario-bootstrap CI and n, the episodes (scenario x run) it rests on (for a "
    "difference, the pairs finished in both cells; for pass^K and pass@K, scenarios x K); rows "
    "by Success T, best first; format err % and truncated % in percent of the model's "
    "turns; errored, finished and turns over every run of the model in the realization; cost "
    "in US dollars; - where not run."
)


@dataclass(frozen=True)
class LeaderRow:
    """One model's row in one realization: estimates (None where not run) and totals."""

    model: str
    success_t: Estimate | None
    differences: dict[str, Estimate | None]
    format_error_rate: float | None  # percent of turns
    truncated_rate: float | None  # percent of turns
    errored: int
    cost: float | None
    #: K, the board's common k: the most runs per scenario under T that every model with more
    #: than one has (the same on every row of a board), and this model's pass^K and pass@K
    #: under T (None where K is 1 or no scenario has K finished runs).
    runs: int = 1
    pass_k_t: Estimate | None = None
    pass_any_t: Estimate | None = None
    realization: str = "prosody"
    #: Per estimate column (``Success T``, ``pass^K T``, a difference's name): the episodes
    #: (scenario x run) it rests on; for a difference, the pairs finished in both cells.
    episodes: dict[str, int] = field(default_factory=dict)
    finished: int = 0
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    def cells(self) -> list[str]:
        """The Markdown cells, in ``leaderboard_columns`` order."""

        def est(column: str, e: Estimate | None) -> str:
            if e is None:
                return "-"
            if column.startswith("pass"):  # scenarios x K
                return f"{e} n={self.episodes.get(column, 0) // self.runs}x{self.runs}"
            return f"{e} n={self.episodes.get(column, 0)}"

        def pct(v: float | None) -> str:
            return "-" if v is None else f"{v:.1f}"

        return [
            self.model,
            est("Success T", self.success_t),
            *(
                [
                    est(f"pass^{self.runs} T", self.pass_k_t),
                    est(f"pass@{self.runs} T", self.pass_any_t),
                ]
                if self.runs > 1
                else []
            ),
            *(est(d[0], self.differences[d[0]]) for d in DIFFERENCES),
            pct(self.format_error_rate),
            pct(self.truncated_rate),
            str(self.errored),
            str(self.finished),
            str(self.turns) if self.turns else "-",
            str(self.tokens) if self.tokens else "-",
            "-" if self.cost is None else f"{self.cost:.4f}",
        ]


def _realizations(records: Sequence[EpisodeRecord]) -> list[str]:
    seen = list(dict.fromkeys(r.key.realization for r in records))
    return [r for r in REALIZATIONS if r in seen] + [r for r in seen if r not in REALIZATIONS]


def leaderboard_rows(
    records: Sequence[EpisodeRecord], prices: dict[str, Price] | None = None
) -> list[LeaderRow]:
    """One row per (realization, model): realizations in section order, models by Success T
    (best first; first-seen order among equals, a model not run under T last). Privileged
    agents (the oracle) are left out."""
    records = [r for r in records if not r.privileged]
    models = list(dict.fromkeys(split_agent(r.key.agent)[0] for r in records))
    runs = common_k(
        runs_of([r for r in records if r.key.agent == m and r.key.condition == "T"]) for m in models
    )
    rows = []
    for realization in _realizations(records):
        here = [r for r in records if r.key.realization == realization]
        usage = usage_rows(here)
        section = [
            _row(model, realization, here, usage, prices or {}, runs)
            for model in dict.fromkeys(split_agent(r.key.agent)[0] for r in here)
        ]
        rows += sorted(section, key=lambda r: -r.success_t.value if r.success_t else math.inf)
    return rows


def common_k(runs: Iterable[int]) -> int:
    """The k every model compares at: the fewest runs among models with more than one (1 when
    none has more), so a 3-run model beside a 5-run one gets pass^3 too."""
    several = [n for n in runs if n > 1]
    return min(several, default=1)


def _row(
    model: str,
    realization: str,
    here: list[EpisodeRecord],
    usage: list[UsageRow],
    prices: dict[str, Price],
    runs: int,
) -> LeaderRow:
    mine = [r for r in here if split_agent(r.key.agent)[0] == model]

    def cell(label: str, condition: str) -> list[EpisodeRecord]:
        # the variants take the model's name so that paired keys match
        return [
            replace(r, key=replace(r.key, agent=model))
            for r in mine
            if split_agent(r.key.agent)[1] == label and r.key.condition == condition
        ]

    base = cell("", "T")
    episodes = {"Success T": sum(r.error is None for r in base)}
    success_t = bootstrap(base, M.SUCCESS) if episodes["Success T"] else None
    pass_k_t = pass_any_t = None
    if runs > 1 and success_t is not None:
        found = pass_k(base, runs)
        if found.scenarios:  # some scenario has K finished runs
            pass_k_t, pass_any_t = found.pass_all, found.pass_any
            episodes[f"pass^{runs} T"] = episodes[f"pass@{runs} T"] = found.scenarios * runs
    diffs: dict[str, Estimate | None] = {}
    for name, _, label, condition in DIFFERENCES:
        other = cell(label, condition)
        episodes[name] = paired_keys(base, other) if base and other else 0
        diffs[name] = paired_difference(base, other, M.SUCCESS) if episodes[name] else None
    own = [u for u in usage if split_agent(u.agent)[0] == model]
    turns = sum(u.turns for u in own)
    costs = []
    for u in own:  # a table for the agent, else for its model (its first stages included)
        price = prices.get(u.agent) or prices.get(model)
        costs.append(None if price is None else price.cost(u.prompt_tokens, u.completion_tokens))
    prompt = sum(u.prompt_tokens for u in own)
    completion = sum(u.completion_tokens for u in own)
    return LeaderRow(
        model,
        success_t,
        diffs,
        100 * sum(u.format_errors for u in own) / turns if turns else None,
        100 * sum(u.truncated for u in own) / turns if turns else None,
        sum(r.error is not None for r in mine),
        sum(c for c in costs if c is not None) if own and None not in costs else None,
        runs=runs,
        pass_k_t=pass_k_t,
        pass_any_t=pass_any_t,
        realization=realization,
        episodes=episodes,
        finished=sum(r.error is None for r in mine),
        turns=turns,
        prompt_tokens=prompt,
        completion_tokens=completion,
    )


def leaderboard_columns(rows: Sequence[LeaderRow]) -> tuple[str, ...]:
    """``COLUMNS``, with ``pass^K T`` and ``pass@K T`` after Success T when the rows' K is
    above 1."""
    runs = max((r.runs for r in rows), default=1)
    if runs <= 1:
        return COLUMNS
    return (COLUMNS[0], COLUMNS[1], f"pass^{runs} T", f"pass@{runs} T", *COLUMNS[2:])


def _markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(markdown_text(c) for c in cells) + " |"


def leaderboard_table(rows: Sequence[LeaderRow]) -> str:
    """One Markdown table of ``rows`` (one realization's), header first; every cell escaped
    (``markdown_text``)."""
    columns = leaderboard_columns(rows)
    lines = [_markdown_row(columns), "| " + " | ".join("---" for _ in columns) + " |"]
    lines += [_markdown_row(r.cells()) for r in rows]
    return "\n".join(lines)


def sections(rows: Sequence[LeaderRow]) -> list[tuple[str, list[LeaderRow]]]:
    """``(title, rows)`` per realization, in the rows' order."""
    out: dict[str, list[LeaderRow]] = {}
    for r in rows:
        out.setdefault(r.realization, []).append(r)
    return [(REALIZATIONS.get(k, k), v) for k, v in out.items()]


def leaderboard_markdown(rows: Sequence[LeaderRow]) -> str:
    """The Markdown file: a title, the units, and a section (heading and table) per
    realization."""
    parts = ["# Leaderboard", "", UNITS]
    for title, section in sections(rows):
        parts += ["", f"## {markdown_text(title)}", "", leaderboard_table(section)]
    return "\n".join(parts)


def csv_header(rows: Sequence[LeaderRow]) -> list[str]:
    """The CSV columns: units in the names (``_pct`` percent, ``_pp`` percentage points,
    ``_n`` episodes, ``_usd`` US dollars)."""
    runs = max((r.runs for r in rows), default=1)
    header = ["realization", "model", *_est_names("success_t_pct")]
    if runs > 1:
        header += _est_names(f"pass^{runs}_t_pct") + _est_names(f"pass@{runs}_t_pct")
    for _, slug, _, _ in DIFFERENCES:
        header += _est_names(f"{slug}_pp")
    header += [
        "format_error_pct",
        "truncated_pct",
        "errored",
        "finished",
        "turns",
        "prompt_tokens",
        "completion_tokens",
        "tokens",
        "cost_usd",
    ]
    return header


def _est_names(name: str) -> list[str]:
    return [name, f"{name}_low", f"{name}_high", name.rsplit("_", 1)[0] + "_n"]


def leaderboard_csv(rows: Sequence[LeaderRow], path: Path) -> None:
    """One line per (realization, model); each estimate as value, low, high and n (pass^K
    only when K is above 1); every rate in percent."""
    runs = max((r.runs for r in rows), default=1)

    def est(r: LeaderRow, column: str, e: Estimate | None) -> list[Any]:
        n = r.episodes.get(column, 0)
        return (
            ["", "", "", n] if e is None else [f"{e.value:.4f}", f"{e.low:.4f}", f"{e.high:.4f}", n]
        )

    def pct(v: float | None) -> str:
        return "" if v is None else f"{v:.4f}"

    with csvfile.table(path) as w:
        w.writerow(csv_header(rows))
        for r in rows:
            line: list[Any] = [r.realization, r.model, *est(r, "Success T", r.success_t)]
            if runs > 1:
                line += est(r, f"pass^{runs} T", r.pass_k_t)
                line += est(r, f"pass@{runs} T", r.pass_any_t)
            for name, _, _, _ in DIFFERENCES:
                line += est(r, name, r.differences[name])
            line += [
                pct(r.format_error_rate),
                pct(r.truncated_rate),
                r.errored,
                r.finished,
                r.turns,
                r.prompt_tokens,
                r.completion_tokens,
                r.tokens,
                "" if r.cost is None else f"{r.cost:.6f}",
            ]
            w.writerow(line)


#: The bank's SHA-256 as a manifest holds it.
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MISSING = object()


def _described(value: Any) -> str:
    """A JSON value's type, with the value shortened: ``a number (3.5)``, ``an object``."""
    if value is _MISSING:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r:.40})"
    if isinstance(value, str):
        return f"a string ({value!r:.40})"
    return "an array" if isinstance(value, list) else "an object"


def manifest_bank(data: Any, where: str) -> tuple[int, str]:
    """``(bank_version, bank_sha256)`` of a results manifest's JSON value ``data``: a
    ``ConfigError`` starting with ``where`` (the manifest's path) when the manifest is not an
    object, ``bank_version`` not an integer >= 1 or ``bank_sha256`` not 64 lowercase hex
    digits, naming the field, the value's type and what was expected."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: the manifest is {_described(data)}, expected an object (the manifest "
            "hear2act eval writes beside its results)"
        )
    version = data.get("bank_version", _MISSING)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ConfigError(
            f"{where}: bank_version is {_described(version)}, expected an integer >= 1 (the "
            "version of the scenario bank the run played)"
        )
    sha = data.get("bank_sha256", _MISSING)
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        raise ConfigError(
            f"{where}: bank_sha256 is {_described(sha)}, expected 64 lowercase hex digits (the "
            "SHA-256 of the scenario bank the run played)"
        )
    return version, sha
