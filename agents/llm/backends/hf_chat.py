"""Local ``transformers`` chat models (AutoModelForCausalLM + the tokenizer's chat template).

Greedy decoding by default (``temperature=0``); with ``temperature > 0`` each request is
sampled on its own under a seed derived from the episode seed and run index, so sampled runs
are reproducible. Greedy requests from concurrent episodes (threads sharing the backend) are
batched by a ``MicroBatcher`` with left padding. The model and tokenizer are loaded once per
process and path and shared by every policy that asks for them. Each reply's
``finish_reason`` is ``"length"`` when generation used all of ``max_new_tokens`` without a
stop token, else ``"stop"``. No generation starts after a stop request
(``hear2act_env.interrupts``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hear2act_agents.llm.backends.base import (
    LENGTH,
    BackendError,
    LocalGeneration,
    LocalGenerationSettings,
    Message,
    MicroBatcher,
    Reply,
    Request,
    Usage,
)
from hear2act_agents.llm.cache import ResponseCache, cache_key
from hear2act_agents.loading import (
    dtype_kwargs,
    load_error,
    require,
    shared,
)
from hear2act_env import interrupts
from hear2act_env.errors import ConfigError
from hear2act_env.seeding import derive_seed

__all__ = [
    "TransformersChatBackend",
    "TransformersSettings",
    "finish_reasons",
    "generated_replies",
    "generated_usage",
    "render_chat",
]


def render_chat(
    tokenizer: Any,
    messages: Sequence[Message],
    template: str | None = None,
    template_kwargs: dict[str, Any] | None = None,
) -> str:
    """The prompt text for ``messages`` with a generation prompt; ``template_kwargs`` go to the
    chat template (e.g. ``{"enable_thinking": False}`` for Qwen3).

    Some chat templates (e.g. Gemma's) reject a system role: then the system text is put in
    front of the first user message and the template is applied again.
    """
    kwargs: dict[str, Any] = {
        **(template_kwargs or {}),
        "tokenize": False,
        "add_generation_prompt": True,
    }
    if template is not None:
        kwargs["chat_template"] = template
    try:
        return tokenizer.apply_chat_template(list(messages), **kwargs)
    except Exception:
        if not messages or messages[0].get("role") != "system":
            raise
    merged = [dict(m) for m in messages[1:]]
    system = str(messages[0]["content"])
    for m in merged:
        if m.get("role") == "user":
            if isinstance(m["content"], str):
                m["content"] = f"{system}\n\n{m['content']}"
            else:
                m["content"] = [{"type": "text", "text": system + "\n\n"}, *m["content"]]
            break
    return tokenizer.apply_chat_template(merged, **kwargs)


def generated_usage(inputs: Any, new_ids: Any, stop_ids: set[int]) -> list[Usage]:
    """Tokens per row of a left-padded batch: the prompt's (its attention mask) and the reply's
    (up to and including the first stop token; padding after it does not count)."""
    prompt = inputs["attention_mask"].sum(-1).tolist() if "attention_mask" in inputs else None
    out = []
    for i, row in enumerate(new_ids.tolist()):
        n = next((j + 1 for j, t in enumerate(row) if t in stop_ids), len(row))
        p = int(prompt[i]) if prompt is not None else int(inputs["input_ids"].shape[1])
        out.append(Usage(p, n))
    return out


def finish_reasons(new_ids: Any, stop_ids: set[int], max_new_tokens: int) -> list[str]:
    """Per row of generated ids: ``"length"`` when the row holds no stop token and used all of
    ``max_new_tokens`` (cut off), else ``"stop"``."""
    return [
        LENGTH if len(row) >= max_new_tokens and not any(t in stop_ids for t in row) else "stop"
        for row in new_ids.tolist()
    ]


def generated_replies(
    texts: Sequence[str], inputs: Any, new_ids: Any, stop_ids: set[int], max_new_tokens: int
) -> list[Reply]:
    """The ``Reply`` of each row: its text, tokens (``generated_usage``) and finish reason."""
    usage = generated_usage(inputs, new_ids, stop_ids)
    finish = finish_reasons(new_ids, stop_ids, max_new_tokens)
    return [Reply(t, u, f) for t, u, f in zip(texts, usage, finish)]


def stop_token_ids(model: Any, tokenizer: Any) -> set[int]:
    """The ids that end a generated reply: the generation config's EOS ids and the pad id."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    for tok_id in (
        getattr(tokenizer, "eos_token_id", None),
        getattr(tokenizer, "pad_token_id", None),
    ):
        if tok_id is not None:
            ids.add(int(tok_id))
    return ids


class _Loaded:
    def __init__(self, path: str, device: str, dtype: str | None, trust_remote_code: bool):
        tf = require("transformers")
        self.torch = require("torch")
        try:
            self.tokenizer = tf.AutoTokenizer.from_pretrained(
                path, local_files_only=True, trust_remote_code=trust_remote_code
            )
            kwargs = dtype_kwargs(dtype)
            if device == "auto":
                require("accelerate")
                kwargs["device_map"] = "auto"
            self.model = tf.AutoModelForCausalLM.from_pretrained(
                path, local_files_only=True, trust_remote_code=trust_remote_code, **kwargs
            )
        except (OSError, ValueError, KeyError) as exc:
            raise load_error(path, exc) from exc
        if device != "auto":
            self.model.to(device)
        self.model.eval()
        if not getattr(self.tokenizer, "chat_template", None):
            raise ConfigError(
                f"the tokenizer at {path!r} has no chat template; use an instruction-tuned "
                "(chat) model"
            )
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.device = device if device != "auto" else str(self.model.device)
        self.lock = threading.Lock()


@dataclass(frozen=True)
class TransformersSettings(LocalGenerationSettings):
    """``LocalGenerationSettings`` and ``trust_remote_code`` (run the model folder's own code)."""

    trust_remote_code: bool = False


class TransformersChatBackend(LocalGeneration):
    """A local chat model (see the module docstring)."""

    kind = "hf"
    supports_audio = False

    settings_class = TransformersSettings

    def __init__(
        self, path: str, settings: TransformersSettings | None = None, **overrides: Any
    ) -> None:
        """``settings`` (a ``TransformersSettings``), or its fields as keywords."""
        options = self._init_generation(path, settings, **overrides)
        dtype, trust = options.dtype, options.trust_remote_code
        key = ("causal-lm", self.path, self.device, dtype, trust)
        self._m: _Loaded = shared(key, lambda: _Loaded(self.path, self.device, dtype, trust))
        size, wait = options.max_batch_size, options.batch_wait_s
        self.batcher = shared(
            (*key, "batcher", size, wait, self.settings_key()),
            lambda: MicroBatcher(self._run_batch, size, wait),
        )
        self.cache = ResponseCache(options.cache_dir) if options.cache_dir is not None else None

    def settings_key(self) -> tuple:
        return (
            self.temperature,
            self.top_p,
            self.max_new_tokens,
            json.dumps(self.chat_template_kwargs, sort_keys=True),
        )

    def complete(
        self,
        messages: Sequence[Message],
        *,
        audio: np.ndarray | None = None,
        seed: int | None = None,
        run: int = 0,
    ) -> str:
        material = {
            "backend": self.kind,
            "model": self.path,
            "messages": list(messages),
            "settings": self.settings(),
            "seed": seed,
            "run": run,
        }
        req_seed = None if seed is None else derive_seed(seed, run)
        return self._cached(
            cache_key(material),
            material,
            lambda: self.batcher.submit(Request(list(messages), None, req_seed)),
        )

    def _run_batch(self, requests: list[Request]) -> list[Reply]:
        m = self._m
        try:
            prompts = [
                render_chat(m.tokenizer, r.messages, None, self.chat_template_kwargs)
                for r in requests
            ]
        except Exception as exc:
            raise BackendError(f"{self.name}: chat template failed: {exc}") from exc
        if self.temperature > 0:
            return [self._generate([p], r.seed)[0] for p, r in zip(prompts, requests)]
        return self._generate(prompts, None)

    def _generate(self, prompts: list[str], seed: int | None) -> list[Reply]:
        m = self._m
        torch = m.torch
        interrupts.raise_if_requested()  # no new generation after a stop request
        with m.lock:
            try:
                inputs = m.tokenizer(
                    prompts, return_tensors="pt", padding=True, add_special_tokens=False
                ).to(m.device)
                gen: dict[str, Any] = {
                    "max_new_tokens": self.max_new_tokens,
                    "pad_token_id": m.tokenizer.pad_token_id,
                }
                if self.temperature > 0:
                    gen.update(do_sample=True, temperature=self.temperature)
                    if self.top_p is not None:
                        gen["top_p"] = self.top_p
                    torch.manual_seed(seed if seed is not None else 0)
                else:
                    gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
                with torch.no_grad():
                    out = m.model.generate(**inputs, **gen)
            except Exception as exc:  # an OOM or a generation bug: one failed call
                raise BackendError(f"{self.name}: generation failed: {exc}") from exc
        new = out[:, inputs["input_ids"].shape[1] :]
        texts = m.tokenizer.batch_decode(new, skip_special_tokens=True)
        stops = stop_token_ids(m.model, m.tokenizer)
        return generated_replies(texts, inputs, new, stops, self.max_new_tokens)
