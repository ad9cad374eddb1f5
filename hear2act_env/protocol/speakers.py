"""Who speaks a scenario's turns: held-out voices and variations for the test split.

A scenario names a *persona* (``Scenario.persona``). Train-split scenarios speak with the
persona's own voice and the per-utterance variations ``0 .. N_VARIATIONS - 1``; test-split
scenarios speak with the persona's *held-out twin* (a different voice of the same gender that
no train-split scenario uses) and the variations ``N_VARIATIONS .. 2 * N_VARIATIONS - 1``. So
no clip an agent can hear on the test split was ever heard in training, and a policy that
memorized training clips (a hash lookup) gets nothing from them. The turn's draw is the same
under both splits (``TurnDraw.variation`` stays in ``0 .. N_VARIATIONS - 1``; only the voicing
is offset), so matched rollouts are unaffected.

| persona (train) | held-out twin (test) | gender |
| --- | --- | --- |
| amber | hazel | female |
| birch | linden | male |
| cedar | oak | male |
| dune | iris | female |
| ember | juniper | female |
| fern | maple | male |
"""

from __future__ import annotations

from typing import Literal, get_args

from hear2act_env.errors import ConfigError
from hear2act_env.protocol.realizer import N_VARIATIONS
from hear2act_env.protocol.scenario import PERSONAS, SPLITS

__all__ = [
    "HELD_OUT",
    "HELD_OUT_SPEAKERS",
    "SPEAKERS",
    "Speaker",
    "speaker_for",
    "split_of_speaker",
    "variation_for",
]

#: Every voice a renderer must speak: the six personas and their six held-out twins.
Speaker = Literal[
    "amber", "birch", "cedar", "dune", "ember", "fern",
    "hazel", "linden", "oak", "iris", "juniper", "maple",
]  # fmt: skip
SPEAKERS: tuple[str, ...] = get_args(Speaker)

#: persona -> the voice that speaks it on the test split.
HELD_OUT: dict[str, str] = {
    "amber": "hazel",
    "birch": "linden",
    "cedar": "oak",
    "dune": "iris",
    "ember": "juniper",
    "fern": "maple",
}
HELD_OUT_SPEAKERS: tuple[str, ...] = tuple(HELD_OUT[p] for p in PERSONAS)

if set(PERSONAS) | set(HELD_OUT_SPEAKERS) != set(SPEAKERS) or len(set(HELD_OUT_SPEAKERS)) != 6:
    raise RuntimeError("SPEAKERS must be the personas plus one distinct held-out twin each")


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ConfigError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")


def speaker_for(persona: str, split: str) -> str:
    """The voice that speaks ``persona`` on ``split`` (the twin on the test split)."""
    _check_split(split)
    if persona not in HELD_OUT:
        raise ConfigError(f"persona must be one of {', '.join(PERSONAS)}; got {persona!r}")
    return HELD_OUT[persona] if split == "test" else persona


def variation_for(variation: int, split: str) -> int:
    """The voicing variation of a turn drawn with ``variation`` on ``split`` (disjoint ranges)."""
    _check_split(split)
    if not 0 <= int(variation) < N_VARIATIONS:
        raise ConfigError(f"variation must be in 0..{N_VARIATIONS - 1}; got {variation!r}")
    return int(variation) + (N_VARIATIONS if split == "test" else 0)


def split_of_speaker(speaker: str) -> str:
    """``"train"`` for a persona's own voice, ``"test"`` for a held-out twin."""
    if speaker not in SPEAKERS:
        raise ConfigError(f"speaker must be one of {', '.join(SPEAKERS)}; got {speaker!r}")
    return "test" if speaker in HELD_OUT_SPEAKERS else "train"
