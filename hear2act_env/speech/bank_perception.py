"""The perception check on the scenario bank: can a reference classifier hear the state?

Clips are the user's reactions to recommendations (the opening one included) whose state is
resolved, reluctant or concern, collected from seeded random recommendation sequences over a
split's scenarios, balanced 50/50 resolved vs unresolved. The reference perceiver trains on
train-split clips and is scored on test-split clips, per realization and per voice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hear2act_env.protocol.delivery import State
from hear2act_env.protocol.engine import Act, Realization, UserEngine
from hear2act_env.protocol.realizer import TurnDraw, assistant_line, opening_line, realize
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.speech.cache import AudioCache
from hear2act_env.speech.perception import (
    LogisticModel,
    PerceptionReport,
    evaluate_perception,
    features_of,
)
from hear2act_env.speech.utterance import Renderer, Utterance

#: Published anchors (paper, Table 11): resolved-vs-unresolved accuracy on Qwen3-TTS clips.
ANCHORS = {"humans": 0.92, "Qwen2.5-Omni": 0.85}
_JUDGED = (State.RESOLVED, State.RELUCTANT, State.CONCERN)


#: Seeds of ``collect_clips`` for the perception check's train and test clips.
TRAIN_SEED, TEST_SEED = 1, 2


def collect_clips(
    scenarios: Sequence[Scenario],
    realization: Realization,
    strength: float,
    per_scenario: int = 6,
    seed: int = 0,
) -> list[tuple[Utterance, bool]]:
    """Balanced (utterance, resolved) clips from seeded random recommendations."""
    return [
        (u, y)
        for u, y, _ in collect_tagged_clips(scenarios, realization, strength, per_scenario, seed)
    ]


def collect_tagged_clips(
    scenarios: Sequence[Scenario],
    realization: Realization,
    strength: float,
    per_scenario: int = 6,
    seed: int = 0,
) -> list[tuple[Utterance, bool, str]]:
    """``collect_clips`` with each clip's scenario id: (utterance, resolved, scenario id)."""
    return [
        (c.utterance, c.resolved, c.scenario)
        for c in collect_dialogue_clips(scenarios, realization, strength, per_scenario, seed)
    ]


@dataclass(frozen=True)
class DialogueClip:
    """A collected reaction with the dialogue before it (``Speaker: words`` lines, the
    transcript's form, ending with the assistant's suggestion the reaction answers)."""

    utterance: Utterance
    resolved: bool
    scenario: str
    context: tuple[str, ...]


def collect_dialogue_clips(
    scenarios: Sequence[Scenario],
    realization: Realization,
    strength: float,
    per_scenario: int = 6,
    seed: int = 0,
) -> list[DialogueClip]:
    """``collect_clips`` with each clip's scenario id and the dialogue lines before it (the same
    clips, drawn with the same random numbers)."""
    rng = np.random.default_rng(seed)
    resolved: list[DialogueClip] = []
    unresolved: list[DialogueClip] = []
    for s in scenarios:
        engine = UserEngine(s, realization)
        lines = [f"User: {s.request}", f"Assistant: {opening_line(s, engine.current)}"]
        replies = [engine.opening()]
        options = [int(o) for o in rng.integers(0, 11, per_scenario)]
        for option in [None, *options]:
            if option is not None:
                lines.append(f"Assistant: {assistant_line(s, Act.RECOMMEND, option, 0, True)}")
                replies.append(engine.respond(Act.RECOMMEND, option, 0))
            reply = replies[-1]
            turn = realize(s, reply, TurnDraw.from_rng(rng))
            if reply.state in _JUDGED:
                utt = Utterance.spoken(s, turn.text, turn.delivery, turn.draw.variation, strength)
                clip = DialogueClip(utt, reply.state.resolved, s.id, tuple(lines))
                (resolved if reply.state.resolved else unresolved).append(clip)
            lines.append(f"User: {turn.text}")
    n = min(len(resolved), len(unresolved))
    pick = lambda xs: [xs[i] for i in sorted(rng.choice(len(xs), n, replace=False))]  # noqa: E731
    return pick(resolved) + pick(unresolved)


def train_reference(
    train: Sequence[Scenario],
    strength: float,
    renderer: Renderer | None = None,
    cache: AudioCache | None = None,
    per_scenario: int = 6,
) -> LogisticModel:
    """Fit the reference perceiver on train-split clips of both realizations."""
    from hear2act_env.speech.espeak import EspeakRenderer

    renderer = renderer or EspeakRenderer()
    clips = [
        c
        for r in ("prosody", "explicit")
        for c in collect_clips(train, r, strength, per_scenario, seed=1)
    ]  # type: ignore[arg-type]
    x = features_of((u for u, _ in clips), renderer, cache)
    return LogisticModel.fit(x, np.array([y for _, y in clips]))


@dataclass(frozen=True)
class PerceptionCheck:
    """Reports per realization at one strength."""

    strength: float
    reports: dict[str, PerceptionReport]


def perception_check(
    train: Sequence[Scenario],
    test: Sequence[Scenario],
    strength: float,
    realizations: Sequence[Realization] = ("prosody", "explicit"),
    renderer: Renderer | None = None,
    cache: AudioCache | None = None,
    per_scenario: int = 6,
) -> PerceptionCheck:
    """Train on ``train`` clips and test on ``test`` clips for each realization."""
    reports = {}
    for r in realizations:
        tr = collect_clips(train, r, strength, per_scenario, seed=TRAIN_SEED)
        te = collect_clips(test, r, strength, per_scenario, seed=TEST_SEED)
        reports[r] = evaluate_perception(tr, te, renderer, cache)
    return PerceptionCheck(strength, reports)
