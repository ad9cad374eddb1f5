"""``EvalRun``: one ``hear2act eval`` run as a typed value, built once at the command's door.

``run_config.resolve`` lays the flags over the run file (or a manifest) over the defaults; the
result becomes an ``EvalRun`` here, and everything after (the grid, the agent settings, the
output checks, the runner's arguments) reads that value, never the argparse namespace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hear2act_env.errors import ConfigError

__all__ = ["EvalRun"]

#: Fields that hold a sequence (argparse and TOML give lists; the run keeps tuples).
_SEQUENCES = ("agents", "access", "realizations", "scenarios")


@dataclass(frozen=True)
class EvalRun:
    """Every setting of an ``eval`` run (the flags of ``hear2act eval --help``, by dest)."""

    agents: tuple[str, ...]
    access: tuple[str, ...]
    realizations: tuple[str, ...]
    split: str
    runs: int
    out: str
    backend: str
    workers: int
    settings: Mapping[str, Any] = field(default_factory=dict)
    scenarios: tuple[str, ...] | None = None
    scenario_file: str | None = None
    limit: int | None = None
    base_url: str | None = None
    perceiver: str | None = None
    prompt: str | None = None
    seed: int | None = None
    response_cache: str | None = None
    prices: str | Mapping[str, Any] | None = None  # a price file, or a run file's own table
    ray_address: str | None = None
    spoken: bool = False
    no_retry_errors: bool = False
    wait: bool = False
    no_probe: bool = False
    trust_audio: bool = False
    no_plots: bool = False

    @classmethod
    def of(cls, resolved: Mapping[str, Any]) -> EvalRun:
        """The run of a resolved configuration (``run_config.resolve``); a key that is not a
        field is a ``ConfigError`` naming it (the resolver and this class disagree)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(resolved) - names)
        if unknown:
            raise ConfigError(f"eval: settings {unknown} are not part of a run")
        values = dict(resolved)
        for key in _SEQUENCES:
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        values["settings"] = dict(values.get("settings") or {})
        return cls(**values)

    def agent_settings(self) -> dict[str, object]:
        """The LLM agents' settings: ``--base-url``, ``--perceiver``, ``--response-cache``,
        ``--trust-audio``, ``--prompt`` (``prompt``), ``--seed`` (``sampling_seed``) and every ``--setting KEY=VALUE`` (typed per agent kind later)."""
        settings: dict[str, object] = {}
        if self.base_url:
            settings["base_url"] = self.base_url
        if self.perceiver:
            settings["perceiver"] = self.perceiver
        if self.response_cache:
            settings["cache_dir"] = self.response_cache
        if self.trust_audio:
            settings["trust_audio"] = True
        if self.prompt is not None:
            settings["prompt"] = self.prompt
        if self.seed is not None:
            settings["sampling_seed"] = self.seed
        settings.update(self.settings)
        return settings
