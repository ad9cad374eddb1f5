"""The settings of a backend as one frozen object: ``HttpSettings`` for the backends served over
the network (``openai:``, ``litellm:`` and any provider built on ``HttpChatBackend``) and
``LocalGenerationSettings`` for the local ``transformers`` ones (``hf:`` and the audio LLMs).

A backend takes ``model`` plus one of these (``Backend(model, settings)``), or the same
keywords as before (``Backend(model, timeout=5.0)``: they build the backend's
``settings_class``). The fields are what ``--setting KEY=VALUE`` accepts for a spec, with their
types and defaults (``setting_types``). ``validate(kind)`` checks the values; its messages name
the backend by ``kind``. Importing this module is light (no httpx, no torch).
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from dataclasses import dataclass
from typing import Any, TypeVar, Union

from hear2act_env.errors import ConfigError

__all__ = [
    "HttpSettings",
    "LocalGenerationSettings",
    "MAX_TOKENS_LIMIT",
    "finite_number",
    "make_settings",
    "setting_types",
]

#: The largest ``max_tokens`` sent: OpenAI-compatible servers read it as a 32-bit integer.
MAX_TOKENS_LIMIT = 2**31 - 1

#: Type names a setting may have (what ``--setting`` text is read as).
_TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str", dict: "dict"}

S = TypeVar("S")


def finite_number(value: Any) -> bool:
    """Whether ``value`` is a real, finite number (not NaN, not infinite, not a bool, not an
    integer too large for a float): what a numeric backend setting must be."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past the float range
        return False


def make_settings(cls: type[S], settings: S | None, overrides: dict[str, Any]) -> S:
    """``settings`` (default: ``cls()``) with ``overrides`` replacing its fields; an unknown
    keyword is a ``TypeError`` naming it, as a constructor keyword was."""
    base = settings if settings is not None else cls()
    if not isinstance(base, cls):
        raise ConfigError(
            f"settings: got {type(base).__name__}, expected {cls.__name__} (or keywords)"
        )
    return dataclasses.replace(base, **overrides) if overrides else base


def setting_types(cls: type) -> dict[str, tuple[str | None, bool]]:
    """Each field of the settings dataclass ``cls``: (type name, None allowed). The type name is
    one of bool, int, float, str, dict (the first that the annotation names), or None when it
    names none of them; None is allowed when the annotation or the default says so."""
    hints = typing.get_type_hints(cls)
    out: dict[str, tuple[str | None, bool]] = {}
    for f in dataclasses.fields(cls):
        hint = hints.get(f.name, Any)
        args = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else ()
        members = args or (hint,)
        optional = type(None) in members or f.default is None
        name = None
        for member in members:
            name = _TYPE_NAMES.get(typing.get_origin(member) or member)
            if name is not None:
                break
        out[f.name] = (name, optional)
    return out


def _check_finite(kind: str, numbers: dict[str, Any]) -> None:
    for name, value in numbers.items():  # NaN passes every comparison after this
        if value is not None and not finite_number(value):
            raise ConfigError(f"{kind} backend: {name} must be a finite number; got {value!r}")


#: The values ``HttpSettings.reasoning_effort`` takes (OpenAI's).
REASONING_EFFORTS = ("minimal", "low", "medium", "high")


@dataclass(frozen=True)
class HttpSettings:
    """What every backend served over HTTP takes: where and how to call (``base_url``,
    ``api_key_env``), retries and time bounds, concurrency, the reply cap, sampling, audio and
    the response cache. ``deadline`` None means twice ``timeout``; ``chat_template_kwargs`` go
    into the request body beside ``extra_body``; ``cache_dir`` None means no cache."""

    base_url: str | None = None
    api_key_env: str | None = None
    timeout: float = 120.0
    max_retries: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 120.0
    max_concurrency: int = 8
    deadline: float | None = None
    max_reply_bytes: int = 4_000_000
    temperature: float = 0.0
    max_tokens: int = 2048
    top_p: float | None = None
    send_seed: bool = True
    send_audio: bool = False
    trust_audio: bool = False
    extra_body: dict[str, Any] | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    cache_dir: str | os.PathLike[str] | None = None
    #: A reasoning model (OpenAI's o-series, gpt-5 class): the token limit goes as
    #: ``max_completion_tokens`` and no ``temperature`` or ``top_p`` is sent (their API refuses
    #: them); ``reasoning_effort`` ("minimal", "low", "medium", "high") is sent when given.
    reasoning: bool = False
    reasoning_effort: str | None = None

    def validate(self, kind: str) -> None:
        """Check the limits: a ``ConfigError`` naming the backend ``kind``, the setting, its
        value and what was expected."""
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise ConfigError(
                f"{kind} backend: reasoning_effort must be one of {', '.join(REASONING_EFFORTS)}; "
                f"got {self.reasoning_effort!r}"
            )
        if self.reasoning_effort is not None and not self.reasoning:
            raise ConfigError(f"{kind} backend: reasoning_effort applies with reasoning=true")
        if self.reasoning and (self.temperature != 0 or self.top_p is not None):
            raise ConfigError(
                f"{kind} backend: a reasoning model takes no temperature or top_p (its API "
                f"refuses them); got temperature={self.temperature!r}, top_p={self.top_p!r}"
            )
        for name in ("base_url", "api_key_env"):  # an empty value must not mean "the default"
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(
                    f"{kind} backend: {name} must be a non-empty string (None: the default); "
                    f"got {value!r}"
                )
        _check_finite(
            kind,
            {
                "timeout": self.timeout,
                "backoff_base": self.backoff_base,
                "backoff_max": self.backoff_max,
                "max_retry_after": self.max_retry_after,
                "temperature": self.temperature,
                "deadline": self.deadline,
                "top_p": self.top_p,
            },
        )
        if (
            self.timeout <= 0
            or self.max_retries < 0
            or self.max_concurrency < 1
            or self.max_tokens < 1
        ):
            raise ConfigError(
                f"{kind} backend: timeout must be > 0, max_retries >= 0, max_concurrency >= 1 "
                "and max_tokens >= 1"
            )
        if self.max_tokens > MAX_TOKENS_LIMIT:  # sent as is: a 32-bit integer on the server
            raise ConfigError(
                f"{kind} backend: max_tokens must be at most {MAX_TOKENS_LIMIT}; "
                f"got {self.max_tokens!r}"
            )
        if (self.deadline is not None and self.deadline <= 0) or self.max_reply_bytes < 1024:
            raise ConfigError(
                f"{kind} backend: deadline must be > 0 (wall-clock seconds per call, default: 2 x "
                f"timeout) and max_reply_bytes >= 1024; got deadline={self.deadline!r}, "
                f"max_reply_bytes={self.max_reply_bytes!r}"
            )
        if self.temperature < 0 or (self.top_p is not None and not 0 < self.top_p <= 1):
            raise ConfigError(
                f"{kind} backend: temperature must be >= 0 and top_p in (0, 1]; got "
                f"temperature={self.temperature!r}, top_p={self.top_p!r}"
            )

    @property
    def call_deadline(self) -> float:
        """The wall-clock bound of one call in seconds (``deadline``, default 2 x ``timeout``)."""
        return float(self.deadline) if self.deadline is not None else 2.0 * float(self.timeout)

    def request_body(self) -> dict[str, Any]:
        """``extra_body`` with ``chat_template_kwargs`` merged into its own
        ``chat_template_kwargs`` (vLLM and SGLang read them from the request body)."""
        body = dict(self.extra_body or {})
        if self.chat_template_kwargs:
            body["chat_template_kwargs"] = {
                **body.get("chat_template_kwargs", {}),
                **self.chat_template_kwargs,
            }
        return body


@dataclass(frozen=True)
class LocalGenerationSettings:
    """What every local ``transformers`` backend takes: where to run (``device``, None: the
    best available; ``dtype``), sampling (greedy at ``temperature`` 0), the token limit,
    batching of concurrent requests, chat template keywords and the response cache."""

    device: str | None = None
    dtype: str | None = "auto"
    temperature: float = 0.0
    top_p: float | None = None
    max_new_tokens: int = 1024
    max_batch_size: int = 8
    batch_wait_s: float = 0.0
    chat_template_kwargs: dict[str, Any] | None = None
    cache_dir: str | os.PathLike[str] | None = None

    def validate(self, kind: str) -> None:
        """Check the limits: a ``ConfigError`` naming the backend ``kind``."""
        _check_finite(kind, {"temperature": self.temperature})
        if self.max_new_tokens < 1 or self.max_batch_size < 1 or self.temperature < 0:
            raise ConfigError(
                f"{kind} backend: max_new_tokens and max_batch_size must be >= 1, temperature >= 0"
            )
