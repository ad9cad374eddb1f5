"""Reading a file that came from outside without trusting it: only a regular file, never more
than a cap (a link to ``/dev/zero``, a FIFO or a file that grows while read is refused, not
read until memory runs out or forever)."""

from __future__ import annotations

import os
import stat

__all__ = ["UnreadableFile", "read_regular", "read_regular_fd"]


class UnreadableFile(ValueError):
    """The open file is not a regular file, or holds more than the cap."""


def read_regular_fd(fd: int, max_bytes: int) -> bytes:
    """The whole content of the open file ``fd`` if it is a regular file of at most
    ``max_bytes``; else ``UnreadableFile`` saying why (checked before the first read, and
    again if the file grows while it is read). The caller closes ``fd``."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise UnreadableFile("not a regular file")
    if info.st_size > max_bytes:
        raise UnreadableFile(f"larger than {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise UnreadableFile(f"growing past {max_bytes} bytes while read")
    return b"".join(chunks)


def read_regular(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The content of the file at ``path`` if it is a regular file of at most ``max_bytes``;
    else ``UnreadableFile`` (``OSError`` when it cannot be opened). Opening never blocks, so a
    FIFO is refused, not waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        return read_regular_fd(fd, max_bytes)
    finally:
        os.close(fd)
