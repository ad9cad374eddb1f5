"""AudioCache: content addressing, LRU, corrupt and truncated entries, default folder."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from hear2act_env.speech.cache import (
    AudioCache,
    CachedRenderer,
    cache_key,
    default_cache_dir,
    pcm16_roundtrip,
    speak,
)
from hear2act_env.speech.utterance import Utterance


class CountingRenderer:
    """A fast deterministic renderer that counts its calls."""

    name = "counting"
    version = "1"
    sample_rate = 16000

    def __init__(self) -> None:
        self.calls = 0

    def render(self, utt: Utterance) -> np.ndarray:
        self.calls += 1
        seed = int.from_bytes(hashlib.sha256(repr(utt).encode()).digest()[:8], "little")
        rng = np.random.default_rng(seed)
        return (
            (0.5 * rng.standard_normal(8000 + len(utt.text) * 100)).clip(-1, 1).astype(np.float32)
        )


UTT = Utterance("Okay, that could work.", "warm", "amber", 1)


def test_hit_returns_identical_array(tmp_path):
    r = CountingRenderer()
    cache = AudioCache(tmp_path)
    a = cache.render(r, UTT)
    b = cache.render(r, UTT)  # memory hit
    fresh = AudioCache(tmp_path)
    c = fresh.render(r, UTT)  # disk hit
    assert r.calls == 1
    assert a.tobytes() == b.tobytes() == c.tobytes()
    assert a.dtype == c.dtype == np.float32
    assert cache.stats.memory_hits == 1 and fresh.stats.disk_hits == 1
    b[:] = 0  # callers get their own copy
    assert cache.render(r, UTT).tobytes() == a.tobytes()


def test_key_covers_everything_that_determines_the_waveform():
    r = CountingRenderer()
    base = cache_key(r, UTT)
    variants = [
        Utterance("Okay, that could work!", "warm", "amber", 1),
        Utterance(UTT.text, "flat", "amber", 1),
        Utterance(UTT.text, "warm", "fern", 1),
        Utterance(UTT.text, "warm", "amber", 2),
        Utterance(UTT.text, "warm", "amber", 1, 0.5),
    ]
    keys = {cache_key(r, u) for u in variants}
    assert base not in keys and len(keys) == len(variants)
    other = CountingRenderer()
    other.version = "2"
    assert cache_key(other, UTT) != base
    other.name = "x"
    assert cache_key(other, UTT) != base


def _entry(cache: AudioCache, renderer, utt) -> Path:
    return cache.path_for(cache_key(renderer, utt))


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "header", "extend"])
def test_damaged_entry_is_detected_and_re_rendered(tmp_path, damage):
    r = CountingRenderer()
    original = AudioCache(tmp_path).render(r, UTT)
    path = _entry(AudioCache(tmp_path), r, UTT)
    blob = bytearray(path.read_bytes())
    if damage == "flip":
        blob[-7] ^= 0x40
    elif damage == "truncate":
        blob = blob[: len(blob) - 10]
    elif damage == "empty":
        blob = bytearray()
    elif damage == "header":
        blob[3] ^= 0xFF
    else:
        blob += b"\0\0\0\0"
    path.write_bytes(bytes(blob))

    cache = AudioCache(tmp_path)
    again = cache.render(r, UTT)
    assert cache.stats.corrupt == 1 and cache.stats.misses == 1
    assert r.calls == 2
    assert again.tobytes() == original.tobytes()
    # the entry was rewritten and is served again
    healed = AudioCache(tmp_path)
    assert healed.render(r, UTT).tobytes() == original.tobytes()
    assert healed.stats.disk_hits == 1 and healed.stats.corrupt == 0


def test_writes_are_atomic_and_leave_no_temp_files(tmp_path):
    r = CountingRenderer()
    cache = AudioCache(tmp_path)
    for v in range(5):
        cache.render(r, Utterance("Fine.", "flat", "cedar", v))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 5 and all(p.suffix == ".h2a" for p in files)


def test_memory_lru_evicts_oldest(tmp_path):
    r = CountingRenderer()
    cache = AudioCache(tmp_path, memory_items=2, disk=False)
    u = [Utterance("Fine.", "flat", "cedar", v) for v in range(3)]
    for x in u:
        cache.render(r, x)
    cache.render(r, u[2])
    cache.render(r, u[0])  # evicted: rendered again (no disk)
    assert r.calls == 4
    assert not any(tmp_path.iterdir())


def test_default_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("HEAR2ACT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "hear2act-env" / "audio"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "hear2act-env" / "audio"
    monkeypatch.setenv("HEAR2ACT_CACHE_DIR", str(tmp_path / "env"))
    assert AudioCache().root == tmp_path / "env"
    assert AudioCache(tmp_path / "arg").root == tmp_path / "arg"


def test_cached_renderer_wraps(tmp_path):
    r = CountingRenderer()
    cached = CachedRenderer(r, AudioCache(tmp_path))
    assert (cached.name, cached.version, cached.sample_rate) == (r.name, r.version, 16000)
    assert cached.render(UTT).tobytes() == cached.render(UTT).tobytes()
    assert r.calls == 1


def test_espeak_through_cache(tmp_path):
    pytest.importorskip("espeakng_loader")
    from hear2act_env.speech.espeak import EspeakRenderer

    r = EspeakRenderer()
    direct = pcm16_roundtrip(r.render(UTT))  # entries are 16-bit PCM: the cache rounds
    assert np.abs(direct - r.render(UTT)).max() <= 0.5 / 32767 + 1e-7
    assert AudioCache(tmp_path).render(r, UTT).tobytes() == direct.tobytes()  # fresh render
    assert AudioCache(tmp_path).render(r, UTT).tobytes() == direct.tobytes()  # from disk
    assert speak(r, UTT).tobytes() == direct.tobytes()  # no cache: the same waveform
    (entry,) = tmp_path.rglob("*.h2a")
    assert entry.stat().st_size == 56 + 2 * len(direct)  # header + 2 bytes a sample
