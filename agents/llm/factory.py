"""``make_llm_agent``: an LLM policy from a spec string.

Specs: ``openai:MODEL`` (an OpenAI-compatible server), ``hf:PATH`` (a local transformers chat
model), ``qwen2-audio:PATH`` and ``qwen2.5-omni:PATH`` (audio LLMs). Settings not listed in a
backend's keywords (or the policy's) raise ``ConfigError``.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

from hear2act_env.errors import ConfigError
from hear2act_env.policy import Policy

__all__ = ["SPEC_PREFIXES", "check_settings", "make_llm_agent", "split_spec", "typed_settings"]

SPEC_PREFIXES: tuple[str, ...] = ("openai", "hf", "qwen2-audio", "qwen2.5-omni")

#: Settings that configure the policy rather than the backend.
POLICY_SETTINGS = ("name", "run", "topic_matcher", "topic_threshold", "use_audio", "keep_log")


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
    if prefix != "openai" and rest.startswith(("/", ".", "~")) and not local.exists():
        raise ConfigError(
            f"{spec}: no model folder at {rest!r}; local model specs take a path or a hub id "
            "already in the local cache (nothing is downloaded)"
        )
    accepted = set(inspect.signature(_backend_class(prefix).__init__).parameters)
    accepted -= {"self", "model", "path", "base_url", "cache_dir"}
    given = {k for k, v in settings.items() if v is not None}
    unknown = sorted(given - accepted - set(POLICY_SETTINGS))
    if unknown:
        raise ConfigError(
            f"{spec}: unknown settings {unknown}; this backend accepts {sorted(accepted)} and "
            f"the policy {sorted(POLICY_SETTINGS)}"
        )
    if base_url is not None and prefix != "openai":
        raise ConfigError(f"{spec}: base_url applies to 'openai:' specs only")
    return typed_settings(spec, settings)


_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def typed_settings(spec: str, settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with text values (``--setting KEY=VALUE``) turned into the type the backend
    parameter takes, judged from its default or annotation: booleans from true/false/yes/no/
    1/0/on/off, numbers, and JSON objects (``extra_body``). A value that does not fit is a
    ``ConfigError`` naming the setting, the value and what was expected."""
    prefix, _ = split_spec(spec)
    params = inspect.signature(_backend_class(prefix).__init__).parameters
    out = dict(settings)
    for name, value in settings.items():
        param = params.get(name)
        if param is None or not isinstance(value, str | int | float) or isinstance(value, bool):
            continue
        default, note = param.default, str(param.annotation)
        try:
            if isinstance(default, bool) or note == "bool":
                text = str(value).strip().lower()
                if text not in _TRUE | _FALSE:
                    raise ValueError
                out[name] = text in _TRUE
            elif "dict" in note and isinstance(value, str):
                parsed = json.loads(value)
                if not isinstance(parsed, dict):
                    raise ValueError
                out[name] = parsed
            elif isinstance(default, int) or note == "int":
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError
                out[name] = int(value)
            elif isinstance(default, float) or "float" in note:
                out[name] = float(value)
        except (ValueError, TypeError):
            expected = (
                "true or false"
                if isinstance(default, bool) or note == "bool"
                else "a JSON object"
                if "dict" in note
                else "an integer"
                if isinstance(default, int) or note == "int"
                else "a number"
            )
            raise ConfigError(
                f"{spec}: setting {name}: got {value!r}, expected {expected}"
            ) from None
    return out


def _backend_class(prefix: str) -> type:
    if prefix == "openai":
        from hear2act_agents.llm.backends.openai_http import OpenAIChatBackend

        return OpenAIChatBackend
    if prefix == "hf":
        from hear2act_agents.llm.backends.hf_chat import TransformersChatBackend

        return TransformersChatBackend
    from hear2act_agents.llm.backends.audio import Qwen2AudioBackend, Qwen25OmniBackend

    return Qwen2AudioBackend if prefix == "qwen2-audio" else Qwen25OmniBackend


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
      OpenAI API); an error for the others.
    - ``perceiver``: None; a perceiver object; ``"self"`` (audio specs: two-stage T+S-hat with
      the same model as first stage); ``"affect:PATH"`` or ``"prosody:PATH"``
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
    from hear2act_agents.llm.perceiver import AudioLLMPerceiver
    from hear2act_agents.llm.policy import LLMPolicy
    from hear2act_agents.perceivers import make_perceiver

    prefix, rest = split_spec(spec)
    cls = _backend_class(prefix)
    settings = check_settings(spec, settings, base_url=base_url)
    policy_kw = {k: settings.pop(k) for k in POLICY_SETTINGS if k in settings}
    if prefix == "openai":
        backend = cls(rest, base_url=base_url, cache_dir=cache_dir, **settings)
    else:
        backend = cls(rest, cache_dir=cache_dir, **settings)
    if perceiver == "self":
        if not getattr(backend, "supports_audio", False):
            raise ConfigError(
                "perceiver 'self' needs an audio LLM spec (qwen2-audio:, qwen2.5-omni:)"
            )
        perceiver = AudioLLMPerceiver(backend)
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
