"""Evaluate trained RL policies through the evaluation runner (``hear2act rl-eval``)."""

from __future__ import annotations

from pathlib import Path

from hear2act_agents.registry import make_agent
from hear2act_agents.rl.policy import RL_PREFIXES, read_run_config, resolve_run, run_env
from hear2act_env.conditions import Access, Condition
from hear2act_env.config import EnvConfig
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.records import EpisodeRecord
from hear2act_env.evaluation.runner import Backend, GridConfig, run_grid

__all__ = ["evaluate_models", "training_scenarios"]

#: The access conditions the rule baselines are shown in beside the models.
BASELINE_ACCESS = ("T", "T+S")


def _model_path(model: str) -> str:
    """A model argument without its agent-spec prefix (``ppo:x`` -> ``x``)."""
    prefix, sep, rest = model.partition(":")
    return rest if sep and prefix in RL_PREFIXES else model


def _grid(
    agents: tuple[str, ...],
    realization: str,
    access: str,
    cost: float,
    split: str,
    runs: int,
    scenario_file: str | None,
    path: Path,
    backend: Backend,
    workers: int,
    progress: bool,
) -> list[EpisodeRecord]:
    env = EnvConfig(split=split, scenarios=scenario_file, turn_cost=cost)  # type: ignore[arg-type]
    if Access.parse(access).audio:
        env = env.replace(audio_cache=False)
    config = GridConfig(
        agents=agents,
        realizations=(realization,),
        conditions=(Condition.of(access),),
        runs=runs,
        env=env,
    )
    return run_grid(config, path, make_agent, backend=backend, workers=workers, progress=progress)


def evaluate_models(
    models: list[str],
    out: str | Path,
    split: str = "test",
    runs: int = 1,
    realizations: list[str] | None = None,
    access: list[str] | None = None,
    turn_cost: float | None = None,
    scenario_file: str | None = None,
    baselines: tuple[str, ...] = (),
    backend: Backend = "serial",
    workers: int = 1,
    progress: bool = True,
) -> list[EpisodeRecord]:
    """Play each model through ``run_grid``, by default in its own realization, access and
    turn cost; with ``baselines``, also those rule agents in T and T+S at each model's
    (realization, turn cost).

    Each model's episodes go to ``out/<run folder name>.jsonl`` and each baseline cell to
    ``out/baselines-<realization>-<access>-c<cost>.jsonl`` (resumable); returns every record.
    """
    out = Path(out)
    records: list[EpisodeRecord] = []
    cells: set[tuple[str, float, str | None]] = set()
    common = {"split": split, "runs": runs, "backend": backend, "workers": workers}
    for m in models:  # an unusable model stops here, not as an error in each of its episodes
        make_agent(f"ppo:{_model_path(m)}")
    for m in models:
        path = _model_path(m)
        model_path, config_path = resolve_run(path)
        trained = run_env(read_run_config(config_path)["config"])
        cost = float(trained.turn_cost if turn_cost is None else turn_cost)
        scen = scenario_file if scenario_file is not None else training_scenarios(config_path)
        for r in realizations or [trained.realization]:
            for a in access or [trained.access]:
                name = model_path.parent.name
                if realizations or access or turn_cost is not None:
                    name += f"@{r}-{a}-c{cost:g}"
                records += _grid(
                    (f"ppo:{path}",), r, a, cost, scenario_file=scen,
                    path=out / f"{name}.jsonl", progress=progress, **common,
                )  # fmt: skip
                cells.add((r, cost, scen))
    for r, cost, scen in sorted(cells, key=str) if baselines else ():
        for a in BASELINE_ACCESS:
            records += _grid(
                tuple(baselines), r, a, cost, scenario_file=scen,
                path=out / f"baselines-{r}-{a}-c{cost:g}.jsonl", progress=progress, **common,
            )  # fmt: skip
    return records


def training_scenarios(config_path: Path) -> str | None:
    """The scenario file a run was trained on, for evaluating it: None (the packaged bank)
    when the run's recorded checksum is the packaged bank's (wherever its copy was), else the
    recorded path, which must exist."""
    from hear2act_env.scenarios.bank import bank_checksum

    saved = read_run_config(config_path)
    path = run_env(saved["config"]).scenarios
    if path is None or saved.get("scenarios_sha256") == bank_checksum():
        return None
    if Path(path).is_file():
        return path
    raise ConfigError(
        f"{config_path}: the run was trained on {path!r}, which is not here and is not the "
        "packaged bank; pass --scenario-file with that file"
    )
