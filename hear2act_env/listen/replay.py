"""Replay a recorded episode for people: every turn in full, what the agent could see of it, and
the audio it heard, rebuilt from the record's seed and action trace.

An episode is a function of its seed, its scenario, the env settings of its run (the results'
manifest) and the agent's actions (``EpisodeRecord.steps``): the user engine is deterministic
and the env draws its randomness only when a user turn is worded. The replay runs one env with
every channel (audio, transcript, state) and the record's state fidelity, so it draws exactly
what the original run drew whatever its access condition, then says per turn what the
condition showed. It checks the replay against the record (actions, final option, success)
and refuses to show an episode it cannot reproduce (``ReplayError``: a record from another
bank or version, or a hand-edited file).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env.conditions import Condition
from hear2act_env.errors import Hear2ActError
from hear2act_env.evaluation.records import EpisodeRecord
from hear2act_env.protocol.delivery import State
from hear2act_env.protocol.scenario import Scenario

__all__ = [
    "OptionTruth",
    "Replay",
    "ReplayError",
    "ReplayTurn",
    "RunSettings",
    "replay_episode",
]

_STATE_NAMES = {0: "withheld", **{int(s): s.name.lower() for s in State}}


class ReplayError(Hear2ActError):
    """A record that cannot be replayed (no action trace, or a replay that differs from it)."""


@dataclass(frozen=True)
class RunSettings:
    """What a results file's manifest says about the env its episodes ran in."""

    split: str = "all"
    scenario_file: str | None = None
    env_kwargs: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of_results(cls, results: str | Path) -> RunSettings:
        """The settings in ``results``' manifest (defaults when it has none)."""
        path = Path(results).with_suffix(".manifest.json")
        if not path.exists():
            return cls()
        try:
            config = json.loads(path.read_text(encoding="utf-8"))["config"]
            kwargs = config.get("env_kwargs") or {}
            if not isinstance(kwargs, dict):
                raise TypeError("env_kwargs is not an object")
            return cls(
                split=str(config.get("split", "all")),
                scenario_file=config.get("scenario_file"),
                env_kwargs=tuple(sorted(kwargs.items())),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ReplayError(
                f"manifest: {path} is unreadable ({type(exc).__name__}: {exc}); expected the "
                "manifest that hear2act eval wrote beside its results"
            ) from None


@dataclass(frozen=True)
class ReplayTurn:
    """One line of the dialogue."""

    speaker: str  # "user" or "assistant"
    text: str  # the words in full
    shown: str  # what the agent's transcript showed ("[user audio]" without text access)
    state: str | None = None  # user turns: the true state of the recommendation
    delivery: str | None = None  # user turns: the delivery label of the voice
    tag_shown: str | None = None  # user turns: the state tag the agent got (access with S)
    audio: np.ndarray | None = None  # spoken user turns (not the request), 16 kHz float32
    heard: bool = False  # whether the agent got this audio (access with A)
    action: tuple[int, int, int] | None = None  # assistant turns after the opening
    reply: str | None = None  # assistant turns: the kind of reply the action got


@dataclass(frozen=True)
class OptionTruth:
    """One option with what the agent was not told about it."""

    number: int  # 1-based, as shown
    name: str
    description: str
    role: str
    pattern: str  # requirement and needs met, e.g. "r111"


@dataclass(frozen=True)
class Replay:
    """A replayed episode."""

    record: EpisodeRecord
    scenario: Scenario
    turns: tuple[ReplayTurn, ...]
    options: tuple[OptionTruth, ...]
    final_option: int | None  # 0-based

    @property
    def condition(self) -> Condition:
        return self.record.key.as_condition()


def _env(record: EpisodeRecord, settings: RunSettings) -> Any:
    from hear2act_env.env import Hear2ActEnv

    condition = record.key.as_condition()
    kwargs = dict(settings.env_kwargs)
    env = Hear2ActEnv(
        realization=record.key.realization,  # type: ignore[arg-type]
        access="A+T+S",
        state_fidelity=condition.fidelity,
        split=settings.split,  # type: ignore[arg-type]
        scenarios=settings.scenario_file,
        **kwargs,
    )
    if condition.perception == "reference":
        from hear2act_env.wrappers.inferred_state import InferredState

        return InferredState(env, keep_audio=True)
    return env


def _shown_tag(condition: Condition, obs: dict[str, Any]) -> str | None:
    """The state tag the agent got: the env's (access with S) or the reference perceiver's
    (``/inferred``: the replay env is then wrapped in ``InferredState``)."""
    if condition.access.state or condition.perception == "reference":
        return _STATE_NAMES[int(obs["state"])]
    return None


def _user(env: Any, obs: dict[str, Any], condition: Condition) -> ReplayTurn:
    turn = env.unwrapped.last_user_turn
    audio = np.array(obs["audio"][: int(obs["audio_length"])], dtype=np.float32)
    return ReplayTurn(
        speaker="user",
        text=turn.text,
        shown=turn.text if condition.access.text else "[user audio]",
        state=turn.reply.state.name.lower(),
        delivery=turn.delivery,
        tag_shown=_shown_tag(condition, obs),
        audio=audio,
        heard=condition.access.audio,
    )


def replay_episode(record: EpisodeRecord, settings: RunSettings | None = None) -> Replay:
    """Replay ``record`` (its run's env settings: ``settings``, default the defaults)."""
    from hear2act_env.protocol.realizer import assistant_line, opening_line

    settings = settings or RunSettings()
    if record.error is not None:
        raise ReplayError(f"episode {record.key.id()} has no result ({record.error})")
    if not record.steps:
        raise ReplayError(
            f"episode {record.key.id()}: its record has no action trace (written before "
            "hear2act-env 0.2); run the grid again to view it"
        )
    condition = record.key.as_condition()
    env = _env(record, settings)
    try:
        obs, info = env.reset(seed=record.seed, options={"scenario": record.key.scenario})
        scenario: Scenario = env.unwrapped.scenario
        opening = int(info["last_turn"]["option"])
        turns = [
            ReplayTurn("user", scenario.request, scenario.request),
            ReplayTurn(
                "assistant", opening_line(scenario, opening), opening_line(scenario, opening)
            ),
        ]
        turns.append(_user(env, obs, condition))
        done = False
        for number, step in enumerate(record.steps, 1):
            if done:
                raise ReplayError(
                    f"episode {record.key.id()}: the replay ended at action {number - 1} of "
                    f"{len(record.steps)}; the record does not match this bank or version"
                )
            act, option, topic = (int(v) for v in step)
            obs, _, terminated, truncated, info = env.step(np.array([act, option, topic]))
            last = info["last_turn"]
            valid = not info["invalid_action"]
            line = assistant_line(scenario, act, option, topic, valid)
            turns.append(
                ReplayTurn(
                    "assistant", line, line, action=(act, option, topic), reply=last["reply"]
                )
            )
            done = terminated or truncated
            if not terminated:
                turns.append(_user(env, obs, condition))
        final = int(info["final_option"])
        if (
            not done
            or final != record.final_option
            or bool(info["is_success"]) != record.success
            or int(info["actions"]) != record.actions
        ):
            raise ReplayError(
                f"episode {record.key.id()}: the replay does not reproduce its record (final "
                f"option {final} vs {record.final_option}, success {info['is_success']} vs "
                f"{record.success}); the record comes from another bank, version or env setting"
            )
        truth = info["truth"]
        options = tuple(
            OptionTruth(
                number=i + 1,
                name=c.name,
                description=scenario.describe(c),
                role=c.role.value,
                pattern=truth["patterns"][i],
            )
            for i, c in enumerate(scenario.candidates)
        )
        return Replay(record, scenario, tuple(turns), options, final if final >= 0 else None)
    finally:
        env.close()
