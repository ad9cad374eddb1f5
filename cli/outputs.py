"""Checks of the paths a command will write, made before its work starts.

Each check returns the path when it can be written, else raises a ``ConfigError`` naming the
flag, the path and what was expected (``hear2act`` prints it as one line, exit status 2), so an
unwritable output is found in a second, not after an hour of work. A missing folder is created
(with its parents): that it can be is what the check proves; writability is proven by creating
and removing a temporary file, which holds for root and read-only file systems alike.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hear2act_env.errors import ConfigError

__all__ = ["writable_dir", "writable_file"]


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _folder(flag: str, folder: Path, expected: str) -> None:
    """Make ``folder`` if needed and prove a file can be created in it."""
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{flag}: {folder} is not a folder; expected {expected}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"{flag}: cannot create the folder {folder} ({_why(exc)}); expected {expected}"
        ) from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".hear2act-probe-", dir=folder)
    except OSError as exc:
        raise ConfigError(
            f"{flag}: cannot write in {folder} ({_why(exc)}); expected {expected}"
        ) from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass


def writable_dir(flag: str, path: str | os.PathLike[str]) -> Path:
    """``path`` as a ``Path`` once it is a folder new files can be written in (created, with
    its parents, when missing); else a ``ConfigError`` naming ``flag`` and ``path``."""
    if not str(path).strip():
        raise ConfigError(f"{flag}: an empty path ({str(path)!r}); expected a folder")
    folder = Path(path).expanduser()
    _folder(flag, folder, "a folder that exists or can be created, and is writable")
    return folder


def writable_file(flag: str, path: str | os.PathLike[str]) -> Path:
    """``path`` as a ``Path`` once a file can be written there: not a folder, not a FIFO,
    device or socket, not a read-only file, in a folder that exists (or is created) and is
    writable; else a ``ConfigError`` naming ``flag`` and ``path``."""
    file = Path(path).expanduser()
    expected = "a file path in a writable folder"
    if not str(path).strip():
        raise ConfigError(f"{flag}: an empty path ({str(path)!r}); expected {expected}")
    if file.is_dir():
        raise ConfigError(f"{flag}: {file} is a folder; expected {expected}")
    if file.exists():
        if not file.is_file():
            raise ConfigError(
                f"{flag}: {file} is not a regular file (a FIFO, device or socket); expected "
                f"{expected}"
            )
        if not os.access(file, os.W_OK):
            raise ConfigError(f"{flag}: {file} is read-only; expected {expected}")
    _folder(flag, file.parent, f"a writable folder to hold {file.name}")
    return file
