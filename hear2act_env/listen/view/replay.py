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

Results folders are shared, so a manifest is data, never code: ``RunSettings`` keeps only the
env settings it can check, a renderer only by a shipped name, and files only to read; the
renderer and the audio cache of anything else come from the viewer's own command line.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hear2act_env import jsonsafe
from hear2act_env.boundedio import UnreadableFile, read_regular_fd
from hear2act_env.conditions import SPLIT_CHOICES, Condition
from hear2act_env.config import EnvConfig, stored_settings
from hear2act_env.errors import ConfigError, Hear2ActError
from hear2act_env.evaluation.records import EpisodeRecord
from hear2act_env.protocol.delivery import State
from hear2act_env.protocol.scenario import Scenario

__all__ = [
    "REPLAYED_SETTINGS",
    "OptionTruth",
    "Replay",
    "ReplayError",
    "ReplayTurn",
    "RunSettings",
    "read_regular",
    "replay_episode",
]

_STATE_NAMES = {0: "withheld", **{int(s): s.name.lower() for s in State}}


class ReplayError(Hear2ActError):
    """A record that cannot be replayed (no action trace, or a replay that differs from it)."""


#: The most a viewer reads of a manifest, a scenario file or a perceiver model (bytes).
MAX_MANIFEST_BYTES = 1 << 20
MAX_SIDE_FILE_BYTES = 64 << 20

#: Why a manifest setting keeps its episodes from being replayed: one the viewer's own command
#: line can replace (``renderer``, ``audio_cache``), one that only the voice-inferred conditions
#: use (``perceiver``), or one nothing lifts (``other``).
RefusalKind = Literal["renderer", "audio_cache", "perceiver", "other"]


#: Env settings a manifest may carry into a replay, checked by ``EnvConfig``'s own rules.
#: Anything else (``audio_cache``, ``scenarios``, ``access``, an unknown name) is refused;
#: ``renderer`` is taken only as a shipped renderer's name (``speech.renderers.RENDERERS``).
REPLAYED_SETTINGS = frozenset(
    {"allow_clarify", "turn_cost", "max_actions", "prosody_strength", "max_audio_seconds"}
)


#: Settings a replay takes from its record (the grid leaves them at their defaults), and ones
#: a grid leaves unset.
_CELL_SETTINGS = frozenset({"realization", "access", "state_fidelity"})
_UNSET_SETTINGS = frozenset({"scenario", "render_mode"})


def read_regular(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file at ``path`` if it holds at most ``limit`` (a ``ValueError``
    otherwise, an ``OSError`` when it cannot be opened). A FIFO, a device or a socket is never
    read: the file is opened without blocking and checked before any read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        return read_regular_fd(fd, limit)
    except UnreadableFile as exc:
        raise ValueError(f"{path} is {exc}") from None
    finally:
        os.close(fd)


def _short(value: Any, width: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _side_file(raw: Any, base: Path, field: str, suffixes: tuple[str, ...]) -> str:
    """A file a manifest names, to read only: relative paths are taken from ``base`` (the
    results file's folder), and it must be a regular file with one of ``suffixes``."""
    if not isinstance(raw, str) or not raw or "\0" in raw or len(raw) > 4096:
        raise ValueError(f"{field}: got {_short(raw)}, expected a path to a file")
    path = Path(raw)
    path = path if path.is_absolute() else base / path
    if path.suffix.lower() not in suffixes:
        raise ValueError(
            f"{field}: got {_short(raw)}, expected a {' or '.join(suffixes)} file; the viewer "
            "reads no other file a manifest names"
        )
    try:
        info = path.stat()
    except OSError as exc:
        raise ValueError(
            f"{field}: {path} (from {_short(raw)}, taken from the results' folder) cannot be "
            f"read ({type(exc).__name__})"
        ) from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SIDE_FILE_BYTES:
        raise ValueError(
            f"{field}: {path} is not a regular file of at most {MAX_SIDE_FILE_BYTES} bytes"
        )
    return str(path.absolute())


@dataclass(frozen=True)
class RunSettings:
    """What a results file's manifest says about the env its episodes ran in, checked.

    A manifest comes with results from anywhere, so nothing in it is imported, executed or
    written to: ``env`` keeps only the settings of ``REPLAYED_SETTINGS``, a shipped renderer's
    name and a scenario file to read (a relative path is taken from the results file's
    folder); ``perceiver`` is a file to read too; whatever else it names lands in ``refused``,
    which keeps its episodes from being replayed (``replay_episode`` says why). Manifests
    written before ``EnvConfig`` load through its compatibility reader
    (``hear2act_env.config.stored_settings``).
    """

    env: EnvConfig = EnvConfig()
    perceiver: str | None = None  # a reference perceiver model file (None: the shipped one)
    refused: tuple[tuple[RefusalKind, str], ...] = ()

    @property
    def split(self) -> str:
        """The split of the run."""
        return self.env.split

    @property
    def scenario_file(self) -> str | None:
        """The run's scenario file (None: the shipped bank)."""
        return self.env.scenarios if isinstance(self.env.scenarios, str) else None

    @classmethod
    def of_results(cls, results: str | Path) -> RunSettings:
        """The settings in ``results``' manifest (defaults when it has none); never raises."""
        path = Path(results).with_suffix(".manifest.json")
        try:
            path.lstat()
        except FileNotFoundError:
            return cls()
        except OSError as exc:
            return cls(refused=(("other", f"manifest {path}: unreadable ({exc})"),))
        try:
            manifest = jsonsafe.loads(read_regular(path, MAX_MANIFEST_BYTES))
            if not isinstance(manifest, dict) or not isinstance(manifest.get("config"), dict):
                raise ValueError("expected an object with a 'config' object")
        except (OSError, ValueError) as exc:
            return cls(
                refused=(
                    (
                        "other",
                        f"manifest {path}: unreadable ({type(exc).__name__}: {exc}); expected "
                        "the manifest that hear2act eval wrote beside its results",
                    ),
                )
            )
        return cls._of_config(manifest["config"], path, Path(results).parent)

    @classmethod
    def _of_config(cls, config: dict[str, Any], path: Path, base: Path) -> RunSettings:
        from hear2act_env.speech.renderers import RENDERERS, shipped_perceiver

        refused: list[tuple[RefusalKind, str]] = []
        where = f"manifest {path}"
        perceiver = config.get("perceiver")
        if perceiver is not None:
            shipped = shipped_perceiver(perceiver) if isinstance(perceiver, str) else None
            try:
                perceiver = (
                    str(shipped)
                    if shipped
                    else _side_file(perceiver, base, "perceiver", (".json",))
                )
            except ValueError as exc:
                refused.append(("perceiver", f"{where}: {exc}"))
                perceiver = None
        settings, problems = stored_settings(config)
        refused += [("other", f"{where}: {problem}") for problem in problems]
        kept: dict[str, Any] = {}
        for field_name, name, value in settings:
            if name in _CELL_SETTINGS or (name in _UNSET_SETTINGS and value is None):
                continue  # the record says these; a grid leaves them at their defaults
            if name == "renderer":
                if value is None or (isinstance(value, str) and value in RENDERERS):
                    kept[name] = value
                else:
                    refused.append(
                        (
                            "renderer",
                            f"{where}: {field_name} is {_short(value)}; the viewer makes "
                            f"only {' or '.join(RENDERERS)} on its own, never imports what a "
                            "manifest names (pass --renderer SPEC to hear2act view to replay "
                            "these episodes with a renderer you trust)",
                        )
                    )
            elif name == "audio_cache":
                if value not in (None, True, False):  # a path: the viewer never writes there
                    refused.append(
                        (
                            "audio_cache",
                            f"{where}: {field_name} is {_short(value)}; the viewer "
                            "never writes where a manifest says (pass --audio-cache DIR to "
                            "hear2act view to replay these episodes with a cache of your own)",
                        )
                    )
            elif name == "scenarios":
                if value is None:
                    continue
                try:
                    kept[name] = _side_file(value, base, field_name, (".json", ".jsonl"))
                except ValueError as exc:
                    refused.append(("other", f"{where}: {exc}"))
            elif name == "split":
                if isinstance(value, str) and value in SPLIT_CHOICES:
                    kept[name] = value
                else:
                    refused.append(
                        (
                            "other",
                            f"{where}: {field_name} {_short(value)}, expected one of "
                            f"{list(SPLIT_CHOICES)}",
                        )
                    )
            elif name in REPLAYED_SETTINGS:
                try:
                    EnvConfig().replace(**{name: value})  # the env's rules, nothing looser
                except ConfigError as exc:
                    refused.append(("other", f"{where}: {field_name} is {_short(value)} ({exc})"))
                else:
                    kept[name] = value
            else:
                refused.append(
                    (
                        "other",
                        f"{where}: {field_name} is not a setting the viewer replays (expected "
                        f"{', '.join(sorted([*REPLAYED_SETTINGS, 'renderer', 'split']))})",
                    )
                )
        return cls(env=EnvConfig().replace(**kept), perceiver=perceiver, refused=tuple(refused))

    def problem(
        self,
        condition: Condition | None = None,
        *,
        renderer: bool = False,
        audio_cache: bool = False,
    ) -> str | None:
        """Why episodes of ``condition`` cannot be replayed under these settings (None: they
        can); ``renderer``/``audio_cache``: the viewer was given its own, which lifts the
        manifest's."""
        for kind, reason in self.refused:
            if (kind == "renderer" and renderer) or (kind == "audio_cache" and audio_cache):
                continue
            if kind == "perceiver" and condition is not None and condition.perception is None:
                continue
            return reason
        return None


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


def _env(
    record: EpisodeRecord, settings: RunSettings, renderer: Any, audio_cache: str | Path | None
) -> Any:
    from hear2act_env.env import Hear2ActEnv

    condition = record.key.as_condition()
    config = settings.env.replace(
        realization=record.key.realization,
        access="A+T+S",
        state_fidelity=condition.fidelity,
        audio_cache=audio_cache,
    )
    if renderer is not None:
        config = config.replace(renderer=renderer)
    env = Hear2ActEnv(config)
    if condition.perception == "reference":
        from hear2act_env.wrappers.inferred_state import InferredState

        return InferredState(env, model_path=settings.perceiver, keep_audio=True)
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


def replay_episode(
    record: EpisodeRecord,
    settings: RunSettings | None = None,
    *,
    renderer: Any = None,
    audio_cache: str | Path | None = None,
) -> Replay:
    """Replay ``record`` (its run's env settings: ``settings``, default the defaults).

    ``renderer`` (a spec or a renderer object) and ``audio_cache`` (a folder) are the viewer's
    own, given by the person who runs it: they replace what the manifest names. Any failure (a
    refused manifest setting, an unknown scenario, a bad seed, a trace this env does not
    reproduce) is a ``ReplayError`` that names the episode.
    """
    settings = settings or RunSettings()
    try:
        name = record.key.id()
        condition = record.key.as_condition()
    except Exception as exc:  # noqa: BLE001 - a hand-edited key
        raise ReplayError(f"episode {_short(record.key)}: bad key ({exc})") from None
    if record.error is not None:
        raise ReplayError(f"episode {name} has no result ({record.error})")
    if not record.steps:
        raise ReplayError(
            f"episode {name}: its record has no action trace (written before "
            "hear2act-env 0.2); run the grid again to view it"
        )
    problem = settings.problem(
        condition, renderer=renderer is not None, audio_cache=audio_cache is not None
    )
    if problem is not None:
        raise ReplayError(f"episode {name}: not replayed: {problem}")
    try:
        return _replay(record, condition, _env(record, settings, renderer, audio_cache))
    except ReplayError:
        raise
    except Exception as exc:  # noqa: BLE001 - a record from elsewhere must not stop the viewer
        raise ReplayError(
            f"episode {name}: cannot be replayed ({type(exc).__name__}: {_short(str(exc), 300)})"
        ) from None


def _replay(record: EpisodeRecord, condition: Condition, env: Any) -> Replay:
    from hear2act_env.protocol.realizer import assistant_line, opening_line

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
            valid = not info["invalid_action"]
            line = assistant_line(scenario, act, option, topic, valid)
            turns.append(
                ReplayTurn(
                    "assistant",
                    line,
                    line,
                    action=(act, option, topic),
                    reply=info["truth"]["reply"],
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
