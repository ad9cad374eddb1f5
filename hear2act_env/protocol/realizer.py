"""The realizer: engine replies -> user words and a delivery label; agent actions -> lines.

Both realizations share every template except the reactions to a recommendation that leaves
L2 or L3 unmet: Explicit states the need; Prosody-mediated draws from the **shared acceptance
pool**, the same pool with the same probabilities as a resolved reaction, so the words carry no
information about the state. Each user turn consumes exactly one ``TurnDraw`` from the episode's
generator, whatever the realization, access condition or intervention, so matched rollouts
stay matched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from hear2act_env.protocol.delivery import DELIVERY_LABELS
from hear2act_env.protocol.engine import REQUIREMENT, Act, Reply, ReplyKind
from hear2act_env.protocol.scenario import Scenario

#: Short accepting lines, shared by resolved reactions (both realizations) and by reluctant and
#: concern reactions under Prosody-mediated.
ACCEPTANCE_POOL: tuple[str, ...] = (
    "Okay, that could work.",
    "Alright, sounds good.",
    "Sure, that works.",
    "Yeah, okay.",
    "Okay, I think that's fine.",
    "That seems alright.",
    "Alright, let's see.",
    "Fine by me.",
    "Okay, got it.",
    "Sounds fine.",
    "Yes, that one could do.",
    "Okay, sure.",
)

_TEMPLATES: dict[ReplyKind, tuple[str, ...]] = {
    ReplyKind.REJECT_REQUIREMENT: ("No, that won't work. {text}", "That one's out. {text}"),
    ReplyKind.REJECT_L1: ("No, that doesn't work for me. {text}", "I can't take that one. {text}"),
    ReplyKind.CONCERN_L2: (
        "Hmm, I'm not sure about that one. {text}",
        "I have a concern with that one. {text}",
        "That gives me pause. {text}",
    ),
    ReplyKind.QUALIFIED_L3: (
        "That could work, I guess. {text}",
        "Okay, it might do. One thing, though. {text}",
        "I suppose that's okay. {text}",
    ),
    ReplyKind.ASK_NEED: ("{text}",),
    ReplyKind.ASK_REQUIREMENT: ("{text}",),
    ReplyKind.ASK_FAVORED: ("{text}",),
    ReplyKind.ASK_DISTRACTOR: (
        "That doesn't matter much to me.",
        "I don't really mind either way on that.",
        "Honestly, that's not something I care about.",
    ),
    ReplyKind.OPEN_REVEAL: ("Well, there is one thing. {text}", "Actually, yes. {text}"),
    ReplyKind.OPEN_RESTATE: ("Like I said. {text}", "As I mentioned. {text}"),
    ReplyKind.OPEN_NOTHING: (
        "No, I think that covers everything.",
        "That covers everything for me.",
        "Nope, nothing else comes to mind.",
    ),
    ReplyKind.CLARIFY: ("{text}",),
    ReplyKind.CLARIFY_MET: ("{text}",),
    ReplyKind.CONFIRM_DECLINED: (
        "I can't go with that one. It doesn't meet what I need.",
        "No, I already said that one doesn't work for me.",
    ),
    ReplyKind.INVALID: ("Sorry, I didn't catch that.", "Sorry?"),
    ReplyKind.ACCEPT: ACCEPTANCE_POOL,
    ReplyKind.CONFIRMED: ("",),
}


#: Bank v4: a restatement reads as one sentence ("As I mentioned, that one ...").
_RESTATE_V4: tuple[str, ...] = ("Like I said, {text}", "As I mentioned, {text}")
#: Bank v4: lines of the acceptance pool that accept (not "Okay, got it.", which only
#: acknowledges, nor "Alright, let's see.", which defers).
ACCEPTANCE_POOL_V4: tuple[str, ...] = tuple(
    line for line in ACCEPTANCE_POOL if line not in ("Okay, got it.", "Alright, let's see.")
)
#: Bank v4: an attribute that holds none of the user's needs is not among their priorities,
#: which says less than "I don't care" (a person may still have a mild taste there).
_DISTRACTOR_V4: tuple[str, ...] = (
    "That's not high on my list.",
    "That isn't one of my priorities for this.",
    "I'm flexible on that.",
)
_LEAD_INS = ("Like I said", "As I mentioned")
#: Bank v4 templates where they differ from bank v3's.
_TEMPLATES_V4: dict[ReplyKind, tuple[str, ...]] = {
    ReplyKind.OPEN_RESTATE: _RESTATE_V4,
    ReplyKind.ACCEPT: ACCEPTANCE_POOL_V4,
    ReplyKind.ASK_DISTRACTOR: _DISTRACTOR_V4,
}
#: A reminder a restated text opens with; the restatement's own lead-in replaces it.
_OWN_REMINDER = re.compile(
    r"^(?:just a reminder|remember|again|once again|as i said|like i said|as i mentioned|"
    r"once more|just so you know|keep in mind|don't forget|to repeat|as i've said)\s*[,:]\s*",
    re.IGNORECASE,
)
#: First words that keep their capital after a lead-in ("As I mentioned, I need ...").
_KEEP_CAPITAL = re.compile(r"^(I|I'[a-z]+)\b")

#: Distinct per-utterance voice variations (a small set, so every utterance a scenario can
#: produce can be pre-rendered and cached).
N_VARIATIONS = 4


@dataclass(frozen=True)
class TurnDraw:
    """The uniform draws one user turn consumes: words, delivery, shuffle, voice variation."""

    line: float
    delivery: float
    shuffle: float
    variation: int

    @classmethod
    def from_rng(cls, rng: np.random.Generator) -> TurnDraw:
        """Draw once from ``rng`` (one call, four numbers)."""
        u = rng.random(4)
        return cls(float(u[0]), float(u[1]), float(u[2]), int(u[3] * N_VARIATIONS))


@dataclass(frozen=True)
class UserTurn:
    """A realized user turn."""

    text: str
    delivery: str
    reply: Reply
    draw: TurnDraw


def templates_for(scenario: Scenario, kind: ReplyKind) -> tuple[str, ...]:
    """The templates a reply of ``kind`` is worded with in ``scenario``."""
    if scenario.bank_format >= 4 and kind in _TEMPLATES_V4:
        return _TEMPLATES_V4[kind]
    return _TEMPLATES[kind]


def realize(scenario: Scenario, reply: Reply, draw: TurnDraw) -> UserTurn:
    """Word ``reply`` for ``scenario`` and pick its delivery label, using ``draw``."""
    templates = templates_for(scenario, reply.kind)
    template = templates[int(draw.line * len(templates))]
    content = _content(scenario, reply) if "{text}" in template else ""
    if template.startswith(_LEAD_INS) and template.endswith(", {text}"):
        content = _continued(content)
    text = template.format(text=content) if "{text}" in template else template
    labels = DELIVERY_LABELS[reply.state]
    return UserTurn(text, labels[int(draw.delivery * len(labels))], reply, draw)


def _continued(text: str) -> str:
    """``text`` continuing a lead-in: without a reminder of its own ("Remember, ...", which the
    lead-in already says), its first word losing a sentence-initial capital ("That" -> "that"),
    unless it is "I", a contraction of it, or a word with other capitals."""
    text = _OWN_REMINDER.sub("", text, count=1) or text
    first = text.split(" ", 1)[0]
    if not first or _KEEP_CAPITAL.match(first) or not first[1:].islower() and len(first) > 1:
        return text
    return text[0].lower() + text[1:]


def _content(scenario: Scenario, reply: Reply) -> str:
    if reply.need == REQUIREMENT:
        return scenario.requirement.restatement
    if reply.kind == ReplyKind.ASK_FAVORED:
        return scenario.favored.restatement
    if reply.need is None:
        raise ValueError(f"reply {reply.kind.value} needs a need index")
    need = scenario.needs[reply.need]
    if reply.kind == ReplyKind.ASK_NEED:
        return need.ask_answer
    if reply.kind == ReplyKind.CLARIFY_MET or (reply.kind == ReplyKind.CLARIFY and need.want):
        return need.want  # bank v4: asked what they need, the user says the need itself
    if reply.kind == ReplyKind.OPEN_RESTATE and reply.need == 0 and need.want:
        return need.want  # bank v4: restated to "anything else?", the need, not the complaint
    return need.hint if reply.need == 0 else need.statement


def assistant_line(scenario: Scenario, act: int, option: int, topic: int, valid: bool) -> str:
    """The templated assistant utterance for an action (options are numbered from 1)."""
    if not valid:
        return "(unclear request)"
    name = scenario.candidates[option].name
    if act == Act.RECOMMEND:
        return f"How about option {option + 1}, {name}?"
    if act == Act.CONFIRM:
        return "Great, let's go with that one."
    if act == Act.CLARIFY:
        return "Could you tell me more about what you need?"
    if topic == 0:
        return "Is there anything else that matters to you?"
    attribute = scenario.attributes[topic - 1]
    if attribute.ask:
        return attribute.ask
    return f"What about {attribute.label}? Does that matter to you?"


def opening_line(scenario: Scenario, option: int) -> str:
    """The assistant's fixed opening recommendation."""
    return f"I'd suggest option {option + 1}, {scenario.candidates[option].name}."
