"""OpenAI-compatible chat completions over HTTP (vLLM, SGLang, llama.cpp, commercial APIs).

- ``base_url`` ends with the API root (``http://127.0.0.1:8000/v1``); requests go to
  ``{base_url}/chat/completions``. The API key comes from an environment variable (default
  ``OPENAI_API_KEY``); without it no ``Authorization`` header is sent (local servers).
- Retries with exponential backoff and jitter on 429, 5xx, timeouts and connection errors,
  honouring ``Retry-After`` (seconds or an HTTP date).
- One HTTP client (connection pool) per timeout and pool size is shared by every backend of
  the process, so the many short-lived backends of a run reuse connections.
- Concurrency is bounded by one limiter per base URL shared by every backend in the process
  (so many episodes running in threads never exceed ``max_concurrency`` requests in flight).
  A 429 pauses the whole limiter for the wait it asks for and halves the limiter's effective
  concurrency, which grows back by one for every few successes.
- An optional on-disk ``ResponseCache`` keyed by everything that determines the reply.
- 401/403/404 are configuration errors (bad key, wrong model or URL) and raise
  ``ConfigError``; every other failure raises ``BackendError``/``BackendTimeout`` (the policy
  turns a call that fails after the retries into an ``InfrastructureError``).
- Each attempt has a total ``deadline`` (default: twice ``timeout``; ``timeout`` bounds each
  read, so a server that trickles bytes would otherwise hold a call forever) and a reply size
  cap (``max_reply_bytes``, default 4 MB).
- Error texts never carry a secret: the key, Authorization headers and anything that looks
  like a token are replaced by ``[redacted]`` (``redact``).
"""

from __future__ import annotations

import base64
import email.utils
import io
import json
import os
import random
import threading
import time
import wave
from collections.abc import Sequence
from typing import Any

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
from hear2act_agents.llm.cache import ResponseCache, audio_digest, cache_key
from hear2act_agents.loading import require
from hear2act_env.errors import ConfigError
from hear2act_env.redaction import redact, redact_url
from hear2act_env.seeding import derive_seed

__all__ = ["OpenAIChatBackend", "client_for", "limiter_for"]

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


_CLIENTS: dict[tuple[float, int], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def client_for(httpx: Any, timeout: float, max_connections: int) -> Any:
    """The process-wide ``httpx.Client`` for these transport settings (thread-safe, kept for
    the process): episodes that build a backend each reuse its connections instead of paying
    for a client (an SSL context, about 40 ms) and a new TCP connection every episode."""
    key = (float(timeout), int(max_connections))
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = httpx.Client(
                timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
                limits=httpx.Limits(max_connections=max_connections),
            )
        return client


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


class OpenAIChatBackend(CallTracking):
    """Chat completions from an OpenAI-compatible server (see the module docstring)."""

    kind = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        max_retry_after: float = 120.0,
        max_concurrency: int = 8,
        deadline: float | None = None,
        max_reply_bytes: int = 4_000_000,
        temperature: float = 0.0,
        max_tokens: int = 2048,
        top_p: float | None = None,
        send_seed: bool = True,
        send_audio: bool = False,
        extra_body: dict[str, Any] | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if not model:
            raise ConfigError("openai backend: the model name is empty")
        if timeout <= 0 or max_retries < 0 or max_concurrency < 1 or max_tokens < 1:
            raise ConfigError(
                "openai backend: timeout must be > 0, max_retries >= 0, max_concurrency >= 1 "
                "and max_tokens >= 1"
            )
        if (deadline is not None and deadline <= 0) or max_reply_bytes < 1024:
            raise ConfigError(
                "openai backend: deadline must be > 0 (seconds per attempt, default: 2 x "
                f"timeout) and max_reply_bytes >= 1024; got deadline={deadline!r}, "
                f"max_reply_bytes={max_reply_bytes!r}"
            )
        self._httpx = require("httpx")
        self.model = model
        base = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        if not base.startswith(("http://", "https://")):
            raise ConfigError(f"openai backend: base_url {base!r} must start with http(s)://")
        self.base_url = base.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.shown_url = redact_url(self.url)  # for messages: no credentials
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.deadline = float(deadline) if deadline is not None else 2.0 * self.timeout
        self.max_reply_bytes = int(max_reply_bytes)
        self.max_retries = int(max_retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_retry_after = float(max_retry_after)
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.top_p = top_p
        self.send_seed = bool(send_seed)
        self.supports_audio = bool(send_audio)
        self.extra_body = dict(extra_body or {})
        if chat_template_kwargs:  # vLLM and SGLang read it from the request body
            self.extra_body["chat_template_kwargs"] = {
                **self.extra_body.get("chat_template_kwargs", {}),
                **chat_template_kwargs,
            }
        self.name = f"openai:{model}"
        self.limiter = limiter_for(self.base_url, max_concurrency)
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self._rng = random.Random()
        self._client = client_for(self._httpx, self.timeout, max(2 * max_concurrency, 4))

    # -- public ------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """The generation settings that determine replies (part of the cache key)."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_p": self.top_p,
            "send_seed": self.send_seed,
            "extra_body": self.extra_body,
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
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
            }
            if self.top_p is not None:
                payload["top_p"] = self.top_p
            if self.send_seed and seed is not None:
                payload["seed"] = derive_seed(seed, run)
            payload.update(self.extra_body)
            return self._post(payload)

        return self._cached(cache_key(material), material, generate)

    def probe(self) -> None:
        """One tiny request (with the usual retries) before a run: a server that refuses,
        never answers, rejects the key or does not know the model raises ``ConfigError`` with
        one line saying so, instead of every episode of the run failing the same way."""
        payload = {
            "model": self.model,
            "messages": [{"role": "user", "content": "Reply with OK."}],
            "max_tokens": 1,
            "temperature": 0.0,
        }
        payload.update(self.extra_body)
        try:
            self._post(payload)
        except BackendError as exc:
            raise ConfigError(
                f"{self.name}: the server at {redact_url(self.base_url)} did not answer a probe "
                f"request ({exc}); is it running and serving this model?"
            ) from None

    def close(self) -> None:
        """Nothing to release: the HTTP client is shared by the process (``client_for``)."""

    # -- internals ---------------------------------------------------------------------
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

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _backoff(self, attempt: int) -> float:
        delay = self.backoff_base * (2**attempt) * (1.0 + 0.25 * self._rng.random())
        return min(delay, self.backoff_max)

    def _post(self, payload: dict[str, Any]) -> Reply:
        httpx = self._httpx
        last: BackendError | None = None
        for attempt in range(self.max_retries + 1):
            delay: float | None = None
            self.limiter.acquire()
            try:
                try:
                    resp, body = self._exchange(payload)
                except httpx.TimeoutException as exc:
                    last = BackendTimeout(
                        f"{self.name}: no reply within {self.timeout:g} s ({exc!r})"
                    )
                    resp = None
                except BackendTimeout as exc:
                    last = exc
                    resp = None
                except httpx.TransportError as exc:
                    last = BackendError(
                        f"{self.name}: connection to {self.shown_url} failed ({exc!r})"
                    )
                    resp = None
            finally:
                self.limiter.release()
            if resp is not None:
                status = resp.status_code
                if status == 200:
                    self.limiter.succeeded()
                    return self._reply_text(body)
                detail = redact(body[:300].decode("utf-8", "replace"), self._secret())
                if status in (401, 403):
                    raise ConfigError(
                        f"{self.name}: the server refused the credentials (HTTP {status}); set "
                        f"the API key in the environment variable {self.api_key_env!r}: {detail}"
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
                after = _retry_after(resp.headers.get("retry-after"))
                if after is not None:
                    delay = min(after, self.max_retry_after)
                if status == 429:
                    pause = delay if delay is not None else self._backoff(attempt)
                    self.limiter.rate_limited(pause)
            if attempt < self.max_retries:
                time.sleep(delay if delay is not None else self._backoff(attempt))
        assert last is not None
        raise last

    def _secret(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def _exchange(self, payload: dict[str, Any]) -> tuple[Any, bytes]:
        """POST ``payload``; the response and its body, read within ``deadline`` seconds and
        ``max_reply_bytes`` bytes (a server that trickles or floods fails the attempt)."""
        start = time.monotonic()
        with self._client.stream("POST", self.url, json=payload, headers=self._headers()) as resp:
            chunks, size = [], 0
            for chunk in resp.iter_bytes():
                size += len(chunk)
                if size > self.max_reply_bytes:
                    raise BackendError(
                        f"{self.name}: the reply exceeds {self.max_reply_bytes} bytes "
                        "(max_reply_bytes); refusing to read more"
                    )
                chunks.append(chunk)
                if time.monotonic() - start > self.deadline:
                    raise BackendTimeout(
                        f"{self.name}: the reply was not complete within the deadline of "
                        f"{self.deadline:g} s (deadline)"
                    )
            return resp, b"".join(chunks)

    def _reply_text(self, body: bytes) -> Reply:
        try:
            data = json.loads(body)
        except ValueError as exc:
            text = redact(body[:200].decode("utf-8", "replace"), self._secret())
            raise BackendError(f"{self.name}: the reply is not JSON: {text!r}") from exc
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(f"{self.name}: malformed reply: {str(data)[:200]}") from exc
        if not isinstance(message, dict):
            raise BackendError(f"{self.name}: malformed reply: {str(data)[:200]}")
        usage = Usage.parse(data.get("usage")) if isinstance(data, dict) else None
        return Reply(_content_text(message.get("content")).strip(), usage)
