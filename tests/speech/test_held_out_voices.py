"""Test-split clips are never heard in training: held-out voices and variations."""

from __future__ import annotations

import hashlib

import gymnasium as gym
import numpy as np
import pytest

import hear2act_env  # noqa: F401 - registers the ids
from hear2act_env.errors import ConfigError
from hear2act_env.protocol.realizer import N_VARIATIONS
from hear2act_env.protocol.scenario import PERSONAS
from hear2act_env.protocol.speakers import (
    HELD_OUT,
    HELD_OUT_SPEAKERS,
    SPEAKERS,
    speaker_for,
    split_of_speaker,
    variation_for,
)
from hear2act_env.scenarios.bank import load_bank
from hear2act_env.speech.utterance import Utterance

pytest.importorskip("espeakng_loader")

from hear2act_env.speech import split_check  # noqa: E402
from hear2act_env.speech.split_check import cross_split_check  # noqa: E402


def test_each_persona_has_a_distinct_held_out_twin():
    assert set(HELD_OUT) == set(PERSONAS)
    assert not set(HELD_OUT_SPEAKERS) & set(PERSONAS)
    assert sorted(SPEAKERS) == sorted(PERSONAS + HELD_OUT_SPEAKERS)
    for p in PERSONAS:
        assert speaker_for(p, "train") == p and split_of_speaker(p) == "train"
        assert speaker_for(p, "test") == HELD_OUT[p] and split_of_speaker(HELD_OUT[p]) == "test"


def test_variation_ranges_are_disjoint():
    train = {variation_for(v, "train") for v in range(N_VARIATIONS)}
    test = {variation_for(v, "test") for v in range(N_VARIATIONS)}
    assert len(train) == len(test) == N_VARIATIONS and not train & test


@pytest.mark.parametrize(
    "call",
    [
        lambda: speaker_for("amber", "dev"),
        lambda: speaker_for("hazel", "train"),  # a twin is not a persona
        lambda: variation_for(N_VARIATIONS, "train"),
        lambda: variation_for(-1, "test"),
        lambda: split_of_speaker("nobody"),
        lambda: Utterance("Okay.", "flat", "nobody", 0),
    ],
)
def test_bad_speaker_inputs_are_named_errors(call):
    with pytest.raises(ConfigError):
        call()


def test_env_speaks_a_test_scenario_with_its_twin():
    bank = load_bank()
    scenario = next(s for s in bank if s.split == "test")
    env = gym.make("Hear2Act-Prosody-v0", scenario=scenario.id, audio_cache=False)
    obs, _ = env.reset(seed=3)
    turn = env.unwrapped.last_user_turn
    utt = Utterance.spoken(scenario, turn.text, turn.delivery, turn.draw.variation)
    assert utt.persona == HELD_OUT[scenario.persona]
    assert utt.variation == turn.draw.variation + N_VARIATIONS
    from hear2act_env.speech.cache import speak
    from hear2act_env.speech.espeak import EspeakRenderer

    wave = speak(EspeakRenderer(), utt)
    np.testing.assert_array_equal(obs["audio"][: obs["audio_length"]], wave)


def _clip_hashes(env_id: str, split: str, episodes: int, seed: int) -> list[bytes]:
    env = gym.make(env_id, split=split, audio_cache=False)
    rng = np.random.default_rng(seed)
    out = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        done = False
        while not done:
            out.append(hashlib.sha256(obs["audio"][: obs["audio_length"]].tobytes()).digest())
            act = [2, int(rng.integers(11)), 0] if rng.random() < 0.7 else [3, 0, 0]
            obs, _, term, trunc, _ = env.step(act)
            done = term or trunc
    return out


def test_a_hash_lookup_of_training_clips_finds_no_test_clip():
    # the attack that broke version 1: remember every clip heard in training, look test clips up
    heard = set(_clip_hashes("Hear2Act-Prosody-v0", "train", 150, 0))
    test = _clip_hashes("Hear2Act-Prosody-v0", "test", 60, 10_000)
    assert len(heard) > 300 and len(test) > 100
    assert sum(h in heard for h in test) == 0


def test_cross_split_check_counts_zero_on_a_bank_sample():
    # two train scenarios and one test scenario of a domain: about 2,500 clips rendered and
    # hashed, far above the floor below (three and two rendered 4,700, three times as long)
    bank = load_bank()
    sample = [s for s in bank if s.split == "train"][:2] + [s for s in bank if s.split == "test"][
        :1
    ]
    report = cross_split_check(sample, ("prosody",))
    assert report.ok and report.identical == 0 and report.near_identical == 0
    assert report.shared_texts > 10 and report.rendered > 500
    assert set(report.test_voices) <= set(HELD_OUT_SPEAKERS)
    assert set(report.train_voices) <= set(PERSONAS)


def test_cross_split_check_catches_shared_voicing(monkeypatch):
    # the check must fail on a bank voiced as version 1 was (persona voice, same variations)
    bank = load_bank()
    sample = [s for s in bank if s.split == "train"][:2] + [s for s in bank if s.split == "test"][
        :1
    ]

    def v1(cls, scenario, text, delivery, variation, prosody_strength=1.0):
        return cls(text, delivery, "amber", variation, prosody_strength)

    monkeypatch.setattr(split_check.Utterance, "spoken", classmethod(v1))
    report = cross_split_check(sample, ("prosody",))
    assert not report.ok and report.near_identical > 0 and report.identical > 0


@pytest.mark.slow  # the whole bank's clips: about 13 s
def test_cross_split_check_near_identical_is_zero_on_the_whole_bank():
    report = cross_split_check(load_bank(), waveforms=False)
    assert report.near_identical == 0 and report.test_utterances > 10_000
