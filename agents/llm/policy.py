"""``LLMPolicy``: a chat model as a Hear2Act policy.

Per turn: build the decision prompt (``prompting``) from the observation and the evidence the
access condition gives, call the backend, parse the reply (``parsing``). A reply without a
usable action is re-asked once with a short format reminder; if the second reply is no better,
the policy asks an open question and counts a format error. Empty replies and invalid option
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
  perceiver on the latest user audio itself (first stage) and decides without audio.
- otherwise, ``audio`` in the observation and an audio-capable backend: the recording is
  attached to the decision call (access A / A+T).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hear2act_agents.llm.backends.base import BackendError, BackendTimeout, ChatBackend
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
from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import ConfigError, InfrastructureError

__all__ = ["STAT_KEYS", "LLMPolicy", "TurnLog", "latest_audio"]

STAT_KEYS = (
    "calls",
    "format_errors",
    "reasks",
    "timeouts",
    "empty_replies",
    "invalid_options",
    "api_errors",
    "perception_errors",
    "fallbacks",
)


def latest_audio(observation: dict[str, Any]) -> np.ndarray | None:
    """The latest user turn's waveform (``audio[:audio_length]``), or None."""
    if "audio" not in observation:
        return None
    audio = np.asarray(observation["audio"], dtype=np.float32).reshape(-1)
    n = int(np.asarray(observation.get("audio_length", audio.size)).reshape(-1)[0])
    return audio[: max(0, min(n, audio.size))]


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


class LLMPolicy:
    """A Hear2Act policy driven by a ``ChatBackend``.

    ``allow_clarify`` must match the env's (False for spoken assistants). ``perceiver``: an
    object with ``perceive(audio, sample_rate, context) -> str`` run on the latest user audio
    (T+S-hat with a separate first stage; ``hear2act_agents.perceivers``). ``run`` is the repetition
    index that goes into seeds and cache keys. ``topic_matcher`` maps free-text questions to
    attributes (default: MiniLM when installed, else keywords).
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
        self._matcher = topic_matcher
        self._stats = dict.fromkeys(STAT_KEYS, 0)
        self._seed: int | None = None
        self._info = OptionsInfo((), ())
        self._options_text: str | None = None
        self._turn = 0
        self.log: list[TurnLog] = []

    # -- Policy protocol ---------------------------------------------------------------
    def reset(self, observation: dict[str, Any], seed: int | None = None) -> None:
        self._stats = dict.fromkeys(STAT_KEYS, 0)
        self._seed = seed
        self._turn = 0
        self.log = []
        self._set_options(observation)

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        if self._options_text != observation.get("options"):
            self._set_options(observation)
        self._turn += 1
        perceived, audio = self._evidence(observation)
        messages = build_decision_messages(
            observation,
            allow_clarify=self.allow_clarify,
            perceived=perceived,
            audio_attached=audio is not None,
        )
        replies: list[str] = []
        parsed, event = self._ask(messages, audio, replies)
        if parsed is not None and not parsed.usable and event is None:
            if parsed.issue == "invalid_option":
                self._stats["invalid_options"] += 1
                event = "invalid_option"
            else:  # no action, or RECOMMEND without an option: re-ask once
                self._stats["reasks"] += 1
                retry = [*messages, {"role": "assistant", "content": replies[-1]}]
                retry.append(reminder_message(self.allow_clarify))
                parsed, event = self._ask(retry, audio, replies)
                if parsed is not None and not parsed.usable and event is None:
                    if parsed.issue == "invalid_option":
                        self._stats["invalid_options"] += 1
                        event = "invalid_option"
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
                TurnLog(self._turn, messages, replies, action, utterance, perceived, event)
            )
        return np.array(action, dtype=np.int64)

    # -- extras ------------------------------------------------------------------------
    def stats(self) -> dict[str, int]:
        """This episode's counters (reset by ``reset``)."""
        return dict(self._stats)

    def transcript(self) -> str:
        """A readable log of this episode's turns: reply texts and the actions taken."""
        lines = []
        for t in self.log:
            act, option, topic = t.action
            what = ACTION_NAMES[act]
            if act == 2:
                what += f" option {option + 1}"
            elif act == 0:
                what += " open" if topic == 0 else f" topic {topic}"
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

    def _evidence(self, observation: dict[str, Any]) -> tuple[str | None, np.ndarray | None]:
        """(perceived sentence made here, audio for the decision call)."""
        if observation.get("perceived"):
            return None, None  # the wrapper's sentence is in the observation: no audio
        audio = latest_audio(observation)
        if self.perceiver is not None:
            if audio is None or audio.size == 0:
                return None, None
            try:
                sentence = self.perceiver.perceive(
                    audio, SAMPLE_RATE, str(observation.get("transcript", ""))
                )
            except ConfigError:
                raise
            except Exception:
                self._stats["perception_errors"] += 1
                sentence = None
            return (sentence or None), None
        if audio is not None and audio.size and self.use_audio and self.backend.supports_audio:
            return None, audio
        return None, None

    def _ask(
        self, messages: list[dict[str, Any]], audio: np.ndarray | None, replies: list[str]
    ) -> tuple[ParsedReply | None, str | None]:
        self._stats["calls"] += 1
        try:
            text = self.backend.complete(messages, audio=audio, seed=self._seed, run=self.run)
        except BackendTimeout as exc:
            self._stats["timeouts"] += 1
            raise InfrastructureError(f"model call timed out after retries: {exc}") from exc
        except BackendError as exc:
            self._stats["api_errors"] += 1
            raise InfrastructureError(f"model call failed after retries: {exc}") from exc
        replies.append(text)
        if not text.strip():
            self._stats["empty_replies"] += 1
            return None, "empty_reply"
        matcher = self._matcher if self._matcher is not None else default_topic_matcher()
        parsed = parse_reply(text, self._info, allow_clarify=self.allow_clarify, matcher=matcher)
        return parsed, None
