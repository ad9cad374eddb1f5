"""``hear2act eval --config FILE``: a run's flags as a file, merged with the command line.

The rule: every ``eval`` flag is a key named like the flag without its leading dashes and
with its inner dashes as underscores (``--scenario-file`` -> ``scenario_file``,
``--no-probe`` -> ``no_probe``); ``--setting KEY=VALUE`` becomes the table ``[settings]``
(its value read by ``setting_text.setting_value``), and the flags that say which episodes run
(``ENV_KEYS``: access, realizations, split, scenarios, limit, scenario file, spoken) sit in the
table ``[env]`` (at the top level in older files; a key in both is refused).
A key takes what its flag takes: a switch is ``true`` / ``false``, a flag that takes several
values is a list of strings, a number flag an integer, and flags with choices only those.

Precedence: the argparse defaults, then the file, then the flags given on the command line
(a list flag replaces the file's list; ``--setting`` overrides the file's setting of the same
key and keeps the others). ``eval`` knows which flags were typed because its parser gives
them no defaults (``SUPPRESS``); ``EvalOptions`` keeps the real ones.

A file is data: TOML (bounded read, never executed), or a manifest written by ``eval``
(``results.manifest.json``, or the folder holding it), whose ``"run"`` object is the resolved
configuration of the run that wrote it. A manifest may come from someone else, so it does not
choose where the run writes (``out`` is the manifest's folder, its ``response_cache`` is not
used), which server or Ray cluster it talks to (``base_url``, ``ray_address``, an agent whose
spec names a server, such as ``litellm:oobabooga/http://HOST:5000``) or whether a model's own
code runs (``trust_remote_code``, an RL agent's pickled model), nor which secret is sent
(``api_key_env``): those the command line gives again. ``to_toml`` writes a resolved
configuration as TOML that reads back to the same configuration.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hear2act_env.errors import ConfigError
from hear2act_env.redaction import redact_urls

__all__ = [
    "ENV_KEYS",
    "EvalOptions",
    "load_file",
    "resolve",
    "spec_server",
    "to_json",
    "to_toml",
]

#: The largest run file read (a TOML file; manifests use ``jsonsafe``'s own cap).
MAX_TOML_BYTES = 1 << 20
#: Flags of ``eval`` that are about the file itself, not the run: never keys.
FILE_FLAGS = ("config", "print_config")
#: The flags that choose the episodes (the environment's settings): a run file holds them in
#: its ``[env]`` table (older files: at the top level).
ENV_KEYS = ("access", "realizations", "split", "scenarios", "limit", "scenario_file", "spoken")
#: The manifest a results folder holds (``--config DIR`` reads it).
MANIFEST_NAME = "results.manifest.json"
#: Keys of a manifest's run that the command line has to give again (where the prompts and the
#: API key go, where jobs run); ``out`` is the manifest's folder and ``response_cache`` is not
#: taken from it (see ``_from_manifest``).
MANIFEST_ASKS = ("base_url", "ray_address")
#: Settings of a manifest's run that the command line has to give again, and why.
MANIFEST_ASKS_SETTINGS = {
    "trust_remote_code": "it runs code from the model's folder",
    "api_key_env": "it names the secret sent to the server",
}
#: Agent kinds whose model file is unpickled when loaded (stable-baselines3 zips): a manifest's
#: ``agents`` naming one has to be given again on the command line.
PICKLED_KINDS = ("ppo", "maskable-ppo")
#: A URL inside an agent spec (any scheme, any case): the spec names the server it talks to
#: (``litellm:oobabooga/http://HOST:5000``, ``litellm:huggingface/https://ENDPOINT``), so a
#: manifest's ``agents`` holding one has to be given again on the command line, as
#: ``base_url`` has.
SPEC_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True)
class EvalOptions:
    """The ``eval`` parser's options, kept before their defaults were suppressed."""

    actions: dict[str, argparse.Action]  # dest -> action, in the parser's order
    defaults: dict[str, Any]
    parser: argparse.ArgumentParser

    @classmethod
    def take(cls, parser: argparse.ArgumentParser) -> EvalOptions:
        """Record ``parser``'s option defaults, then suppress them (and ``required``), so a
        parsed namespace holds only the flags given on the command line."""
        actions: dict[str, argparse.Action] = {}
        defaults: dict[str, Any] = {}
        for action in parser._actions:  # noqa: SLF001 - argparse has no public list
            if isinstance(action, argparse._HelpAction) or action.dest in FILE_FLAGS:  # noqa: SLF001
                continue
            actions[action.dest] = action
            defaults[action.dest] = action.default
            action.default = argparse.SUPPRESS
            action.required = False
        return cls(actions, defaults, parser)

    def flag(self, key: str) -> str:
        return self.actions[key].option_strings[0]


def resolve(given: argparse.Namespace, options: EvalOptions) -> tuple[dict[str, Any], str | None]:
    """(The resolved configuration, the file it came from): the defaults, overlaid by the file
    of ``--config`` (if any), overlaid by the flags in ``given``. Keys with no value are left
    out; ``settings`` is a dict. A missing ``--agents`` is argparse's usage error."""
    explicit = {k: v for k, v in vars(given).items() if k in options.actions}
    source = getattr(given, "config", None)
    resolved = {k: v for k, v in options.defaults.items() if k != "setting"}
    settings: dict[str, Any] = {}
    typed = flag_settings(explicit.get("setting") or [])
    if source is not None:
        table = load_file(source)
        _lift_env(table, source)
        file_settings = check_settings(table.pop("settings", {}), source)
        manifest = manifest_path(source)
        if manifest is not None:
            _from_manifest(table, file_settings, explicit, typed, manifest, source)
        resolved.update(check(table, options, source))
        settings.update(file_settings)
    resolved.update({k: v for k, v in explicit.items() if k != "setting"})
    settings.update(typed)
    resolved["settings"] = dict(sorted(settings.items()))
    if not resolved.get("agents"):
        options.parser.error(f"the following arguments are required: {options.flag('agents')}")
    return {k: v for k, v in resolved.items() if v is not None}, source


def _lift_env(table: dict[str, Any], source: str) -> None:
    """Merge a run file's ``[env]`` table into its top level (in place): only ``ENV_KEYS``
    belong there, and a key may not be given both in ``[env]`` and at the top level."""
    env = table.pop("env", None)
    if env is None:
        return
    if not isinstance(env, dict):
        raise ConfigError(
            f"--config {source}: env: got {_short(env)}, expected a table ([env] with "
            f"{', '.join(ENV_KEYS)})"
        )
    for key, value in env.items():
        if key not in ENV_KEYS:
            where = "the top level" if key != "setting" else "[settings]"
            raise ConfigError(
                f"--config {source}: env.{key}: not a setting of the environment (expected one "
                f"of {', '.join(ENV_KEYS)}; other keys belong at {where})"
            )
        if key in table:
            raise ConfigError(
                f"--config {source}: {key} is given twice, in [env] and at the top level: "
                "keep the one in [env]"
            )
        table[key] = value


def flag_texts(items: list[str]) -> dict[str, str]:
    """``--setting KEY=VALUE`` items as a dict of their texts, untyped: ``hear2act audit
    --model`` names a model's label file by these texts (``model_labels.model_slug``), so an
    audit folder labelled before settings were typed keeps finding its labels."""
    texts = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--setting: got {item!r}, expected KEY=VALUE")
        texts[key] = value
    return texts


def flag_settings(items: list[str]) -> dict[str, Any]:
    """``--setting KEY=VALUE`` items as a dict of their values, each read by
    ``setting_text.setting_value`` (JSON, else a TOML value, else the text): the same value a
    run file's ``[settings]`` gives, stored and compared typed."""
    from hear2act_env.setting_text import setting_value

    return {key: setting_value(text) for key, text in flag_texts(items).items()}


# -- reading ---------------------------------------------------------------------------------
def manifest_path(path: str) -> Path | None:
    """The manifest ``--config PATH`` names (a ``.json`` file, or a results folder holding
    ``results.manifest.json``), or None for a TOML run file."""
    where = Path(path)
    if where.is_dir():
        where = where / MANIFEST_NAME
    return where if where.suffix.lower() == ".json" else None


def load_file(path: str) -> dict[str, Any]:
    """The table of a run file: TOML, or a manifest's ``"run"`` object (a ``.json`` file, or a
    results folder holding ``results.manifest.json``)."""
    manifest = manifest_path(path)
    return _toml(Path(path)) if manifest is None else _manifest_run(manifest)


def _from_manifest(
    table: dict[str, Any],
    settings: dict[str, Any],
    explicit: dict[str, Any],
    typed: dict[str, str],
    manifest: Path,
    source: str,
) -> None:
    """Apply ``MANIFEST_*`` to a manifest's run (``table`` and its ``settings``, in place): a
    results folder may come from someone else, so its data never chooses where ``eval`` writes,
    which server or cluster gets the prompts (and the API key), or whether a model's own code
    runs. ``out`` becomes the manifest's folder, ``response_cache`` is dropped, and a server
    (``base_url``, or an agent spec carrying a URL: ``SPEC_URL``), a cluster,
    ``trust_remote_code`` or an RL model (``PICKLED_KINDS``) the run used is a ``ConfigError``
    until the command line gives it again."""
    table["out"] = str(manifest.parent)
    table.pop("response_cache", None)
    for key in MANIFEST_ASKS:
        value = table.pop(key, None)
        if value is not None and key not in explicit:
            flag = "--" + key.replace("_", "-")
            raise ConfigError(
                f"--config {source}: the run used {flag} {value}; a manifest does not choose "
                f"where the run connects (a results folder may come from someone else): give "
                f"{flag} on the command line"
            )
    agents = table.get("agents") if isinstance(table.get("agents"), list) else []
    served = [a for a in agents if spec_server(a) is not None]
    if served and "agents" not in explicit:
        shown = redact_urls(str(served[0]))
        raise ConfigError(
            f"--config {source}: the run's agents include {shown}, whose model string names a "
            f"server ({redact_urls(str(spec_server(served[0])))}); a manifest does not choose "
            "where the run connects (a results folder may come from someone else), nor does "
            "--base-url stand for it: give --agents on the command line"
        )
    pickled = [a for a in agents if str(a).partition(":")[0] in PICKLED_KINDS]
    if pickled and "agents" not in explicit:
        raise ConfigError(
            f"--config {source}: the run's agents include {pickled[0]}; loading that model "
            "unpickles code from its file, so a manifest does not choose it: give --agents on "
            "the command line"
        )
    for key, why in MANIFEST_ASKS_SETTINGS.items():
        value = settings.pop(key, None)
        if value not in (None, False) and key not in typed:
            raise ConfigError(
                f"--config {source}: the run used --setting {key}={json.dumps(value)}; a "
                f"manifest does not choose it ({why}): give it on the command line"
            )


def spec_server(spec: Any) -> str | None:
    """The URL an agent spec carries itself (from its first ``scheme://`` on, any case), e.g.
    ``http://10.0.0.1:5000/x`` of ``litellm:oobabooga/http://10.0.0.1:5000/x``, or None."""
    found = SPEC_URL.search(spec) if isinstance(spec, str) else None
    return spec[found.start() :] if found else None


def _toml(path: Path) -> dict[str, Any]:
    from hear2act_env.tomlfile import read_toml

    return read_toml(path, "--config", MAX_TOML_BYTES)


def _manifest_run(path: Path) -> dict[str, Any]:
    from hear2act_env import jsonsafe

    try:
        data = jsonsafe.load_file(path)
    except OSError as exc:
        raise ConfigError(f"--config: cannot read {path} ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ConfigError(f"--config: {path} is not a readable JSON file ({exc})") from None
    if not isinstance(data, dict) or "config" not in data:
        raise ConfigError(
            f"--config: {path} is not a manifest written by hear2act eval (a JSON file is read "
            "as results.manifest.json; write a run file as TOML)"
        )
    run = data.get("run")
    if run is None:
        raise ConfigError(
            f'--config: {path} holds no run configuration ("run"): it was written before '
            "manifests stored one, or by hear2act benchmark; rerun it with its original flags"
        )
    if not isinstance(run, dict):
        raise ConfigError(f"--config: {path}: run: got {_short(run)}, expected an object")
    return dict(run)


# -- checking --------------------------------------------------------------------------------
def check(table: dict[str, Any], options: EvalOptions, source: str) -> dict[str, Any]:
    """The file's values by key, each checked against its flag's definition."""
    out = {}
    for key, value in table.items():
        action = options.actions.get(key)
        if action is None or key == "setting":
            raise ConfigError(f"--config {source}: unknown key {key!r}; {_known(key, options)}")
        if key == "prices" and isinstance(value, dict):  # the price table itself
            from hear2act_env.evaluation.usage import parse_prices

            parse_prices(value, f"--config {source}: prices")
            out[key] = value
            continue
        out[key] = _value(key, value, action, source)
    return out


def _known(key: str, options: EvalOptions) -> str:
    fixed = key.replace("-", "_")
    if fixed != key and fixed in options.actions:
        return f"keys use underscores: {fixed}"
    if key in ("setting", "settings"):
        return "settings go in a [settings] table of KEY = value"
    names = [k for k in options.actions if k != "setting"] + ["[settings]"]
    return f"expected one of {', '.join(names)}"


def _value(key: str, value: Any, action: argparse.Action, source: str) -> Any:
    where = f"--config {source}: {key}"
    if isinstance(action, argparse._StoreTrueAction):  # noqa: SLF001
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: got {_short(value)}, expected true or false")
        return value
    if action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction):  # noqa: SLF001
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise ConfigError(
                f"{where}: got {_short(value)}, expected a non-empty list of strings "
                f'({key} = ["..."])'
            )
        return [_one(where, v, action) for v in value]
    if action.type is not None:  # numbers: checked by the flag's own type
        if isinstance(value, bool) or not isinstance(value, int | float):
            expected = getattr(action.type, "__name__", "a number")
            raise ConfigError(f"{where}: got {_short(value)}, expected {expected}")
    elif not isinstance(value, str):
        raise ConfigError(f"{where}: got {_short(value)}, expected a string")
    return _one(where, value, action)


def _one(where: str, value: Any, action: argparse.Action) -> Any:
    if action.type is not None:
        try:
            value = action.type(str(value))
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise ConfigError(f"{where}: {exc}") from None  # says the value and the bound
    if action.choices is not None and value not in action.choices:
        raise ConfigError(
            f"{where}: got {_short(value)}, expected one of {', '.join(map(str, action.choices))}"
        )
    return value


def check_settings(table: Any, source: str) -> dict[str, Any]:
    """A file's ``[settings]``: keys to TOML values (typed per agent kind later, as the texts
    of ``--setting`` are)."""
    if not isinstance(table, dict):
        raise ConfigError(
            f"--config {source}: settings: got {_short(table)}, expected a table "
            "([settings] with KEY = value lines)"
        )
    for key, value in table.items():
        if not key:
            raise ConfigError(f"--config {source}: settings: an empty key")
        _check_plain(f"--config {source}: settings.{key}", value)
    return dict(table)


def _check_plain(where: str, value: Any) -> None:
    """A value TOML can write back: no null, no date, finite or not."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_plain(f"{where}.{k}", v)
    elif isinstance(value, list):
        for v in value:
            _check_plain(where, v)
    elif not isinstance(value, str | int | float | bool):
        raise ConfigError(
            f"{where}: got {_short(value)}, expected a string, number, boolean, list or table"
        )


def _short(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


# -- writing ---------------------------------------------------------------------------------
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def to_toml(config: dict[str, Any]) -> str:
    """``config`` (a resolved configuration) as TOML: its keys in order, then ``[env]`` with
    the environment's (``ENV_KEYS``), then ``[settings]`` with its keys sorted; ``load_file``
    of the text gives ``config`` back."""
    lines = ["# hear2act eval --config FILE (printed by hear2act eval --print-config)"]
    env = []
    for key, value in config.items():
        if key != "settings" and value is not None:
            line = f"{_key(key)} = {_toml_value(value)}"
            (env if key in ENV_KEYS else lines).append(line)
    if env:
        lines += ["", "[env]", *env]
    settings = config.get("settings") or {}
    if settings:
        lines += ["", "[settings]"]
        lines += [f"{_key(k)} = {_toml_value(settings[k])}" for k in sorted(settings)]
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return key if _BARE.match(key) else _string(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{_key(k)} = {_toml_value(value[k])}" for k in sorted(value))
        return "{ " + inner + " }" if inner else "{}"
    raise ConfigError(f"config: cannot write {_short(value)} as TOML")


def _string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def to_json(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` as JSON values (what the manifest stores under ``"run"``), the environment's
    settings under ``"env"`` as in a run file."""
    out = {k: v for k, v in config.items() if k not in ENV_KEYS}
    env = {k: config[k] for k in ENV_KEYS if k in config}
    if env:
        out["env"] = env
    return json.loads(json.dumps(out))
