"""LLM agents: prompts, a tolerant reply parser, backends (OpenAI-compatible HTTP, local
transformers chat models, audio LLMs) and ``make_llm_agent``.

Importing this package is light: httpx, torch and transformers load only when a backend that
needs them is built (a missing one raises ``MissingExtraError`` naming the ``llm`` extra).
"""

from __future__ import annotations

from hear2act_agents.llm.factory import SPEC_PREFIXES, make_llm_agent
from hear2act_agents.llm.parsing import ParsedReply, parse_reply
from hear2act_agents.llm.policy import LLMPolicy
from hear2act_agents.llm.prompting import build_decision_messages, parse_options

__all__ = [
    "SPEC_PREFIXES",
    "LLMPolicy",
    "ParsedReply",
    "build_decision_messages",
    "make_llm_agent",
    "parse_options",
    "parse_reply",
]
