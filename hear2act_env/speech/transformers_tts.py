"""``TransformersTTSRenderer``: any text-to-speech model ``transformers`` loads from a local path.

Delivery reaches the model in one of two ways:

- a **label-to-setting map** (``delivery_settings``): per delivery label, values for model
  attributes such as VITS's ``speaking_rate``, ``noise_scale`` and ``noise_scale_duration``;
  ``prosody_strength`` interpolates linearly between the model's own (neutral) values and the
  label's, so strength 0 gives every label the same voice;
- an **instruction** (``instruction_template``, e.g. ``"Say it in a {delivery} voice."``) passed to
  the processor as ``instruction_key`` (``"description"`` for Parler-style models) for models
  that take a natural-language style prompt.

Output is resampled to 16 kHz. The model runs under ``torch.inference_mode`` with a generator
seeded from the utterance's ``variation``, so renders are deterministic. Never downloads:
``from_pretrained(path, local_files_only=True)``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import ConfigError, MissingExtraError
from hear2act_env.speech.resample import resample
from hear2act_env.speech.utterance import Utterance

#: A default map for VITS-family models (e.g. MMS-TTS): slower and flatter when unresolved.
VITS_DELIVERY_SETTINGS: dict[str, dict[str, float]] = {
    "satisfied": {"speaking_rate": 1.05, "noise_scale": 0.75},
    "warm": {"speaking_rate": 1.0, "noise_scale": 0.8},
    "enthusiastic": {"speaking_rate": 1.15, "noise_scale": 0.9},
    "relieved": {"speaking_rate": 0.95, "noise_scale": 0.75},
    "underwhelmed": {"speaking_rate": 0.85, "noise_scale": 0.45},
    "lukewarm": {"speaking_rate": 0.88, "noise_scale": 0.5},
    "hesitant": {"speaking_rate": 0.78, "noise_scale": 0.55},
    "flat": {"speaking_rate": 0.9, "noise_scale": 0.35},
    "concerned": {"speaking_rate": 0.85, "noise_scale": 0.6},
    "frustrated": {"speaking_rate": 1.1, "noise_scale": 0.85},
    "disappointed": {"speaking_rate": 0.85, "noise_scale": 0.5},
    "impatient": {"speaking_rate": 1.2, "noise_scale": 0.8},
    "firm": {"speaking_rate": 1.0, "noise_scale": 0.6},
}


class TransformersTTSRenderer:
    """Render utterances with a local ``transformers`` text-to-waveform model."""

    name = "transformers-tts"
    sample_rate = SAMPLE_RATE

    def __init__(
        self,
        model_path: str | Path,
        *,
        delivery_settings: Mapping[str, Mapping[str, float]] | None = None,
        instruction_template: str | None = None,
        instruction_key: str = "description",
        device: str = "cpu",
    ) -> None:
        path = Path(model_path)
        if not path.is_dir():
            raise ConfigError(f"model_path: {path} is not a local model folder (no hub downloads)")
        try:
            import torch
            from transformers import AutoModelForTextToWaveform, AutoProcessor
        except ImportError as exc:
            raise MissingExtraError("llm", exc.name or "transformers") from None
        self._torch = torch
        self.model = (
            AutoModelForTextToWaveform.from_pretrained(path, local_files_only=True)
            .to(device)
            .eval()
        )
        self.processor = AutoProcessor.from_pretrained(path, local_files_only=True)
        self.device = device
        self.delivery_settings = {k: dict(v) for k, v in (delivery_settings or {}).items()}
        self.instruction_template = instruction_template
        self.instruction_key = instruction_key
        self.neutral = {
            attr: float(getattr(self.model.config, attr))
            for settings in self.delivery_settings.values()
            for attr in settings
            if hasattr(self.model.config, attr)
        }
        missing = {a for s in self.delivery_settings.values() for a in s} - set(self.neutral)
        if missing:
            raise ConfigError(
                f"delivery_settings: the model's config has no attribute(s) {sorted(missing)}"
            )
        self._lock = threading.Lock()
        digest = hashlib.sha256(
            json.dumps(
                [
                    str(path.resolve()),
                    self.model.config.to_dict(),
                    self.delivery_settings,
                    instruction_template,
                ],
                sort_keys=True,
                default=str,
            ).encode()
        ).hexdigest()[:16]
        self.version = f"transformers-{digest}"

    def settings_for(self, utt: Utterance) -> dict[str, float]:
        """Model attribute values for ``utt`` (neutral + strength x (label - neutral))."""
        label = self.delivery_settings.get(utt.delivery, {})
        return {
            a: n + utt.prosody_strength * (label.get(a, n) - n) for a, n in self.neutral.items()
        }

    def render(self, utt: Utterance) -> np.ndarray:
        """float32 mono 16 kHz in [-1, 1]."""
        torch = self._torch
        kwargs: dict[str, Any] = {"text": utt.text, "return_tensors": "pt"}
        if self.instruction_template:
            kwargs[self.instruction_key] = self.instruction_template.format(delivery=utt.delivery)
        inputs = {k: v.to(self.device) for k, v in self.processor(**kwargs).items()}
        with self._lock, torch.inference_mode():
            for attr, value in self.settings_for(utt).items():
                setattr(self.model, attr, value)  # VITS reads these from the model at forward time
                setattr(self.model.config, attr, value)
            torch.manual_seed(utt.variation)
            out = (
                self.model(**inputs)
                if not hasattr(self.model, "generate") or _is_vits(self.model)
                else self.model.generate(**inputs)
            )
        wave = out.waveform if hasattr(out, "waveform") else out
        wave = wave.detach().float().cpu().numpy().reshape(-1)
        rate = int(getattr(self.model.config, "sampling_rate", SAMPLE_RATE))
        wave = resample(wave.astype(np.float64), rate, SAMPLE_RATE)
        peak = float(np.max(np.abs(wave))) if wave.size else 0.0
        if peak > 1.0:
            wave = wave / peak
        return wave.astype(np.float32)


def _is_vits(model: Any) -> bool:
    return type(model).__name__.startswith("Vits")
