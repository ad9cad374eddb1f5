"""Episode keys and records: everything the metrics (docs/protocol.md#metrics) need, as JSON
lines."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from hear2act_env import jsonsafe
from hear2act_env.conditions import Condition
from hear2act_env.evaluation.rollout import Rollout


@functools.lru_cache(maxsize=65536)
def _seed(scenario: str, realization: str, run: int) -> int:
    digest = hashlib.sha256(f"{scenario}|{realization}|{run}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


#: Why an episode has no result: its model could not be reached (``infrastructure``), the run was
#: misconfigured (``config``), or the agent's own code failed (``agent``).
ErrorKind = Literal["infrastructure", "config", "agent"]
ERROR_KINDS: tuple[str, ...] = get_args(ErrorKind)


@dataclass(frozen=True, order=True)
class EpisodeKey:
    """Identifies one episode of the grid; ``seed`` follows from (scenario, realization, run)."""

    agent: str
    realization: str
    access: str
    fidelity: str
    scenario: str
    run: int

    @property
    def seed(self) -> int:
        """The env seed: the same for every agent and condition of a (scenario, realization, run),
        so paired rollouts share their opening."""
        return _seed(self.scenario, self.realization, self.run)

    @property
    def condition(self) -> str:
        """The condition's label, e.g. ``T+S``, ``T+S/shuffled`` or ``A+T/inferred``."""
        return self.access if self.fidelity == "correct" else f"{self.access}/{self.fidelity}"

    def as_condition(self) -> Condition:
        """The condition as a value (``access`` and ``fidelity`` are its stored form)."""
        return Condition.of(self.access, self.fidelity)

    def id(self) -> str:
        """A compact unique string for resuming."""
        return f"{self.agent}|{self.realization}|{self.access}|{self.fidelity}|{self.scenario}|{self.run}"


@dataclass
class EpisodeRecord:
    """One finished (or failed) episode."""

    key: EpisodeKey
    seed: int
    success: bool = False
    final_option: int | None = None
    best: int | None = None
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    actions: int = 0
    counts: dict[str, int] = field(default_factory=dict)  # ask_targeted, ask_open, clarify, ...
    recommend_patterns: list[str] = field(default_factory=list)  # agent recommendations only
    #: The agent's actions in order, (act, option, topic) each (act -1: invalid): with the seed,
    #: enough to replay the episode (``hear2act view``). Empty in records written before 0.2.
    steps: list[list[int]] = field(default_factory=list)
    revealed: list[str] = field(default_factory=list)
    premature_closure: bool = False
    reluctant_turns: int = 0  # user turns in state "reluctant" that the agent answered
    confirm_after_reluctant: int = 0  # of those, answered by an immediate CONFIRM
    privileged: bool = False  # the oracle: given ground truth
    agent_stats: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    error_kind: ErrorKind | None = None  # set with ``error``

    def to_json(self) -> str:
        """One JSON line (fields in sorted order: byte-identical for identical records)."""
        data = {name: getattr(self, name) for name in _RECORD_FIELDS}
        key = self.key
        data["key"] = {name: getattr(key, name) for name in _KEY_FIELDS}
        return _ENCODER.encode(data)

    @classmethod
    def from_json(cls, line: str) -> EpisodeRecord:
        """Parse a line written by ``to_json``; any other line (including one nested too
        deeply, ``jsonsafe.JSONDepthError``) is a ``ValueError`` or ``TypeError``."""
        data = jsonsafe.loads(line)
        if not isinstance(data, dict) or not isinstance(data.get("key"), dict):
            raise ValueError("a record is a JSON object with a 'key' object")
        data["key"] = EpisodeKey(**data["key"])
        record = cls(**data)
        for name, kinds in _FIELD_TYPES.items():
            value = getattr(record, name)
            if not isinstance(value, kinds) or (bool in kinds) != isinstance(value, bool):
                raise ValueError(f"field {name}: got {value!r}")
        for step in record.steps:
            if not (
                isinstance(step, list)
                and len(step) == 3
                and all(isinstance(v, int) and not isinstance(v, bool) for v in step)
            ):
                raise ValueError(f"field steps: got {step!r}, expected [act, option, topic]")
        if record.error_kind not in (None, *ERROR_KINDS):
            raise ValueError(f"field error_kind: got {record.error_kind!r}")
        return record


_RECORD_FIELDS = tuple(sorted(f.name for f in fields(EpisodeRecord)))
#: Types a loaded record's fields must have (a corrupt or hand-edited line is refused).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "success": (bool,),
    "terminated": (bool,),
    "truncated": (bool,),
    "premature_closure": (bool,),
    "privileged": (bool,),
    "actions": (int,),
    "reluctant_turns": (int,),
    "confirm_after_reluctant": (int,),
    "reward": (int, float),
    "seed": (int,),
    "counts": (dict,),
    "recommend_patterns": (list,),
    "steps": (list,),
    "revealed": (list,),
    "agent_stats": (dict,),
    "error": (str, type(None)),
}
_KEY_FIELDS = tuple(sorted(f.name for f in fields(EpisodeKey)))
_ENCODER = json.JSONEncoder(separators=(",", ":"), sort_keys=True)


def record_from_parts(
    key: EpisodeKey, parts: dict[str, Any], privileged: bool, agent_stats: dict[str, Any]
) -> EpisodeRecord:
    """A record from an episode's metric parts (``EpisodeTally.parts()``, the wrapper's
    ``info["hear2act"]``)."""
    return EpisodeRecord(
        key=key,
        seed=key.seed,
        success=parts["success"],
        final_option=parts["final_option"],
        best=parts["best"],
        reward=parts["reward"],
        terminated=parts["terminated"],
        truncated=parts["truncated"],
        actions=parts["actions"],
        counts=dict(parts["counts"]),
        recommend_patterns=list(parts["recommend_patterns"]),
        steps=[list(step) for step in parts.get("steps", ())],
        revealed=list(parts["revealed"]),
        premature_closure=parts["premature_closure"],
        reluctant_turns=parts["reluctant_turns"],
        confirm_after_reluctant=parts["confirm_after_reluctant"],
        privileged=privileged,
        agent_stats=dict(agent_stats),
    )


def record_from_rollout(
    key: EpisodeKey, rollout: Rollout, privileged: bool, agent_stats: dict[str, Any]
) -> EpisodeRecord:
    """A finished rollout's record (its tally's metric parts)."""
    return record_from_parts(key, rollout.tally.parts(), privileged, agent_stats)
