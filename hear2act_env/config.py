"""``EnvConfig``: every setting of a Hear2Act episode as one validated, frozen value.

``gym.make(id, **kwargs)`` builds one from its keyword arguments; the runner, the manifest, RL
training, ``hear2act play``, the viewer's replay and the command line carry one, and files
store its JSON (``to_json``/``from_json``, like Gymnasium's ``EnvSpec``); ``Hear2ActEnv(config)`` makes the
env. Every rule lives here, so a setting is checked the same way wherever it comes from.

    >>> from hear2act_env.config import EnvConfig
    >>> config = EnvConfig(access="A+T", turn_cost=0.05).replace(renderer="piper")
    >>> config.speech.renderer
    'piper'
    >>> EnvConfig.from_json(config.to_json()) == config
    True
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from hear2act_env.conditions import (
    SPLIT_CHOICES,
    STATE_FIDELITY,
    Access,
    AccessName,
    SplitChoice,
    StateFidelity,
)
from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import ConfigError
from hear2act_env.protocol.engine import REALIZATIONS, Realization

if TYPE_CHECKING:
    from hear2act_env.protocol.scenario import Scenario

__all__ = [
    "DEFAULT_PROSODY_STRENGTH",
    "EnvConfig",
    "RENDER_MODES",
    "SpeechConfig",
]

#: Default ``prosody_strength`` (the calibrated strength: docs/speech.md).
DEFAULT_PROSODY_STRENGTH = 1.0
RenderMode = Literal["ansi"]
RENDER_MODES: tuple[str, ...] = ("ansi",)
#: The largest action budget (the paper's is 20).
MAX_ACTIONS_LIMIT = 10_000
#: The keys of ``SpeechConfig``: ``EnvConfig.from_kwargs`` and ``replace`` take them flat.
SPEECH_KEYS: tuple[str, ...] = ("renderer", "prosody_strength", "audio_cache", "max_audio_seconds")


def _is_number(value: Any) -> bool:
    """A real number that is not a bool (``True`` is an int in Python, never a setting here)."""
    if isinstance(value, bool | np.bool_):
        return False
    return isinstance(value, int | float | np.integer | np.floating)


def _is_int(value: Any) -> bool:
    return _is_number(value) and isinstance(value, int | np.integer)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool | np.bool_)


def _finite(value: Any) -> float | None:
    """``value`` as a finite float, or None (not a number, nan, inf, or too large for a float)."""
    if not _is_number(value):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _choice(name: str, value: Any, allowed: Sequence[str]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(f"{name}: got {value!r}, expected one of {list(allowed)}")


def _check_renderer_value(value: Any, name: str) -> None:
    if value is None:
        return
    if isinstance(value, str):
        from hear2act_env.speech.renderers import RENDERERS

        module, sep, attr = value.partition(":")
        if value not in RENDERERS and not (sep and module and attr):
            raise ConfigError(
                f"{name}: got {value!r}, expected {' or '.join(repr(n) for n in RENDERERS)}, "
                "MODULE:NAME or a renderer object"
            )
        return
    from hear2act_env.speech.utterance import check_renderer

    check_renderer(value, name, repr(getattr(value, "name", value)))


@dataclass(frozen=True)
class SpeechConfig:
    """How the user's turns are spoken (used by access conditions with audio).

    - ``renderer``: a name (``"espeak"``, ``"piper"`` for the neural voice, or
      ``"MODULE:NAME"``: ``hear2act_env.speech.renderers``), a renderer object at 16 kHz, or
      None for espeak-ng.
    - ``prosody_strength``: how far delivery labels move the voice from neutral, in [0, 2]
      (0: every label sounds the same; 1: the calibrated default).
    - ``audio_cache``: a folder for rendered clips; True or None for the default folder
      (``$HEAR2ACT_CACHE_DIR`` or ``~/.cache/hear2act-env/audio``); False for memory only.
    - ``max_audio_seconds``: length of the audio observation in seconds, in (0, 120]; longer
      turns are cut.
    """

    renderer: Any = None
    prosody_strength: float = DEFAULT_PROSODY_STRENGTH
    audio_cache: str | bool | None = None
    max_audio_seconds: float = 15.0

    def __post_init__(self) -> None:
        _check_renderer_value(self.renderer, "speech.renderer")
        ps = self.prosody_strength
        if not _is_number(ps) or not 0 <= ps <= 2:
            raise ConfigError(f"speech.prosody_strength: got {ps!r}, expected a number in [0, 2]")
        object.__setattr__(self, "prosody_strength", float(ps))
        cache = self.audio_cache
        if isinstance(cache, Path):
            object.__setattr__(self, "audio_cache", str(cache))
        elif not (cache is None or _is_bool(cache) or (isinstance(cache, str) and cache)):
            raise ConfigError(
                f"speech.audio_cache: got {cache!r}, expected a folder path, True, False or None"
            )
        elif _is_bool(cache):
            object.__setattr__(self, "audio_cache", bool(cache))
        seconds = self.max_audio_seconds
        if not _is_number(seconds) or not 0 < seconds <= 120:
            raise ConfigError(
                f"speech.max_audio_seconds: got {seconds!r}, expected a number in (0, 120]"
            )
        object.__setattr__(self, "max_audio_seconds", float(seconds))

    @property
    def max_audio_samples(self) -> int:
        """Length of the audio observation in samples at 16 kHz."""
        return int(round(self.max_audio_seconds * SAMPLE_RATE))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form. A renderer object is written as its class's ``MODULE:NAME`` (what
        reading the file back makes: that class called without arguments)."""
        renderer = self.renderer
        if renderer is not None and not isinstance(renderer, str):
            kind = type(renderer)
            renderer = f"{kind.__module__}:{kind.__qualname__}"
        return {
            "renderer": renderer,
            "prosody_strength": self.prosody_strength,
            "audio_cache": self.audio_cache,
            "max_audio_seconds": self.max_audio_seconds,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "speech") -> SpeechConfig:
        """Inverse of ``to_dict``; unknown keys are an error."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: got {data!r}, expected an object")
        unknown = sorted(set(data) - set(SPEECH_KEYS))
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {unknown}, expected some of {list(SPEECH_KEYS)}"
            )
        return cls(**dict(data))


#: The keys of ``EnvConfig`` (besides ``speech``), in the env's argument order.
ENV_KEYS: tuple[str, ...] = (
    "realization",
    "access",
    "state_fidelity",
    "allow_clarify",
    "turn_cost",
    "max_actions",
    "split",
    "scenario",
    "scenarios",
    "render_mode",
)


@dataclass(frozen=True)
class EnvConfig:
    """Every setting of a ``Hear2ActEnv``, checked once (a ``ConfigError`` names the field).

    - ``realization``: ``"prosody"`` (Prosody-mediated) or ``"explicit"`` (Explicit lexical).
    - ``access``: ``"T"``, ``"T+S"``, ``"A"``, ``"A+T"`` or ``"A+T+S"`` (or an ``Access``
      value; stored as its text form).
    - ``state_fidelity``: what the state tag shows: ``"correct"``, ``"none"``,
      ``"always_resolved"``, ``"always_unresolved"`` or ``"shuffled"``.
    - ``allow_clarify``: False for spoken assistants (CLARIFY becomes an invalid action).
    - ``turn_cost``: reward subtracted per agent action, a finite number >= 0.
    - ``max_actions``: the action budget, a positive integer (20, as in the paper).
    - ``split``: ``"train"``, ``"test"`` or ``"all"``: the scenarios episodes are drawn from.
    - ``scenario``: a scenario id to play every episode (None: drawn per episode).
    - ``scenarios``: a JSON/JSONL scenario file, or a sequence of ``Scenario`` (not writable
      to JSON); None for the shipped bank.
    - ``render_mode``: None or ``"ansi"``.
    - ``speech``: a ``SpeechConfig``; ``from_kwargs`` and ``replace`` also take its keys flat.
    """

    realization: Realization = "prosody"
    access: AccessName = "T"
    state_fidelity: StateFidelity = "correct"
    allow_clarify: bool = True
    turn_cost: float = 0.0
    max_actions: int = 20
    split: SplitChoice = "all"
    scenario: str | None = None
    scenarios: str | tuple[Scenario, ...] | None = None
    render_mode: RenderMode | None = None
    speech: SpeechConfig = field(default_factory=SpeechConfig)

    def __post_init__(self) -> None:
        _choice("realization", self.realization, REALIZATIONS)
        object.__setattr__(self, "access", str(Access.parse(self.access)))
        _choice("state_fidelity", self.state_fidelity, STATE_FIDELITY)
        if not _is_bool(self.allow_clarify):
            raise ConfigError(f"allow_clarify: got {self.allow_clarify!r}, expected True or False")
        object.__setattr__(self, "allow_clarify", bool(self.allow_clarify))
        cost = _finite(self.turn_cost)
        if cost is None or cost < 0:
            raise ConfigError(
                f"turn_cost: got {_short(self.turn_cost)}, expected a finite number >= 0"
            )
        object.__setattr__(self, "turn_cost", cost)
        if not _is_int(self.max_actions) or not 1 <= self.max_actions <= MAX_ACTIONS_LIMIT:
            raise ConfigError(
                f"max_actions: got {_short(self.max_actions)}, expected an integer in "
                f"[1, {MAX_ACTIONS_LIMIT}]"
            )
        object.__setattr__(self, "max_actions", int(self.max_actions))
        _choice("split", self.split, SPLIT_CHOICES)
        if self.scenario is not None and (not isinstance(self.scenario, str) or not self.scenario):
            raise ConfigError(f"scenario: got {self.scenario!r}, expected a scenario id or None")
        object.__setattr__(self, "scenarios", _scenarios_value(self.scenarios))
        if self.render_mode is not None:
            _choice("render_mode", self.render_mode, RENDER_MODES)
        if isinstance(self.speech, Mapping):
            object.__setattr__(self, "speech", SpeechConfig.from_dict(self.speech))
        elif not isinstance(self.speech, SpeechConfig):
            raise ConfigError(
                f"speech: got {self.speech!r}, expected a SpeechConfig or an object of its keys"
            )

    @property
    def channels(self) -> Access:
        """The access condition as an ``Access`` value."""
        return Access.parse(self.access)

    # -- building ----------------------------------------------------------------------------
    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> EnvConfig:
        """A config from ``Hear2ActEnv``/``gym.make`` keyword arguments: the keys of
        ``EnvConfig`` with the speech keys flat (``renderer=...``) or as ``speech=``."""
        return cls().replace(**kwargs)

    def replace(self, **changes: Any) -> EnvConfig:
        """A copy with ``changes`` (speech keys may be given flat), checked again."""
        allowed = (*ENV_KEYS, "speech", *SPEECH_KEYS)
        unknown = sorted(k for k in changes if k not in allowed)
        if unknown:
            raise ConfigError(
                f"env settings: unknown setting(s) {unknown}, expected some of {list(allowed)}"
            )
        speech = changes.pop("speech", self.speech)
        if isinstance(speech, Mapping):
            speech = SpeechConfig.from_dict(speech)
        elif not isinstance(speech, SpeechConfig):
            raise ConfigError(
                f"speech: got {speech!r}, expected a SpeechConfig or an object of its keys"
            )
        flat = {k: changes.pop(k) for k in SPEECH_KEYS if k in changes}
        if flat:
            speech = dataclasses.replace(speech, **flat)
        return dataclasses.replace(self, speech=speech, **changes)

    # -- files -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``from_dict`` inverts it; a renderer object is written as its
        class, ``SpeechConfig.to_dict``). A sequence of ``Scenario`` objects cannot be written:
        a ``ConfigError`` says so."""
        if self.scenarios is not None and not isinstance(self.scenarios, str):
            raise ConfigError(
                "scenarios: a sequence of Scenario objects cannot be written to JSON; save them "
                "to a scenario file (hear2act_env.scenarios.bank.save_scenarios) and pass its path"
            )
        data: dict[str, Any] = {k: getattr(self, k) for k in ENV_KEYS}
        data["speech"] = self.speech.to_dict()
        return data

    def to_json(self) -> str:
        """One line of JSON with sorted keys."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "env") -> EnvConfig:
        """The config ``to_dict`` wrote; unknown keys are an error (``where`` names the place
        in messages)."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: got {data!r}, expected an object")
        unknown = sorted(set(data) - {*ENV_KEYS, "speech"})
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {unknown}, expected some of {[*ENV_KEYS, 'speech']}"
            )
        values = dict(data)
        if "speech" in values:
            values["speech"] = SpeechConfig.from_dict(values["speech"], f"{where}.speech")
        return cls(**values)

    @classmethod
    def from_json(cls, text: str | bytes) -> EnvConfig:
        """Inverse of ``to_json``."""
        from hear2act_env.jsonsafe import loads

        try:
            data = loads(text)
        except ValueError as exc:
            raise ConfigError(f"env: not valid JSON ({exc})") from None
        return cls.from_dict(data)

    @classmethod
    def from_legacy(cls, settings: Mapping[str, Any]) -> EnvConfig:
        """The config of a file written before ``EnvConfig`` existed (manifests and RL run
        configs of version 0.1.0 stored ``split``, ``scenario_file`` or ``scenarios`` and a flat
        ``env_kwargs`` object): the compatibility loader, the one place that reads that key."""
        if not isinstance(settings, Mapping):
            raise ConfigError(f"env: got {settings!r}, expected an object")
        kwargs = settings.get("env_kwargs") or {}
        if not isinstance(kwargs, Mapping):
            raise ConfigError(f"env_kwargs: got {kwargs!r}, expected an object")
        values: dict[str, Any] = dict(kwargs)
        for key in ("split", "realization", "access", "turn_cost"):
            if key in settings and key not in values:
                values[key] = settings[key]
        source = settings.get("scenario_file", settings.get("scenarios"))
        if isinstance(source, str) and "scenarios" not in values:
            values["scenarios"] = source
        return cls.from_kwargs(**values)

    @classmethod
    def from_stored(cls, settings: Mapping[str, Any], where: str = "config") -> EnvConfig:
        """The env of a stored configuration (a manifest's ``config``, an RL run's
        ``config.json`` ``config``): its ``env`` object, or, in a file written before
        ``EnvConfig``, its flat settings (``from_legacy``)."""
        if not isinstance(settings, Mapping):
            raise ConfigError(f"{where}: got {settings!r}, expected an object")
        if "env" in settings:
            return cls.from_dict(settings["env"], f"{where}.env")
        return cls.from_legacy(settings)


def left_to_owner(env: Any, names: Sequence[str], base: EnvConfig, owner: str) -> EnvConfig:
    """``env``, checked to be an ``EnvConfig`` that leaves ``names`` as ``base`` has them: a
    grid or a training run sets those itself (``owner`` says where, in the message)."""
    if not isinstance(env, EnvConfig):
        raise ConfigError(f"env: got {type(env).__name__}, expected an EnvConfig")
    for name in names:
        if getattr(env, name) != getattr(base, name):
            raise ConfigError(
                f"env.{name}: got {getattr(env, name)!r}; {owner} sets {name} itself, so leave "
                f"it at {getattr(base, name)!r}"
            )
    return env


def stored_settings(
    settings: Mapping[str, Any],
) -> tuple[list[tuple[str, str, Any]], list[str]]:
    """The env settings of a stored configuration one by one, without checking them, for a
    reader that refuses setting by setting (the viewer): ``(where, key, value)`` with ``where``
    the setting's place in the file (``env.speech.renderer``; in a file written before
    ``EnvConfig``: ``env_kwargs.renderer``, ``scenario_file``, ``split``) and ``key`` its
    ``EnvConfig.replace`` name; plus the problems of parts that are not objects."""
    out: list[tuple[str, str, Any]] = []
    problems: list[str] = []
    if "env" in settings:
        env = settings["env"]
        if not isinstance(env, Mapping):
            return out, [f"env is {_short(env)}, expected an object"]
        for key, value in env.items():
            if key != "speech":
                out.append((f"env.{_key(key)}", str(key), value))
        speech = env.get("speech", {})
        if not isinstance(speech, Mapping):
            problems.append(f"env.speech is {_short(speech)}, expected an object")
        else:
            out += [(f"env.speech.{_key(k)}", str(k), v) for k, v in speech.items()]
        return out, problems
    if "split" in settings:
        out.append(("split", "split", settings["split"]))
    if settings.get("scenario_file") is not None:
        out.append(("scenario_file", "scenarios", settings["scenario_file"]))
    kwargs = settings.get("env_kwargs") or {}
    if not isinstance(kwargs, Mapping):
        return out, [f"env_kwargs is {_short(kwargs)}, expected an object"]
    for key, value in sorted(kwargs.items(), key=lambda kv: str(kv[0])):
        if key in _LEGACY_GRID_KEYS:  # the grid set these itself: a run could not carry them
            problems.append(f"env_kwargs.{_key(key)} is not a setting a run carries there")
        else:
            out.append((f"env_kwargs.{_key(key)}", str(key), value))
    return out, problems


#: Settings a version-0.1.0 grid passed to the env itself (next to its ``env_kwargs``).
_LEGACY_GRID_KEYS = frozenset({"realization", "access", "state_fidelity", "split", "scenarios"})


def _short(value: Any, width: int = 80) -> str:
    """``repr(value)``, cut to ``width`` characters."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _key(name: Any) -> str:
    """A stored setting's name as a message shows it (cut to 40 characters)."""
    text = str(name)
    return text if len(text) <= 40 else text[:37] + "..."


def _scenarios_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str):
        if not value:
            raise ConfigError("scenarios: got '', expected a scenario file path")
        return value
    if isinstance(value, Sequence) or hasattr(value, "__iter__"):
        from hear2act_env.protocol.scenario import Scenario

        items = tuple(value)
        if items and all(isinstance(s, Scenario) for s in items):
            return items
    raise ConfigError(
        f"scenarios: got {type(value).__name__}, expected a scenario file path, a non-empty "
        "sequence of Scenario objects or None"
    )
