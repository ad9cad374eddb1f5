"""What every backend shares: the ``ChatBackend`` protocol, its errors, lazy imports, a
micro-batcher that groups concurrent requests from many episodes into one model call, and the
settings the local ``transformers`` backends take alike (``LocalGeneration`` with a
``LocalGenerationSettings``: checked and stored in one place)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from hear2act_agents.llm.backends.settings import (
    LocalGenerationSettings,
    finite_number,
    make_settings,
)
from hear2act_agents.loading import generation_settings, pick_device, resolve_model_path
from hear2act_env.errors import Hear2ActError
from hear2act_env.redaction import redact

__all__ = [
    "BackendError",
    "BackendTimeout",
    "CallInfo",
    "CallTracking",
    "ChatBackend",
    "LENGTH",
    "LocalGeneration",
    "LocalGenerationSettings",
    "MicroBatcher",
    "Reply",
    "Request",
    "Usage",
    "clips_of",
    "finite_number",
]

Message = dict[str, Any]


class BackendError(Hear2ActError, RuntimeError):
    """A model call failed after its retries (server error, bad response, generation error).

    Policies catch it, count it and fall back; it never escapes ``act()``.
    """


class BackendTimeout(BackendError):
    """A model call ran past its timeout (after retries)."""


def clips_of(audio: Any) -> list[np.ndarray]:
    """The recordings of a call as float32 mono arrays: ``audio`` may be None, one waveform or
    a sequence of them (access A: every user recording, in order); empty clips are dropped."""
    if audio is None:
        return []
    items = [audio] if isinstance(audio, np.ndarray) else list(audio)
    clips = [np.asarray(a, dtype=np.float32).reshape(-1) for a in items]
    return [c for c in clips if c.size]


@dataclass(frozen=True)
class Usage:
    """Tokens one model call used: from the server's ``usage`` or the local tokenizer."""

    prompt_tokens: int
    completion_tokens: int

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}

    @classmethod
    def parse(cls, data: Any) -> Usage | None:
        """From a ``usage`` object (``{"prompt_tokens": n, "completion_tokens": m}``); None when
        it is missing or malformed (a server that reports no usage)."""
        if not isinstance(data, dict):
            return None
        p, c = data.get("prompt_tokens"), data.get("completion_tokens")
        ok = all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (p, c))
        return cls(int(p), int(c)) if ok else None


#: ``finish_reason`` of a reply cut off at its token limit (OpenAI's wire value; local models
#: report it when generation used all of ``max_new_tokens``).
LENGTH = "length"


@dataclass(frozen=True)
class Reply:
    """A generated reply with the tokens it took (what batched generation returns).

    ``finish_reason``: why generation stopped (``"stop"``, ``"length"`` when cut off at the
    token limit, ...; None when unknown). ``audio_tokens``: the prompt's audio tokens when the
    server reports them (``usage.prompt_tokens_details.audio_tokens``)."""

    text: str
    usage: Usage | None = None
    finish_reason: str | None = None
    audio_tokens: int | None = None


@dataclass(frozen=True)
class CallInfo:
    """What the latest ``complete`` of a thread cost: its usage (None when the server reported
    none), whether the reply came from the response cache, and why generation stopped
    (``finish_reason``, None when unknown)."""

    usage: Usage | None
    cached: bool = False
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        """Whether the reply was cut off at its token limit (``finish_reason == "length"``)."""
        return self.finish_reason == LENGTH


class CallTracking:
    """Mixin: ``last_call`` is the ``CallInfo`` of the calling thread's latest ``complete``
    (per thread, so episodes running in threads on one backend never read each other's)."""

    def _track(self, info: CallInfo) -> None:
        local = self.__dict__.get("_call_local")
        if local is None:
            local = self.__dict__.setdefault("_call_local", threading.local())
        local.info = info

    @property
    def last_call(self) -> CallInfo | None:
        local = self.__dict__.get("_call_local")
        return getattr(local, "info", None) if local is not None else None

    def redact_text(self, text: str) -> str:
        """``text`` without anything that looks like a secret (``redaction.redact``): what the
        policy writes to logs and error messages. Backends holding a key also remove it."""
        return redact(text)

    def _cached(self, key: str, material: dict[str, Any], generate: Callable[[], Reply]) -> str:
        """The reply for ``key``: from ``self.cache`` (a ``ResponseCache`` or None) when it
        holds one, else ``generate()`` (stored when not empty); tracks its ``CallInfo``. The
        ``finish_reason`` is stored beside the entry's usage, so a replayed reply that was cut
        off still reads as cut off."""
        cache = getattr(self, "cache", None)
        if cache is not None and (hit := cache.lookup(key)) is not None:
            finish = (hit[1] or {}).get("finish_reason")
            finish = finish if isinstance(finish, str) else None
            self._track(CallInfo(Usage.parse(hit[1]), cached=True, finish_reason=finish))
            return hit[0]
        reply = generate()
        text = reply.text.strip()
        self._track(CallInfo(reply.usage, finish_reason=reply.finish_reason))
        if text and cache is not None:
            stored: dict[str, Any] = reply.usage.to_dict() if reply.usage else {}
            if reply.finish_reason is not None:
                stored["finish_reason"] = reply.finish_reason
            cache.put(key, text, material, stored or None)
        return text


class LocalGeneration(CallTracking):
    """Mixin of the local ``transformers`` backends (``hf`` and the audio LLMs): their settings
    (a ``settings_class`` instance, ``options``), checked and stored by ``_init_generation``,
    and ``settings()``.

    Subclasses set ``kind`` (it names the backend in messages and in ``name``) and, when they
    take more settings, ``settings_class`` (a ``LocalGenerationSettings`` subclass).
    """

    kind = ""
    settings_class: ClassVar[type[LocalGenerationSettings]] = LocalGenerationSettings

    def _init_generation(
        self, path: str, settings: LocalGenerationSettings | None = None, **overrides: Any
    ) -> LocalGenerationSettings:
        """Build the settings (``settings`` with ``overrides``, the keywords of
        ``settings_class``), check them (``ConfigError`` naming the backend), then resolve the
        model path and the device and store the generation settings; returns the settings."""
        options = make_settings(self.settings_class, settings, overrides)
        options.validate(self.kind)
        self.options = options
        self.path = resolve_model_path(path)
        self.device = pick_device(options.device)
        self.dtype = options.dtype
        self.temperature = float(options.temperature)
        self.top_p = options.top_p
        self.max_new_tokens = int(options.max_new_tokens)
        self.chat_template_kwargs = dict(options.chat_template_kwargs or {})
        self.name = f"{self.kind}:{path}"
        return options

    def settings(self) -> dict[str, Any]:
        """The generation settings that determine replies (part of the cache key)."""
        return generation_settings(self)


@runtime_checkable
class ChatBackend(Protocol):
    """A chat model. ``complete`` returns the reply text ('' for an empty reply).

    ``audio`` (float32 mono at 16 kHz: one waveform, or a list of them in dialogue order) is
    attached to the first user message by backends whose
    ``supports_audio`` is True; others ignore it (the policy refuses to run them where audio
    is the evidence). ``seed`` (the episode's) and ``run`` (the repetition index) go into
    sampling seeds and cache keys. Raises ``BackendTimeout`` or ``BackendError`` for failures of
    one call, ``ConfigError`` for configuration errors. Optional: ``last_call`` (a
    ``CallInfo``: the tokens and finish reason of the thread's latest call, see
    ``CallTracking``) and ``redact_text`` (secrets out of texts that are logged).
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
        run_batch: Callable[[list[Request]], list[Any]],
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

    def submit(self, request: Request) -> Any:
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
