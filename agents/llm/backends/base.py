"""What every backend shares: the ``ChatBackend`` protocol, its errors, lazy imports and a
micro-batcher that groups concurrent requests from many episodes into one model call."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hear2act_env.errors import Hear2ActError

__all__ = [
    "BackendError",
    "BackendTimeout",
    "ChatBackend",
    "MicroBatcher",
    "Request",
]

Message = dict[str, Any]


class BackendError(Hear2ActError, RuntimeError):
    """A model call failed after its retries (server error, bad response, generation error).

    Policies catch it, count it and fall back; it never escapes ``act()``.
    """


class BackendTimeout(BackendError):
    """A model call ran past its timeout (after retries)."""


@runtime_checkable
class ChatBackend(Protocol):
    """A chat model. ``complete`` returns the reply text ('' for an empty reply).

    ``audio`` (float32 mono at 16 kHz) is attached to the first user message by backends whose
    ``supports_audio`` is True; others ignore it. ``seed`` (the episode's) and ``run`` (the
    repetition index) go into sampling seeds and cache keys. Raises ``BackendTimeout`` or
    ``BackendError`` for failures of one call, ``ConfigError`` for configuration errors.
    """

    name: str
    supports_audio: bool

    def complete(
        self,
        messages: Sequence[Message],
        *,
        audio: np.ndarray | None = None,
        seed: int | None = None,
        run: int = 0,
    ) -> str: ...


@dataclass
class Request:
    """One queued generation request."""

    messages: Sequence[Message]
    audio: np.ndarray | None = None
    seed: int | None = None
    future: Future = field(default_factory=Future)


class MicroBatcher:
    """Groups requests submitted from many threads (one per concurrent episode) into batches.

    The first request of a batch waits at most ``max_wait_s`` for companions, up to
    ``max_batch_size``; then ``run_batch(requests) -> list[str]`` runs once for all of them on
    the calling thread (the one that opened the batch), so no background thread is needed and
    a single-threaded caller pays only ``max_wait_s`` per call when nobody else is queued
    (0 by default: then a lone caller never waits, and batches form from what queued up while
    the previous batch ran).
    """

    def __init__(
        self,
        run_batch: Callable[[list[Request]], list[str]],
        max_batch_size: int = 8,
        max_wait_s: float = 0.0,
    ) -> None:
        self.run_batch = run_batch
        self.max_batch_size = max(1, int(max_batch_size))
        self.max_wait_s = max(0.0, float(max_wait_s))
        self._cond = threading.Condition()
        self._pending: list[Request] = []
        self._busy = False
        self.batch_sizes: list[int] = []

    def submit(self, request: Request) -> str:
        with self._cond:
            self._pending.append(request)
            self._cond.notify_all()
            deadline = time.monotonic() + self.max_wait_s
            while True:
                if request.future.done():
                    break
                if not self._busy and self._pending and self._pending[0] is request:
                    # this thread leads the next batch; wait briefly for companions
                    while (
                        len(self._pending) < self.max_batch_size
                        and (left := deadline - time.monotonic()) > 0
                    ):
                        self._cond.wait(left)
                    batch = self._pending[: self.max_batch_size]
                    del self._pending[: len(batch)]
                    self._busy = True
                    break
                self._cond.wait(0.05)
        if request.future.done():
            return request.future.result()
        try:
            try:
                outs = self.run_batch(batch)
                if len(outs) != len(batch):
                    raise BackendError(f"batch returned {len(outs)} replies for {len(batch)}")
                for req, out in zip(batch, outs):
                    req.future.set_result(out)
            except BaseException as exc:  # hand the failure to every waiter of this batch
                for req in batch:
                    if not req.future.done():
                        req.future.set_exception(exc)
        finally:
            with self._cond:
                self.batch_sizes.append(len(batch))
                self._busy = False
                self._cond.notify_all()
        return request.future.result()
