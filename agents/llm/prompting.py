"""Prompts for LLM agents: the decision prompt, the evidence block and the perception prompt.

Every access condition gets the same instructions. Conditions differ only in the *evidence
block* of the user message (docs/protocol.md#access-conditions, paper section 4.2):

- ``T``: no evidence block (the transcript alone).
- ``T+S``: the state tag of the latest user turn, with a one-line definition of resolved and
  unresolved (a ``state`` of 0, "withheld", shows no block: that is the no-label condition).
- ``T+S-hat`` and generic affect: a perceiver's one-sentence inference about the latest user
  audio (the ``perceived`` key added by ``hear2act_env.wrappers.PerceivedState``, or a sentence
  the policy obtained itself from a first-stage model call).
- ``A`` / ``A+T``: a note that the recording of the latest user turn is attached (the audio
  itself goes to the backend as a separate input).

Text assistants may ASK, CLARIFY, RECOMMEND or CONFIRM; spoken assistants (``allow_clarify``
False) are not offered CLARIFY. All wording here is this project's own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hear2act_env.constants import DEFAULT_PROMPT
from hear2act_env.protocol.delivery import State
from hear2act_env.protocol.options_text import OptionsInfo, parse_options

__all__ = [
    "ACTION_NAMES",
    "Message",
    "OptionsInfo",
    "build_decision_messages",
    "build_perception_messages",
    "evidence_block",
    "parse_options",
    "reminder_message",
]

Message = dict[str, Any]

#: Action names in the env's act order (0 ASK, 1 CLARIFY, 2 RECOMMEND, 3 CONFIRM).
ACTION_NAMES: tuple[str, ...] = ("ASK", "CLARIFY", "RECOMMEND", "CONFIRM")

_STATE_WORDS = {
    int(State.RESOLVED): "resolved",
    int(State.RELUCTANT): "reluctant",
    int(State.CONCERN): "concern",
    int(State.REJECTION): "rejection",
}


# -- the decision prompt -------------------------------------------------------------------


def _action_menu(allow_clarify: bool) -> str:
    lines = [
        "- ASK: put one question to the user, either about a single attribute from the list "
        "or an open question about whatever else matters to them.",
    ]
    if allow_clarify:
        lines.append(
            "- CLARIFY: ask the user to say more about what is wrong with, or missing from, "
            "the option currently on the table."
        )
    lines += [
        "- RECOMMEND: put forward the one option that fits everything you have learned about "
        "the user so far.",
        "- CONFIRM: close the conversation on the option currently on the table. Do this only "
        "once the user has accepted that option and nothing they have said or shown leaves a "
        "problem open. If anything hints that the current option still falls short for them, "
        "keep working instead: ask, or recommend a better option.",
    ]
    return "\n".join(lines)


def format_rules(allow_clarify: bool, n_options: int) -> str:
    """The answer format every template asks for (the parser reads it)."""
    acts = "|".join(a for a in ACTION_NAMES if allow_clarify or a != "CLARIFY")
    return (
        "Answer with a single line in this format and nothing else:\n"
        f"[ACTION: {acts}] [OPTION: n] [TOPIC: attribute or OPEN] what you say to the user\n"
        f"OPTION goes with RECOMMEND only: the option's number, 1 to {n_options}. "
        "TOPIC goes with ASK only: one attribute name from the list, or OPEN for an open "
        "question.\n"
        "Examples:\n"
        "[ACTION: ASK] [TOPIC: OPEN] Is there anything else that is important to you?\n"
        f"[ACTION: RECOMMEND] [OPTION: {min(2, n_options)}] Option {min(2, n_options)} "
        "may suit you better.\n"
        "[ACTION: CONFIRM] Great, I will book that one for you."
    )


def system_prompt(domain: str, options_text: str, allow_clarify: bool = True) -> str:
    """The instructions shared by every access condition (no evidence in here)."""
    info = parse_options(options_text)
    attributes = "\n".join(f"- {a}" for a in info.attributes)
    n = info.n_options or 11
    return (
        f"You are an assistant helping a customer choose among options for {domain}. Exactly "
        "one of the options below suits the customer best, but the customer has not yet told "
        "you everything they need. Work it out from the conversation and steer them to that "
        "option.\n\n"
        f"Options:\n{options_text}\n\n"
        f"Attributes you can ask about:\n{attributes}\n\n"
        f"Each turn, take exactly one action:\n{_action_menu(allow_clarify)}\n\n"
        f"{format_rules(allow_clarify, n)}"
    )


def evidence_block(
    observation: Mapping[str, Any],
    *,
    perceived: str | None = None,
    audio_attached: bool = False,
) -> str:
    """The condition-specific evidence about the latest user turn ('' when there is none).

    ``perceived`` overrides ``observation["perceived"]`` (a first-stage inference the policy
    made itself). ``audio_attached`` adds the note that the recording goes along.
    """
    items: list[str] = []
    state = observation.get("state")
    if state is not None and int(state) in _STATE_WORDS:
        word = _STATE_WORDS[int(state)]
        if int(state) != int(State.RESOLVED):
            word += " (unresolved)"
        items.append(
            f"- State tag of the user's latest turn: {word}. A resolved turn means "
            "the user is truly content with the option on the table; reluctant, concern and "
            "rejection are unresolved: the option still misses something the user needs."
        )
    sentence = perceived if perceived is not None else observation.get("perceived")
    if sentence:
        items.append(
            "- What a listener inferred from the voice of the user's latest turn: "
            f"{str(sentence).strip()}"
        )
    if audio_attached:
        items.append(
            "- The recording of the user's latest turn is attached: listen to how it is said, "
            "not only to what is said. User turns shown as [user audio] were spoken only."
        )
    if not items:
        return ""
    return "Evidence about the user's latest turn:\n" + "\n".join(items)


def user_prompt(transcript: str, evidence: str = "") -> str:
    """The per-turn message: the conversation, then the evidence block (if any)."""
    parts = [f"The conversation so far:\n{transcript}"]
    if evidence:
        parts.append(evidence)
    parts.append("What is your next action?")
    return "\n\n".join(parts)


def build_decision_messages(
    observation: Mapping[str, Any],
    *,
    allow_clarify: bool = True,
    perceived: str | None = None,
    audio_attached: bool = False,
    template: str = DEFAULT_PROMPT,
) -> list[Message]:
    """``[system, user]`` chat messages for the next decision from ``observation``, worded by
    the prompt ``template`` (a name in ``templates.TEMPLATES``)."""
    from hear2act_agents.llm.templates import get_template

    chosen = get_template(template)
    evidence = evidence_block(observation, perceived=perceived, audio_attached=audio_attached)
    return [
        {
            "role": "system",
            "content": chosen.system(
                str(observation["domain"]), str(observation["options"]), allow_clarify
            ),
        },
        {"role": "user", "content": chosen.user(str(observation["transcript"]), evidence)},
    ]


def reminder_message(allow_clarify: bool = True, truncated: bool = False) -> Message:
    """The one follow-up sent when a reply had no usable action (``truncated``: the reply was
    cut off at the token limit, so the reminder asks for a short one)."""
    acts = ", ".join(a for a in ACTION_NAMES if allow_clarify or a != "CLARIFY")
    why = (
        "That reply was cut off at the length limit before it gave an action. Please answer "
        "again briefly, with one line that "
        if truncated
        else "I could not read an action in that reply. Please answer again with one line that "
    )
    return {
        "role": "user",
        "content": (
            why + f"starts with [ACTION: ...] using one of {acts}; RECOMMEND needs [OPTION: n]. "
            "For example: [ACTION: ASK] [TOPIC: OPEN] Is there anything else that matters to "
            "you?"
        ),
    }


# -- the first-stage perception prompt (T+S-hat) ------------------------------------------


def build_perception_messages(transcript: str, domain: str | None = None) -> list[Message]:
    """Messages asking an audio model for a one-sentence reading of the latest user turn.

    The recording itself is attached by the backend to the user message.
    """
    about = f" about {domain}" if domain else ""
    return [
        {
            "role": "system",
            "content": (
                f"You listen to customers talking with a service assistant{about}. "
                "You judge how a customer's reply sounds; you do not make decisions for the "
                "assistant."
            ),
        },
        {
            "role": "user",
            "content": (
                f"The conversation so far:\n{transcript}\n\n"
                "The attached recording is the customer's latest turn, a reaction to the option "
                "the assistant currently proposes. From the way it is spoken (tone, pitch, pace, "
                "hesitation), is the customer genuinely satisfied with that option (resolved), "
                "or does something still bother them (unresolved)? Judge the delivery only: do "
                "not guess what the customer's unstated need is, and do not describe the "
                "speaker as a person. Reply with one short sentence."
            ),
        },
    ]


def first_sentence(text: str, limit: int = 300) -> str:
    """The first sentence of ``text`` (whitespace collapsed, at most ``limit`` characters)."""
    text = re.sub(r"<think>.*?</think>", " ", text, flags=re.S | re.I)
    text = " ".join(text.replace("*", " ").split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    out = m.group(1) if m else text
    return out[:limit].strip()
