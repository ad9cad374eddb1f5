"""Writing files into a folder that may have come from someone else: the one rule every
command's writer follows.

**Nothing is written through a link or outside the folder named for the output.**

- A file written whole (a manifest, a CSV, a plot, a model) goes to a temporary file in its
  folder and is moved into place with ``os.replace``: readers see the old file or the new one,
  and a link, FIFO or device in its place is replaced by the new file, never opened or
  followed (a link's target is not touched); a folder in its place is refused.
- A file appended to, truncated or locked in place (results, agent logs, progress tables, lock
  files) is opened without following a link and must be a regular file with one name: a link,
  a FIFO, a device, a folder or a hard link in its place is an ``UnsafeOutputError``.
- Every folder between ``root`` (the folder the user named; by default the file's own folder)
  and the file must be a real folder, not a link; missing ones are created. ``root`` itself is
  the user's choice and may be a link. A path that leaves ``root`` (``..``) is refused.

``UnsafeOutputError`` is a ``ConfigError``: ``hear2act`` prints it as one line, exit status 2.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Literal

from hear2act_env.errors import ConfigError

__all__ = [
    "UnsafeOutputError",
    "ensure_folder",
    "open_append",
    "open_in_place",
    "write_atomic",
    "write_text",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class UnsafeOutputError(ConfigError):
    """A path a command would write is a link, not a regular file, or outside its folder."""


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _refuse(path: Path, why: str) -> UnsafeOutputError:
    return UnsafeOutputError(
        f"output: {path} is {why}; refusing to write through it (a results folder's files must "
        "be regular files in plain folders: remove it, or choose another output)"
    )


def ensure_folder(
    folder: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
) -> Path:
    """``folder`` once every folder from ``root`` (default: ``folder`` itself) down to it is a
    real folder, creating the missing ones; a link or a file below ``root`` is an
    ``UnsafeOutputError``. ``root`` is created with its parents when missing (an ``OSError``
    when it cannot be, as from ``mkdir``)."""
    folder = Path(folder)
    base = Path(root) if root is not None else folder
    try:
        rest = folder.relative_to(base)
    except ValueError:
        raise UnsafeOutputError(f"output: {folder} is not inside {base}") from None
    if ".." in rest.parts:
        raise UnsafeOutputError(f"output: {folder} leaves {base} ('..'); refusing to write there")
    base.mkdir(parents=True, exist_ok=True)  # an OSError here (a file, read-only) is the caller's
    if not base.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(base))
    here = base
    for part in rest.parts:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            try:
                os.mkdir(here)
            except FileExistsError:  # made meanwhile: look at it again
                mode = os.lstat(here).st_mode
            else:
                continue
        if not stat.S_ISDIR(mode):
            raise _refuse(here, _kind(mode))
    return folder


def _checked_target(path: Path, root: str | os.PathLike[str] | None) -> Path:
    """``path`` once its folder is safe (``ensure_folder``) and nothing but a folder stands at
    ``path``: a file, a link, a FIFO or a device there is replaced by ``os.replace`` (the name
    is moved, nothing is opened), a folder is refused."""
    ensure_folder(path.parent, root if root is not None else path.parent)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    if stat.S_ISDIR(mode):
        raise _refuse(path, _kind(mode))
    return path


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes,
    root: str | os.PathLike[str] | None = None,
    fsync: bool = False,
) -> Path:
    """Write ``data`` to ``path`` whole: a temporary file in its folder, then ``os.replace``
    (a link at ``path`` is replaced, not followed). Folders below ``root`` must not be links."""
    path = _checked_target(Path(path), root)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:24]}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def write_text(
    path: str | os.PathLike[str], text: str, root: str | os.PathLike[str] | None = None
) -> Path:
    """``write_atomic`` of ``text`` encoded as UTF-8."""
    return write_atomic(path, text.encode("utf-8"), root)


def _open_regular(path: Path, flags: int, root: str | os.PathLike[str] | None) -> int:
    """A descriptor of ``path`` opened with ``flags`` (creating it, mode 0o644), only if it is a
    regular file with one name, not a link; else ``UnsafeOutputError``."""
    ensure_folder(path.parent, root if root is not None else path.parent)
    try:
        fd = os.open(path, flags | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(path, "a link") from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):
            raise _refuse(path, "a folder" if exc.errno == errno.EISDIR else "a FIFO") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(path, _kind(info.st_mode))
        if info.st_nlink > 1:
            raise _refuse(path, f"a file with {info.st_nlink} hard links")
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_append(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str] | None = None,
    mode: Literal["a", "ab"] = "a",
) -> IO:
    """``path`` opened for appending (created when missing), only as a regular file reached
    without a link; text mode is UTF-8."""
    fd = _open_regular(Path(path), os.O_WRONLY | os.O_APPEND, root)
    if mode == "ab":
        return os.fdopen(fd, "ab")
    return os.fdopen(fd, "a", encoding="utf-8", newline="")


def open_in_place(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str] | None = None,
    truncate: bool = False,
) -> io.BufferedRandom:
    """``path`` opened to read and write in place (created when missing; emptied first with
    ``truncate``), only as a regular file reached without a link: for locks, a torn tail cut
    off, or a table written as it grows."""
    flags = os.O_RDWR | (os.O_TRUNC if truncate else 0)
    path = Path(path)
    if truncate:  # check before O_TRUNC empties anything
        os.close(_open_regular(path, os.O_RDWR, root))
    return os.fdopen(_open_regular(path, flags, root), "r+b")
