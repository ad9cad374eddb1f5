"""Chat completions through LiteLLM (``litellm:MODEL``): Anthropic, Gemini, Bedrock, OpenAI and
the other providers LiteLLM knows, by its model strings (``anthropic/claude-...``,
``gemini/...``, ``bedrock/...``, ``openai/...``).

Only the transport differs from ``openai:``: both are an ``HttpChatBackend`` (with the same
``HttpSettings``), and this one makes its attempt (``_exchange``) by ``litellm.completion``
instead of an HTTP POST. Everything
else is shared: the request (messages, audio as OpenAI-format ``input_audio`` parts, which
LiteLLM converts for providers that take audio), the retries with backoff and ``Retry-After``,
the per-call ``deadline``, the concurrency limiter, the response cache, the reading of the
reply (text, ``finish_reason``, ``usage``, audio tokens), ``probe()`` with its hearing check,
and redaction.

- Keys: LiteLLM reads each provider's own variables (``ANTHROPIC_API_KEY``,
  ``GEMINI_API_KEY``, ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_REGION_NAME``,
  ``OPENAI_API_KEY``, ...); ``api_key_env`` names another variable to take the key from.
  An ``openai/`` model with a ``base_url`` and no key at all sends the placeholder ``EMPTY``
  (local servers take any key). Every key-like variable's value is kept out of the texts
  this backend returns or logs.
- ``base_url`` (LiteLLM's ``api_base``) points a model string at another server, e.g.
  ``openai/MODEL`` at a vLLM server or a gateway.
- Errors: a timeout is ``BackendTimeout``; 5xx, 429, refused connections and replies LiteLLM
  cannot read are retried, then ``BackendError`` (the policy records an infrastructure error);
  401/403/404 and 400/422 (a request the provider will never take: an unknown model string, a
  parameter or content part the model does not support, a prompt over its context) are
  ``ConfigError``. A connection that fails (refused, unknown host, reset) reads as it does
  from ``openai:`` (``connection to ADDRESS failed (ConnectError(...))``) and is retried with
  the same backoff, although LiteLLM reports it as an HTTP 500 (``InternalServerError``
  wrapping the transport error): the transport error is found in the exception's chain.
- Quiet: LiteLLM's and pydantic's warnings about LiteLLM's own types (pydantic's notes on its
  ``ReadOnly`` TypedDict items, deprecations attributed to LiteLLM's modules) are filtered
  where LiteLLM is loaded, and its loggers show errors only (unless ``LITELLM_LOG`` is set),
  so a run prints no third-party warnings.
- LiteLLM's own retries are off (``num_retries=0``, ``max_retries=0``); parameters a provider
  does not take (``seed`` on Anthropic) are dropped (``drop_params``).
- Nothing is fetched for metadata: before LiteLLM is imported the backend sets
  ``LITELLM_LOCAL_MODEL_COST_MAP=True``, ``LITELLM_OFFLINE_MODE=true`` and
  ``LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS=True`` (bundled cost map, tokenizers and header
  tables). ``litellm`` is imported on first use (the ``litellm`` extra).
- Deadline: the attempt runs in a worker thread; past the deadline the caller stops waiting
  (``BackendTimeout``) and the abandoned request ends at its own ``timeout``.
  ``max_reply_bytes`` is checked on the reply LiteLLM returns (after it was read).
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
import warnings
from typing import Any

from hear2act_agents.llm.backends.base import BackendError, BackendTimeout
from hear2act_agents.llm.backends.openai_http import HttpChatBackend, limiter_for
from hear2act_agents.llm.backends.settings import HttpSettings
from hear2act_env.errors import ConfigError, MissingExtraError
from hear2act_env.redaction import redact_url, redact_urls

__all__ = ["OFFLINE_ENV", "LiteLLMBackend", "load_litellm"]

#: Set before LiteLLM is imported: no cost map, tokenizer or header table from the network.
OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_OFFLINE_MODE": "true",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
}

#: Keys of the request that go to ``litellm.completion`` as arguments; the rest (``extra_body``
#: and ``chat_template_kwargs``) goes as its ``extra_body``.
_ARGUMENTS = (
    "model",
    "messages",
    "temperature",
    "max_tokens",
    "top_p",
    "seed",
    "max_completion_tokens",  # a reasoning model's token limit (``reasoning=true``)
    "reasoning_effort",
)

#: Environment variables whose values are credentials (kept out of logs and messages).
_KEY_NAME = re.compile(r"(API_KEY|AUTH_TOKEN|SECRET_ACCESS_KEY|SESSION_TOKEN|_TOKEN|_SECRET)$")

#: LiteLLM's loggers (each with its own stderr handler): errors only, unless ``LITELLM_LOG``.
LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")

#: The most links of an exception's chain (``__cause__``/``__context__``) looked through.
_CHAIN_MAX = 16

_LOCK = threading.Lock()


def quiet_litellm() -> None:
    """Filter the third-party warnings LiteLLM brings (process-wide, since its calls run in
    worker threads where ``catch_warnings`` cannot reach): every warning attributed to a
    ``litellm`` module, and pydantic's notes on the ``ReadOnly`` items of LiteLLM's TypedDicts
    (raised from pydantic's own modules when LiteLLM first builds a model, on the first call).
    Other code's warnings are untouched."""
    warnings.filterwarnings("ignore", module=r"litellm(\.|$)")
    warnings.filterwarnings(
        "ignore",
        message=r"Items? .* on TypedDict class .* (is|are) using the `ReadOnly` qualifier",
        category=UserWarning,
        module=r"pydantic(\.|$)",
    )


def load_litellm() -> Any:
    """The ``litellm`` module, imported with ``OFFLINE_ENV`` set, its third-party warnings
    filtered (``quiet_litellm``), its loggers at ERROR (unless ``LITELLM_LOG`` is set) and its
    console help texts off; ``MissingExtraError`` naming the ``litellm`` extra when it is not
    installed."""
    with _LOCK:
        os.environ.update(OFFLINE_ENV)
        quiet_litellm()
        try:
            with warnings.catch_warnings():  # anything else its import says, once
                warnings.simplefilter("ignore", UserWarning)
                warnings.simplefilter("ignore", DeprecationWarning)
                import litellm
        except ImportError as exc:
            raise MissingExtraError("litellm", "litellm") from exc
        litellm.suppress_debug_info = True  # no "Give Feedback" banner on every error
        if hasattr(litellm, "telemetry"):
            litellm.telemetry = False
        if not os.environ.get("LITELLM_LOG"):
            for name in LOGGERS:
                logging.getLogger(name).setLevel(logging.ERROR)
        return litellm


class LiteLLMBackend(HttpChatBackend):
    """A LiteLLM model string as a chat backend (see the module docstring)."""

    kind = "litellm"

    def _connect(self, model: str, options: HttpSettings) -> None:
        """LiteLLM (imported now), the provider of ``model`` and the server it names."""
        self._check_scheme(options.base_url)
        base_url = options.base_url
        self._litellm = load_litellm()
        self._httpx = self._litellm_httpx()
        try:
            _, provider, _, _ = self._litellm.get_llm_provider(model, api_base=base_url)
        except Exception as exc:  # noqa: BLE001 - LiteLLM's BadRequestError, ValueError...
            raise ConfigError(
                f"litellm backend: model {redact_urls(model)!r} names no provider LiteLLM knows "
                f"({type(exc).__name__}); expected PROVIDER/MODEL, e.g. "
                "'anthropic/claude-3-5-haiku-latest', 'gemini/gemini-2.0-flash', "
                "'openai/gpt-4o-mini'"
            ) from None
        self.provider = str(provider)
        self.base_url = str(base_url).rstrip("/") if base_url else None
        self.url = self.base_url
        server = self.base_url or _model_url(model)  # oobabooga/http://HOST, huggingface/...
        self.shown_url = redact_url(server) if server else f"the {provider} API"
        self.shown_base = self.shown_url
        self.name = f"litellm:{redact_urls(model)}"  # a URL in the model string: no password
        where = self.base_url or f"litellm:{self.provider}"
        self.limiter = limiter_for(where, options.max_concurrency)

    # -- what differs from openai: ---------------------------------------------------------
    def _litellm_httpx(self) -> Any:
        import httpx  # a dependency of litellm: ``_post`` names its exception classes

        return httpx

    def _api_key(self) -> str | None:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            return key
        if self.provider == "openai" and self.base_url and not os.environ.get("OPENAI_API_KEY"):
            return "EMPTY"  # a local OpenAI-compatible server: the SDK insists on some key
        return None

    def _secrets(self) -> list[str]:
        names = {n for n in os.environ if _KEY_NAME.search(n.upper())}
        if self.api_key_env:
            names.add(self.api_key_env)
        values = {os.environ.get(n) or "" for n in names}
        return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)

    def _secret(self) -> str | None:
        secrets = self._secrets()
        return secrets[0] if secrets else None

    def _credentials_hint(self) -> str:
        if self.api_key_env:
            return f"set the API key in the environment variable {self.api_key_env!r}"
        try:
            missing = self._litellm.validate_environment(self.model).get("missing_keys") or []
        except Exception:  # noqa: BLE001 - only a hint
            missing = []
        names = ", ".join(map(str, missing)) or f"the {self.provider} key variables"
        return f"set {names} (LiteLLM reads them), or name another variable with api_key_env"

    def _arguments(self, payload: dict[str, Any]) -> dict[str, Any]:
        """``litellm.completion``'s keywords for one request body built by the shared code."""
        kwargs = {k: payload[k] for k in _ARGUMENTS if k in payload}
        extra = {k: v for k, v in payload.items() if k not in _ARGUMENTS}
        if extra:
            kwargs["extra_body"] = extra
        if self.base_url:
            kwargs["api_base"] = self.base_url
        key = self._api_key()
        if key:
            kwargs["api_key"] = key
        kwargs.update(timeout=self.timeout, max_retries=0, num_retries=0, drop_params=True)
        return kwargs

    def _exchange(self, payload: dict[str, Any], budget: float) -> tuple[int, Any, bytes]:
        """One attempt by ``litellm.completion``: (status, headers, body) as the shared retry
        loop reads them (a LiteLLM error becomes its HTTP status and message), within
        ``budget`` seconds; a timeout raises ``BackendTimeout``, a request the provider
        will never take ``ConfigError``."""
        kwargs = self._arguments(payload)
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["result"] = self._litellm.completion(**kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name="hear2act-litellm", daemon=True).start()
        if not (done.wait(max(budget, 0.0)) or done.is_set()):
            raise BackendTimeout(
                f"{self.name}: the reply was not complete within the call's deadline of "
                f"{self.deadline:g} s (deadline)"
            )
        if "error" in box:
            return self._failure(box["error"])
        try:
            data = box["result"].model_dump()
            body = json.dumps(data, default=str).encode("utf-8")
        except Exception as exc:  # noqa: BLE001 - a reply LiteLLM could not shape
            raise BackendError(
                self.redact_text(f"{self.name}: unreadable reply from LiteLLM ({exc!r})")
            ) from None
        if len(body) > self.max_reply_bytes:
            raise BackendError(
                f"{self.name}: the reply exceeds {self.max_reply_bytes} bytes (max_reply_bytes)"
            )
        return 200, {}, body

    def _failure(self, exc: BaseException) -> tuple[int, Any, bytes]:
        """A LiteLLM exception as (status, headers, message) for the retry loop, or raised."""
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise exc
        what = str(exc) or type(exc).__name__  # LiteLLM's messages name their class
        timeout_types = tuple(
            t
            for t in (getattr(self._litellm, "Timeout", None), self._httpx.TimeoutException)
            if isinstance(t, type)
        )
        if isinstance(exc, timeout_types):
            raise BackendTimeout(
                self.redact_text(f"{self.name}: no reply within {self.timeout:g} s ({what})")
            )
        transport = self._transport_error(exc)
        if transport is not None:  # the shared loop: "connection to ... failed", retried
            raise transport
        status = getattr(exc, "status_code", None)
        if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status < 600:
            raise BackendError(self.redact_text(f"{self.name}: LiteLLM failed ({what})"))
        if status in (400, 422):
            raise ConfigError(
                f"{self.name}: the provider refused the request (HTTP {status}); check the model "
                f"string and the settings: {self._excerpt(what, 300)}"
            )
        raw = getattr(exc, "litellm_response_headers", None)
        if raw is None:
            raw = getattr(getattr(exc, "response", None), "headers", None)
        try:
            headers = {str(k).lower(): str(v) for k, v in dict(raw or {}).items()}
        except (TypeError, ValueError):
            headers = {}
        return status, headers, what.encode("utf-8", "replace")

    def _transport_error(self, exc: BaseException) -> BaseException | None:
        """The connection failure under a LiteLLM exception, as the ``httpx`` error the shared
        loop reads as ``openai:`` does (LiteLLM reports a refused connection as an HTTP 500
        wrapping ``openai.APIConnectionError`` wrapping ``httpx.ConnectError``): the first
        ``httpx.TransportError`` of the chain, else a socket error of it (refused, reset, an
        unknown host) as ``httpx.ConnectError``; None for a reply the server did send."""
        seen: set[int] = set()
        socket_error: OSError | None = None
        link: BaseException | None = exc
        while link is not None and id(link) not in seen and len(seen) < _CHAIN_MAX:
            seen.add(id(link))
            if isinstance(link, self._httpx.TransportError):
                return link
            if socket_error is None and isinstance(link, ConnectionError | socket.gaierror):
                socket_error = link
            link = link.__cause__ or link.__context__
        if socket_error is not None:
            return self._httpx.ConnectError(str(socket_error) or type(socket_error).__name__)
        return None


def _model_url(model: str) -> str | None:
    """The server URL a model string carries (``oobabooga/http://HOST:5000``), or None."""
    found = re.search(r"[A-Za-z][A-Za-z0-9+.-]*://\S*", model)
    return found.group(0) if found else None
