"""``AudioLLMPerceiver``: an audio LLM as the first stage of the two-stage T+S-hat."""

from __future__ import annotations

from typing import Any

import numpy as np

from hear2act_agents.llm.backends.base import BackendError
from hear2act_agents.llm.prompting import build_perception_messages, first_sentence
from hear2act_agents.perceivers import NO_AUDIO, to_rate
from hear2act_env.errors import ConfigError

__all__ = ["AudioLLMPerceiver"]


class AudioLLMPerceiver:
    """First stage of T+S-hat: an audio LLM backend infers the state from the latest audio.

    ``backend`` is an audio-capable ``ChatBackend`` (``Qwen2AudioBackend``,
    ``Qwen25OmniBackend``, or an ``OpenAIChatBackend`` with ``send_audio=True``). The reply's
    first sentence is the perception; an empty or failed reply gives a neutral sentence (and
    counts in ``errors``).
    """

    FAILED = "The user's state could not be inferred from the recording."

    def __init__(self, backend: Any, *, domain: str | None = None, name: str | None = None):
        if not getattr(backend, "supports_audio", False):
            raise ConfigError(f"{getattr(backend, 'name', backend)!r} cannot take audio")
        self.backend = backend
        self.domain = domain
        self.name = name or f"stage1:{backend.name}"
        self.errors = 0
        self.seed: int | None = None
        self.run = 0

    def perceive(self, audio: np.ndarray, sample_rate: int, context: str = "") -> str:
        audio = to_rate(audio, sample_rate, 16_000)
        if audio.size == 0:
            return NO_AUDIO
        messages = build_perception_messages(context, self.domain)
        try:
            reply = self.backend.complete(messages, audio=audio, seed=self.seed, run=self.run)
        except BackendError:
            self.errors += 1
            return self.FAILED
        sentence = first_sentence(reply)
        if not sentence:
            self.errors += 1
            return self.FAILED
        return sentence
