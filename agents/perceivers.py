"""Perceivers: one sentence about the latest user audio, for T+S-hat and generic affect.

A perceiver turns a waveform into text that any decision agent can read (through
``hear2act_env.wrappers.PerceivedState`` or an ``LLMPolicy``'s own first stage):

- ``AudioClassifierPerceiver``: a ``transformers`` audio-classification model from a local
  folder (e.g. a wav2vec2 or HuBERT emotion recognizer such as SUPERB-ER or an IEMOCAP model),
  worded as "The speaker sounds sad (0.71)." (generic affect labels).
- ``hear2act_agents.llm.perceiver.AudioLLMPerceiver`` (in the LLM package, which builds it for
  ``perceiver="self"``): the first stage of the two-stage T+S-hat, an audio LLM.
- ``ReferenceProsodyPerceiver``: the project's prosodic-feature logistic model
  (``hear2act_env.speech.perception.LogisticModel``).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hear2act_env.errors import ConfigError

__all__ = [
    "AudioClassifierPerceiver",
    "Perceiver",
    "ReferenceProsodyPerceiver",
    "make_perceiver",
]

NO_AUDIO = "No recording of the user's latest turn is available."


@runtime_checkable
class Perceiver(Protocol):
    """``perceive(audio, sample_rate, context) -> str``: one sentence about ``audio``.

    ``context`` is the dialogue so far (the transcript), for perceivers that use it.
    """

    name: str

    def perceive(self, audio: np.ndarray, sample_rate: int, context: str) -> str: ...


#: Short class names of common emotion recognizers, in words.
EMOTION_WORDS = {
    "neu": "neutral",
    "hap": "happy",
    "ang": "angry",
    "sad": "sad",
    "exc": "excited",
    "fru": "frustrated",
    "fea": "fearful",
    "sur": "surprised",
    "dis": "disgusted",
    "cal": "calm",
}


def to_rate(audio: np.ndarray, sample_rate: int, target: int) -> np.ndarray:
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if sample_rate == target or audio.size == 0:
        return audio
    from hear2act_env.speech.resample import resample

    return resample(audio, sample_rate, target)


class AudioClassifierPerceiver:
    """Generic affect from an audio-classification model in a local folder.

    ``top_k`` labels are worded (the first as "sounds X (p)", the others as runners-up).
    ``words`` maps raw class names to words (default: ``EMOTION_WORDS``, else the name).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        device: str | None = None,
        top_k: int = 1,
        words: dict[str, str] | None = None,
        name: str | None = None,
    ) -> None:
        from hear2act_agents.loading import (
            load_error,
            pick_device,
            require,
            resolve_model_path,
        )

        tf = require("transformers")
        self._torch = require("torch")
        self.path = resolve_model_path(str(path))
        self.device = pick_device(device)
        self.top_k = max(1, int(top_k))
        self.words = dict(EMOTION_WORDS if words is None else words)
        self.name = name or f"affect:{os.path.basename(str(path).rstrip('/'))}"
        try:
            self.extractor = tf.AutoFeatureExtractor.from_pretrained(
                self.path, local_files_only=True
            )
            self.model = tf.AutoModelForAudioClassification.from_pretrained(
                self.path, local_files_only=True
            )
        except (OSError, ValueError, KeyError) as exc:
            raise load_error(self.path, exc) from exc
        self.model.to(self.device).eval()
        self.sampling_rate = int(getattr(self.extractor, "sampling_rate", 16_000))
        self._lock = threading.Lock()

    def scores(self, audio: np.ndarray, sample_rate: int) -> list[tuple[str, float]]:
        """(label in words, probability) for every class, most likely first."""
        torch = self._torch
        x = to_rate(audio, sample_rate, self.sampling_rate)
        with self._lock, torch.no_grad():
            inputs = self.extractor(x, sampling_rate=self.sampling_rate, return_tensors="pt").to(
                self.device
            )
            logits = self.model(**inputs).logits[0].float()
            probs = torch.softmax(logits, dim=-1).cpu().numpy()
        labels = self.model.config.id2label
        out = [
            (self.words.get(str(labels[i]).lower(), str(labels[i])), float(p))
            for i, p in enumerate(probs)
        ]
        return sorted(out, key=lambda t: -t[1])

    def perceive(self, audio: np.ndarray, sample_rate: int, context: str = "") -> str:
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        if audio.size == 0:
            return NO_AUDIO
        ranked = self.scores(audio, sample_rate)
        word, p = ranked[0]
        sentence = f"The speaker sounds {word} ({p:.2f})"
        rest = ranked[1 : self.top_k]
        if rest:
            sentence += "; next: " + ", ".join(f"{w} ({q:.2f})" for w, q in rest)
        return sentence + "."


class ReferenceProsodyPerceiver:
    """The reference prosody classifier (prosodic features + ``LogisticModel``)."""

    def __init__(self, model: Any, name: str = "prosody-reference") -> None:
        if isinstance(model, str | os.PathLike):
            from hear2act_env.speech.perception import LogisticModel

            model = LogisticModel.load(model)
        self.model = model
        self.name = name

    def perceive(self, audio: np.ndarray, sample_rate: int, context: str = "") -> str:
        from hear2act_env.constants import SAMPLE_RATE
        from hear2act_env.speech.features import prosodic_features

        audio = to_rate(audio, sample_rate, SAMPLE_RATE)
        if audio.size == 0:
            return NO_AUDIO
        p = float(self.model.predict_proba(prosodic_features(audio, SAMPLE_RATE)[None, :])[0])
        if p >= 0.5:
            return f"The user's voice sounds satisfied with the current option (resolved, {p:.2f})."
        return (
            "The user's voice sounds less than satisfied with the current option "
            f"(unresolved, {1 - p:.2f})."
        )


def make_perceiver(spec: Any, *, device: str | None = None) -> Any:
    """A perceiver from a spec: an object with ``perceive`` (returned as is), ``"affect:PATH"``
    (an ``AudioClassifierPerceiver``) or ``"prosody:PATH"`` (a saved reference
    ``LogisticModel``). ``"self"`` (an audio LLM's own first stage) is built by
    ``hear2act_agents.llm.factory.make_llm_agent``."""
    if spec is None or callable(getattr(spec, "perceive", None)):
        return spec
    if not isinstance(spec, str):
        raise ConfigError(f"perceiver: expected a perceiver object or a spec string, got {spec!r}")
    kind, sep, rest = spec.partition(":")
    if sep and kind == "affect" and rest:
        return AudioClassifierPerceiver(rest, device=device)
    if sep and kind == "prosody" and rest:
        return ReferenceProsodyPerceiver(rest)
    raise ConfigError(
        f"perceiver: unknown spec {spec!r}; known: 'self' (audio LLM agents), 'self-text' "
        "(any LLM agent), 'affect:PATH', 'prosody:PATH', or "
        "an object with perceive(audio, sample_rate, context)"
    )
