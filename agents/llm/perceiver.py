"""First stages of the two-stage T+S-hat: an LLM reads the user's latest turn into one sentence.

- ``AudioLLMPerceiver``: an audio LLM hears the latest user recording with the dialogue
  (``perceiver="self"`` for audio specs): the paper's T+S-hat.
- ``TranscriptPerceiver``: the same prompt, the same model call, with no audio attached
  (``perceiver="self-text"``, any LLM spec): the transcript-only control the paper lacks, so
  ``T+S-hat(audio) - T+S-hat(transcript)`` isolates what the voice adds.

Both keep ``last_exchange``, the latest call's messages, reply, latency and tokens (None when
no call was made), which ``LLMPolicy`` writes to the episode's agent log.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from hear2act_agents.llm.backends.base import BackendError
from hear2act_agents.llm.prompting import build_perception_messages, first_sentence
from hear2act_agents.perceivers import NO_AUDIO, to_rate
from hear2act_env.errors import ConfigError

__all__ = ["AudioLLMPerceiver", "TranscriptPerceiver"]


class AudioLLMPerceiver:
    """First stage of T+S-hat: an audio LLM backend infers the state from the latest audio.

    ``backend`` is an audio-capable ``ChatBackend`` (``Qwen2AudioBackend``,
    ``Qwen25OmniBackend``, or an ``OpenAIChatBackend`` with ``send_audio=True``). The reply's
    first sentence is the perception; an empty or failed reply gives a neutral sentence (and
    counts in ``errors``).
    """

    FAILED = "The user's state could not be inferred from the recording."
    #: Whether ``perceive`` needs the latest user audio (the policy runs it only when present).
    needs_audio = True
    prefix = "stage1"

    def __init__(self, backend: Any, *, domain: str | None = None, name: str | None = None):
        if self.needs_audio and not getattr(backend, "supports_audio", False):
            raise ConfigError(f"{getattr(backend, 'name', backend)!r} cannot take audio")
        self.backend = backend
        self.domain = domain
        self.name = name or f"{self.prefix}:{backend.name}"
        self.errors = 0
        self.seed: int | None = None
        self.run = 0
        self.last_exchange: dict[str, Any] | None = None

    def perceive(self, audio: np.ndarray | None, sample_rate: int, context: str = "") -> str:
        self.last_exchange = None
        clip = None
        if self.needs_audio:
            clip = to_rate(np.asarray(audio, dtype=np.float32), sample_rate, 16_000)
            if clip.size == 0:
                return NO_AUDIO
        messages = build_perception_messages(context, self.domain)
        start = time.perf_counter()
        try:
            reply = self.backend.complete(messages, audio=clip, seed=self.seed, run=self.run)
        except BackendError as exc:
            self.errors += 1
            self.last_exchange = {
                "messages": messages,
                "reply": None,
                "error": str(exc)[:300],
                "latency_s": round(time.perf_counter() - start, 4),
            }
            return self.FAILED
        info = getattr(self.backend, "last_call", None)
        self.last_exchange = {
            "messages": messages,
            "reply": reply,
            "latency_s": round(time.perf_counter() - start, 4),
            "usage": info.usage.to_dict() if info is not None and info.usage else None,
            "cached": bool(info.cached) if info is not None else False,
            "audio_seconds": round(clip.size / 16_000, 3) if clip is not None else None,
        }
        sentence = first_sentence(reply)
        if not sentence:
            self.errors += 1
            return self.FAILED
        return sentence


class TranscriptPerceiver(AudioLLMPerceiver):
    """The transcript-only control of T+S-hat: ``AudioLLMPerceiver``'s prompt and call with no
    recording attached, on any chat backend (the audio argument is ignored)."""

    needs_audio = False
    prefix = "stage1-text"
