"""Named, versioned prompt templates for LLM agents.

A template is the instructions an agent reads (the system message) and the frame of each turn's
message (the conversation, the evidence block, the question). The evidence block and the
answer format are the same in every template: the access conditions stay comparable and the
parser reads every template's answers. A template's wording never changes under its name: a
new wording gets a new name (``...-v2``), so a manifest that names a template says what the
model read; ``tests/llm/test_templates.py`` pins each one's digest. Choose one with
``hear2act eval --prompt NAME`` (the ``prompt`` setting); the default is ``hear2act-v1``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from hear2act_env.constants import DEFAULT_PROMPT
from hear2act_env.errors import ConfigError

__all__ = ["DEFAULT_PROMPT", "TEMPLATES", "PromptTemplate", "get_template"]


@dataclass(frozen=True)
class PromptTemplate:
    """``system(domain, options_text, allow_clarify)`` and ``user(transcript, evidence)``."""

    name: str
    summary: str
    system: Callable[[str, str, bool], str]
    user: Callable[[str, str], str]

    def digest(self) -> str:
        """SHA-256 (16 hex digits) of the template's text on a fixed example: it changes
        exactly when what a model reads changes."""
        options = "1. Alpha | price: $10\n2. Beta | price: $20"
        sample = "\n---\n".join(
            [
                self.system("example", options, True),
                self.system("example", options, False),
                self.user("User: hello", "Evidence: none"),
                self.user("User: hello", ""),
            ]
        )
        return hashlib.sha256(sample.encode("utf-8")).hexdigest()[:16]


def _standard_system(domain: str, options_text: str, allow_clarify: bool) -> str:
    from hear2act_agents.llm.prompting import system_prompt

    return system_prompt(domain, options_text, allow_clarify)


def _standard_user(transcript: str, evidence: str) -> str:
    from hear2act_agents.llm.prompting import user_prompt

    return user_prompt(transcript, evidence)


def _brief_system(domain: str, options_text: str, allow_clarify: bool) -> str:
    from hear2act_agents.llm.prompting import format_rules, parse_options

    info = parse_options(options_text)
    acts = ["ASK about one attribute, or OPEN for anything else"]
    if allow_clarify:
        acts.append("CLARIFY: ask what is wrong with the option on the table")
    acts += [
        "RECOMMEND an option by its number",
        "CONFIRM to end on the option on the table, only once the customer is really happy with it",
    ]
    return (
        f"Help a customer choose one of these {domain} options. One of them fits best; the "
        "customer has needs they have not said yet.\n\n"
        f"Options:\n{options_text}\n\n"
        f"Attributes: {', '.join(info.attributes)}\n\n"
        "One action per turn: " + "; ".join(acts) + ".\n\n"
        f"{format_rules(allow_clarify, info.n_options or 11)}"
    )


def _brief_user(transcript: str, evidence: str) -> str:
    parts = [f"Conversation:\n{transcript}"]
    if evidence:
        parts.append(evidence)
    parts.append("Your action?")
    return "\n\n".join(parts)


#: The templates by name.
TEMPLATES: dict[str, PromptTemplate] = {
    t.name: t
    for t in (
        PromptTemplate(
            "hear2act-v1",
            "the instructions of every published run: each action explained, an example per action",
            _standard_system,
            _standard_user,
        ),
        PromptTemplate(
            "brief-v1",
            "the same task and answer format in a few lines, for models that do better with "
            "less text",
            _brief_system,
            _brief_user,
        ),
    )
}
assert DEFAULT_PROMPT in TEMPLATES


def get_template(name: str) -> PromptTemplate:
    """The template called ``name``; an unknown name is a ``ConfigError`` listing the known."""
    found = TEMPLATES.get(name) if isinstance(name, str) else None
    if found is None:
        raise ConfigError(f"prompt: got {name!r}, expected one of {', '.join(sorted(TEMPLATES))}")
    return found
