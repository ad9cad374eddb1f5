"""Audio LLMs through ``transformers``: Qwen2-Audio and the Qwen2.5-Omni thinker.

The recording of the latest user turn (float32, 16 kHz) is attached to the first user message
as an audio content part; the model's processor expands it into audio tokens and features.
Used for access ``A`` / ``A+T`` (audio in the decision call) and, through
``hear2act_agents.perceivers.AudioLLMPerceiver``, as the first stage of the two-stage ``T+S-hat``
(infer one sentence from the audio, then decide from the transcript and that sentence without
audio). As for ``hf_chat``: each reply's ``finish_reason`` is ``"length"`` when generation used
all of ``max_new_tokens``, else ``"stop"``, and no generation starts after a stop request.

Version notes (transformers 4.50 to 5.x):
- the processors take ``audio=``; releases before 4.47-ish only knew ``audios=``, so a
  TypeError on ``audio=`` retries with ``audios=``;
- the weights' dtype keyword changed name (``hear2act_agents.loading.dtype_kwargs``);
- in 5.x ``AutoProcessor`` of Qwen2.5-Omni builds a video processor that needs torchvision:
  when the processor cannot be built, a light processor (tokenizer + feature extractor + the
  checkpoint's chat template, expanding the audio placeholder the same way the processor does)
  is used instead;
- the full ``Qwen2_5OmniForConditionalGeneration.from_pretrained`` wants ``spk_dict.pt`` (the
  talker's voices) and loads the talker: we load only the thinker class. For a full Omni
  checkpoint (model_type ``qwen2_5_omni``) the thinker's config is taken from
  ``thinker_config`` and its weights are mapped from the ``thinker.`` prefix.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_agents.llm.backends.base import (
    BackendError,
    LocalGeneration,
    LocalGenerationSettings,
    Message,
    MicroBatcher,
    Reply,
    Request,
    clips_of,
)
from hear2act_agents.llm.backends.hf_chat import (
    generated_replies,
    render_chat,
    stop_token_ids,
)
from hear2act_agents.llm.cache import ResponseCache, audio_digest, cache_key
from hear2act_agents.loading import (
    dtype_kwargs,
    load_error,
    require,
    shared,
)
from hear2act_env import interrupts
from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import ConfigError
from hear2act_env.seeding import derive_seed

__all__ = [
    "AudioLLMBackend",
    "AudioSettings",
    "Qwen25OmniBackend",
    "Qwen2AudioBackend",
    "with_audio",
]


def with_audio(messages: Sequence[Message], audio: Any) -> list[Message]:
    """Copy of ``messages`` whose first user message carries ``audio`` (one waveform or several,
    in order) as content parts before its text."""
    out = [dict(m) for m in messages]
    clips = clips_of(audio)
    if not clips:
        return out
    for m in out:
        if m.get("role") == "user":
            text = m["content"]
            m["content"] = [
                *({"type": "audio", "audio": c} for c in clips),
                {"type": "text", "text": text if isinstance(text, str) else str(text)},
            ]
            break
    return out


def _audio_tokens(n_frames: int) -> int:
    """Audio tokens for ``n_frames`` mel frames (two stride-2 stages, as both processors do)."""
    return (((n_frames - 1) // 2 + 1) - 2) // 2 + 1


class _LightProcessor:
    """Tokenizer + Whisper feature extractor + chat template, when AutoProcessor fails."""

    def __init__(self, path: str, tf: Any) -> None:
        self.tokenizer = tf.AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.feature_extractor = tf.AutoFeatureExtractor.from_pretrained(
            path, local_files_only=True
        )
        self.chat_template = _read_chat_template(path) or self.tokenizer.chat_template
        tok = self.tokenizer
        self.audio_token = getattr(tok, "audio_token", None) or "<|AUDIO|>"

    def apply_chat_template(self, conversation: list[Message], **kwargs: Any) -> str:
        for fixed in ("chat_template", "tokenize", "add_generation_prompt"):
            kwargs.pop(fixed, None)
        return render_chat(self.tokenizer, conversation, self.chat_template, kwargs)

    def __call__(self, text: list[str], audio: list[np.ndarray] | None = None, **kwargs: Any):
        tf = require("transformers")
        texts = list(text)
        feats: dict[str, Any] = {}
        if audio:
            fe = self.feature_extractor(
                audio,
                sampling_rate=SAMPLE_RATE,
                return_attention_mask=True,
                padding="max_length",
                return_tensors="pt",
            )
            mask = fe["attention_mask"]
            counts = [_audio_tokens(int(n)) for n in mask.sum(-1).tolist()]
            k = 0
            for i, t in enumerate(texts):
                pieces = t.split(self.audio_token)
                rebuilt = pieces[0]
                for piece in pieces[1:]:
                    rebuilt += self.audio_token * counts[k] + piece
                    k += 1
                texts[i] = rebuilt
            if k != len(counts):
                raise BackendError(f"{k} audio placeholders for {len(counts)} recordings")
            feats = {"input_features": fe["input_features"], "feature_attention_mask": mask}
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        return tf.BatchFeature({**enc, **feats})

    def batch_decode(self, ids: Any, **kwargs: Any) -> list[str]:
        return self.tokenizer.batch_decode(ids, **kwargs)


def _read_chat_template(path: str) -> str | None:
    p = Path(path)
    if (p / "chat_template.jinja").is_file():
        return (p / "chat_template.jinja").read_text(encoding="utf-8")
    for name in ("chat_template.json", "processor_config.json"):
        f = p / name
        if f.is_file():
            try:
                value = json.loads(f.read_text(encoding="utf-8")).get("chat_template")
            except ValueError:
                continue
            if isinstance(value, str):
                return value
    return None


class _LoadedAudio:
    def __init__(
        self, path: str, model_class: str, device: str, dtype: str | None, processor: str
    ) -> None:
        tf = require("transformers")
        self.torch = require("torch")
        cls = getattr(tf, model_class, None)
        if cls is None:
            raise ConfigError(
                f"this transformers ({tf.__version__}) has no {model_class}; install a release "
                "that supports the model"
            )
        kwargs = dtype_kwargs(dtype)
        if device == "auto":
            require("accelerate")
            kwargs["device_map"] = "auto"
        try:
            kwargs.update(self._thinker_kwargs(path, model_class, tf))
            self.model = cls.from_pretrained(path, local_files_only=True, **kwargs)
        except (OSError, ValueError, KeyError) as exc:
            raise load_error(path, exc) from exc
        if device != "auto":
            self.model.to(device)
        self.model.eval()
        self.processor: Any = None
        if processor == "auto":
            try:
                self.processor = tf.AutoProcessor.from_pretrained(path, local_files_only=True)
            except Exception:  # e.g. Omni's video processor without torchvision
                self.processor = None
            if getattr(self.processor, "feature_extractor", None) is None:
                # a folder without ``processor_class`` gives a bare tokenizer, which would drop
                # the audio without a word: build the light processor instead
                self.processor = None
        if self.processor is None:
            try:
                self.processor = _LightProcessor(path, tf)
            except (OSError, ValueError, KeyError) as exc:
                raise load_error(path, exc) from exc
        self.tokenizer = getattr(self.processor, "tokenizer", None)
        if self.tokenizer is not None:
            self.tokenizer.padding_side = "left"
            if self.tokenizer.pad_token_id is None:
                self.tokenizer.pad_token = self.tokenizer.eos_token
        self.device = device if device != "auto" else str(self.model.device)
        self.lock = threading.Lock()

    @staticmethod
    def _thinker_kwargs(path: str, model_class: str, tf: Any) -> dict[str, Any]:
        """For a full Qwen2.5-Omni checkpoint: the thinker's config and weight-name mapping."""
        if model_class != "Qwen2_5OmniThinkerForConditionalGeneration":
            return {}
        cfg_file = Path(path) / "config.json"
        if not cfg_file.is_file():
            return {}
        raw = json.loads(cfg_file.read_text(encoding="utf-8"))
        if raw.get("model_type") != "qwen2_5_omni":
            return {}
        full = tf.AutoConfig.from_pretrained(path, local_files_only=True)
        # key_mapping (4.51+) renames checkpoint keys "thinker.x" to "x"; the talker's and
        # token2wav's weights are then unexpected keys and are skipped.
        return {"config": full.thinker_config, "key_mapping": {r"^thinker\.": ""}}


@dataclass(frozen=True)
class AudioSettings(LocalGenerationSettings):
    """``LocalGenerationSettings`` (batches of 4 by default) and ``processor``: ``"auto"`` (the
    checkpoint's processor, or the light one when it cannot be built) or ``"light"``."""

    max_batch_size: int = 4
    processor: str = "auto"

    def validate(self, kind: str) -> None:
        """The processor first, then the limits every local backend checks."""
        if self.processor not in ("auto", "light"):
            raise ConfigError(f"processor: got {self.processor!r}, expected 'auto' or 'light'")
        super().validate(kind)


class AudioLLMBackend(LocalGeneration):
    """Shared code of the audio LLM backends (subclasses name the model class)."""

    kind = "audio"
    model_class = ""
    supports_audio = True

    settings_class = AudioSettings

    def __init__(self, path: str, settings: AudioSettings | None = None, **overrides: Any) -> None:
        """``settings`` (an ``AudioSettings``), or its fields as keywords."""
        options = self._init_generation(path, settings, **overrides)
        dtype, processor = options.dtype, options.processor
        key = (self.model_class, self.path, self.device, dtype, processor)
        self._m: _LoadedAudio = shared(
            key, lambda: _LoadedAudio(self.path, self.model_class, self.device, dtype, processor)
        )
        size, wait = options.max_batch_size, options.batch_wait_s
        self.batcher = shared(
            (
                *key,
                "batcher",
                size,
                wait,
                self.temperature,
                options.top_p,
                options.max_new_tokens,
                json.dumps(self.chat_template_kwargs, sort_keys=True),
            ),
            lambda: MicroBatcher(self._run_batch, size, wait),
        )
        self.cache = ResponseCache(options.cache_dir) if options.cache_dir is not None else None

    @property
    def processor_kind(self) -> str:
        return "light" if isinstance(self._m.processor, _LightProcessor) else "auto"

    def complete(
        self,
        messages: Sequence[Message],
        *,
        audio: np.ndarray | None = None,
        seed: int | None = None,
        run: int = 0,
    ) -> str:
        clips = clips_of(audio)
        audio = (clips[0] if len(clips) == 1 else clips) if clips else None
        material = {
            "backend": self.kind,
            "model": self.path,
            "messages": list(messages),
            "settings": self.settings(),
            "audio": audio_digest(audio),
            "seed": seed,
            "run": run,
        }
        req_seed = None if seed is None else derive_seed(seed, run)
        return self._cached(
            cache_key(material),
            material,
            lambda: self.batcher.submit(Request(list(messages), audio, req_seed)),
        )

    # -- generation --------------------------------------------------------------------
    def _run_batch(self, requests: list[Request]) -> list[Reply]:
        out: list[Reply | None] = [None] * len(requests)
        if self.temperature > 0:
            for i, r in enumerate(requests):
                out[i] = self._generate([r], r.seed)[0]
            return out  # type: ignore[return-value]
        # requests with and without audio go in separate generate calls
        for has_audio in (True, False):
            idx = [i for i, r in enumerate(requests) if (r.audio is not None) == has_audio]
            if idx:
                for i, text in zip(idx, self._generate([requests[i] for i in idx], None)):
                    out[i] = text
        return out  # type: ignore[return-value]

    def _inputs(self, requests: list[Request]) -> Any:
        proc = self._m.processor
        texts = [
            proc.apply_chat_template(
                with_audio(r.messages, r.audio),
                **self.chat_template_kwargs,
                add_generation_prompt=True,
                tokenize=False,
            )
            for r in requests
        ]
        audios = [c for r in requests for c in clips_of(r.audio)]
        if not audios:
            return proc(text=texts, return_tensors="pt", padding=True)
        inputs = self._call_processor(proc, texts, audios)
        features = inputs.get("input_features") if hasattr(inputs, "get") else None
        if features is None or int(features.shape[0]) != len(audios):
            got = "none" if features is None else f"{int(features.shape[0])}"
            raise ConfigError(
                f"{self.name}: the processor ({type(proc).__name__}) produced audio features for "
                f"{got} of {len(audios)} recordings, so the model would not hear them; pass "
                "processor='light' or fix the model folder's processor files (processor_class)"
            )
        return inputs

    @staticmethod
    def _call_processor(proc: Any, texts: list[str], audios: list[np.ndarray]) -> Any:
        try:
            return proc(
                text=texts,
                audio=audios,
                sampling_rate=SAMPLE_RATE,
                return_tensors="pt",
                padding=True,
            )
        except TypeError:  # transformers releases whose processors say ``audios=``
            return proc(
                text=texts,
                audios=audios,
                sampling_rate=SAMPLE_RATE,
                return_tensors="pt",
                padding=True,
            )

    def _generate(self, requests: list[Request], seed: int | None) -> list[Reply]:
        m = self._m
        torch = m.torch
        interrupts.raise_if_requested()  # no new generation after a stop request
        with m.lock:
            try:
                inputs = self._inputs(requests).to(m.device)
                if "input_features" in inputs and m.model.dtype != torch.float32:
                    inputs["input_features"] = inputs["input_features"].to(m.model.dtype)
                gen: dict[str, Any] = {"max_new_tokens": self.max_new_tokens}
                if m.tokenizer is not None:
                    gen["pad_token_id"] = m.tokenizer.pad_token_id
                if self.temperature > 0:
                    gen.update(do_sample=True, temperature=self.temperature)
                    if self.top_p is not None:
                        gen["top_p"] = self.top_p
                    torch.manual_seed(seed if seed is not None else 0)
                else:
                    gen.update(do_sample=False)
                with torch.no_grad():
                    out = m.model.generate(**inputs, **gen)
            except ConfigError:
                raise
            except Exception as exc:
                raise BackendError(f"{self.name}: generation failed: {exc}") from exc
        if isinstance(out, tuple):  # a full Omni model returns (text ids, audio)
            out = out[0]
        new = out[:, inputs["input_ids"].shape[1] :]
        texts = m.processor.batch_decode(new, skip_special_tokens=True)
        stops = stop_token_ids(m.model, m.tokenizer)
        return generated_replies(texts, inputs, new, stops, self.max_new_tokens)


class Qwen2AudioBackend(AudioLLMBackend):
    """Qwen2-Audio (``Qwen2AudioForConditionalGeneration``), e.g. Qwen2-Audio-7B-Instruct."""

    kind = "qwen2-audio"
    model_class = "Qwen2AudioForConditionalGeneration"


class Qwen25OmniBackend(AudioLLMBackend):
    """The Qwen2.5-Omni thinker (``Qwen2_5OmniThinkerForConditionalGeneration``), text out."""

    kind = "qwen2.5-omni"
    model_class = "Qwen2_5OmniThinkerForConditionalGeneration"
