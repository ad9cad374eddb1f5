"""Reading a TOML file a user passed in (a run file, a price table): a regular file under a cap
(``boundedio``), every failure a ``ConfigError`` naming the option and the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hear2act_env.errors import ConfigError

__all__ = ["read_toml"]


def read_toml(path: str | Path, option: str, max_bytes: int) -> dict[str, Any]:
    """The table of the TOML file at ``path``, given with ``option`` (e.g. ``--config``), read
    only if it is a regular file of at most ``max_bytes``."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            raise ConfigError(
                f"{option}: reading TOML needs Python 3.11+ (or the tomli package)"
            ) from None
    from hear2act_env.boundedio import UnreadableFile, read_regular

    try:
        return tomllib.loads(read_regular(path, max_bytes).decode("utf-8"))
    except UnreadableFile as exc:
        raise ConfigError(f"{option}: {path} is {exc}; expected a TOML file") from None
    except OSError as exc:
        raise ConfigError(f"{option}: cannot read {path} ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{option}: {path} is not valid TOML ({exc})") from None
    except ValueError as exc:  # an integer of over 4,300 digits (int's own limit)
        raise ConfigError(f"{option}: {path} holds a value it cannot read ({exc})"[:300]) from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise ConfigError(
            f"{option}: {path} nests arrays or tables too deeply; expected a run or price file"
        ) from None
