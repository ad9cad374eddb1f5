"""The perception audit's task in words, one copy for everyone who labels clips.

The audit page people label on (``templates/audit.html``) and the prompt a model labels with
(``hear2act audit --model``, ``hear2act_agents.audit_labeller``) both take their
instructions from here, so a person and a model are asked the same question with the same
words. Only how to answer differs: people press a button, a model writes the label.
"""

from __future__ import annotations

__all__ = ["ANSWERS", "CONTEXT", "PAGE", "TASK", "instructions"]

#: What both kinds of annotator are asked to judge.
TASK = (
    "Each clip is a user's spoken reply to a suggestion from an assistant. The words always "
    "sound like a yes; listen to how they are said. Decide whether the suggestion really "
    "settles what the user wants, or whether the voice tells you something is still bothering "
    "them. Judge only this reply, not the speaker as a person."
)

#: Added when the audit folder was made with ``--context``.
CONTEXT = (
    "With each reply you also get the conversation that led up to it. Use it only to see "
    "which suggestion the user is answering; do not try to work out what the user privately "
    "needs, or who they are."
)

#: The two answers and what each means (the page's buttons, the model's label space).
ANSWERS = {
    "resolved": "the need sounds met",
    "unresolved": "something still bothers the user",
}

#: For people only: how the page works.
PAGE = (
    "Play a clip as many times as you need, then choose one answer. You will not be told "
    "whether an answer was right. Each answer is saved at once, so you can close the page and "
    "come back later."
)


def instructions(context: bool) -> tuple[str, ...]:
    """The paragraphs of the judging instructions: the task, and the context note when the
    folder shows the dialogue before each clip."""
    return (TASK, CONTEXT) if context else (TASK,)
