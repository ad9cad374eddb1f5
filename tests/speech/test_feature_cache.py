"""The on-disk prosodic feature cache: same features as computing them, shared across
trackers (processes), corrupt entries recomputed, an unwritable folder tolerated."""

from __future__ import annotations

import numpy as np
import pytest

from hear2act_env.errors import ConfigError
from hear2act_env.speech.feature_cache import FeatureCache, waveform_key
from hear2act_env.speech.features import prosodic_features
from hear2act_env.wrappers.prosody import N_PROSODY, ProsodyTracker


def _tone(seconds=0.6, f0=150.0, seed=0):
    t = np.arange(int(16000 * seconds)) / 16000
    rng = np.random.default_rng(seed)
    wave = 0.3 * np.sin(2 * np.pi * f0 * t) * np.hanning(t.size) + 0.001 * rng.standard_normal(
        t.size
    )
    return wave.astype(np.float32)


def test_a_second_tracker_reads_the_features_from_disk(tmp_path, monkeypatch):
    wave = _tone()
    first = ProsodyTracker(disk_cache=tmp_path)
    expected = first.features(wave, wave.size)
    assert first.disk.hits == 0 and list(tmp_path.rglob("*.h2f"))

    import hear2act_env.wrappers.prosody as prosody

    def boom(*a, **k):  # the second tracker must not compute anything
        raise AssertionError("computed instead of read from the cache")

    monkeypatch.setattr(prosody, "bounded_features", boom)
    second = ProsodyTracker(disk_cache=FeatureCache(tmp_path))
    got = second.features(wave, wave.size)
    assert second.disk.hits == 1 and np.array_equal(got, expected)
    assert got.shape == (N_PROSODY,) and got.dtype == np.float32


def test_cached_features_equal_computed_ones(tmp_path):
    for seed, f0 in enumerate((110.0, 180.0, 240.0)):
        wave = _tone(0.5 + 0.1 * seed, f0, seed)
        cached = ProsodyTracker(0, tmp_path).features(wave, wave.size)
        again = ProsodyTracker(0, tmp_path).features(wave, wave.size)
        direct = prosodic_features(wave, 16000).astype(np.float32)
        assert np.allclose(cached, direct, equal_nan=True) and np.array_equal(cached, again)


def test_the_key_depends_on_every_sample_and_the_feature_version(monkeypatch):
    wave = _tone()
    other = wave.copy()
    other[100] += 1e-6
    assert waveform_key(wave) != waveform_key(other)
    import hear2act_env.speech.feature_cache as fc

    before = waveform_key(wave)
    monkeypatch.setattr(fc, "FEATURES_VERSION", "2")
    assert waveform_key(wave) != before


def test_a_corrupt_entry_is_recomputed_and_rewritten(tmp_path):
    wave = _tone()
    expected = ProsodyTracker(0, tmp_path).features(wave, wave.size)
    (entry,) = tmp_path.rglob("*.h2f")
    blob = bytearray(entry.read_bytes())
    blob[-1] ^= 0xFF
    entry.write_bytes(bytes(blob))
    tracker = ProsodyTracker(0, tmp_path)
    assert np.array_equal(tracker.features(wave, wave.size), expected)
    assert tracker.disk.corrupt == 1
    assert FeatureCache(tmp_path).get(waveform_key(wave)) is not None  # rewritten


def test_an_unwritable_folder_warns_once_and_computes(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    tracker = ProsodyTracker(0, blocker / "features")
    with pytest.warns(RuntimeWarning, match="not writable"):
        a = tracker.features(_tone(seed=1), 9600)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        b = tracker.features(_tone(seed=2), 9600)
    assert a.shape == b.shape == (N_PROSODY,)


def test_bad_feature_cache_argument_is_a_named_error():
    with pytest.raises(ConfigError, match="feature_cache: got 3"):
        ProsodyTracker(disk_cache=3)


def test_features_only_wrapper_skips_rendering_cached_clips_with_identical_observations(
    tmp_path,
):
    pytest.importorskip("espeakng_loader")
    import gymnasium as gym

    import hear2act_env  # noqa: F401
    from hear2act_env.wrappers.prosody import ProsodyFeatures
    from hear2act_env.wrappers.structured import StructuredObservation

    def episode(cache_dir, seed=4):
        env = ProsodyFeatures(
            StructuredObservation(
                gym.make("Hear2Act-Prosody-v0", access="A+T", audio_cache=False), keep_text=True
            ),
            feature_cache=cache_dir,
        )
        obs, _ = env.reset(seed=seed)
        seen = [obs]
        rng = np.random.default_rng(seed)
        for _ in range(6):
            action = np.array([rng.integers(0, 4), rng.integers(0, 11), rng.integers(0, 6)])
            obs, _, terminated, truncated, _ = env.step(action)
            seen.append(obs)
            if terminated or truncated:
                break
        renders = env.unwrapped._speaker()[1].stats.misses
        assert env.unwrapped.skip_render is None  # the base env alone always renders
        return seen, renders

    first, rendered = episode(tmp_path)
    second, rendered_again = episode(tmp_path)
    assert rendered >= 2 and rendered_again == 0  # every clip's features were cached
    assert len(first) == len(second)
    for a, b in zip(first, second):
        assert a.keys() == b.keys()
        for k in a:
            assert np.array_equal(np.asarray(a[k]), np.asarray(b[k])), k
    # without a feature cache the same episode gives the same features too
    plain, _ = episode(False)
    assert all(np.array_equal(a["prosody"], b["prosody"]) for a, b in zip(first, plain))


@pytest.mark.slow  # renders and analyses the ~600 clips of one scenario (about 25 s)
def test_render_features_makes_a_scenario_play_without_rendering(tmp_path, monkeypatch):
    pytest.importorskip("espeakng_loader")
    import gymnasium as gym

    import hear2act_env  # noqa: F401
    from hear2act_cli import main
    from hear2act_env.scenarios.bank import load_bank
    from hear2act_env.wrappers.prosody import ProsodyFeatures

    monkeypatch.setenv("HEAR2ACT_CACHE_DIR", str(tmp_path))
    first = load_bank()[0]
    args = ["render", "--limit", "1", "--realizations", "prosody", "--features", "--workers", "1"]
    assert main(args) == 0
    assert list((tmp_path / "features").rglob("*.h2f"))
    env = ProsodyFeatures(
        gym.make("Hear2Act-Prosody-v0", access="A+T", audio_cache=False, scenario=first.id)
    )
    env.reset(seed=0)
    for action in ([0, 0, 0], [2, 3, 0], [3, 0, 0]):
        _, _, terminated, truncated, _ = env.step(np.array(action))
        if terminated or truncated:
            break
    assert env.unwrapped._speaker()[1].stats.misses == 0


def test_an_entry_that_links_to_dev_zero_is_a_miss_and_is_replaced_not_read(tmp_path):
    wave = _tone()
    cache = FeatureCache(tmp_path)
    key = waveform_key(wave)
    path = cache.path_for(key)
    path.parent.mkdir(parents=True)
    path.symlink_to("/dev/zero")
    assert cache.get(key) is None and cache.misses == 1  # at once: /dev/zero is never read
    cache.put(key, prosodic_features(wave, 16000))
    assert not path.is_symlink() and cache.get(key) is not None


def test_an_entry_linked_out_of_the_cache_is_not_read_and_its_target_kept(tmp_path):
    wave = _tone()
    root = tmp_path / "cache"
    cache = FeatureCache(root)
    key = waveform_key(wave)
    cache.put(key, prosodic_features(wave, 16000))
    outside = tmp_path / "outside.h2f"
    outside.write_bytes(cache.path_for(key).read_bytes())  # a valid entry, but outside
    cache.path_for(key).unlink()
    cache.path_for(key).symlink_to(outside)
    assert cache.get(key) is None
    before = outside.read_bytes()
    cache.put(key, prosodic_features(wave, 16000))
    assert outside.read_bytes() == before and not cache.path_for(key).is_symlink()


def test_a_linked_fan_out_folder_is_neither_read_nor_written(tmp_path):
    wave = _tone()
    root = tmp_path / "cache"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache = FeatureCache(root)
    key = waveform_key(wave)
    root.mkdir()
    (root / key.hex()[:2]).symlink_to(elsewhere, target_is_directory=True)
    cache.put(key, prosodic_features(wave, 16000))
    assert list(elsewhere.iterdir()) == [] and cache.get(key) is None
