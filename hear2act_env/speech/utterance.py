"""What a renderer speaks (`Utterance`) and the `Renderer` protocol every TTS backend follows."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import ConfigError
from hear2act_env.protocol.delivery import DELIVERIES
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.protocol.speakers import SPEAKERS, speaker_for, variation_for

#: Largest accepted ``prosody_strength`` (2 = twice the default deviation from neutral).
MAX_STRENGTH = 2.0


@dataclass(frozen=True)
class Utterance:
    """One spoken reply: its words and everything that decides how they are voiced.

    Attributes:
        text: the words, spoken as they are (nothing is ever added to them).
        delivery: a delivery label from ``DELIVERIES`` (how the reply is voiced).
        persona: the voice that speaks, from ``protocol.speakers.SPEAKERS`` (a scenario's
            persona on the train split, its held-out twin on the test split; see
            ``Utterance.spoken``).
        variation: integer seed of the per-utterance prosodic variation; the same seed always
            gives the same variation (``numpy.random.default_rng(variation)``).
        prosody_strength: 0 = neutral voice for every label, 1 = default, up to 2; the
            deviation of each prosodic setting from neutral scales linearly with it.
    """

    text: str
    delivery: str
    persona: str
    variation: int
    prosody_strength: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise ConfigError(f"Utterance.text must be a non-empty string, got {self.text!r}")
        if self.delivery not in DELIVERIES:
            raise ConfigError(
                f"Utterance.delivery must be one of {', '.join(DELIVERIES)}; got {self.delivery!r}"
            )
        if self.persona not in SPEAKERS:
            raise ConfigError(
                f"Utterance.persona must be one of {', '.join(SPEAKERS)}; got {self.persona!r}"
            )
        if isinstance(self.variation, bool) or not isinstance(self.variation, (int, np.integer)):
            raise ConfigError(
                f"Utterance.variation must be an integer seed, got {self.variation!r}"
            )
        if int(self.variation) < 0:
            raise ConfigError(
                f"Utterance.variation must be a non-negative integer seed, got {self.variation!r}"
            )
        object.__setattr__(self, "variation", int(self.variation))
        strength = self.prosody_strength
        if (
            isinstance(strength, bool)
            or not isinstance(strength, (int, float, np.floating, np.integer))
            or not math.isfinite(float(strength))
            or not 0.0 <= float(strength) <= MAX_STRENGTH
        ):
            raise ConfigError(
                "Utterance.prosody_strength must be a number in [0, 2] "
                f"(0 = neutral, 1 = default); got {strength!r}"
            )
        object.__setattr__(self, "prosody_strength", float(strength))

    @classmethod
    def spoken(
        cls,
        scenario: Scenario,
        text: str,
        delivery: str,
        variation: int,
        prosody_strength: float = 1.0,
    ) -> Utterance:
        """A turn of ``scenario`` drawn with ``variation`` (``TurnDraw.variation``), as voiced.

        The voice and the voicing variation depend on the scenario's split
        (``protocol.speakers``): test-split scenarios speak with held-out voices and
        variations, so no test clip equals a train clip.
        """
        return cls(
            text,
            delivery,
            speaker_for(scenario.persona, scenario.split),
            variation_for(variation, scenario.split),
            prosody_strength,
        )


@runtime_checkable
class Renderer(Protocol):
    """A text-to-speech backend.

    ``render`` returns a mono float32 waveform at ``sample_rate`` (always 16,000 Hz) with
    values in [-1, 1]. The same utterance must give the same waveform, bit for bit, for the
    same ``name`` and ``version`` (the cache relies on it).
    """

    name: str
    version: str
    sample_rate: int

    def render(self, utt: Utterance) -> np.ndarray:
        """Speak ``utt``: float32, mono, 16 kHz, values in [-1, 1]."""
        ...


def check_renderer(renderer: Any, field: str = "renderer", label: str | None = None) -> None:
    """Refuse what cannot be the env's voice: an object without the ``Renderer`` protocol, or
    one that renders at another rate than 16 kHz. The same rule holds for a renderer given as
    an object and one made from a name (``speech.renderers.make_renderer``); ``label`` names
    it in messages."""
    label = label if label is not None else repr(renderer)
    if not isinstance(renderer, Renderer):
        raise ConfigError(
            f"{field}: {label} is not a renderer (needs name, version, sample_rate and render)"
        )
    rate = getattr(renderer, "sample_rate", None)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or int(rate) != SAMPLE_RATE:
        raise ConfigError(f"{field}: {label} renders at {rate!r} Hz, expected {SAMPLE_RATE}")
