"""A model as an annotator of the perception audit (``hear2act audit --model SPEC``).

An audio LLM (``openai:``/``litellm:`` with ``send_audio=true``, ``qwen2-audio:``,
``qwen2.5-omni:``) hears each clip of an audit folder, as people do on the audit page: the same
instructions (``hear2act_env.listen.audit.instructions``), the same words of the reply, the
dialogue before it when the folder was made with ``--context``, and the clip's audio file
decoded as it was saved (what the page plays). It answers with a label; ``parse_label`` reads
it. Labels go to the folder's ``models/`` (``hear2act_env.listen.audit.model_labels``), one line per
clip as it is answered, so a stopped run continues where it stopped.

A call that gets no answer at all (the server is down, refuses, times out, after the backend's
retries) stops the run with an ``InfrastructureError``: the labels so far are kept and the
clip is not labelled, so an outage never counts against the model. A reply that does not name
exactly one label (neither, both, or one read two ways: ``parse_label`` gives the rule) is
recorded as no answer (``label: null``), which does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from hear2act_agents.llm.backends.base import BackendError, Message
from hear2act_agents.llm.factory import typed_settings
from hear2act_agents.perceivers import to_rate
from hear2act_env import interrupts
from hear2act_env.errors import ConfigError, InfrastructureError
from hear2act_env.evaluation import runner
from hear2act_env.listen.audit.folder import Audit, AuditClip
from hear2act_env.listen.audit.instructions import ANSWERS, instructions
from hear2act_env.listen.audit.model_labels import ModelRun, open_model_store
from hear2act_env.listen.clips import decode_clip
from hear2act_env.redaction import redact

__all__ = [
    "LabelRun",
    "answer_settings",
    "build_label_messages",
    "label_audit",
    "parse_label",
    "prompt_text",
    "require_audio",
]

#: How a model is asked to answer (people press a button instead).
ANSWER_FORMAT = "Answer with one word: " + " or ".join(
    f"{label} ({meaning})" for label, meaning in ANSWERS.items()
)
MAX_REPLY_KEPT = 2000
#: Settings that change how calls are made, not what the model answers (the runner's, and a
#: local model's device and batching): not part of a model row's identity (another timeout
#: continues the same row).
TRANSPORT_SETTINGS = runner.TRANSPORT_SETTINGS | {"max_batch_size", "batch_wait_s", "device"}
#: Progress is reported every this many clips (and at the end).
PROGRESS_EVERY = 10
#: A word of a reply: letters and digits, with inner hyphens and apostrophes (``un-resolved``,
#: ``isn't``) kept in the word; anything else separates words.
_WORD = re.compile(r"[^\W_]+(?:[-'\u2019_][^\W_]+)*")
#: What ends a clause: a negation is read only in the label's own clause.
_CLAUSE = re.compile(r"[.,;:!?()\[\]{}<>\n\u2013\u2014]|\s-\s")
_NEGATIONS = frozenset({"not", "no", "never", "neither", "nor", "cannot", "without"})


def prompt_text(context: bool) -> str:
    """The instructions a model gets (the system message): the page's, then the answer format."""
    return "\n\n".join((*instructions(context), ANSWER_FORMAT))


def build_label_messages(clip: AuditClip, context: bool) -> list[Message]:
    """The messages for one clip; the backend attaches the recording to the user message."""
    parts = []
    if context:
        parts.append("The conversation before the reply:\n" + "\n".join(clip.context))
    parts.append(f'The user says: "{clip.utterance.text}"')
    parts.append("The recording of this reply is attached. " + ANSWER_FORMAT + ".")
    return [
        {"role": "system", "content": prompt_text(context)},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def parse_label(reply: str | None) -> str | None:
    """The label a reply gives, or None (no answer). Exactly:

    - A label counts only as a whole word, in any case: words are runs of letters and digits
      joined by inner hyphens, apostrophes or underscores, so ``unresolved`` never counts as
      ``resolved``, and ``un-resolved``, ``irresolvedness`` or ``resolved_x`` name no label.
    - A reply naming both labels is no answer, in whatever order, negated or not
      (``resolved or unresolved``, ``it's not resolved, it's unresolved``, ``unresolved,
      although the words say resolved``); so is one naming neither.
    - Each time the one label is named it is read in its clause (the text before it back to
      the last ``. , ; : ! ? ( ) [ ] { } < >``, new line or dash): with no negation there, as
      itself; with a single negation (``not``, ``no``, ``never``, ``neither``, ``nor``,
      ``cannot``, ``without`` or a word ending in ``n't``) directly before it, as the other
      label (``not resolved``, ``isn't resolved`` read ``unresolved``); with any other
      negation there (``don't think it's resolved``, ``not fully resolved``), as no answer.
    - The reply gives a label when every reading is that label; else it is no answer
      (``Resolved? Not resolved.``).
    """
    text = (reply or "").replace("\u2019", "'")
    named: set[str] = set()
    readings: set[str | None] = set()
    for clause in _CLAUSE.split(text):
        words = [w.lower() for w in _WORD.findall(clause)]
        for i, word in enumerate(words):
            if word not in ANSWERS:
                continue
            named.add(word)
            negated = [j for j in range(i) if _is_negation(words[j])]
            if not negated:
                readings.add(word)
            elif negated == [i - 1]:
                readings.add(_other_label(word))
            else:
                readings.add(None)
    if len(named) != 1 or len(readings) != 1:
        return None
    return readings.pop()


def _is_negation(word: str) -> bool:
    return word in _NEGATIONS or word.endswith("n't")


def _other_label(label: str) -> str:
    (other,) = (answer for answer in ANSWERS if answer != label)
    return other


def require_audio(backend: Any, spec: str) -> None:
    """A ``ConfigError`` unless ``backend`` takes audio (a labeller has to hear the clip)."""
    if not getattr(backend, "supports_audio", False):
        raise ConfigError(
            f"--model {spec}: this model cannot take audio; use an audio LLM (qwen2-audio:, "
            "qwen2.5-omni:, or openai:/litellm: with --setting send_audio=true)"
        )


def answer_settings(spec: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The settings that make a model row: ``settings`` typed for ``spec`` (``--setting``
    texts become their values), without ``TRANSPORT_SETTINGS``."""
    typed = typed_settings(spec, {k: v for k, v in settings.items() if v is not None})
    return {k: v for k, v in sorted(typed.items()) if k not in TRANSPORT_SETTINGS}


@dataclass(frozen=True)
class LabelRun:
    """What one ``label_audit`` call did."""

    model: ModelRun
    labelled_now: int
    labelled: int
    total: int
    no_answer: int


@interrupts.cooperative()  # a signal stops it between clips; the call in flight is kept
def label_audit(
    audit: Audit,
    backend: Any,
    spec: str,
    settings: dict[str, Any],
    *,
    seed: int | None = 0,
    progress: Callable[[str], None] | None = None,
) -> LabelRun:
    """Label every clip of ``audit`` that ``spec`` (with ``settings``, the ones it was built
    with) has not labelled yet with ``backend``, an audio-capable ``ChatBackend``; returns the
    counts. The row is ``spec`` with its ``answer_settings``."""
    require_audio(backend, spec)
    identity = answer_settings(spec, settings)
    run, store = open_model_store(audit, spec, identity, prompt_text(audit.context))
    done_before = len(store.labels)
    try:
        _label_each(audit, backend, spec, store, seed, progress)
    except interrupts.Interrupted as exc:
        raise interrupts.Interrupted(
            str(exc),
            resume=f"{len(store.labels)} of {store.total} labels are saved in {store.path}; "
            "run the same command again to continue",
        ) from None
    no_answer = sum(1 for label in store.labels.values() if label is None)
    return LabelRun(run, len(store.labels) - done_before, len(store.labels), store.total, no_answer)


def _label_each(
    audit: Audit,
    backend: Any,
    spec: str,
    store: Any,
    seed: int | None,
    progress: Callable[[str], None] | None,
) -> None:
    """Label the clips of ``store`` without a label, one call each, in the store's order."""
    for clip_id in store.order:
        if clip_id in store.labels:
            continue
        interrupts.raise_if_requested()  # a signal stops between clips
        clip = audit.by_id[clip_id]
        wave, rate = decode_clip(audit.audio(clip_id), PurePosixPath(clip.audio).suffix[1:])
        if rate != 16_000:
            wave = to_rate(wave, rate, 16_000)
        start = time.perf_counter()
        try:
            reply = backend.complete(
                build_label_messages(clip, audit.context), audio=wave, seed=seed
            )
        except BackendError as exc:
            raise InfrastructureError(
                f"--model {spec}: the call for a clip failed after retries "
                f"({redact(str(exc))[:300]}); {len(store.labels)} of {store.total} labels are "
                "saved; run the same command again to continue"
            ) from None
        info = getattr(backend, "last_call", None)
        usage = info.usage.to_dict() if info is not None and info.usage else None
        store.add(
            clip_id,
            parse_label(reply),
            reply=redact(reply or "")[:MAX_REPLY_KEPT],
            finish_reason=getattr(info, "finish_reason", None),
            usage=usage,
            latency_s=round(time.perf_counter() - start, 4),
        )
        done = len(store.labels)
        if progress is not None and (done % PROGRESS_EVERY == 0 or done == store.total):
            progress(f"{spec}: {done} of {store.total} clips labelled")
