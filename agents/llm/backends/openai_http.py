"""OpenAI-compatible chat completions over HTTP (vLLM, SGLang, llama.cpp, commercial APIs).

``HttpChatBackend`` is what every provider served over the network shares (its settings are
one ``HttpSettings``); ``OpenAIChatBackend`` adds the transport (``_exchange``: one POST) and
``litellm_backend.LiteLLMBackend`` another. A new provider overrides ``_exchange`` (and maybe
``kind`` and ``_connect``) and gets all of what follows.

- ``base_url`` ends with the API root (``http://127.0.0.1:8000/v1``); requests go to
  ``{base_url}/chat/completions``. The API key comes from an environment variable (default
  ``OPENAI_API_KEY``); without it no ``Authorization`` header is sent (local servers).
- Retries with exponential backoff and jitter on 429, 5xx, timeouts and connection errors,
  honouring ``Retry-After`` (seconds or an HTTP date). Before every attempt the call checks
  for a stop request (``hear2act_env.interrupts``: no new request starts after SIGINT) and
  waits between attempts with ``interrupts.sleep``; ``Interrupted`` propagates.
- HTTP clients are kept by the process (one idle pool per timeout, each client holding one
  keep-alive connection) and checked out by one attempt at a time, so the many short-lived
  backends of a run reuse connections, and an attempt cut off by its deadline closes only
  its own connection.
- Concurrency is bounded by one limiter per base URL shared by every backend in the process
  (so many episodes running in threads never exceed ``max_concurrency`` requests in flight).
  A 429 pauses the whole limiter for the wait it asks for and halves the limiter's effective
  concurrency, which grows back by one for every few successes.
- An optional on-disk ``ResponseCache`` keyed by everything that determines the reply.
- 401/403/404 are configuration errors (bad key, wrong model or URL) and raise
  ``ConfigError``; every other failure raises ``BackendError``/``BackendTimeout`` (the policy
  turns a call that fails after the retries into an ``InfrastructureError``).
- ``deadline`` (default: twice ``timeout``) is a wall-clock bound on one call: its attempts,
  response headers and body included, and the waits between them (not the wait for a free
  concurrency slot). ``timeout`` bounds each socket read, which a server that trickles bytes
  (even its headers) never trips; so each attempt runs in a worker thread that the caller
  waits for at most the deadline's remainder, then cuts off (socket shut down, client
  closed). A retry that would start past the deadline is not made. Replies are capped at
  ``max_reply_bytes`` (default 4 MB).
- ``finish_reason`` of ``choices[0]`` is kept (``last_call.finish_reason``): ``"length"``
  marks a reply cut off at ``max_tokens``.
- ``probe()`` sends one tiny request before a run; with ``send_audio`` it also checks that the
  server hears (``probe_hearing``: the same request with a 0.5 s recording must take more
  prompt tokens, or report audio tokens), unless ``trust_audio`` is set.
- Texts never carry a secret: error messages, malformed-reply excerpts and reply texts have
  the key, Authorization headers and anything that looks like a token replaced by
  ``[redacted]`` (``redact_text``).
"""

from __future__ import annotations

import base64
import contextlib
import email.utils
import io
import os
import random
import socket
import threading
import time
import wave
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hear2act_agents.llm.backends.base import (
    BackendError,
    BackendTimeout,
    CallTracking,
    Message,
    Reply,
    Usage,
    clips_of,
)
from hear2act_agents.llm.backends.settings import MAX_TOKENS_LIMIT, HttpSettings, make_settings
from hear2act_agents.llm.cache import ResponseCache, audio_digest, cache_key
from hear2act_agents.loading import require
from hear2act_env import interrupts, jsonsafe
from hear2act_env.errors import ConfigError
from hear2act_env.redaction import redact, redact_url, redact_urls
from hear2act_env.seeding import derive_seed

__all__ = [
    "MAX_TOKENS_LIMIT",
    "HttpChatBackend",
    "OpenAIChatBackend",
    "OpenAISettings",
    "client_pool",
    "limiter_for",
    "probe_clip",
    "wav_base64",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class _Limiter:
    """A shared in-flight bound with a pause (after 429s) and an adaptive capacity."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, int(capacity))
        self.effective = float(self.capacity)
        self.in_flight = 0
        self.max_in_flight = 0
        self.pause_until = 0.0
        self._successes = 0
        self._cond = threading.Condition()

    def acquire(self) -> None:
        with self._cond:
            while True:
                wait = self.pause_until - time.monotonic()
                if wait <= 0 and self.in_flight < max(1, int(self.effective)):
                    self.in_flight += 1
                    self.max_in_flight = max(self.max_in_flight, self.in_flight)
                    return
                self._cond.wait(wait if wait > 0 else 1.0)

    def release(self) -> None:
        with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()

    def rate_limited(self, pause_s: float) -> None:
        with self._cond:
            self.pause_until = max(self.pause_until, time.monotonic() + pause_s)
            self.effective = max(1.0, self.effective / 2)
            self._successes = 0

    def succeeded(self) -> None:
        with self._cond:
            if self.effective < self.capacity:
                self._successes += 1
                if self._successes >= 4:
                    self.effective = min(float(self.capacity), self.effective + 1)
                    self._successes = 0
                    self._cond.notify_all()


_LIMITERS: dict[str, _Limiter] = {}
_LIMITERS_LOCK = threading.Lock()


#: The token limit of the probe request to a reasoning model (enough to finish thinking about
#: "Reply with OK." and answer).
PROBE_REASONING_TOKENS = 64


def limiter_for(base_url: str, max_concurrency: int) -> _Limiter:
    """The process-wide limiter of ``base_url`` (its capacity set by the latest caller)."""
    with _LIMITERS_LOCK:
        lim = _LIMITERS.get(base_url)
        if lim is None:
            lim = _LIMITERS[base_url] = _Limiter(max_concurrency)
        elif lim.capacity != max_concurrency:
            with lim._cond:
                lim.capacity = max(1, int(max_concurrency))
                lim.effective = min(lim.effective, float(lim.capacity))
                lim._cond.notify_all()
        return lim


class _Connection:
    """An ``httpx.Client`` checked out by one attempt (at most one keep-alive connection) and
    the socket it last opened, so that the waiting caller can cut a stalled exchange off."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.sock: Any = None

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's ``trace`` extension: remember the socket of a new connection."""
        if event.endswith("connect_tcp.complete"):
            get = getattr(info.get("return_value"), "get_extra_info", None)
            self.sock = get("socket") if callable(get) else None

    def kill(self) -> None:
        """Cut the exchange off from another thread: a blocked read returns at once."""
        sock, self.sock = self.sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):
            self.client.close()


class _ClientPool:
    """Idle clients of one timeout, shared by the process (thread-safe): an attempt takes one
    and gives it back when its exchange ended, so connections are reused across episodes, and
    one SSL context (about 40 ms to build) serves them all."""

    MAX_IDLE = 64

    def __init__(self, httpx: Any, timeout: float) -> None:
        self._httpx = httpx
        self.timeout = float(timeout)
        self._idle: list[_Connection] = []
        self._ssl: Any = None
        self._lock = threading.Lock()

    def take(self) -> _Connection:
        httpx = self._httpx
        with self._lock:
            if self._idle:
                return self._idle.pop()
            if self._ssl is None:
                self._ssl = httpx.create_ssl_context()
            ssl_context = self._ssl
        client = httpx.Client(
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            verify=ssl_context,
        )
        return _Connection(client)

    def give(self, conn: _Connection) -> None:
        with self._lock:
            if len(self._idle) < self.MAX_IDLE:
                self._idle.append(conn)
                return
        conn.kill()


_POOLS: dict[float, _ClientPool] = {}
_POOLS_LOCK = threading.Lock()


def client_pool(httpx: Any, timeout: float) -> _ClientPool:
    """The process-wide pool of HTTP clients with this read ``timeout``."""
    with _POOLS_LOCK:
        pool = _POOLS.get(float(timeout))
        if pool is None:
            pool = _POOLS[float(timeout)] = _ClientPool(httpx, timeout)
        return pool


def _forget_inherited() -> None:
    """In a forked child: never reuse the parent's connections or locks."""
    global _POOLS_LOCK, _LIMITERS_LOCK
    _POOLS.clear()
    _LIMITERS.clear()
    _POOLS_LOCK, _LIMITERS_LOCK = threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def wav_base64(audio: np.ndarray, sample_rate: int = 16_000) -> str:
    """Base64 of a 16-bit PCM mono WAV file of ``audio`` (float in [-1, 1])."""
    pcm = (np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0) * 32767.0).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(pcm.tobytes())
    return base64.b64encode(buf.getvalue()).decode("ascii")


def probe_clip(seconds: float = 0.5, sample_rate: int = 16_000) -> np.ndarray:
    """A short tone (440 Hz, float32 in [-0.3, 0.3]): the recording of the hearing probe."""
    t = np.arange(int(seconds * sample_rate), dtype=np.float32) / sample_rate
    return (0.3 * np.sin(2 * np.pi * 440.0 * t)).astype(np.float32)


def _audio_tokens(usage: Any) -> int | None:
    """``usage.prompt_tokens_details.audio_tokens`` when reported as a count, else None."""
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    n = details.get("audio_tokens") if isinstance(details, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers return content parts
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    raise BackendError(f"unexpected message content of type {type(content).__name__}")


class HttpChatBackend(CallTracking):
    """A chat model served over the network, minus its transport: a subclass makes one attempt
    (``_exchange``: the request body in, ``(status, headers, body)`` out, within a time budget)
    and may name itself (``kind``, ``_connect``). Everything else is here: the settings
    (``settings_class``, stored as ``options`` and as attributes), the request (messages, audio
    as ``input_audio`` parts, sampling, seeds), retries with backoff and ``Retry-After``, the
    per-call deadline, the concurrency limiter, the response cache, the reading of the reply,
    ``probe()`` with its hearing check, and redaction (see the module docstring)."""

    kind = "http"
    settings_class: ClassVar[type[HttpSettings]] = HttpSettings

    def __init__(self, model: str, settings: HttpSettings | None = None, **overrides: Any) -> None:
        """``settings`` (a ``settings_class`` instance), or its fields as keywords
        (``base_url=..., timeout=...``), or both (the keywords replace its fields)."""
        options = make_settings(self.settings_class, settings, overrides)
        if not model:
            raise ConfigError(f"{self.kind} backend: the model name is empty")
        options.validate(self.kind)
        self.options = options
        self.model = model
        self.timeout = float(options.timeout)
        self.deadline = options.call_deadline
        self.max_reply_bytes = int(options.max_reply_bytes)
        self.max_retries = int(options.max_retries)
        self.backoff_base = float(options.backoff_base)
        self.backoff_max = float(options.backoff_max)
        self.max_retry_after = float(options.max_retry_after)
        self.temperature = float(options.temperature)
        self.max_tokens = int(options.max_tokens)
        self.top_p = options.top_p
        self.send_seed = bool(options.send_seed)
        self.reasoning = bool(options.reasoning)
        self.reasoning_effort = options.reasoning_effort
        self.supports_audio = bool(options.send_audio)
        #: Skip the hearing check of ``probe()`` (``--trust-audio``): audio goes unchecked.
        self.trust_audio = bool(options.trust_audio)
        self.extra_body = options.request_body()
        cache_dir = options.cache_dir
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self._rng = random.Random()
        self.api_key_env = options.api_key_env
        self._connect(model, options)

    def _connect(self, model: str, options: HttpSettings) -> None:
        """Set what the transport needs and the texts that name it: ``_httpx`` (whose
        exception classes the retry loop reads), ``base_url``, ``url``, ``shown_url`` and
        ``shown_base`` (no credentials), ``name`` and ``limiter``. This default suits a
        provider whose ``base_url`` is optional."""
        self._check_scheme(options.base_url)
        self._httpx = require("httpx")
        base = options.base_url
        self.base_url = str(base).rstrip("/") if base else None
        self.url = self.base_url
        self.shown_url = redact_url(self.base_url) if self.base_url else f"the {self.kind} API"
        self.shown_base = self.shown_url
        self.name = f"{self.kind}:{redact_urls(model)}"
        where = self.base_url or f"{self.kind}:{model}"
        self.limiter = limiter_for(where, options.max_concurrency)

    def _check_scheme(self, base_url: str | None) -> None:
        """A ``base_url`` given must be an http(s) URL (``ConfigError`` naming it)."""
        if base_url is not None and not str(base_url).startswith(("http://", "https://")):
            raise ConfigError(
                f"{self.kind} backend: base_url {redact_url(str(base_url))!r} must start with "
                "http(s)://"
            )

    def _exchange(self, payload: dict[str, Any], budget: float) -> tuple[int, Any, bytes]:
        """One attempt: send ``payload`` and return (status, headers, body) within ``budget``
        seconds; raise ``BackendTimeout`` past it, an ``httpx`` transport error for a
        connection that failed (retried), ``ConfigError`` for a request never to be taken."""
        raise NotImplementedError(f"{type(self).__name__} makes no attempt (_exchange)")

    # -- public ------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """The generation settings that determine replies (part of the cache key)."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_p": self.top_p,
            "send_seed": self.send_seed,
            "extra_body": self.extra_body,
            **({"reasoning_effort": self.reasoning_effort} if self.reasoning else {}),
        }

    def complete(
        self,
        messages: Sequence[Message],
        *,
        audio: np.ndarray | None = None,
        seed: int | None = None,
        run: int = 0,
    ) -> str:
        clips = clips_of(audio) if self.supports_audio else []
        audio = (clips[0] if len(clips) == 1 else clips) if clips else None
        material = {
            "backend": self.kind,
            "model": self.model,
            "base_url": self.base_url,
            "messages": list(messages),
            "settings": self.settings(),
            "audio": audio_digest(audio),
            "seed": seed,
            "run": run,
        }

        def generate() -> Reply:
            payload: dict[str, Any] = {
                "model": self.model,
                "messages": self._wire_messages(messages, audio),
                **self._sampling(self.max_tokens),
            }
            if self.send_seed and seed is not None:
                payload["seed"] = derive_seed(seed, run)
            payload.update(self.extra_body)
            return self._post(payload)

        return self._cached(cache_key(material), material, generate)

    def probe(self, hearing: bool | None = None) -> None:
        """One tiny request (with the usual retries and deadline) before a run: a server that
        refuses, never answers, rejects the key or does not know the model raises
        ``ConfigError`` with one line saying so, instead of every episode of the run failing the
        same way. With ``hearing`` (default: ``send_audio`` on and ``trust_audio`` off) it also
        checks that the server hears the audio (``probe_hearing``)."""
        plain = self._probe_plain()
        if hearing is None:
            hearing = self.supports_audio and not self.trust_audio
        if hearing:
            self._check_hearing(plain)

    def probe_hearing(self) -> None:
        """Check that the server hears: the probe request with a 0.5 s recording
        (``probe_clip``) must take more prompt tokens than without it, or report audio tokens
        (``usage.prompt_tokens_details.audio_tokens``). A server that ignores the audio, reports
        no usage or refuses the recording raises ``ConfigError`` (one line, naming
        ``--trust-audio``, which skips the check)."""
        self._check_hearing(self._probe_plain())

    def check_before_run(self, probe: bool = True) -> None:
        """What a command does before its first call: ``probe`` (with the hearing check when
        the backend sends audio), or, without ``probe`` (``--no-probe``), the hearing check
        alone unless ``trust_audio`` (``--trust-audio``) skips it."""
        if probe:
            self.probe()
        elif self.supports_audio and not self.trust_audio:
            self.probe_hearing()

    def close(self) -> None:
        """Nothing to release: the HTTP clients are shared by the process (``client_pool``)."""

    def redact_text(self, text: str) -> str:
        """``text`` without the API key and anything else that looks like a secret."""
        for secret in self._secrets():
            text = text.replace(secret, "[redacted]")
        return redact(text)

    # -- internals ---------------------------------------------------------------------
    def _probe_payload(self, audio: np.ndarray | None) -> dict[str, Any]:
        messages = [{"role": "user", "content": "Reply with OK."}]
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": self._wire_messages(messages, audio),
            # a reasoning model thinks before it answers: 1 token would end it mid-thought
            **self._sampling(PROBE_REASONING_TOKENS if self.reasoning else 1, probe=True),
        }
        payload.update(self.extra_body)
        return payload

    def _sampling(self, limit: int, probe: bool = False) -> dict[str, Any]:
        """The token limit and sampling fields of a request: ``max_tokens``, ``temperature``
        (0 for the probe) and ``top_p``; for a reasoning model ``max_completion_tokens`` and
        ``reasoning_effort`` only."""
        if self.reasoning:
            out: dict[str, Any] = {"max_completion_tokens": limit}
            if self.reasoning_effort is not None:
                out["reasoning_effort"] = self.reasoning_effort
            return out
        out = {"temperature": 0.0 if probe else self.temperature, "max_tokens": limit}
        if self.top_p is not None and not probe:
            out["top_p"] = self.top_p
        return out

    def _probe_plain(self) -> Reply:
        try:
            return self._post(self._probe_payload(None))
        except BackendError as exc:
            raise ConfigError(
                f"{self.name}: the server at {self.shown_base} did not answer a probe "
                f"request ({exc}); is it running and serving this model?"
            ) from None

    def _check_hearing(self, plain: Reply) -> None:
        where = f"{self.name} (send_audio=true): the server at {self.shown_base}"
        skip = "--trust-audio skips this check"
        try:
            heard = self._post(self._probe_payload(probe_clip()))
        except BackendError as exc:
            raise ConfigError(
                f"{where} refused the probe request with a 0.5 s recording ({exc}); does it "
                f"serve a model that takes audio? {skip}"
            ) from None
        if heard.audio_tokens:
            return
        if plain.usage is None or heard.usage is None:
            raise ConfigError(
                f"{where} reports no token usage, so whether it hears the audio cannot be "
                f"checked; {skip}"
            )
        if heard.usage.prompt_tokens == plain.usage.prompt_tokens:
            raise ConfigError(
                f"{where} ignored the audio: the probe request took {plain.usage.prompt_tokens} "
                "prompt tokens with a 0.5 s recording and without it, so results labelled A or "
                f"A+T would not have heard anything; {skip}"
            )

    def _wire_messages(self, messages: Sequence[Message], audio: Any) -> list:
        out = [dict(m) for m in messages]
        clips = clips_of(audio)
        if not clips:
            return out
        for m in out:
            if m.get("role") == "user":
                parts: list[dict[str, Any]] = [
                    {"type": "input_audio", "input_audio": {"data": wav_base64(c), "format": "wav"}}
                    for c in clips
                ]
                m["content"] = [*parts, {"type": "text", "text": str(m["content"])}]
                break
        return out

    def _backoff(self, attempt: int) -> float:
        delay = self.backoff_base * (2**attempt) * (1.0 + 0.25 * self._rng.random())
        return min(delay, self.backoff_max)

    def _post(self, payload: dict[str, Any]) -> Reply:
        """Send ``payload`` with retries, within ``deadline`` seconds of the call's own time
        (attempts and the waits between them, not the wait for a concurrency slot)."""
        httpx = self._httpx
        last: BackendError | None = None
        spent = 0.0
        for attempt in range(self.max_retries + 1):
            interrupts.raise_if_requested()
            delay: float | None = None
            resp: tuple[int, Any, bytes] | None = None
            self.limiter.acquire()
            try:
                interrupts.raise_if_requested()  # a stop may have come while waiting
                start = time.monotonic()
                try:
                    resp = self._exchange(payload, self.deadline - spent)
                except httpx.TimeoutException as exc:
                    last = BackendTimeout(
                        self.redact_text(
                            f"{self.name}: no reply within {self.timeout:g} s ({exc!r})"
                        )
                    )
                except BackendTimeout as exc:
                    last = exc
                except (httpx.HTTPError, httpx.StreamError) as exc:  # connection, protocol...
                    last = BackendError(
                        self.redact_text(
                            f"{self.name}: connection to {self.shown_url} failed ({exc!r})"
                        )
                    )
                finally:
                    spent += time.monotonic() - start
            finally:
                self.limiter.release()
            if resp is not None:
                status, headers, body = resp
                if status == 200:
                    self.limiter.succeeded()
                    return self._reply_text(body)
                detail = self._excerpt(body.decode("utf-8", "replace"), 300)
                if status in (401, 403):
                    raise ConfigError(
                        f"{self.name}: the server refused the credentials (HTTP {status}); "
                        f"{self._credentials_hint()}: {detail}"
                    )
                if status == 404:
                    raise ConfigError(
                        f"{self.name}: {self.shown_url} or model {self.model!r} not found (HTTP 404): "
                        f"{detail}"
                    )
                if status != 429 and status < 500:
                    raise BackendError(f"{self.name}: HTTP {status}: {detail}")
                last = BackendError(
                    f"{self.name}: HTTP {status} after {attempt + 1} tries: {detail}"
                )
                after = _retry_after(headers.get("retry-after"))
                if after is not None:
                    delay = min(after, self.max_retry_after)
                if status == 429:
                    pause = delay if delay is not None else self._backoff(attempt)
                    self.limiter.rate_limited(pause)
            if attempt < self.max_retries:
                wait = delay if delay is not None else self._backoff(attempt)
                if spent + wait >= self.deadline:
                    assert last is not None
                    if spent >= self.deadline:  # ``last`` says the deadline passed
                        raise last
                    raise type(last)(
                        f"{last}; no time left for another try within the call's deadline of "
                        f"{self.deadline:g} s (deadline)"
                    )
                interrupts.sleep(wait)
                spent += wait
        assert last is not None
        raise last

    def _secret(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def _secrets(self) -> list[str]:
        """The keys this backend may send (kept out of every text it returns or logs)."""
        secret = self._secret()
        return [secret] if secret else []

    def _credentials_hint(self) -> str:
        """What a refused key asks the user to do (part of the 401/403 message)."""
        return f"set the API key in the environment variable {self.api_key_env!r}"

    def _excerpt(self, text: str, limit: int) -> str:
        """The first ``limit`` characters of ``text``, redacted (before cutting, so that no
        part of a key survives at the cut)."""
        return self.redact_text(text)[:limit]

    def _reply_text(self, body: bytes) -> Reply:
        try:
            data = jsonsafe.loads(body)
        except ValueError as exc:
            text = self._excerpt(body.decode("utf-8", "replace"), 200)
            raise BackendError(f"{self.name}: the reply is not JSON: {text!r}") from exc
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            message = None
        if not isinstance(message, dict):
            raise BackendError(
                f"{self.name}: malformed reply (expected choices[0].message): "
                f"{self._excerpt(str(data), 200)}"
            )
        text = _content_text(message.get("content")).strip()
        for secret in self._secrets():  # a server that echoes the key: not in a log or cache
            text = text.replace(secret, "[redacted]")
        finish = choice.get("finish_reason")
        raw_usage = data.get("usage")
        return Reply(
            text,
            Usage.parse(raw_usage),
            finish if isinstance(finish, str) else None,
            _audio_tokens(raw_usage),
        )


@dataclass(frozen=True)
class OpenAISettings(HttpSettings):
    """``HttpSettings`` whose key comes from ``OPENAI_API_KEY`` unless ``api_key_env`` names
    another variable."""

    api_key_env: str = "OPENAI_API_KEY"


class OpenAIChatBackend(HttpChatBackend):
    """Chat completions from an OpenAI-compatible server (see the module docstring)."""

    kind = "openai"
    settings_class = OpenAISettings

    def __init__(
        self, model: str, settings: OpenAISettings | None = None, **overrides: Any
    ) -> None:
        """``settings`` (an ``OpenAISettings``), or its fields as keywords."""
        super().__init__(model, settings, **overrides)

    def _connect(self, model: str, options: HttpSettings) -> None:
        """The server at ``base_url`` (default ``$OPENAI_BASE_URL``, else the OpenAI API)."""
        self._httpx = require("httpx")
        base = options.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        if not base.startswith(("http://", "https://")):
            raise ConfigError(
                f"openai backend: base_url {redact_url(base)!r} must start with http(s)://"
            )
        self.base_url = base.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        try:
            self._httpx.URL(self.url)
        except (self._httpx.InvalidURL, ValueError, TypeError) as exc:
            raise ConfigError(
                f"openai backend: base_url {redact_url(base)!r} is not a valid URL ({exc}); "
                "expected e.g. http://127.0.0.1:8000/v1"
            ) from None
        self.shown_url = redact_url(self.url)  # for messages: no credentials
        self.shown_base = redact_url(self.base_url)
        self.name = f"openai:{model}"
        self.limiter = limiter_for(self.base_url, options.max_concurrency)
        self._pool = client_pool(self._httpx, self.timeout)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _exchange(self, payload: dict[str, Any], budget: float) -> tuple[int, Any, bytes]:
        """POST ``payload``: (status, headers, body), complete within ``budget`` seconds of
        wall-clock time, headers included, and at most ``max_reply_bytes`` bytes. The exchange
        runs in a worker thread; past the budget (or when the caller is interrupted) its
        connection is cut off and ``BackendTimeout`` raised."""
        conn = self._pool.take()
        stop_at = time.monotonic() + max(budget, 0.0)
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["result"] = self._read(conn, payload, stop_at)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name="hear2act-http", daemon=True).start()
        try:
            finished = done.wait(max(budget, 0.0)) or done.is_set()
        finally:
            if not done.is_set():  # past the deadline, or interrupted while waiting
                conn.kill()
        if not finished:
            raise BackendTimeout(
                f"{self.name}: the reply was not complete within the call's deadline of "
                f"{self.deadline:g} s (deadline; response headers included)"
            )
        self._pool.give(conn)
        if "error" in box:
            raise box["error"]
        return box["result"]

    def _read(self, conn: _Connection, payload: dict[str, Any], stop_at: float) -> tuple:
        with conn.client.stream(
            "POST",
            self.url,
            json=payload,
            headers=self._headers(),
            extensions={"trace": conn.trace},
        ) as resp:
            chunks, size = [], 0
            for chunk in resp.iter_bytes():
                size += len(chunk)
                if size > self.max_reply_bytes:
                    raise BackendError(
                        f"{self.name}: the reply exceeds {self.max_reply_bytes} bytes "
                        "(max_reply_bytes); refusing to read more"
                    )
                chunks.append(chunk)
                if time.monotonic() > stop_at:  # the caller has given up already
                    raise BackendTimeout(f"{self.name}: past the deadline")
            return resp.status_code, resp.headers, b"".join(chunks)
