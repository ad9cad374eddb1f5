"""``LLMPolicy``: a chat model as a Hear2Act policy.

Per turn: build the decision prompt (``prompting``) from the observation and the evidence the
access condition gives, call the backend, parse the reply (``parsing``). A reply without a
usable action is re-asked once with a short format reminder; if the second reply is no better,
the policy asks an open question and counts a format error. A reply cut off at the model's
token limit (finish reason ``"length"``) that gives no usable action is counted apart, as
``truncated`` (the re-ask's reminder then asks for a short reply), never as a format error: a
too small ``max_tokens`` is a setting, not the model's format. Empty replies and invalid option
numbers also fall back to an open question and are counted: the model answered, badly, and that
is the agent's failure. A call that gets no answer at all (timeout, refused connection, HTTP
error, unreadable reply, after the backend's retries) raises ``InfrastructureError``: the runner
records the episode as an error of kind ``infrastructure``, left out of the metrics, never as
the agent's failure. Configuration errors escape ``act()`` too.

Evidence channels (what decides them):

- ``state`` in the observation (access with S): the state tag block.
- ``perceived`` in the observation (``PerceivedState`` wrapper): the perceiver's sentence;
  the raw audio is then *not* passed to the decision call (two-stage T+S-hat semantics).
- ``perceiver`` given to the policy and ``audio`` in the observation: the policy runs the
  perceiver on the latest user audio itself (first stage) and decides without audio. A
  perceiver with ``needs_audio = False`` (``TranscriptPerceiver``) runs on the transcript alone,
  in any condition.
- otherwise, ``audio`` in the observation: the recording goes to the decision call (access A /
  A+T). Under A+T the latest user recording is attached (the words of earlier turns are in the
  transcript); under A (user turns read ``[user audio]``) every user recording of the episode
  is attached in order, up to ``max_audio_clips`` (the latest ones; the log says how many were
  left out). A backend that cannot take audio is refused here with a ``ConfigError``: its
  results would be labelled A or A+T without having heard anything.

Every ``act()`` is logged (``episode_log()``): each model call's messages (the system prompt
stored once per episode and referenced by its digest), raw reply, latency, tokens and finish
reason, the parsed action and the parse outcome. The runner writes it beside the results; every
text of it (and of the errors ``act()`` raises) is redacted by the backend's ``redact_text``
(no API key reaches a file). A stop request (``hear2act_env.interrupts.Interrupted``) is never
counted as a failed call: it propagates. Calls that carried audio to an ``openai:`` backend
with ``trust_audio`` (its hearing not probed) are counted in ``unchecked_audio_calls``.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from hear2act_agents.llm.backends.base import LENGTH, BackendError, BackendTimeout, ChatBackend
from hear2act_agents.llm.parsing import (
    ASK,
    ParsedReply,
    TopicMatcher,
    default_topic_matcher,
    parse_reply,
)
from hear2act_agents.llm.prompting import (
    ACTION_NAMES,
    OptionsInfo,
    build_decision_messages,
    parse_options,
    reminder_message,
)
from hear2act_agents.llm.templates import get_template
from hear2act_env.constants import DEFAULT_PROMPT, SAMPLE_RATE
from hear2act_env.env import AUDIO_PLACEHOLDER
from hear2act_env.errors import ConfigError, InfrastructureError
from hear2act_env.interrupts import Interrupted
from hear2act_env.redaction import redact
from hear2act_env.seeding import derive_seed

__all__ = ["STAT_KEYS", "CallLog", "LLMPolicy", "TurnLog", "latest_audio"]

STAT_KEYS = (
    "calls",
    "format_errors",
    "truncated",
    "reasks",
    "timeouts",
    "empty_replies",
    "invalid_options",
    "api_errors",
    "perception_errors",
    "fallbacks",
    "prompt_tokens",
    "completion_tokens",
    "cached_calls",
    "calls_without_usage",
    "truncated_replies",
    "unchecked_audio_calls",
)


def latest_audio(observation: dict[str, Any]) -> np.ndarray | None:
    """The latest user turn's waveform (``audio[:audio_length]``), or None."""
    if "audio" not in observation:
        return None
    audio = np.asarray(observation["audio"], dtype=np.float32).reshape(-1)
    n = int(np.asarray(observation.get("audio_length", audio.size)).reshape(-1)[0])
    return audio[: max(0, min(n, audio.size))]


@dataclass
class CallLog:
    """One model call: what was sent, what came back, how long it took, what it cost."""

    stage: str  # "decision" or "perception"
    messages: list[dict[str, Any]]
    reply: str | None
    latency_s: float
    usage: dict[str, int] | None = None
    cached: bool = False
    audio_clips: int = 0
    audio_seconds: float = 0.0
    error: str | None = None
    finish_reason: str | None = None  # "stop", "length" (cut off at the token limit), ...


@dataclass
class TurnLog:
    """What happened in one ``act()``: prompts, replies, the action taken and why."""

    turn: int
    messages: list[dict[str, Any]]
    replies: list[str]
    action: tuple[int, int, int]
    utterance: str
    perceived: str | None = None
    event: str | None = None  # None, or what forced a fallback / re-ask
    calls: list[CallLog] = field(default_factory=list)
    audio_clips_dropped: int = 0

    @property
    def outcome(self) -> str:
        """How the reply was read: ``ok``, ``reasked`` (usable on the second try), or the event
        that forced the fallback (``format_error``, ``truncated``: cut off at the token limit
        with no usable action, ``invalid_option``, ``empty_reply``)."""
        if self.event:
            return self.event
        return "reasked" if len([c for c in self.calls if c.stage == "decision"]) > 1 else "ok"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class LLMPolicy:
    """A Hear2Act policy driven by a ``ChatBackend``.

    ``allow_clarify`` must match the env's (False for spoken assistants). ``perceiver``: an
    object with ``perceive(audio, sample_rate, context) -> str`` run on the latest user audio
    (T+S-hat with a separate first stage; ``hear2act_agents.perceivers``). ``run`` is the
    repetition index that goes into seeds and cache keys. ``topic_matcher`` maps free-text
    questions to attributes (default: MiniLM when installed, else keywords). ``use_audio=False``
    makes the agent refuse audio conditions instead of hearing them. ``max_audio_clips``: under
    access A, at most this many user recordings (the latest) go with a call.
    """

    observation_kind = "text"

    def __init__(
        self,
        backend: ChatBackend,
        *,
        name: str | None = None,
        allow_clarify: bool = True,
        perceiver: Any = None,
        run: int = 0,
        topic_matcher: TopicMatcher | None = None,
        use_audio: bool = True,
        keep_log: bool = True,
        max_audio_clips: int = 8,
        prompt: str = DEFAULT_PROMPT,
        sampling_seed: int = 0,
    ) -> None:
        if perceiver is not None and not callable(getattr(perceiver, "perceive", None)):
            raise ConfigError(
                "perceiver: expected an object with a perceive(audio, sr, context) method"
            )
        self.backend = backend
        self.name = name or backend.name
        self.allow_clarify = bool(allow_clarify)
        self.perceiver = perceiver
        self.run = int(run)
        self.use_audio = bool(use_audio)
        self.keep_log = keep_log
        if int(max_audio_clips) < 1:
            raise ConfigError(f"max_audio_clips: got {max_audio_clips!r}, expected >= 1")
        self.max_audio_clips = int(max_audio_clips)
        self.prompt = get_template(prompt).name
        if (
            isinstance(sampling_seed, bool)
            or not isinstance(sampling_seed, int)
            or sampling_seed < 0
        ):
            raise ConfigError(f"sampling_seed: got {sampling_seed!r}, expected an integer >= 0")
        self.sampling_seed = sampling_seed
        self._clips: list[np.ndarray] = []
        self._pending_calls: list[CallLog] = []
        self._matcher = topic_matcher
        scrub = getattr(backend, "redact_text", None)
        self._redact = scrub if callable(scrub) else redact
        self._stats = dict.fromkeys(STAT_KEYS, 0)
        self._seed: int | None = None
        self._info = OptionsInfo((), ())
        self._options_text: str | None = None
        self._turn = 0
        self.log: list[TurnLog] = []

    # -- Policy protocol ---------------------------------------------------------------
    def reset(self, observation: dict[str, Any], seed: int | None = None) -> None:
        self._check_audio_condition(observation)
        self._stats = dict.fromkeys(STAT_KEYS, 0)
        # --seed N: every sampled reply of the run drawn under another seed, the episodes kept
        self._seed = (
            seed
            if seed is None or not self.sampling_seed
            else derive_seed(seed, self.sampling_seed)
        )
        seed = self._seed
        self._turn = 0
        self.log = []
        self._clips = []
        self._pending_calls = []
        if self.perceiver is not None and hasattr(self.perceiver, "seed"):
            self.perceiver.seed, self.perceiver.run = seed, self.run
        self._set_options(observation)

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        if self._options_text != observation.get("options"):
            self._set_options(observation)
        self._turn += 1
        self._pending_calls = []
        perceived, audio, dropped = self._evidence(observation)
        messages = build_decision_messages(
            observation,
            allow_clarify=self.allow_clarify,
            perceived=perceived,
            audio_attached=audio is not None,
            template=self.prompt,
        )
        replies: list[str] = []
        parsed, event = self._ask(messages, audio, replies)
        if parsed is not None and not parsed.usable and event is None:
            if parsed.issue == "invalid_option":
                self._stats["invalid_options"] += 1
                event = "invalid_option"
            else:  # no action, RECOMMEND without an option, or cut off: re-ask once
                self._stats["reasks"] += 1
                retry = [*messages, {"role": "assistant", "content": replies[-1]}]
                retry.append(reminder_message(self.allow_clarify, parsed.issue == "truncated"))
                parsed, event = self._ask(retry, audio, replies)
                if parsed is not None and not parsed.usable and event is None:
                    if parsed.issue == "invalid_option":
                        self._stats["invalid_options"] += 1
                        event = "invalid_option"
                    elif parsed.issue == "truncated":
                        self._stats["truncated"] += 1
                        event = "truncated"
                    else:
                        self._stats["format_errors"] += 1
                        event = "format_error"
        if parsed is None or not parsed.usable:
            self._stats["fallbacks"] += 1
            action = (ASK, 0, 0)
            utterance = ""
        else:
            action = (int(parsed.act), int(parsed.option or 0), int(parsed.topic))  # type: ignore[arg-type]
            utterance = parsed.utterance
        if self.keep_log:
            self.log.append(
                TurnLog(
                    self._turn,
                    messages,
                    replies,
                    action,
                    utterance,
                    perceived,
                    event,
                    calls=self._pending_calls,
                    audio_clips_dropped=dropped,
                )
            )
        self._pending_calls = []
        return np.array(action, dtype=np.int64)

    # -- extras ------------------------------------------------------------------------
    def stats(self) -> dict[str, int]:
        """This episode's counters (reset by ``reset``)."""
        return dict(self._stats)

    def episode_log(self) -> dict[str, Any]:
        """This episode's log as JSON-ready data (what the runner writes beside the results):
        ``prompts`` (each distinct system prompt once, by digest) and ``turns`` (per turn: the
        calls with messages, reply, latency and tokens; the parsed action and outcome). A turn
        cut short by a failed call is kept with the calls made so far."""
        prompts: dict[str, str] = {}
        turns = [self._turn_entry(t, prompts) for t in self.log]
        if self._pending_calls:  # the turn that raised (a call that got no answer)
            turns.append(
                {
                    "turn": self._turn,
                    "calls": [self._call_entry(c, prompts) for c in self._pending_calls],
                    "outcome": "no_answer",
                }
            )
        return {"agent": self.name, "prompts": prompts, "turns": turns}

    def _turn_entry(self, t: TurnLog, prompts: dict[str, str]) -> dict[str, Any]:
        act, option, topic = t.action
        entry: dict[str, Any] = {
            "turn": t.turn,
            "calls": [self._call_entry(c, prompts) for c in t.calls],
            "action": list(t.action),
            "action_text": _action_text(act, option, topic),
            "utterance": self._redact(t.utterance),
            "outcome": t.outcome,
        }
        if t.perceived:
            entry["perceived"] = self._redact(t.perceived)
        if t.audio_clips_dropped:
            entry["audio_clips_dropped"] = t.audio_clips_dropped
        return entry

    def _call_entry(self, c: CallLog, prompts: dict[str, str]) -> dict[str, Any]:
        entry = asdict(c)
        messages = []
        for m in c.messages:
            if m.get("role") == "system" and isinstance(m.get("content"), str):
                ref = _digest(m["content"])
                prompts.setdefault(ref, m["content"])
                messages.append({"role": "system", "ref": ref})
            else:
                messages.append({**m, "content": self._scrub(m.get("content"))})
        entry["messages"] = messages
        for key in ("reply", "error"):
            if isinstance(entry[key], str):
                entry[key] = self._redact(entry[key])
        # empty fields are left out, but a call always says whether the cache answered it and
        # how many recordings it sent (0 and false included), and what it replied
        kept = ("reply", "cached", "audio_clips")
        return {k: v for k, v in entry.items() if v not in (None, 0, 0.0, False) or k in kept}

    def _scrub(self, content: Any) -> Any:
        """A message's content with its texts redacted (the assistant turns of a re-ask carry
        the model's reply)."""
        if isinstance(content, str):
            return self._redact(content)
        if isinstance(content, list):
            return [
                {**p, "text": self._redact(p["text"])}
                if isinstance(p, dict) and isinstance(p.get("text"), str)
                else p
                for p in content
            ]
        return content

    def transcript(self) -> str:
        """A readable log of this episode's turns: reply texts and the actions taken."""
        lines = []
        for t in self.log:
            what = _action_text(*t.action)
            lines.append(f"turn {t.turn}: {what}" + (f"  [{t.event}]" if t.event else ""))
            if t.perceived:
                lines.append(f"  perceived: {t.perceived}")
            for r in t.replies:
                lines.append(f"  model: {r}")
        return "\n".join(lines)

    # -- internals ---------------------------------------------------------------------
    def _set_options(self, observation: dict[str, Any]) -> None:
        self._options_text = observation.get("options")
        self._info = parse_options(str(self._options_text or ""))

    def _check_audio_condition(self, observation: dict[str, Any]) -> None:
        """Refuse an audio condition this agent would not hear (no silent deaf A / A+T)."""
        if "audio" not in observation or observation.get("perceived") or self.perceiver:
            return
        if not (self.use_audio and self.backend.supports_audio):
            why = (
                "use_audio is off"
                if not self.use_audio
                else f"its backend {self.backend.name!r} takes no audio"
            )
            raise ConfigError(
                f"agent {self.name!r}: the condition gives audio but {why}, so results "
                "labelled A or A+T would not have heard it; run it under T / T+S, use an audio "
                "spec (qwen2-audio:, qwen2.5-omni:, openai: with send_audio=true), or give it a "
                "perceiver (T+S-hat)"
            )

    def _evidence(
        self, observation: dict[str, Any]
    ) -> tuple[str | None, np.ndarray | list[np.ndarray] | None, int]:
        """(perceived sentence made here, audio for the decision call, clips left out)."""
        if observation.get("perceived"):
            return None, None, 0  # the wrapper's sentence is in the observation: no audio
        audio = latest_audio(observation)
        if audio is not None and audio.size:
            self._clips.append(audio.copy())  # the clip alone, not the padded buffer
        if self.perceiver is not None:
            needs_audio = getattr(self.perceiver, "needs_audio", True)
            if needs_audio and (audio is None or audio.size == 0):
                return None, None, 0
            return self._perceive(audio, observation), None, 0
        if audio is None or audio.size == 0:
            return None, None, 0
        if AUDIO_PLACEHOLDER in str(observation.get("transcript", "")):
            # access A: the words of earlier user turns are not shown; every recording goes
            clips = self._clips[-self.max_audio_clips :]
            return None, clips, len(self._clips) - len(clips)
        return None, audio, 0

    def _perceive(self, audio: np.ndarray | None, observation: dict[str, Any]) -> str | None:
        context = str(observation.get("transcript", ""))
        try:
            sentence = self.perceiver.perceive(audio, SAMPLE_RATE, context)
        except (ConfigError, Interrupted):
            raise
        except Exception:
            self._stats["perception_errors"] += 1
            sentence = None
        exchange = getattr(self.perceiver, "last_exchange", None)
        if isinstance(exchange, dict):
            backend = getattr(self.perceiver, "backend", None)
            info = getattr(backend, "last_call", None) if exchange.get("reply") else None
            call = CallLog(
                "perception",
                list(exchange.get("messages") or []),
                exchange.get("reply"),
                float(exchange.get("latency_s") or 0.0),
                exchange.get("usage"),
                bool(exchange.get("cached")),
                1 if exchange.get("audio_seconds") else 0,
                float(exchange.get("audio_seconds") or 0.0),
                exchange.get("error"),
                getattr(info, "finish_reason", None),
            )
            self._pending_calls.append(call)
            self._count_usage(call, getattr(backend, "trust_audio", False))
        return sentence or None

    def _count_usage(self, call: CallLog, trusted: bool = False) -> None:
        """Count an answered call: tokens, cache, finish reason, audio sent unchecked."""
        if call.reply is None:
            return
        self._stats["unchecked_audio_calls"] += bool(trusted and call.audio_clips)
        self._stats["calls"] += call.stage == "perception"
        self._stats["cached_calls"] += call.cached
        self._stats["truncated_replies"] += call.finish_reason == LENGTH
        if call.usage is None:
            self._stats["calls_without_usage"] += 1
        else:
            self._stats["prompt_tokens"] += int(call.usage["prompt_tokens"])
            self._stats["completion_tokens"] += int(call.usage["completion_tokens"])

    def _ask(
        self,
        messages: list[dict[str, Any]],
        audio: np.ndarray | list[np.ndarray] | None,
        replies: list[str],
    ) -> tuple[ParsedReply | None, str | None]:
        self._stats["calls"] += 1
        clips = [] if audio is None else [audio] if isinstance(audio, np.ndarray) else audio
        start = time.perf_counter()

        def log_call(reply: str | None, error: str | None = None) -> CallLog:
            info = getattr(self.backend, "last_call", None) if reply is not None else None
            call = CallLog(
                "decision",
                list(messages),
                reply,
                round(time.perf_counter() - start, 4),
                info.usage.to_dict() if info is not None and info.usage else None,
                bool(info.cached) if info is not None else False,
                len(clips),
                round(sum(c.size for c in clips) / SAMPLE_RATE, 3),
                error,
                getattr(info, "finish_reason", None),
            )
            self._pending_calls.append(call)
            return call

        trusted = bool(getattr(self.backend, "trust_audio", False))
        try:
            text = self.backend.complete(messages, audio=audio, seed=self._seed, run=self.run)
        except BackendTimeout as exc:
            self._stats["timeouts"] += 1
            why = self._redact(str(exc))
            log_call(None, why[:300])
            raise InfrastructureError(f"model call timed out after retries: {why}") from exc
        except BackendError as exc:
            self._stats["api_errors"] += 1
            why = self._redact(str(exc))
            log_call(None, why[:300])
            raise InfrastructureError(f"model call failed after retries: {why}") from exc
        call = log_call(text)
        self._count_usage(call, trusted)
        replies.append(text)
        truncated = call.finish_reason == LENGTH
        if not text.strip():
            if truncated:  # e.g. a reasoning model that spent every token thinking
                self._stats["truncated"] += 1
                return None, "truncated"
            self._stats["empty_replies"] += 1
            return None, "empty_reply"
        matcher = self._matcher if self._matcher is not None else default_topic_matcher()
        parsed = parse_reply(
            text,
            self._info,
            allow_clarify=self.allow_clarify,
            matcher=matcher,
            truncated=truncated,
        )
        return parsed, None


def _action_text(act: int, option: int, topic: int) -> str:
    """``RECOMMEND option 3``, ``ASK open``, ``ASK topic 2``, ``CONFIRM``."""
    what = ACTION_NAMES[act]
    if act == 2:
        what += f" option {option + 1}"
    elif act == 0:
        what += " open" if topic == 0 else f" topic {topic}"
    return what
