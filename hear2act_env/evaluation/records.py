"""Episode keys and records: everything the metrics (docs/protocol.md#metrics) need, as JSON
lines.

A record read back (``EpisodeRecord.from_json``) is checked before it becomes a figure
(``check_record``): a type or value no run writes (NaN, an infinity, a negative or implausibly
large count, a bool where a count belongs) is a ``RecordError`` naming the field, and the
loaders skip that line as corrupt, its episode counted as not run.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from hear2act_env import jsonsafe
from hear2act_env.conditions import Condition
from hear2act_env.errors import ConfigError
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
        """Parse a line written by ``to_json``. Any other line is a ``ValueError``: one nested
        too deeply (``jsonsafe.JSONDepthError``), or a ``RecordError`` naming the field whose
        name, type or value no run writes (``check_record``)."""
        data = jsonsafe.loads(line)
        if not isinstance(data, dict) or not isinstance(data.get("key"), dict):
            raise RecordError("a record is a JSON object with a 'key' object")
        _check_names("", data, _RECORD_FIELDS, ("key", "seed"))
        _check_names("key.", data["key"], _KEY_FIELDS, _KEY_FIELDS)
        data["key"] = EpisodeKey(**data["key"])
        return check_record(cls(**data))


_RECORD_FIELDS = tuple(sorted(f.name for f in fields(EpisodeRecord)))
_KEY_FIELDS = tuple(sorted(f.name for f in fields(EpisodeKey)))
_ENCODER = json.JSONEncoder(separators=(",", ":"), sort_keys=True)


class RecordError(ConfigError):
    """A results record holds a field no run writes (an unknown name, a wrong type, NaN or an
    infinity, a value out of range): the line is corrupt, and its episode counts as not run."""


#: Run indices: ``--runs K`` plays indices 0 .. K-1, and pass^k needs a few runs, not a million.
MAX_RUN = 10**6
#: Any other count of one episode (actions, turns, calls, re-asks, option indices): an episode
#: has at most ``config.MAX_ACTIONS_LIMIT`` (10,000) actions of a few calls each.
MAX_COUNT = 10**6
#: Prompt or completion tokens of one episode: a million calls of a million tokens each.
MAX_TOKENS = 10**12
#: |reward| of one episode: +1 for the best option minus ``turn_cost`` per action, far below.
MAX_ABS_REWARD = 10**12
#: Seconds an agent stat may say an episode took (a person's ``hear2act play``): a year.
MAX_SECONDS = 366 * 24 * 3600
#: |seed|: not a figure (only a replay uses it, and ``hear2act view`` names a seed it cannot
#: replay); the bound only keeps an absurd number out. The runner's seeds are 32-bit.
MAX_ABS_SEED = 2**128
#: |option| and |topic| of a step: an action is three int64 values (the env's action space).
MAX_ABS_STEP_VALUE = 2**63

#: Agent stats the reports read or the shipped agents write (``hear2act_agents.llm.policy``
#: ``STAT_KEYS``, an RL agent's ``actions``): counts of one episode (``MAX_COUNT``).
STAT_COUNTS = frozenset(
    {
        "actions",
        "api_errors",
        "cached_calls",
        "calls",
        "calls_without_usage",
        "empty_replies",
        "fallbacks",
        "format_errors",
        "invalid_options",
        "perception_errors",
        "reasks",
        "timeouts",
        "truncated",
        "truncated_replies",
        "unchecked_audio_calls",
    }
)
#: Agent stats that count tokens (``MAX_TOKENS``).
STAT_TOKENS = frozenset({"prompt_tokens", "completion_tokens"})
#: Agent stats that are durations in seconds (``MAX_SECONDS``).
STAT_SECONDS = frozenset({"seconds"})
#: The flags of a record: JSON true or false, never a number.
_FLAGS = ("success", "terminated", "truncated", "premature_closure", "privileged")
#: An agent recommendation's pattern: requirement met (r) or violated (v), then needs L1-L3.
_PATTERN = re.compile(r"[rv][01]{3}")
_NEEDS = ("L1", "L2", "L3")
#: Characters a key text may not hold: control characters (Unicode category Cc) and the line
#: and paragraph separators (a name is one line of a table or a terminal).
_BREAKS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _check_names(
    where: str, data: dict[str, Any], known: tuple[str, ...], required: tuple[str, ...]
) -> None:
    """A ``RecordError`` naming the fields of ``data`` that are not ``known``, or missing."""
    unknown = sorted(str(n) for n in set(data) - set(known))
    if unknown:
        names = ", ".join(where + n for n in unknown)
        raise RecordError(f"unknown fields: {names:.200}; expected only {', '.join(known)}")
    missing = [where + n for n in required if n not in data]
    if missing:
        raise RecordError(f"missing fields: {', '.join(missing)}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(name: str, value: Any, cap: int = MAX_COUNT) -> None:
    """A ``RecordError`` unless ``value`` is an int (not a bool) in [0, ``cap``)."""
    if not _is_int(value) or not 0 <= value < cap:
        raise RecordError(f"field {name}: got {value!r:.60}, expected an integer in [0, {cap:,})")


def _number(name: str, value: Any, low: float, high: float) -> None:
    """A ``RecordError`` unless ``value`` is a finite number (not a bool) in [low, high]."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))
        or not low <= value <= high
    ):
        raise RecordError(
            f"field {name}: got {value!r:.60}, expected a finite number in [{low:g}, {high:g}]"
        )


def _text(name: str, value: Any) -> None:
    """A ``RecordError`` unless ``value`` is non-empty one-line UTF-8 text."""
    if not isinstance(value, str) or not value:
        raise RecordError(f"field {name}: got {value!r:.60}, expected a non-empty string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RecordError(
            f"field {name}: got {value!r:.60}, expected UTF-8 text (UnicodeEncodeError: "
            f"{exc.reason})"
        ) from None
    if _BREAKS.search(value):
        raise RecordError(
            f"field {name}: got {value!r:.60}, expected text without control characters or "
            "line breaks"
        )


def _finite_everywhere(name: str, value: Any) -> None:
    """A ``RecordError`` naming the first NaN or infinity inside ``value`` (JSON values)."""
    stack = [(name, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise RecordError(f"field {where:.100}: got {item!r}, expected a finite number")
        if isinstance(item, dict):
            stack.extend((f"{where}.{k}", v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(item))


def check_record(record: EpisodeRecord) -> EpisodeRecord:
    """``record`` itself when every field has a type and a value a run writes; else a
    ``RecordError`` naming the field, the value and what was expected.

    Key texts are non-empty one-line UTF-8 (no control character), ``key.run`` an int in
    [0, ``MAX_RUN``) and the condition one ``Condition`` knows. Flags are bools (a bool is
    not a count, a number not a flag). Counts (``actions``, ``reluctant_turns``,
    ``confirm_after_reluctant``, each of ``counts``, the ``STAT_COUNTS`` agent stats) are
    ints in [0, ``MAX_COUNT``), with ``confirm_after_reluctant`` at most ``reluctant_turns``
    and the counts and recommendations at most ``actions``; token stats ints in
    [0, ``MAX_TOKENS``); ``seconds`` in [0, ``MAX_SECONDS``]; ``reward`` finite, |reward| at
    most ``MAX_ABS_REWARD``; ``seed`` an int; option indices null or ints in
    [-1, ``MAX_COUNT``); a step three ints, its act in [-1, 3]; patterns and revealed needs as
    the env writes them; and no NaN or infinity anywhere in ``agent_stats``."""
    key = record.key
    for name in ("agent", "realization", "access", "fidelity", "scenario"):
        _text(f"key.{name}", getattr(key, name))
    _count("key.run", key.run, MAX_RUN)
    try:
        key.as_condition()
    except ConfigError as exc:
        raise RecordError(f"field key.access/key.fidelity: {exc}") from None
    for name in _FLAGS:
        value = getattr(record, name)
        if not isinstance(value, bool):
            raise RecordError(f"field {name}: got {value!r:.60}, expected true or false")
    for name in ("actions", "reluctant_turns", "confirm_after_reluctant"):
        _count(name, getattr(record, name))
    if record.confirm_after_reluctant > record.reluctant_turns:
        raise RecordError(
            f"field confirm_after_reluctant: got {record.confirm_after_reluctant}, expected at "
            f"most reluctant_turns ({record.reluctant_turns})"
        )
    if not _is_int(record.seed) or not abs(record.seed) < MAX_ABS_SEED:
        raise RecordError(
            f"field seed: got {record.seed!r:.60}, expected an integer (|seed| < 2**128)"
        )
    _number("reward", record.reward, -MAX_ABS_REWARD, MAX_ABS_REWARD)
    for name in ("final_option", "best"):
        value = getattr(record, name)
        if value is not None and (not _is_int(value) or not -1 <= value < MAX_COUNT):
            raise RecordError(
                f"field {name}: got {value!r:.60}, expected null or an option index in "
                f"[-1, {MAX_COUNT:,})"
            )
    _check_counts(record)
    _check_lists(record)
    _check_agent_stats(record.agent_stats)
    _check_error(record)
    return record


def _check_counts(record: EpisodeRecord) -> None:
    if not isinstance(record.counts, dict):
        raise RecordError(f"field counts: got {record.counts!r:.60}, expected an object")
    for kind, n in record.counts.items():
        _count(f"counts.{kind:.40}", n)
    total = sum(record.counts.values())
    if total > record.actions:
        raise RecordError(
            f"field counts: {total} actions by kind, expected at most actions ({record.actions})"
        )


def _check_lists(record: EpisodeRecord) -> None:
    for name in ("recommend_patterns", "steps", "revealed"):
        value = getattr(record, name)
        if not isinstance(value, list):
            raise RecordError(f"field {name}: got {value!r:.60}, expected a list")
    for pattern in record.recommend_patterns:
        if not isinstance(pattern, str) or not _PATTERN.fullmatch(pattern):
            raise RecordError(
                f"field recommend_patterns: got {pattern!r:.60}, expected a pattern such as "
                "'r101' (r or v, then three 0/1 need bits)"
            )
    if len(record.recommend_patterns) > record.actions:
        raise RecordError(
            f"field recommend_patterns: {len(record.recommend_patterns)} recommendations, "
            f"expected at most actions ({record.actions})"
        )
    if len(record.steps) >= MAX_COUNT:
        raise RecordError(
            f"field steps: {len(record.steps)} steps, expected fewer than {MAX_COUNT:,}"
        )
    for step in record.steps:  # exact types: a bool is no int; a hot loop on long files
        if type(step) is not list or len(step) != 3 or not _is_step(*step):
            raise RecordError(
                f"field steps: got {step!r:.60}, expected [act, option, topic]: int64 "
                "integers, act in [-1, 3]"
            )
    revealed = record.revealed
    if not all(isinstance(v, str) and v in _NEEDS for v in revealed) or len(set(revealed)) < len(
        revealed
    ):
        raise RecordError(
            f"field revealed: got {revealed!r:.60}, expected distinct needs among {list(_NEEDS)}"
        )


def _is_step(act: Any, option: Any, topic: Any) -> bool:
    return (
        type(act) is int
        and type(option) is int
        and type(topic) is int
        and -1 <= act <= 3
        and -MAX_ABS_STEP_VALUE < option < MAX_ABS_STEP_VALUE
        and -MAX_ABS_STEP_VALUE < topic < MAX_ABS_STEP_VALUE
    )


def _check_agent_stats(stats: Any) -> None:
    if not isinstance(stats, dict):
        raise RecordError(f"field agent_stats: got {stats!r:.60}, expected an object")
    for name, value in stats.items():
        where = f"agent_stats.{name:.60}"
        if name in STAT_TOKENS:
            _count(where, value, MAX_TOKENS)
        elif name in STAT_COUNTS:
            _count(where, value)
        elif name in STAT_SECONDS:
            _number(where, value, 0, MAX_SECONDS)
    _finite_everywhere("agent_stats", stats)


def _check_error(record: EpisodeRecord) -> None:
    if record.error is not None:
        if not isinstance(record.error, str):
            raise RecordError(f"field error: got {record.error!r:.60}, expected null or a string")
        try:
            record.error.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RecordError(f"field error: expected UTF-8 text ({exc.reason})") from None
    if record.error_kind not in (None, *ERROR_KINDS):
        raise RecordError(
            f"field error_kind: got {record.error_kind!r:.60}, expected null or one of "
            f"{list(ERROR_KINDS)}"
        )


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
