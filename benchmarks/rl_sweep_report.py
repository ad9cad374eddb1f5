"""Tables and plots of the RL turn-cost sweep (``benchmarks/rl_sweep.py report``).

Markdown tables of Success, Accept, FullFit, mean return and mean actions with 95%
scenario-bootstrap CIs, paired differences between access conditions on matched episodes, the
training table, what each policy does right after an accepting reply, and two plots (return and
actions against turn cost; learning curves).
"""

from __future__ import annotations

import csv
import dataclasses
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hear2act_env.config import EnvConfig
from hear2act_env.evaluation import metrics as M
from hear2act_env.evaluation.records import EpisodeRecord
from hear2act_env.evaluation.report import errorbar_ci
from hear2act_env.evaluation.runner import load_records
from hear2act_env.evaluation.stats import Estimate, bootstrap, paired_difference

#: The turn costs of the sweep on bank version 2 (docs/results/rl.md); version 1 also had 0, 0.02, 0.1.
COSTS = (0.05, 0.2)
ACCESSES = ("T", "A+T", "T+S")
#: A PPO agent's arm: its access condition, and "A+T learned" for a learned audio encoder.
LEARNED = "A+T learned"
ARMS = ("T", "A+T", LEARNED, "T+S")
REALIZATIONS = ("prosody", "explicit")
BASELINES = {"prober": "T", "state-aware": "T+S"}  # rule agent -> the condition it is shown in
METRICS = (M.SUCCESS, M.ACCEPT, M.FULLFIT, M.RETURN, M.ACTIONS)
PAIRS = (
    ("T", "A+T"),
    ("T", "T+S"),
    ("A+T", "T+S"),
    ("T", LEARNED),
    ("A+T", LEARNED),
    (LEARNED, "T+S"),
)


def run_config(run: Path) -> dict[str, Any]:
    """A run folder's ``config`` with its env's access, realization, turn cost and scenario file
    at the top, the view this report reads (either ``config.json`` layout)."""
    from hear2act_agents.rl.policy import read_run_config, run_env

    config = read_run_config(run / "config.json")["config"]
    env = run_env(config)
    return {
        **config,
        "access": env.access,
        "realization": env.realization,
        "turn_cost": env.turn_cost,
        "scenarios": env.scenarios,
    }


def arm_of(config: dict[str, Any]) -> str:
    """The arm of a run's ``config`` (``TrainConfig`` fields)."""
    if config.get("audio_encoder", "features") == "learned":
        return f"{config['access']} learned"
    return str(config["access"])


def finished_runs(root: Path) -> list[Path]:
    """Run folders with a saved model, sorted."""
    return sorted(p.parent for p in root.glob("*/model.zip"))


# -- report ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Cell:
    """One agent in one (realization, turn cost)."""

    realization: str
    cost: float
    agent: str  # "PPO(T)", "prober (T)", ...
    access: str


def load_sweep(root: Path) -> dict[Cell, list[EpisodeRecord]]:
    """Every evaluation record of the sweep, by cell."""
    configs: dict[str, dict[str, Any]] = {}
    for run in finished_runs(root):
        configs[f"ppo:{run}"] = run_config(run)
    cells: dict[Cell, list[EpisodeRecord]] = defaultdict(list)
    for path in sorted((root / "eval").glob("*.jsonl")):
        manifest = json.loads(path.with_suffix(".manifest.json").read_text())
        cost = EnvConfig.from_stored(manifest["config"]).turn_cost
        for r in load_records(path):
            if r.key.agent.startswith("ppo:"):
                config = configs.get(r.key.agent)
                label = f"PPO({arm_of(config) if config else r.key.access})"
            elif BASELINES.get(r.key.agent) == r.key.access:
                label = f"{r.key.agent} ({r.key.access})"
            else:
                continue
            cells[Cell(r.key.realization, cost, label, r.key.access)].append(r)
    return dict(cells)


def _seed_of(agent: str) -> str:
    """The training seed of a PPO agent spec (``...-s<seed>``), else ``-``."""
    tail = agent.rstrip("/").rsplit("-s", 1)
    return f"s{tail[1]}" if agent.startswith("ppo:") and len(tail) == 2 else "-"


def _anonymous(records: list[EpisodeRecord]) -> list[EpisodeRecord]:
    """Records keyed by training seed instead of agent name, so the runs of two access
    conditions pair by (seed, realization, scenario, run)."""
    return [
        dataclasses.replace(r, key=dataclasses.replace(r.key, agent=_seed_of(r.key.agent)))
        for r in records
    ]


def summarize(cells: dict[Cell, list[EpisodeRecord]]) -> dict[Cell, dict[str, Estimate]]:
    """Bootstrap estimates of ``METRICS`` per cell."""
    return {cell: {m.name: bootstrap(recs, m) for m in METRICS} for cell, recs in cells.items()}


def differences(
    cells: dict[Cell, list[EpisodeRecord]],
) -> dict[tuple[str, float, str, str], dict[str, Estimate]]:
    """Paired differences PPO(b) - PPO(a) for each pair in ``PAIRS``, per realization and cost."""
    out = {}
    by = {(c.realization, c.cost, c.agent): recs for c, recs in cells.items()}
    for realization, cost in sorted({(c.realization, c.cost) for c in cells}):
        for a, b in PAIRS:
            ra, rb = (
                by.get((realization, cost, f"PPO({a})")),
                by.get((realization, cost, f"PPO({b})")),
            )
            if not ra or not rb:
                continue
            ra, rb = _anonymous(ra), _anonymous(rb)
            out[(realization, cost, a, b)] = {
                m.name: paired_difference(ra, rb, m) for m in (M.SUCCESS, M.RETURN, M.ACTIONS)
            }
    return out


def shared_seeds(
    cells: dict[Cell, list[EpisodeRecord]], realization: str, cost: float, a: str, b: str
) -> int:
    """How many training seeds PPO(a) and PPO(b) share in one cell (the pairs compared)."""
    by = {(c.realization, c.cost, c.agent): recs for c, recs in cells.items()}
    seeds = [
        {_seed_of(r.key.agent) for r in by.get((realization, cost, f"PPO({x})"), [])}
        for x in (a, b)
    ]
    return len(seeds[0] & seeds[1])


def headline_table(
    summary: dict[Cell, dict[str, Estimate]],
    diffs: dict[tuple[str, float, str, str], dict[str, Estimate]],
) -> str:
    """The headline table (docs/results/rl.md): mean actions per PPO agent and the paired gains of the voice."""
    lines = [
        "| realization | turn cost | mean actions PPO(T) | PPO(A+T) | PPO(T+S) "
        "| A+T - T: actions | A+T - T: return | T+S - A+T: return |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    by = {(c.realization, c.cost, c.agent): v for c, v in summary.items()}
    keys = sorted(
        {(c.realization, c.cost) for c in summary}, key=lambda k: (REALIZATIONS.index(k[0]), k[1])
    )
    for realization, cost in keys:
        acts = [by.get((realization, cost, f"PPO({a})")) for a in ACCESSES]
        d_at = diffs.get((realization, cost, "T", "A+T"))
        d_ts = diffs.get((realization, cost, "A+T", "T+S"))
        cols = [_fmt(v["actions"], 2) if v else "-" for v in acts]
        cols += [
            _fmt(d_at["actions"], 2) if d_at else "-",
            _fmt(d_at["mean_return"], 3) if d_at else "-",
        ]
        cols += [_fmt(d_ts["mean_return"], 3) if d_ts else "-"]
        lines.append(f"| {realization} | {cost:g} | " + " | ".join(cols) + " |")
    return "\n".join(lines)


def _fmt(e: Estimate, digits: int) -> str:
    if e.value != e.value:  # nan
        return "-"
    return f"{e.value:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}]"


def _order(cell: Cell) -> tuple:
    agents = [f"PPO({a})" for a in ARMS] + ["prober (T)", "state-aware (T+S)"]
    rank = agents.index(cell.agent) if cell.agent in agents else len(agents)
    return (REALIZATIONS.index(cell.realization), cell.cost, rank)


def markdown(
    summary: dict[Cell, dict[str, Estimate]],
    diffs: dict[tuple[str, float, str, str], dict[str, Estimate]],
    cells: dict[Cell, list[EpisodeRecord]],
) -> str:
    """The results tables of docs/results/rl.md."""
    lines = [
        "| realization | turn cost | agent | seeds | episodes | Success % | Accept % | FullFit % "
        "| mean return | mean actions |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cell in sorted(summary, key=_order):
        v = summary[cell]
        lines.append(
            f"| {cell.realization} | {cell.cost:g} | {cell.agent} | "
            f"{len({r.key.agent for r in cells[cell]}) if cell.agent.startswith('PPO') else '-'} | "
            f"{len(cells[cell])} | "
            f"{_fmt(v['success'], 1)} | {_fmt(v['accept'], 1)} | {_fmt(v['fullfit'], 1)} | "
            f"{_fmt(v['mean_return'], 3)} | {_fmt(v['actions'], 2)} |"
        )
    lines += [
        "",
        "Paired differences (second minus first, same scenarios, seeds and runs; 95% CI):",
        "",
        "| realization | turn cost | difference | seeds paired | Success (pp) | mean return "
        "| mean actions |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (realization, cost, a, b), v in sorted(
        diffs.items(),
        key=lambda kv: (REALIZATIONS.index(kv[0][0]), kv[0][1], PAIRS.index(kv[0][2:])),
    ):
        lines.append(
            f"| {realization} | {cost:g} | PPO({b}) - PPO({a}) | "
            f"{shared_seeds(cells, realization, cost, a, b)} | {_fmt(v['success'], 1)} | "
            f"{_fmt(v['mean_return'], 3)} | {_fmt(v['actions'], 2)} |"
        )
    return "\n".join(lines)


def training_table(root: Path) -> str:
    """Budget and wall time of every run."""
    lines = [
        "| run | algorithm | timesteps | envs | wall time (min) | steps/s | final greedy return (test, 100 ep.) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in finished_runs(root):
        c = json.loads((run / "config.json").read_text())
        fe = c.get("final_eval") or {}
        lines.append(
            f"| {run.name} | {c['algorithm']} | {c['timesteps_done']:,} | {c['n_envs']} ({c['vec']}) "
            f"| {c['wall_s'] / 60:.1f} | {c['timesteps_done'] / c['wall_s']:.0f} | "
            f"{fe.get('eval_return', float('nan')):+.3f} |"
        )
    return "\n".join(lines)


def plot_return_vs_cost(
    summary: dict[Cell, dict[str, Estimate]],
    path: Path,
    diffs: dict[tuple[str, float, str, str], dict[str, Estimate]] | None = None,
) -> Path:
    """Mean return, mean actions and (with ``diffs``) the paired return gain over PPO(T)
    against the turn cost (rows), per realization (columns)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    realizations = [r for r in REALIZATIONS if any(c.realization == r for c in summary)]
    rows = 3 if diffs else 2
    fig, axes = plt.subplots(
        rows,
        len(realizations),
        figsize=(6 * len(realizations), 3.4 * rows),
        squeeze=False,
        sharex=True,
    )
    style = {
        "PPO(T)": ("tab:blue", "-", "o"),
        "PPO(A+T)": ("tab:green", "-", "s"),
        f"PPO({LEARNED})": ("tab:purple", "-", "D"),
        "PPO(T+S)": ("tab:red", "-", "^"),
        "prober (T)": ("tab:blue", ":", None),
        "state-aware (T+S)": ("tab:red", ":", None),
    }
    for j, realization in enumerate(realizations):
        for i, metric in enumerate(("mean_return", "actions")):
            ax = axes[i][j]
            for agent, (color, ls, marker) in style.items():
                pts = sorted(
                    (c.cost, v[metric])
                    for c, v in summary.items()
                    if c.realization == realization and c.agent == agent
                )
                if not pts:
                    continue
                errorbar_ci(ax, pts, color=color, ls=ls, marker=marker, label=agent)
            ax.set_title(f"{realization}: {'mean return' if i == 0 else 'mean actions'}")
            ax.grid(alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=8)
        if diffs:
            ax = axes[2][j]
            for other, color, marker in (
                ("A+T", "tab:green", "s"),
                (LEARNED, "tab:purple", "D"),
                ("T+S", "tab:red", "^"),
            ):
                pts = sorted(
                    (cost, v["mean_return"])
                    for (r, cost, a, b), v in diffs.items()
                    if r == realization and a == "T" and b == other
                )
                if not pts:
                    continue
                errorbar_ci(ax, pts, color=color, marker=marker, label=f"PPO({other}) - PPO(T)")
            ax.axhline(0.0, color="k", lw=0.8)
            ax.set_title(f"{realization}: return gain over PPO(T) (paired)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        axes[-1][j].set_xlabel("turn cost")
    fig.suptitle("Test split, 95% scenario-bootstrap CIs")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_learning_curves(root: Path, path: Path, extra: Sequence[Path] = ()) -> Path:
    """Greedy test-split return (fixed episodes) against training steps, per run.

    Solid: trained from scratch; dashed: warm-started (``init_from``; its steps count from the
    warm start); dotted: runs from the ``extra`` folders (e.g. from-scratch ablations).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = finished_runs(root) + [r for folder in extra for r in finished_runs(folder)]
    extra_runs = set(runs[len(finished_runs(root)) :])
    configs = {run: run_config(run) for run in runs}
    realizations = [r for r in REALIZATIONS if any(c["realization"] == r for c in configs.values())]
    costs = sorted({float(c["turn_cost"]) for c in configs.values()})
    fig, axes = plt.subplots(
        len(realizations),
        len(costs),
        figsize=(3.6 * len(costs), 3.2 * len(realizations)),
        squeeze=False,
        sharey=True,
    )
    colors = {"T": "tab:blue", "A+T": "tab:green", LEARNED: "tab:purple", "T+S": "tab:red"}
    for run, c in configs.items():
        ax = axes[realizations.index(c["realization"])][costs.index(float(c["turn_cost"]))]
        with (run / "progress.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        xs = [int(r["timesteps"]) for r in rows if r.get("eval_return")]
        ys = [float(r["eval_return"]) for r in rows if r.get("eval_return")]
        arm = arm_of(c)
        if run in extra_runs:
            style, label = ":", f"PPO({arm}) from scratch (ablation)"
        elif c.get("init_from"):
            style, label = "--", f"PPO({arm}) warm-started"
        else:
            style, label = "-", f"PPO({arm})"
        alpha = 1.0 if int(c["seed"]) == 0 else 0.45
        ax.plot(xs, ys, color=colors.get(arm), ls=style, alpha=alpha, label=label)
        ax.set_title(f"{c['realization']}, turn cost {float(c['turn_cost']):g}", fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("training steps")
    for row in axes:
        row[0].set_ylabel("greedy return (test)")
    handles = {}
    for row in axes:
        for ax in row:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
    # a legend row under the panels per 3 entries, kept inside the saved image
    ncol = min(len(handles), 3)
    legend_rows = -(-len(handles) // max(ncol, 1))
    fig.legend(
        handles.values(), handles.keys(), loc="lower center", ncol=ncol, fontsize=8, frameon=False
    )
    fig.tight_layout(rect=(0, 0.06 + 0.055 * legend_rows, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return path


def decision_rates(run: Path, split: str = "test", runs: int = 2) -> dict[str, float]:
    """How a trained agent answers an accepting reply to its own recommendation.

    Plays every ``split`` scenario ``runs`` times (the runner's episode seeds) and looks at each
    agent decision that directly follows a RECOMMEND whose reply was an acceptance (the words
    say yes): the share answered by an immediate CONFIRM, separately for replies whose true
    state was resolved and unresolved (reluctant or concern). A transcript-only agent cannot
    tell them apart; one that hears or sees the state can.
    """
    from hear2act_agents.rl.envs import base_env
    from hear2act_agents.rl.policy import load_policy, read_run_config, run_env
    from hear2act_env.evaluation.records import EpisodeKey
    from hear2act_env.evaluation.rollout import wrap_for

    config = run_config(run)
    env = base_env(run_env(read_run_config(run / "config.json")["config"]).replace(split=split))
    policy = load_policy(run)
    env = wrap_for(env, policy)
    counts = {"resolved": [0, 0], "unresolved": [0, 0]}
    for scenario in [s.id for s in env.unwrapped.scenarios]:
        for r in range(runs):
            key = EpisodeKey("-", config["realization"], config["access"], "correct", scenario, r)
            obs, info = env.reset(seed=key.seed, options={"scenario": scenario})
            policy.reset(obs, seed=key.seed)
            done = False
            while not done:
                action = policy.act(obs)
                turn = info["last_turn"]
                if turn["act"] == "recommend" and info["truth"]["reply"] == "accept":
                    group = "resolved" if info["truth"]["state"] == "resolved" else "unresolved"
                    counts[group][0] += int(action[0]) == 3
                    counts[group][1] += 1
                obs, _, terminated, truncated, info = env.step(action)
                done = terminated or truncated
    return {
        f"confirm_after_accept_{g}": (c[0] / c[1] if c[1] else float("nan"))
        for g, c in counts.items()
    } | {f"n_{g}": float(c[1]) for g, c in counts.items()}


def decision_table(root: Path, split: str = "test", runs: int = 2) -> str:
    """``decision_rates`` of every finished run, pooled over seeds, as Markdown."""
    pooled: dict[tuple[str, str, float], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    seeds: dict[tuple[str, str, float], list[int]] = defaultdict(list)
    for run in finished_runs(root):
        c = run_config(run)
        key = (c["realization"], arm_of(c), float(c["turn_cost"]))
        d = decision_rates(run, split, runs)
        seeds[key].append(int(c["seed"]))
        for g in ("resolved", "unresolved"):
            n = d[f"n_{g}"]
            pooled[key][f"n_{g}"] += n
            if n:
                pooled[key][f"c_{g}"] += n * d[f"confirm_after_accept_{g}"]

    def pct(p: dict[str, float], g: str) -> str:
        return f"{100 * p[f'c_{g}'] / p[f'n_{g}']:.1f}%" if p[f"n_{g}"] else "-"

    lines = [
        "| realization | turn cost | agent | seeds | accepting replies (resolved / unresolved) "
        "| immediate CONFIRM if resolved | immediate CONFIRM if unresolved |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    order = {a: i for i, a in enumerate(ARMS)}
    for key in sorted(pooled, key=lambda k: (REALIZATIONS.index(k[0]), k[2], order.get(k[1], 9))):
        p = pooled[key]
        lines.append(
            f"| {key[0]} | {key[2]:g} | PPO({key[1]}) | {len(seeds[key])} | "
            f"{p['n_resolved']:.0f} / {p['n_unresolved']:.0f} | {pct(p, 'resolved')} | "
            f"{pct(p, 'unresolved')} |"
        )
    return "\n".join(lines)


def report_sweep(root: Path, img: Path, ablation: Sequence[Path] = ()) -> str:
    """Markdown tables and the two plots (``ablation``: more run folders for the curves)."""
    cells = load_sweep(root)
    summary = summarize(cells)
    diffs = differences(cells)
    text = "Headline (README):\n\n" + headline_table(summary, diffs) + "\n\n"
    text += markdown(summary, diffs, cells)
    text += "\n\nTraining runs (wall time on this machine):\n\n" + training_table(root)
    text += (
        "\n\nWhat the agent does right after an accepting reply to its own recommendation "
        "(test split, 2 runs per scenario):\n\n" + decision_table(root)
    )
    plot_return_vs_cost(summary, img / "rl_return_vs_turn_cost.png", diffs)
    plot_learning_curves(root, img / "rl_learning_curves.png", ablation)
    (root / "report.md").write_text(text + "\n", encoding="utf-8")
    return text
