"""Test helpers: a fast synthetic renderer and scenarios that differ only in a hidden need."""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np

from hear2act_env.protocol.delivery import DELIVERIES
from hear2act_env.protocol.scenario import Scenario

SR = 16_000


class ToneRenderer:
    """A ``Renderer`` that hums a harmonic tone: length from the words, pitch from the delivery
    label (or a fixed pitch with ``use_delivery=False``), jitter from the variation seed."""

    sample_rate = SR
    version = "1"

    def __init__(self, use_delivery: bool = True) -> None:
        self.use_delivery = use_delivery
        self.name = f"test-tone-{int(use_delivery)}"

    def render(self, utt) -> np.ndarray:  # noqa: ANN001 - an Utterance
        rng = np.random.default_rng([utt.variation, zlib.crc32(utt.text.encode())])
        seconds = min(0.4 + 0.02 * len(utt.text), 1.6)
        t = np.arange(int(seconds * SR)) / SR
        f0 = 110.0 + (12.0 * DELIVERIES.index(utt.delivery) if self.use_delivery else 40.0)
        f0 *= 1.0 + 0.01 * rng.standard_normal()
        wave = sum(np.sin(2 * np.pi * k * f0 * t) / k for k in (1, 2, 3))
        envelope = np.minimum(1.0, np.minimum(t, t[-1] - t) / 0.05)
        return (0.2 * wave * envelope).astype(np.float32)


def hidden_twin(scenario: Scenario) -> Scenario:
    """``scenario`` with a different L3 need (values and words): the ``attractive`` option now
    meets it. Nothing that is said before L3 is revealed changes."""
    facts_attractive = next(
        i for i, c in enumerate(scenario.candidates) if c.role.value == "attractive"
    )
    needs = list(scenario.needs)
    l3 = needs[2]
    pos = scenario.attribute_index(l3.attribute)
    level = scenario.candidates[facts_attractive].values[pos]
    needs[2] = dataclasses.replace(
        l3,
        satisfied_by=tuple(sorted(set(l3.satisfied_by) | {level})),
        statement="Something entirely different matters to me as well.",
        ask_answer="That one? I have quite another wish there.",
    )
    return dataclasses.replace(scenario, needs=tuple(needs))
