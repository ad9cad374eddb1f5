"""Flags shared by several ``hear2act`` commands: one name, one help text, choices from the
package's constants."""

from __future__ import annotations

import argparse
import functools
from typing import Any

from hear2act_env.conditions import ACCESS, SPLIT_CHOICES
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.runner import BACKENDS, MAX_WORKERS
from hear2act_env.protocol.engine import REALIZATIONS

Parser = argparse.ArgumentParser

#: The most episodes per scenario and condition ``--runs`` takes (pass^K needs a handful; far
#: more is a typo that would list billions of episodes before the first one ran).
MAX_RUNS = 1000


@functools.cache
def int_at_least(minimum: int):  # noqa: ANN201 - an argparse type
    """An argparse ``type``: an integer >= ``minimum`` (else argparse's usage error, exit 2).
    Cached: one function per bound, so a flag's type compares equal across commands."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


@functools.cache
def int_in(low: int, high: int):  # noqa: ANN201 - an argparse type
    """An argparse ``type``: an integer in [``low``, ``high``]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected an integer from {low} to {high}, got {value}"
            )
        return value

    parse.__name__ = f"integer in [{low}, {high}]"
    return parse


@functools.cache
def float_in(low: float, high: float):  # noqa: ANN201 - an argparse type
    """An argparse ``type``: a finite number in [``low``, ``high``]."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not low <= value <= high:  # also rejects nan
            raise argparse.ArgumentTypeError(
                f"expected a number in [{low:g}, {high:g}], got {text}"
            )
        return value

    parse.__name__ = f"number in [{low:g}, {high:g}]"
    return parse


@functools.cache
def env_number(name: str):  # noqa: ANN201 - an argparse type
    """An argparse ``type``: a number for the env setting ``name``, checked by ``EnvConfig``'s
    own rule (one rule for flags, run files and Python: ``--turn-cost`` takes what
    ``EnvConfig(turn_cost=...)`` takes)."""
    from hear2act_env.config import EnvConfig

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        try:
            return getattr(EnvConfig(**{name: value}), name)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc).partition(": ")[2] or str(exc)) from None

    parse.__name__ = f"EnvConfig.{name}"
    return parse


def refuse_blank_paths(args: Any, keys: tuple[str, ...]) -> None:
    """A ``ConfigError`` naming the first option of ``keys`` (``args`` attributes) given as an
    empty or blank path: ``Path("")`` is the current folder, and ``if value:`` would read it as
    "not given", so neither may stand for what the user typed."""
    for key in keys:
        value = getattr(args, key, None)
        if isinstance(value, str) and not value.strip():
            flag = "--" + key.replace("_", "-")
            raise ConfigError(f"{flag}: got an empty path ({value!r}); expected a path")


def add_split(p: Parser, default: str) -> None:
    p.add_argument(
        "--split",
        default=default,
        choices=SPLIT_CHOICES,
        help=f"scenario split: train (-01..-08 of each domain), test (-09, -10) or all "
        f"(default: {default})",
    )


def add_realizations(p: Parser, default: tuple[str, ...] | None = REALIZATIONS) -> None:
    shown = " ".join(default) if default else "each model's own"
    p.add_argument(
        "--realizations",
        nargs="+",
        choices=REALIZATIONS,
        default=list(default) if default else None,
        help=f"prosody (Prosody-mediated) and/or explicit (Explicit lexical) (default: {shown})",
    )


def add_access(p: Parser, default: tuple[str, ...] | None) -> None:
    shown = " ".join(default) if default else "each model's own"
    p.add_argument(
        "--access",
        nargs="+",
        choices=ACCESS,
        default=list(default) if default else None,
        help=f"access conditions: T transcript, A audio, S state tag (default: {shown})",
    )


def add_scenario_file(p: Parser, default_help: str = "the shipped bank") -> None:
    p.add_argument(
        "--scenario-file",
        default=None,
        metavar="PATH",
        help=f"a JSON/JSONL scenario file (default: {default_help})",
    )


def add_runs(p: Parser) -> None:
    p.add_argument(
        "--runs",
        type=int_in(1, MAX_RUNS),
        default=1,
        help=f"episodes per scenario and condition, 1 to {MAX_RUNS} (default: 1)",
    )


def add_backend(p: Parser, default: str, workers: int) -> None:
    p.add_argument(
        "--backend",
        default=default,
        choices=BACKENDS,
        help=f"where episodes run: serial, thread (HTTP agents), process or ray (default: {default})",
    )
    add_workers(p, workers, "parallel workers of the backend")


def add_workers(p: Parser, default: int, what: str) -> None:
    """``--workers``: 1 to ``MAX_WORKERS`` (a pool never starts more)."""
    p.add_argument(
        "--workers",
        type=int_in(1, MAX_WORKERS),
        default=default,
        help=f"{what}, 1 to {MAX_WORKERS} (default: {default})",
    )


def add_ray_address(p: Parser) -> None:
    p.add_argument(
        "--ray-address",
        default=None,
        metavar="HOST:PORT",
        help="run on this Ray cluster (the head's address; default: $RAY_ADDRESS, else a local "
        "Ray); needs --backend ray (any other backend is an error); --workers is then the "
        "number of work units in flight; every node needs hear2act-env installed",
    )


def ray_address_of(args: Any) -> str | None:
    """``--ray-address``, checked against ``--backend`` (a ``ConfigError`` unless ``ray``)."""
    if args.ray_address is not None and args.backend != "ray":
        raise ConfigError(
            f"--ray-address: needs --backend ray (got --backend {args.backend}); add --backend ray"
        )
    return args.ray_address or None


def add_resume(p: Parser) -> None:
    p.add_argument(
        "--no-retry-errors",
        action="store_true",
        help="on resume, keep the episodes recorded with an error (default: run them again)",
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="if another run is writing the same output, wait for it instead of stopping",
    )


def add_out(p: Parser, default: str | None, what: str = "output folder") -> None:
    shown = default if default is not None else "beside the results"
    p.add_argument("--out", default=default, help=f"{what} (default: {shown})")


def add_no_plots(p: Parser) -> None:
    p.add_argument("--no-plots", action="store_true", help="write tables and CSV only, no PNG")


def add_quiet(p: Parser) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress output")


def add_audio_cache(p: Parser) -> None:
    p.add_argument(
        "--audio-cache",
        default=None,
        metavar="DIR",
        help="audio cache folder (default: $HEAR2ACT_CACHE_DIR or ~/.cache/hear2act-env/audio)",
    )


def add_listen(p: Parser, what: str) -> None:
    """``--host`` and ``--port`` of a command that serves a page (``what``: who uses it)."""
    from hear2act_env.listen.server import LOCAL_HOST

    p.add_argument(
        "--host",
        default=LOCAL_HOST,
        help=f"address to listen on (default: {LOCAL_HOST}, this machine only; any other "
        f"address lets anyone who can reach it {what})",
    )
    p.add_argument(
        "--port",
        type=int_in(0, 65535),
        default=0,
        help="port to listen on (default: 0, any free port)",
    )


def add_prosody_strength(p: Parser) -> None:
    from hear2act_env.config import DEFAULT_PROSODY_STRENGTH

    p.add_argument(
        "--prosody-strength",
        type=float_in(0.0, 2.0),
        default=DEFAULT_PROSODY_STRENGTH,
        help=f"how far delivery moves the voice from neutral, 0..2 (default: {DEFAULT_PROSODY_STRENGTH})",
    )


def add_renderer(p: Parser, default: str | None = "espeak") -> None:
    p.add_argument(
        "--renderer",
        default=default,
        metavar="SPEC",
        help="the voice: espeak (default), piper (the neural voice, extra voice-neural), or "
        "MODULE:NAME (an importable renderer, or a class or function making one without "
        "arguments)",
    )
