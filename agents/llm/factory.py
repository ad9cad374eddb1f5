"""``make_llm_agent``: an LLM policy from a spec string.

Specs: ``openai:MODEL`` (an OpenAI-compatible server), ``litellm:PROVIDER/MODEL`` (any
provider LiteLLM knows, with the same calls, logs and errors as ``openai:``), ``hf:PATH`` (a local transformers chat
model), ``qwen2-audio:PATH`` and ``qwen2.5-omni:PATH`` (audio LLMs). Settings that are not
fields of a backend's settings dataclass (or the policy's) raise ``ConfigError``. ``trust_audio`` (any spec; the
CLI's ``--trust-audio``) skips the hearing check of an ``openai:`` backend with ``send_audio``
and is counted in the agent's stats (``unchecked_audio_calls``), so the report says so; local
audio models hear by construction and ignore it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hear2act_env import jsonsafe
from hear2act_env.errors import ConfigError
from hear2act_env.policy import Policy

__all__ = [
    "SPEC_PREFIXES",
    "backend_setting_types",
    "check_backend_settings",
    "check_settings",
    "hears_audio",
    "make_backend",
    "make_llm_agent",
    "split_spec",
    "typed_settings",
]

SPEC_PREFIXES: tuple[str, ...] = ("openai", "litellm", "hf", "qwen2-audio", "qwen2.5-omni")

#: Specs served over the network (they take ``base_url``, ``trust_audio`` and ``send_audio``).
REMOTE_PREFIXES: tuple[str, ...] = ("openai", "litellm")

#: Settings that configure the policy rather than the backend (``trust_audio`` goes to an
#: ``openai:`` backend, and is accepted, unused, by the other specs of a grid).
POLICY_SETTINGS = (
    "name",
    "run",
    "topic_matcher",
    "topic_threshold",
    "use_audio",
    "keep_log",
    "max_audio_clips",
    "trust_audio",
    "prompt",
    "sampling_seed",
)


def split_spec(spec: str) -> tuple[str, str]:
    """``"prefix:rest"`` -> (prefix, rest); unknown prefixes raise ``ConfigError``."""
    if not isinstance(spec, str):
        raise ConfigError(f"agent spec: expected a string, got {spec!r}")
    prefix, sep, rest = spec.partition(":")
    if not sep or prefix not in SPEC_PREFIXES:
        raise ConfigError(
            f"agent spec: unknown {spec!r}; known prefixes: "
            + ", ".join(f"'{p}:'" for p in SPEC_PREFIXES)
        )
    if not rest:
        raise ConfigError(f"agent spec {spec!r}: nothing after '{prefix}:'")
    return prefix, rest


def check_settings(
    spec: str, settings: dict[str, Any], *, base_url: str | None = None
) -> dict[str, Any]:
    """``settings`` typed for ``spec``'s backend (``typed_settings``), or a ``ConfigError``: a
    setting that neither the backend nor the policy takes (naming the valid ones), a
    ``base_url`` for a local model, a local model folder that does not exist. Builds nothing:
    ``eval`` calls it before the first episode."""
    prefix, rest = split_spec(spec)
    local = Path(rest).expanduser()
    if prefix not in REMOTE_PREFIXES and rest.startswith(("/", ".", "~")) and not local.exists():
        raise ConfigError(
            f"{spec}: no model folder at {rest!r}; local model specs take a path or a hub id "
            "already in the local cache (nothing is downloaded)"
        )
    accepted = set(backend_setting_types(prefix)) - {"base_url", "cache_dir"}
    given = {k for k, v in settings.items() if v is not None}
    unknown = sorted(given - accepted - set(POLICY_SETTINGS))
    if unknown:
        raise ConfigError(
            f"{spec}: unknown settings {unknown}; this backend accepts {sorted(accepted)} and "
            f"the policy {sorted(POLICY_SETTINGS)}"
        )
    if base_url is not None and prefix not in REMOTE_PREFIXES:
        raise ConfigError(f"{spec}: base_url applies to 'openai:' and 'litellm:' specs only")
    return typed_settings(spec, settings)


_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}
#: Types of the policy's settings (the backends' come from their settings dataclasses).
POLICY_TYPES: dict[str, str] = {
    "name": "str",
    "run": "int",
    "topic_matcher": "str",
    "topic_threshold": "float",
    "use_audio": "bool",
    "keep_log": "bool",
    "max_audio_clips": "int",
    "trust_audio": "bool",
    "prompt": "str",
    "sampling_seed": "int",
}
_EXPECTED = {
    "bool": "true or false",
    "int": "an integer",
    "float": "a number",
    "dict": "a JSON object",
    "str": "a string",
}


def backend_setting_types(prefix: str) -> dict[str, tuple[str | None, bool]]:
    """The settings the backend of ``prefix`` takes: the fields of its ``settings_class``
    (``HttpSettings`` or ``LocalGenerationSettings`` and their subclasses), each with its type
    name and whether None is allowed (``backends.settings.setting_types``)."""
    from hear2act_agents.llm.backends.settings import setting_types

    return setting_types(_backend_class(prefix).settings_class)


def _coerce(spec: str, name: str, value: Any, kind: str, optional: bool) -> Any:
    """``value`` as ``kind``: text from ``--setting`` (JSON or a bare word) or a Python value."""
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{spec}: setting {name}: got null, expected {_EXPECTED[kind]}")
    if isinstance(value, str) and kind != "str":
        text = value.strip()
        if kind == "bool" and text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        try:
            value = jsonsafe.loads(text)
        except ValueError:
            raise ConfigError(
                f"{spec}: setting {name}: got {value!r}, expected {_EXPECTED[kind]}"
            ) from None
        return _coerce(spec, name, value, kind, optional)
    if kind == "bool" and not isinstance(value, bool) and value in (0, 1):
        value = bool(value)  # 0 / 1
    ok = {
        "bool": isinstance(value, bool),
        "int": isinstance(value, int)
        and not isinstance(value, bool)
        or isinstance(value, float)
        and value.is_integer(),
        "float": isinstance(value, int | float) and not isinstance(value, bool),
        "dict": isinstance(value, dict),
        "str": isinstance(value, str),
    }[kind]
    if not ok:
        raise ConfigError(f"{spec}: setting {name}: got {value!r}, expected {_EXPECTED[kind]}")
    return int(value) if kind == "int" else float(value) if kind == "float" else value


def typed_settings(spec: str, settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with each value turned into the type its setting takes (the field of the
    backend's settings dataclass, or ``POLICY_TYPES``): text values (``--setting KEY=VALUE``) are read as
    JSON (``true``, ``8``, ``0.5``, ``{"chat_template_kwargs": {"enable_thinking": false}}``),
    with bare words for strings and true/false/yes/no/on/off/1/0 for booleans. A value that does
    not fit is a ``ConfigError`` naming the setting, the value and what was expected."""
    prefix, _ = split_spec(spec)
    types = backend_setting_types(prefix)
    out = dict(settings)
    for name, value in settings.items():
        if name in POLICY_TYPES:
            kind, optional = POLICY_TYPES[name], True
        elif name in types:
            kind, optional = types[name]
        else:
            continue
        if kind is not None:
            out[name] = _coerce(spec, name, value, kind, optional)
    return out


def hears_audio(spec: str, settings: dict[str, Any]) -> bool:
    """Whether an agent built from ``spec`` with ``settings`` takes the audio itself (audio LLM
    specs, ``openai:`` or ``litellm:`` with ``send_audio``), unless ``use_audio`` is off.
    Builds nothing."""
    prefix, _ = split_spec(spec)
    typed = typed_settings(spec, {k: v for k, v in settings.items() if v is not None})
    if typed.get("use_audio") is False:
        return False
    if prefix in REMOTE_PREFIXES:
        return bool(typed.get("send_audio", False))
    return prefix in ("qwen2-audio", "qwen2.5-omni")


def _backend_class(prefix: str) -> type:
    if prefix == "openai":
        from hear2act_agents.llm.backends.openai_http import OpenAIChatBackend

        return OpenAIChatBackend
    if prefix == "litellm":
        from hear2act_agents.llm.backends.litellm_backend import LiteLLMBackend

        return LiteLLMBackend
    if prefix == "hf":
        from hear2act_agents.llm.backends.hf_chat import TransformersChatBackend

        return TransformersChatBackend
    from hear2act_agents.llm.backends.audio import Qwen2AudioBackend, Qwen25OmniBackend

    return Qwen2AudioBackend if prefix == "qwen2-audio" else Qwen25OmniBackend


def check_backend_settings(
    spec: str, settings: dict[str, Any], *, base_url: str | None = None
) -> dict[str, Any]:
    """``check_settings`` for a backend alone: a policy setting is a ``ConfigError`` too."""
    misplaced = sorted(k for k in settings if k in POLICY_SETTINGS)
    if misplaced:
        raise ConfigError(f"{spec}: {misplaced} configure an agent, not a model backend")
    return check_settings(spec, settings, base_url=base_url)


def make_backend(
    spec: str,
    *,
    base_url: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    trust_audio: bool = False,
    **settings: Any,
) -> Any:
    """The chat backend of ``spec`` alone (no policy): what ``make_llm_agent`` wraps, and what
    ``hear2act audit --model`` labels clips with. ``settings`` are backend keywords only (a
    policy setting, or an unknown one, is a ``ConfigError``); ``trust_audio`` applies to
    served specs."""
    prefix, rest = split_spec(spec)
    settings = check_backend_settings(spec, settings, base_url=base_url)
    cls = _backend_class(prefix)
    if prefix in REMOTE_PREFIXES:
        return cls(
            rest, base_url=base_url, cache_dir=cache_dir, trust_audio=trust_audio, **settings
        )
    return cls(rest, cache_dir=cache_dir, **settings)


def make_llm_agent(
    spec: str,
    *,
    base_url: str | None = None,
    perceiver: Any = None,
    allow_clarify: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    **settings: Any,
) -> Policy:
    """Build an ``LLMPolicy`` for ``spec``.

    - ``base_url``: the API root for ``openai:`` specs (default ``$OPENAI_BASE_URL`` or the
      OpenAI API) and LiteLLM's ``api_base`` for ``litellm:`` specs (default: the provider's
      own); an error for the others.
    - ``perceiver``: None; a perceiver object; ``"self"`` (audio specs: two-stage T+S-hat with
      the same model as first stage); ``"self-text"`` (any spec: the same first stage on the
      transcript alone, the control of T+S-hat); ``"affect:PATH"`` or ``"prosody:PATH"``
      (``hear2act_agents.perceivers.make_perceiver``).
    - ``allow_clarify``: False for spoken assistants (match the env's).
    - ``cache_dir``: on-disk response cache folder (None: no cache).
    - ``settings``: backend keywords (``temperature``, ``max_tokens``/``max_new_tokens``,
      ``timeout``, ``max_retries``, ``max_concurrency``, ``api_key_env``, ``device``,
      ``dtype``, ...) and policy ones (``name``, ``run``, ``topic_matcher``,
      ``topic_threshold``, ``use_audio``).
    """
    from hear2act_agents.llm.parsing import (
        KeywordTopicMatcher,
        MiniLMTopicMatcher,
        default_topic_matcher,
    )
    from hear2act_agents.llm.perceiver import AudioLLMPerceiver, TranscriptPerceiver
    from hear2act_agents.llm.policy import LLMPolicy
    from hear2act_agents.perceivers import make_perceiver

    settings = check_settings(spec, settings, base_url=base_url)
    policy_kw = {k: settings.pop(k) for k in POLICY_SETTINGS if k in settings}
    trust_audio = bool(policy_kw.pop("trust_audio", False))
    backend = make_backend(
        spec, base_url=base_url, cache_dir=cache_dir, trust_audio=trust_audio, **settings
    )
    if perceiver == "self":
        if not getattr(backend, "supports_audio", False):
            raise ConfigError(
                "perceiver 'self' needs an audio LLM spec (qwen2-audio:, qwen2.5-omni:, or "
                "openai:/litellm: with send_audio=true); 'self-text' is the transcript-only "
                "first stage"
            )
        perceiver = AudioLLMPerceiver(backend)
    elif perceiver == "self-text":
        perceiver = TranscriptPerceiver(backend)
    elif perceiver is not None:
        perceiver = make_perceiver(perceiver, device=settings.get("device"))
    matcher = policy_kw.pop("topic_matcher", None)
    threshold = policy_kw.pop("topic_threshold", None)
    if isinstance(matcher, str):
        if matcher not in ("minilm", "keyword"):
            raise ConfigError(f"topic_matcher: got {matcher!r}, expected 'minilm' or 'keyword'")
        if matcher == "minilm":
            matcher = (
                MiniLMTopicMatcher(threshold) if threshold is not None else MiniLMTopicMatcher()
            )
        else:
            matcher = (
                KeywordTopicMatcher(threshold) if threshold is not None else KeywordTopicMatcher()
            )
    elif matcher is None and threshold is not None:
        matcher = default_topic_matcher().__class__(threshold)
    name = policy_kw.pop("name", None)
    if name is None:
        name = spec if perceiver is None else f"{spec}+{getattr(perceiver, 'name', 'perceiver')}"
    return LLMPolicy(
        backend,
        name=name,
        allow_clarify=allow_clarify,
        perceiver=perceiver,
        topic_matcher=matcher,
        **policy_kw,
    )
