"""Can a test-split clip be one heard in training? The cross-split identity check.

Every utterance a bank can produce (``speech.prerender.utterances``: ``protocol.catalog.possible_turns``
voiced as the env voices it, ``Utterance.spoken``) is listed per split. Two counts must be 0:

- *near-identical*: a test-split utterance with the same text, voice, delivery label and
  variation as a train-split one (the same clip up to the prosody strength);
- *identical*: a test-split waveform bit-identical to a train-split waveform. Only texts both
  splits can say can collide, so those utterances (of both splits) are rendered and hashed.

The held-out voices and variations of ``protocol.speakers`` make both 0 by construction; this
check proves it on the rendered audio, for the shipped bank or any scenario file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from hear2act_env.errors import ConfigError
from hear2act_env.protocol.scenario import SPLITS, Scenario
from hear2act_env.speech.cache import AudioCache, speak
from hear2act_env.speech.prerender import utterances
from hear2act_env.speech.utterance import Renderer, Utterance

__all__ = ["CrossSplitReport", "cross_split_check", "split_utterances"]


@dataclass(frozen=True)
class CrossSplitReport:
    """What the check counted (see the module docstring)."""

    train_utterances: int
    test_utterances: int
    shared_texts: int  # texts that both splits can say
    near_identical: int  # test utterances equal to a train one but for the strength
    rendered: int  # clips rendered and hashed (0 when waveforms were not compared)
    identical: int | None  # bit-identical test/train waveform pairs (None: not compared)
    train_voices: tuple[str, ...]
    test_voices: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Both counts are 0 (and the waveforms were compared)."""
        return self.near_identical == 0 and self.identical == 0

    def table(self) -> str:
        """The report as a few lines of text."""
        identical = "not compared" if self.identical is None else str(self.identical)
        return "\n".join(
            [
                f"utterances: train {self.train_utterances}, test {self.test_utterances}; "
                f"texts both splits can say: {self.shared_texts}",
                f"voices: train {', '.join(self.train_voices)}; test {', '.join(self.test_voices)}",
                f"near-identical test clips (same text, voice, label, variation): "
                f"{self.near_identical}",
                f"bit-identical test clips ({self.rendered} clips rendered): {identical}",
            ]
        )


def split_utterances(
    scenarios: Sequence[Scenario], realizations: Sequence[str], strength: float
) -> dict[str, set[Utterance]]:
    """Every utterance each split's scenarios can voice, as the env voices it."""
    return {
        split: set(utterances([s for s in scenarios if s.split == split], realizations, strength))
        for split in SPLITS
    }


def cross_split_check(
    scenarios: Sequence[Scenario],
    realizations: Sequence[str] = ("prosody", "explicit"),
    strength: float = 1.0,
    renderer: Renderer | None = None,
    cache: AudioCache | None = None,
    waveforms: bool = True,
) -> CrossSplitReport:
    """Count near-identical and (with ``waveforms``) bit-identical clips across the splits."""
    by_split = split_utterances(scenarios, realizations, strength)
    train, test = by_split["train"], by_split["test"]
    if not train or not test:
        raise ConfigError("the cross-split check needs scenarios of both splits")
    voiced = lambda u: (u.text, u.persona, u.delivery, u.variation)  # noqa: E731
    train_keys = {voiced(u) for u in train}
    near = sum(voiced(u) in train_keys for u in test)
    shared = {u.text for u in train} & {u.text for u in test}
    identical: int | None = None
    rendered = 0
    if waveforms:
        if renderer is None:
            from hear2act_env.speech.espeak import EspeakRenderer

            renderer = EspeakRenderer()
        digest = lambda u: hashlib.sha256(speak(renderer, u, cache).tobytes()).digest()  # noqa: E731
        heard_clips = [u for u in sorted(train, key=voiced) if u.text in shared]
        candidates = [u for u in sorted(test, key=voiced) if u.text in shared]
        heard = {digest(u) for u in heard_clips}
        identical = sum(digest(u) in heard for u in candidates)
        rendered = len(heard_clips) + len(candidates)
    return CrossSplitReport(
        train_utterances=len(train),
        test_utterances=len(test),
        shared_texts=len(shared),
        near_identical=near,
        rendered=rendered,
        identical=identical,
        train_voices=tuple(sorted({u.persona for u in train})),
        test_voices=tuple(sorted({u.persona for u in test})),
    )
