"""Paper-style tables, CSV and plots from episode records.

Every table has an ``errors`` column: the episodes of the row's cell that ended in an error
(counted in ``n``, left out of every figure). When a cell played a scenario more than once
(``--runs``), a pass^k / pass@k table (``passk.py``) follows, written as ``passk.csv``. Model
agents get a table of calls, format errors, truncated replies (cut off at the token limit) and
tokens. An agent whose audio went to a server whose hearing was not probed (``--trust-audio``)
is named in a note: "audio trusted, not checked".
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hear2act_env import safewrite
from hear2act_env.conditions import Condition
from hear2act_env.evaluation import csvfile
from hear2act_env.evaluation import metrics as M
from hear2act_env.evaluation.passk import PassK, pass_k_curve, runs_of
from hear2act_env.evaluation.records import ERROR_KINDS, EpisodeRecord
from hear2act_env.evaluation.stats import (
    Estimate,
    bootstrap,
    paired_difference,
    paired_keys,
    pooled,
)

Cell = tuple[str, str, str]  # (agent, realization, condition)


@dataclass(frozen=True)
class Row:
    """One table row: a cell and its estimates. ``errors``: the episodes of the cell left out
    for an error (a paired difference: of both its cells; pooled: of the pool)."""

    agent: str
    realization: str
    condition: str
    n: int
    errors: int
    values: dict[str, Estimate]


def group(records: Sequence[EpisodeRecord]) -> dict[Cell, list[EpisodeRecord]]:
    """Records by (agent, realization, condition), in first-seen order."""
    out: dict[Cell, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        out[(r.key.agent, r.key.realization, r.key.condition)].append(r)
    return dict(out)


def condition_rows(
    records: Sequence[EpisodeRecord], metrics: Sequence[M.Metric] = M.MAIN + M.BEHAVIOUR
) -> list[Row]:
    """One row per cell with bootstrap CIs."""
    rows = []
    for (agent, realization, condition), recs in group(records).items():
        values = {m.name: bootstrap(recs, m) for m in metrics}
        errors = sum(r.error is not None for r in recs)
        rows.append(Row(agent, realization, condition, len(recs), errors, values))
    return rows


def difference_rows(
    records: Sequence[EpisodeRecord], reference: str = "T", metrics: Sequence[M.Metric] = M.MAIN
) -> list[Row]:
    """Paired differences of each condition against ``reference``, per agent and realization."""
    cells = group(records)
    rows = []
    for (agent, realization, condition), recs in cells.items():
        base = cells.get((agent, realization, reference))
        if condition == reference or base is None or not paired_keys(base, recs):
            continue
        values = {m.name: paired_difference(base, recs, m) for m in metrics}
        errors = sum(r.error is not None for r in (*base, *recs))
        label = f"{condition} - {reference}"
        rows.append(Row(agent, realization, label, len(recs), errors, values))
    return rows


@dataclass(frozen=True)
class PassKRow:
    """One cell's pass^k and pass@k for k = 1 .. ``runs`` (its runs per scenario); ``errors``:
    its episodes left out for an error."""

    agent: str
    realization: str
    condition: str
    runs: int
    errors: int
    curve: list[PassK]


def passk_rows(records: Sequence[EpisodeRecord]) -> list[PassKRow]:
    """One row per cell; empty unless some cell played a scenario more than once."""
    cells = group(records)
    if all(runs_of(recs) <= 1 for recs in cells.values()):
        return []
    return [
        PassKRow(
            agent,
            realization,
            condition,
            runs_of(recs),
            sum(r.error is not None for r in recs),
            pass_k_curve(recs),
        )
        for (agent, realization, condition), recs in cells.items()
    ]


def format_passk_table(rows: Sequence[PassKRow], privileged: set[str] = frozenset()) -> str:
    """A line per cell and k; ``scenarios``: those with at least k finished runs (averaged),
    ``left_out``: those with fewer (errored runs)."""
    labels = [r.agent + (" *" if r.agent in privileged else "") for r in rows]
    w = max([14, *(len(label) + 2 for label in labels)])
    head = (
        f"{'agent':<{w}}{'realization':<12}{'condition':<24}{'runs':>6}{'errors':>8}{'k':>4}"
        f"{'scenarios':>11}{'left_out':>10}{'pass^k':>25}{'pass@k':>25}"
    )
    lines = [
        "pass^k (all k runs of a scenario succeed) and pass@k (at least one does), %; "
        "95% scenario-bootstrap CIs",
        head,
        "-" * len(head),
    ]
    for r, label in zip(rows, labels):
        for p in r.curve:
            lines.append(
                f"{label:<{w}}{r.realization:<12}{r.condition:<24}{r.runs:>6}{r.errors:>8}"
                f"{p.k:>4}{p.scenarios:>11}{p.left_out:>10}"
                f"{str(p.pass_all):>25}{str(p.pass_any):>25}"
            )
    return "\n".join(lines)


def write_passk_csv(rows: Sequence[PassKRow], path: Path) -> None:
    """Long format: one line per cell, k and metric (``pass^k`` or ``pass@k``)."""
    with csvfile.table(path) as w:
        w.writerow(
            [
                "agent",
                "realization",
                "condition",
                "runs",
                "errors",
                "k",
                "scenarios",
                "left_out",
                "metric",
                "value",
                "ci_low",
                "ci_high",
            ]
        )
        for r in rows:
            for p in r.curve:
                for name, e in (("pass^k", p.pass_all), ("pass@k", p.pass_any)):
                    w.writerow(
                        [
                            r.agent,
                            r.realization,
                            r.condition,
                            r.runs,
                            r.errors,
                            p.k,
                            p.scenarios,
                            p.left_out,
                            name,
                            f"{e.value:.4f}",
                            f"{e.low:.4f}",
                            f"{e.high:.4f}",
                        ]
                    )


def unpaired_notes(records: Sequence[EpisodeRecord], reference: str = "T") -> list[str]:
    """One line per cell whose paired difference against ``reference`` cannot be computed
    because the two cells share no error-free episode (``difference_rows`` leaves it out)."""
    cells = group(records)
    out = []
    for (agent, realization, condition), recs in cells.items():
        base = cells.get((agent, realization, reference))
        if condition != reference and base is not None and not paired_keys(base, recs):
            out.append(
                f"no paired difference for {agent} / {realization} / {condition} - {reference}: "
                "the two cells share no episode without an error"
            )
    return out


def pooled_rows(
    records: Sequence[EpisodeRecord], metrics: Sequence[M.Metric] = M.MAIN
) -> list[Row]:
    """Per realization and condition, the equal-weight mean over non-privileged agents."""
    by: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        if not r.privileged:
            by[(r.key.realization, r.key.condition)].append(r)
    return [
        Row(
            "pooled",
            realization,
            condition,
            len(recs),
            sum(r.error is not None for r in recs),
            {m.name: pooled(recs, m) for m in metrics},
        )
        for (realization, condition), recs in by.items()
    ]


def unchecked_audio_notes(records: Sequence[EpisodeRecord]) -> list[str]:
    """One line per agent whose calls carried audio to a server whose hearing was not probed
    (``--trust-audio``: agent stat ``unchecked_audio_calls``), naming its conditions."""
    cells: dict[str, set[str]] = defaultdict(set)
    for r in records:
        if int(r.agent_stats.get("unchecked_audio_calls", 0) or 0) > 0:
            cells[r.key.agent].add(r.key.condition)
    return [
        f"{agent}: audio trusted, not checked (--trust-audio: the server was not probed for "
        f"hearing the recordings) under {', '.join(sorted(conditions))}"
        for agent, conditions in cells.items()
    ]


def errorbar_ci(ax: Any, points: Sequence[tuple[Any, Estimate]], **style: Any) -> None:
    """Plot ``(x, Estimate)`` points on a matplotlib axis with their CIs as error bars."""
    ax.errorbar(
        [x for x, _ in points],
        [e.value for _, e in points],
        yerr=[[e.value - e.low for _, e in points], [e.high - e.value for _, e in points]],
        capsize=3,
        **style,
    )


def format_table(
    rows: Sequence[Row], metrics: Sequence[str], title: str, privileged: set[str] = frozenset()
) -> str:
    """A fixed-width text table (privileged agents marked with *); ``n`` counts a cell's
    episodes, ``errors`` those of them left out for an error."""
    labels = [r.agent + (" *" if r.agent in privileged else "") for r in rows]
    w = max([14, *(len(label) + 2 for label in labels)])  # long names (ppo:PATH) stay aligned
    head = f"{'agent':<{w}}{'realization':<12}{'condition':<24}{'n':>6}{'errors':>8}" + "".join(
        f"{m:>25}" for m in metrics
    )
    lines = [title, head, "-" * len(head)]
    for r, label in zip(rows, labels):
        cells = "".join(f"{str(r.values[m]):>25}" for m in metrics)
        lines.append(
            f"{label:<{w}}{r.realization:<12}{r.condition:<24}{r.n:>6}{r.errors:>8}{cells}"
        )
    return "\n".join(lines)


def _ordered(rows: Sequence[Any], records: Sequence[EpisodeRecord]) -> list[Any]:
    """``rows`` (with agent, realization and condition) in the records' first-seen order."""
    order = {}
    for r in records:
        for i, v in enumerate((r.key.agent, r.key.realization, r.key.condition)):
            order.setdefault((i, v), len(order))
    return sorted(
        rows,
        key=lambda r: (
            order.get((0, r.agent), -1),
            order.get((1, r.realization), 0),
            order.get((2, r.condition.split(" - ")[0]), 0),
        ),
    )


def write_csv(rows: Sequence[Row], path: Path) -> None:
    """Long-format CSV: one line per row and metric."""
    with csvfile.table(path) as w:
        w.writerow(
            [
                "agent",
                "realization",
                "condition",
                "n",
                "errors",
                "metric",
                "value",
                "ci_low",
                "ci_high",
            ]
        )
        for r in rows:
            for name, e in r.values.items():
                w.writerow(
                    [
                        r.agent,
                        r.realization,
                        r.condition,
                        r.n,
                        r.errors,
                        name,
                        f"{e.value:.4f}",
                        f"{e.low:.4f}",
                        f"{e.high:.4f}",
                    ]
                )


def plot_all(records: Sequence[EpisodeRecord], rows: Sequence[Row], folder: Path) -> list[Path]:
    """Success by condition (CI bars), action composition, state-fidelity chart (PNG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from hear2act_env.errors import MissingExtraError

        raise MissingExtraError("report", "matplotlib") from None
    safewrite.ensure_folder(folder)
    written = []
    agents = list(dict.fromkeys(r.agent for r in rows))
    conditions = list(dict.fromkeys(r.condition for r in rows))
    main_conditions = [c for c in conditions if _is_main(c)]
    by = {(r.agent, r.realization, r.condition): r for r in rows}
    realizations = list(dict.fromkeys(r.realization for r in rows))

    fig, axes = plt.subplots(
        1, len(realizations), figsize=(6 * len(realizations), 4), sharey=True, squeeze=False
    )
    width = 0.8 / max(len(main_conditions), 1)
    for ax, realization in zip(axes[0], realizations):
        for j, cond in enumerate(main_conditions):
            xs, ys, lo, hi = [], [], [], []
            for i, agent in enumerate(agents):
                row = by.get((agent, realization, cond))
                if row:
                    e = row.values["success"]
                    xs.append(i + j * width)
                    ys.append(e.value)
                    lo.append(e.value - e.low)
                    hi.append(e.high - e.value)
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=cond)
        ax.set_xticks(
            [i + width * (len(main_conditions) - 1) / 2 for i in range(len(agents))],
            agents,
            rotation=30,
        )
        ax.set_title(f"{realization}: Success % (95% CI)")
        ax.legend()
    fig.tight_layout()
    written.append(_save(fig, folder / "success_by_condition.png", plt))

    kinds = ("ask", "clarify", "recommend", "confirm", "invalid")
    cells = [
        (a, r, c) for a in agents for r in realizations for c in main_conditions if (a, r, c) in by
    ]
    groups = group(records)
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(cells)), 4))
    bottom = [0.0] * len(cells)
    for kind in kinds:
        metric = M.BY_NAME[f"{kind}_share"]
        vals = [metric(groups[c]) for c in cells]
        ax.bar(range(len(cells)), vals, bottom=bottom, label=kind)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(
        range(len(cells)), [f"{a}/{r[:4]}/{c}" for a, r, c in cells], rotation=70, fontsize=7
    )
    ax.set_ylabel("share of actions (%)")
    ax.set_title("Action composition per condition")
    ax.legend(fontsize=7)
    fig.tight_layout()
    written.append(_save(fig, folder / "action_composition.png", plt))

    fidelity = [c for c in conditions if _is_fidelity_study(c)]
    if len(fidelity) > 1:
        fig, ax = plt.subplots(figsize=(7, 4))
        for agent in agents:
            pts = [
                (c, by[(agent, "prosody", c)].values["success"])
                for c in fidelity
                if (agent, "prosody", c) in by
            ]
            if pts:
                errorbar_ci(ax, pts, marker="o", label=agent)
        ax.set_title("State fidelity (Prosody-mediated): Success % (95% CI)")
        ax.tick_params(axis="x", rotation=20)
        ax.legend(fontsize=7)
        fig.tight_layout()
        written.append(_save(fig, folder / "state_fidelity.png", plt))
    return written


def _save(fig, path: Path, plt) -> Path:  # noqa: ANN001
    """Render ``fig`` as PNG in memory and write it through ``safewrite`` (never a link)."""
    import io

    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    plt.close(fig)
    return safewrite.write_atomic(path, png.getvalue())


def _is_main(label: str) -> bool:
    """Access conditions proper (T, T+S, A+T, ...), and the audio-inferred state; not the
    state-fidelity interventions."""
    return not Condition.parse(label).is_intervention


def _is_fidelity_study(label: str) -> bool:
    """T+S with the true tag or under an intervention (the state-fidelity table and plot)."""
    condition = Condition.parse(label)
    return condition.perception is None and str(condition.access) == "T+S"


def report(
    records: Sequence[EpisodeRecord],
    out: Path | None = None,
    plots: bool = True,
    prices: dict[str, Any] | None = None,
    *,
    latencies: Mapping[Cell, Any] | None = None,
    configs: Mapping[str, Any] | None = None,
    bank: Mapping[str, Any] | None = None,
) -> str:
    """Print-ready text of all tables; with ``out``, also CSVs, PNG plots and
    ``aggregate.json`` (every figure, with the agents' ``configs``: ``aggregate.AgentConfig``
    by agent, and the ``bank``) there. Model agents get a table of calls, format errors,
    truncated replies and tokens (cost with ``prices``, a ``usage.load_prices`` table; seconds
    per call with ``latencies``, ``latency.read_latencies``)."""
    from hear2act_env.evaluation.aggregate import aggregate, write_aggregate
    from hear2act_env.evaluation.usage import format_usage, usage_rows, write_usage_csv

    rows = _ordered(condition_rows(records), records)
    main_rows = [r for r in rows if _is_main(r.condition)]
    fidelity_rows = [
        r for r in rows if r.realization == "prosody" and _is_fidelity_study(r.condition)
    ]
    diffs = _ordered(
        [d for d in difference_rows(records) if _is_main(d.condition.split(" - ")[0])], records
    )
    pooled_ = _ordered([p for p in pooled_rows(records) if _is_main(p.condition)], records)
    privileged = {r.key.agent for r in records if r.privileged}
    main = [m.name for m in M.MAIN]
    errors = sum(r.error is not None for r in records)
    kinds = Counter(r.error_kind or "agent" for r in records if r.error is not None)
    parts = [
        format_table(
            main_rows,
            main + ["actions"],
            "Success / Accept / FullFit (%), mean actions; 95% scenario-bootstrap CIs",
            privileged,
        ),
        format_table(
            diffs, main, "Paired differences against T (percentage points, 95% CI)", privileged
        ),
        format_table(
            main_rows,
            ["full_disclosure", "premature_closure", "needs_revealed", "confirm_after_reluctant"],
            "Interaction behaviour",
            privileged,
        ),
    ]
    passk = _ordered(passk_rows(records), records)
    if passk:
        parts.append(format_passk_table([p for p in passk if _is_main(p.condition)], privileged))
    if len({r.condition for r in fidelity_rows}) > 1:
        parts.append(
            format_table(
                fidelity_rows,
                ["success", "ask_clarify_actions", "premature_closure"],
                "State fidelity (Prosody-mediated)",
                privileged,
            )
        )
    if pooled_:
        parts.append(
            format_table(pooled_, main, "Pooled over non-privileged agents (equal weights)")
        )
    usage = usage_rows(records, prices, latencies)
    if usage:
        parts.append(format_usage(usage))
    parts.extend(unpaired_notes(records))
    parts.extend(unchecked_audio_notes(records))
    by_kind = ", ".join(f"{kinds[k]} {k}" for k in ERROR_KINDS if kinds[k])
    parts.append(
        f"{len(records)} episodes, {errors} with errors"
        + (f" ({by_kind}; left out of every figure, see the errors column)" if errors else "")
        + ". * = privileged: given the ground truth."
    )
    if out is not None:
        safewrite.ensure_folder(out)
        write_csv(rows, out / "conditions.csv")
        all_diffs = difference_rows(records)
        write_csv(all_diffs, out / "differences.csv")
        data = aggregate(
            records,
            rows=rows,
            differences=_ordered(all_diffs, records),
            passk=passk,
            usage=usage,
            configs=configs,
            bank=bank,
        )
        write_aggregate(data, out / "aggregate.json")
        if usage:
            write_usage_csv(usage, out / "usage.csv")
        if passk:
            write_passk_csv(passk, out / "passk.csv")
        if plots:
            plot_all(records, rows, out)
    return "\n\n".join(parts)
