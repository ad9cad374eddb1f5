"""Every user turn a scenario can produce under a realization (for pre-rendering audio)."""

from __future__ import annotations

from hear2act_env.protocol.delivery import DELIVERY_LABELS, State
from hear2act_env.protocol.engine import (
    REQUIREMENT,
    Realization,
    Reply,
    ReplyKind,
    ScenarioFacts,
    UserEngine,
    clarify_kind,
)
from hear2act_env.protocol.realizer import N_VARIATIONS, TurnDraw, realize, templates_for
from hear2act_env.protocol.scenario import Scenario


def possible_replies(scenario: Scenario, realization: Realization) -> set[Reply]:
    """The engine's possible replies (content and state), over every option and history."""
    facts = ScenarioFacts.of(scenario)
    replies: set[Reply] = set()
    for option in range(len(scenario.candidates)):
        engine = UserEngine(scenario, realization, True, facts)
        replies.add(engine._react_to(option))  # noqa: SLF001 - same rule as RECOMMEND
        state = facts.states[option]
        violated = facts.violated[option]
        replies.add(Reply(clarify_kind(scenario, facts, option), state, 0))
        replies.add(Reply(ReplyKind.INVALID, state))
        for topic in range(1, 9):
            need = facts.topic_need[topic]
            role = facts.topic_role[topic - 1]
            if need is not None:
                replies.add(Reply(ReplyKind.ASK_NEED, state, need))
            elif role == "requirement":
                replies.add(Reply(ReplyKind.ASK_REQUIREMENT, state, REQUIREMENT))
            elif role == "favored":
                replies.add(Reply(ReplyKind.ASK_FAVORED, state))
            else:
                replies.add(Reply(ReplyKind.ASK_DISTRACTOR, state))
        hidden = [n for n in violated if n != REQUIREMENT]
        replies.update(Reply(ReplyKind.OPEN_REVEAL, state, n) for n in hidden)
        if violated:
            replies.add(Reply(ReplyKind.OPEN_RESTATE, state, violated[0]))
        else:
            replies.add(Reply(ReplyKind.OPEN_NOTHING, state))
        if state == State.REJECTION:
            replies.add(Reply(ReplyKind.CONFIRM_DECLINED, State.REJECTION))
    return replies


def possible_turns(scenario: Scenario, realization: Realization) -> list[tuple[str, str, int]]:
    """Sorted, distinct (text, delivery, variation) triples the scenario can voice."""
    out: set[tuple[str, str, int]] = set()
    for reply in possible_replies(scenario, realization):
        n_templates = len(templates_for(scenario, reply.kind))
        labels = DELIVERY_LABELS[reply.state]
        for t in range(n_templates):
            for k in range(len(labels)):
                for v in range(N_VARIATIONS):
                    draw = TurnDraw((t + 0.5) / n_templates, (k + 0.5) / len(labels), 0.0, v)
                    turn = realize(scenario, reply, draw)
                    out.add((turn.text, turn.delivery, v))
    return sorted(out)
