"""An audio cache that cannot be written never breaks an episode: one warning, then rendering
goes on without storing (and what the cache holds is still read)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import hear2act_env  # noqa: F401 - registers the ids
from hear2act_env.speech.cache import AudioCache, pcm16_roundtrip
from hear2act_env.speech.espeak import EspeakRenderer
from hear2act_env.speech.utterance import Utterance


def _utt(text: str = "Okay, that works for me.") -> Utterance:
    return Utterance(text=text, delivery="satisfied", persona="amber", variation=0)


def test_a_cache_root_that_is_a_file_warns_once_and_renders(tmp_path):
    root = tmp_path / "not-a-folder"
    root.write_text("x")
    cache = AudioCache(root, memory_items=0)
    renderer = EspeakRenderer()
    with pytest.warns(RuntimeWarning, match="not writable") as caught:
        a = cache.render(renderer, _utt())
        b = cache.render(renderer, _utt("Sure, go ahead."))
    assert len([w for w in caught if "not writable" in str(w.message)]) == 1
    assert a.size > 0 and b.size > 0
    np.testing.assert_array_equal(a, pcm16_roundtrip(EspeakRenderer().render(_utt())))


def test_a_filled_cache_that_turns_unwritable_still_serves_its_entries(tmp_path):
    cache = AudioCache(tmp_path / "c", memory_items=0)
    renderer = EspeakRenderer()
    first = cache.render(renderer, _utt())
    cache._writable = False  # as after a failed write (e.g. a full disk)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = cache.render(renderer, _utt())
        other = cache.render(renderer, _utt("Sure, go ahead."))
    np.testing.assert_array_equal(first, again)
    assert cache.stats.disk_hits == 1 and other.size > 0


def test_an_episode_runs_with_an_unusable_cache_dir(tmp_path, monkeypatch):
    bad = tmp_path / "file"
    bad.write_text("x")
    monkeypatch.setenv("HEAR2ACT_CACHE_DIR", str(bad))
    env = gym.make("Hear2Act-Prosody-v0")
    with pytest.warns(RuntimeWarning, match="not writable"):
        obs, _ = env.reset(seed=0)
        obs, *_ = env.step(np.array([0, 0, 0]))
    assert obs["audio_length"] > 0
