"""The agent registry: one table from an agent spec's prefix to the factory that builds it.

A spec is a baseline name (``"prober"``) or ``PREFIX:REST``: ``openai:MODEL``,
``litellm:PROVIDER/MODEL`` (the ``litellm`` extra), ``hf:PATH``,
``qwen2-audio:PATH``, ``qwen2.5-omni:PATH`` (LLM agents, ``hear2act_agents.llm``),
``ppo:PATH`` or ``maskable-ppo:PATH`` (a trained RL policy, ``hear2act_agents.rl``; PATH may be a
shipped model's name). Every factory has the signature ``factory(spec, *, allow_clarify=True,
**settings) -> Policy``; ``allow_clarify=False`` makes a spoken assistant that never CLARIFYs.
Only LLM kinds take settings. Factories are imported on first use, so this module stays light
(no torch). Unknown specs raise ``ConfigError`` (a ``ValueError``) naming what is known.

    make_agent("prober")
    make_agent("openai:gpt-4o-mini", base_url="http://localhost:8000/v1", temperature=0)
    make_agent("ppo:prosody-T-c0.05", allow_clarify=False)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from hear2act_agents.baselines import BASELINES
from hear2act_env.errors import ConfigError
from hear2act_env.policy import Policy, check_policy

__all__ = [
    "AGENT_KINDS",
    "BASELINES",
    "PERCEIVER_LABELS",
    "AgentFactory",
    "AgentKind",
    "agent_kind",
    "make_agent",
    "perceiver_label",
    "split_label",
]


@dataclass(frozen=True)
class AgentKind:
    """One row of the registry: where the factory lives and what it accepts."""

    factory: str  # "module:function", imported on first use
    takes_settings: bool  # model settings (base_url, perceiver, cache_dir, temperature, ...)
    help: str

    def build(self, spec: str, allow_clarify: bool, settings: dict[str, Any]) -> Policy:
        module, _, function = self.factory.partition(":")
        make = getattr(importlib.import_module(module), function)
        return make(spec, allow_clarify=allow_clarify, **settings)


_LLM = "hear2act_agents.llm.factory:make_llm_agent"
_RL = "hear2act_agents.rl.policy:make_rl_agent"

#: Spec prefix -> kind. ``baseline`` also stands for specs without a prefix.
AGENT_KINDS: dict[str, AgentKind] = {
    "baseline": AgentKind(
        "hear2act_agents.baselines:make_baseline", False, "rule baseline: " + ", ".join(BASELINES)
    ),
    "openai": AgentKind(_LLM, True, "openai:MODEL, a model behind an OpenAI-compatible API"),
    "litellm": AgentKind(
        _LLM,
        True,
        "litellm:PROVIDER/MODEL, any provider LiteLLM knows (anthropic/, gemini/, bedrock/, "
        "openai/...; the litellm extra)",
    ),
    "hf": AgentKind(_LLM, True, "hf:PATH, a local transformers chat model"),
    "qwen2-audio": AgentKind(_LLM, True, "qwen2-audio:PATH, a local Qwen2-Audio model"),
    "qwen2.5-omni": AgentKind(_LLM, True, "qwen2.5-omni:PATH, a local Qwen2.5-Omni thinker"),
    "ppo": AgentKind(_RL, False, "ppo:PATH, a trained RL run folder or shipped model name"),
    "maskable-ppo": AgentKind(_RL, False, "maskable-ppo:PATH, the same as ppo:PATH"),
}


#: The label a first stage adds to an LLM agent's name in results (``openai:M+stage1-text``),
#: by the kind of ``perceiver`` setting: the model's own audio first stage (T+S-hat), its
#: transcript-only control, the reference prosody classifier, an emotion recognizer.
PERCEIVER_LABELS = {
    "self": "stage1",
    "self-text": "stage1-text",
    "prosody": "prosody",
    "affect": "affect",
}


def perceiver_label(perceiver: Any) -> str | None:
    """The name label of a ``perceiver`` setting (None for none or a custom object)."""
    if not isinstance(perceiver, str) or not perceiver:
        return None
    return PERCEIVER_LABELS.get(perceiver.partition(":")[0] if ":" in perceiver else perceiver)


def split_label(name: str) -> tuple[str, str | None]:
    """``"openai:M+stage1-text"`` -> ``("openai:M", "stage1-text")``; names without a known
    label come back whole."""
    spec, sep, label = name.rpartition("+")
    if sep and spec and label in PERCEIVER_LABELS.values():
        return spec, label
    return name, None


def _known() -> list[str]:
    return sorted(BASELINES) + [f"{p}:..." for p in AGENT_KINDS if p != "baseline"]


def agent_kind(spec: str) -> tuple[str, AgentKind]:
    """``(prefix, kind)`` of ``spec``; unknown specs raise ``ConfigError``."""
    if not isinstance(spec, str) or not spec:
        raise ConfigError(f"agent: got {spec!r}, expected a name or PREFIX:REST spec")
    prefix, sep, rest = spec.partition(":")
    if not sep:
        if spec in BASELINES:
            return "baseline", AGENT_KINDS["baseline"]
        raise ConfigError(f"agent: unknown name {spec!r}; known agents: {_known()}")
    kind = AGENT_KINDS.get(prefix)
    if kind is None:
        raise ConfigError(f"agent: unknown prefix in {spec!r}; known agents: {_known()}")
    if not rest:
        raise ConfigError(f"agent: {spec!r} has nothing after '{prefix}:'")
    return prefix, kind


def make_agent(spec: str, *, allow_clarify: bool = True, **settings: Any) -> Policy:
    """Build the agent ``spec``. ``settings`` go to LLM agents; other kinds take none."""
    prefix, kind = agent_kind(spec)
    if settings and not kind.takes_settings:
        raise ConfigError(
            f"agent {spec!r} ({prefix}) takes no settings, got {sorted(settings)}; settings "
            "apply to LLM agents (openai:, litellm:, hf:, qwen2-audio:, qwen2.5-omni:)"
        )
    policy = kind.build(spec, bool(allow_clarify), settings)
    check_policy(policy, f"agent {spec!r}")
    return policy


@dataclass(frozen=True)
class AgentFactory:
    """A picklable ``spec -> Policy`` factory for the runner.

    ``settings`` reach the kinds that take settings (LLM agents) and no others, so one grid can
    hold an LLM agent and baselines; ``allow_clarify`` reaches every agent. A grid name may
    carry its first stage's label (``openai:M+stage1-text``, see ``PERCEIVER_LABELS``), which
    must match the ``perceiver`` setting.
    """

    settings: dict[str, Any] = field(default_factory=dict)
    allow_clarify: bool = True

    def __call__(self, name: str) -> Policy:
        spec, label = split_label(name)
        _, kind = agent_kind(spec)
        settings = self.settings if kind.takes_settings else {}
        if label is not None and label != perceiver_label(settings.get("perceiver")):
            raise ConfigError(
                f"agent {name!r}: its label {label!r} does not match the perceiver setting "
                f"{settings.get('perceiver')!r}"
            )
        return make_agent(spec, allow_clarify=self.allow_clarify, **settings)
