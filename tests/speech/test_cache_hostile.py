"""Cache entries are data: whatever sits where an entry goes (a link to /dev/zero, a FIFO, a link
out of the cache, a folder, a truncated, huge or garbage file) is a miss or a named error, fast,
and nothing outside the cache folder is ever read or written."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from hear2act_agents.llm.cache import ResponseCache
from hear2act_env.speech.cache import (
    MAX_ENTRY_BYTES,
    AudioCache,
    CacheEntryError,
    cache_key,
    read_entry,
)
from hear2act_env.speech.utterance import Utterance

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only")


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so no ``except OSError`` can swallow it."""


@contextlib.contextmanager
def within(seconds: float = 5.0):
    """Fail (instead of hanging) when the block takes longer than ``seconds``; on Linux, also
    cap the address space 1 GiB above the current use so an endless read fails fast."""

    def fire(signum, frame):
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    limits = None
    if sys.platform.startswith("linux"):
        import resource

        limits = resource.getrlimit(resource.RLIMIT_AS)
        used = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        cap = used + (1 << 30)
        if limits[1] == resource.RLIM_INFINITY or cap < limits[1]:
            resource.setrlimit(resource.RLIMIT_AS, (cap, limits[1]))
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if limits is not None:
            resource.setrlimit(resource.RLIMIT_AS, limits)


class Tone:
    """A fast deterministic renderer: a short tone whose pitch follows the text."""

    name = "test-tone"
    version = "1"
    sample_rate = 16_000

    def __init__(self) -> None:
        self.calls = 0

    def render(self, utt: Utterance) -> np.ndarray:
        self.calls += 1
        t = np.arange(1600, dtype=np.float32) / self.sample_rate
        return (0.3 * np.sin(2 * np.pi * (200 + len(utt.text)) * t)).astype(np.float32)


UTT = Utterance("Okay, that works for me.", "satisfied", "amber", 0)
OTHER = Utterance("Sure, go ahead.", "satisfied", "amber", 0)


@pytest.fixture
def cache(tmp_path) -> AudioCache:
    return AudioCache(tmp_path / "cache", memory_items=0)


def _slot(cache: AudioCache, utt: Utterance = UTT) -> Path:
    path = cache.path_for(cache_key(Tone(), utt))
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _renders_fresh(cache: AudioCache, utt: Utterance = UTT) -> np.ndarray:
    renderer = Tone()
    with within():
        wave = cache.render(renderer, utt)
    assert renderer.calls == 1 and cache.stats.disk_hits == 0
    np.testing.assert_array_equal(wave, AudioCache(None, disk=False).render(Tone(), utt))
    return wave


def _is_valid_entry(cache: AudioCache, utt: Utterance = UTT) -> bool:
    path = cache.path_for(cache_key(Tone(), utt))
    return (
        path.is_file()
        and not path.is_symlink()
        and cache.entry_problem(cache_key(Tone(), utt), Tone.sample_rate) is None
    )


def test_a_link_to_dev_zero_is_a_miss_and_is_replaced(cache):
    os.symlink("/dev/zero", _slot(cache))
    _renders_fresh(cache)
    assert cache.stats.corrupt == 1 and _is_valid_entry(cache)


def test_a_fifo_is_a_miss_and_is_replaced(cache):
    os.mkfifo(_slot(cache))
    _renders_fresh(cache)
    assert cache.stats.corrupt == 1 and _is_valid_entry(cache)


def test_a_link_out_of_the_cache_is_never_read(cache, tmp_path):
    AudioCache(tmp_path / "elsewhere", memory_items=0).render(Tone(), UTT)  # a valid entry
    outside = next((tmp_path / "elsewhere").rglob("*.h2a"))
    before = outside.read_bytes()
    os.symlink(outside, _slot(cache))
    _renders_fresh(cache)  # not a disk hit: the link was refused, then replaced
    assert _is_valid_entry(cache) and outside.read_bytes() == before


def test_a_linked_fan_out_folder_is_neither_read_nor_written(cache, tmp_path):
    outside = tmp_path / "outside"
    AudioCache(outside, memory_items=0).render(Tone(), UTT)
    fan_out = cache.path_for(cache_key(Tone(), UTT)).parent
    cache.root.mkdir()
    os.symlink(outside / fan_out.name, fan_out)
    (outside / fan_out.name / cache.path_for(cache_key(Tone(), UTT)).name).unlink()
    _renders_fresh(cache)
    assert cache.stats.unstored == 1
    assert list(outside.rglob("*.h2a")) == []  # nothing written through the link


def test_a_folder_in_place_of_an_entry_is_a_miss_that_leaves_the_cache_writable(cache):
    import warnings

    _slot(cache).mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "cache not writable" warning
        _renders_fresh(cache)
        cache.render(Tone(), OTHER)
    assert cache.stats.unstored == 1 and _is_valid_entry(cache, OTHER)
    assert cache.entry_problem(cache_key(Tone(), UTT), Tone.sample_rate) == "not a regular file"


def test_a_truncated_entry_is_a_miss_and_is_rewritten(cache):
    cache.render(Tone(), UTT)
    path = cache.path_for(cache_key(Tone(), UTT))
    path.write_bytes(path.read_bytes()[:-7])
    assert cache.entry_problem(cache_key(Tone(), UTT), Tone.sample_rate) == "corrupt"
    _renders_fresh(cache)
    assert cache.stats.corrupt == 1 and _is_valid_entry(cache)


def test_a_huge_entry_is_refused_without_being_read(cache):
    with open(_slot(cache), "wb") as fh:  # sparse: no disk used
        fh.truncate(MAX_ENTRY_BYTES + 1)
    _renders_fresh(cache)
    assert cache.stats.corrupt == 1 and _is_valid_entry(cache)


def test_garbage_is_a_miss(cache):
    _slot(cache).write_bytes(b"RIFF....WAVEfmt not a cache entry" * 10)
    _renders_fresh(cache)
    assert cache.stats.corrupt == 1 and _is_valid_entry(cache)


def test_read_entry_names_what_it_refuses(tmp_path):
    (tmp_path / "ab").mkdir()
    assert read_entry(tmp_path, ("ab", "missing"), 100) is None
    os.symlink("/dev/zero", tmp_path / "ab" / "zero")
    os.mkfifo(tmp_path / "ab" / "fifo")
    (tmp_path / "ab" / "big").write_bytes(b"x" * 101)
    (tmp_path / "ab" / "dir").mkdir()
    with within():
        for name in ("zero", "fifo", "big", "dir"):
            with pytest.raises(CacheEntryError):
                read_entry(tmp_path, ("ab", name), 100)
    with pytest.raises(ValueError):
        read_entry(tmp_path, ("..", "x"), 100)


# --- the LLM response cache ---------------------------------------------------------------


KEY = "ab" + "0" * 62


def _llm_slot(root: Path) -> Path:
    path = root / KEY[:2] / f"{KEY}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "outside", "folder", "huge", "garbage"])
def test_a_hostile_llm_cache_entry_is_a_miss(tmp_path, kind):
    root = tmp_path / "responses"
    slot = _llm_slot(root)
    outside = tmp_path / "outside.json"
    outside.write_text('{"key": "x", "reply": "secret"}')
    if kind == "dev-zero":
        os.symlink("/dev/zero", slot)
    elif kind == "fifo":
        os.mkfifo(slot)
    elif kind == "outside":
        os.symlink(outside, slot)
    elif kind == "folder":
        slot.mkdir()
    elif kind == "huge":
        with open(slot, "wb") as fh:
            fh.truncate(64 << 20)
    else:
        slot.write_bytes(b"\xff\xfe not json")
    cache = ResponseCache(root)
    with within():
        assert cache.lookup(KEY) is None
        cache.put(KEY, "fresh reply")  # replaces it atomically (a folder: not stored)
    assert cache.misses == 1
    if kind == "folder":
        assert cache.unstored == 1 and cache.get(KEY) is None
    else:
        assert cache.get(KEY) == "fresh reply" and not slot.is_symlink()
    assert outside.read_text() == '{"key": "x", "reply": "secret"}'
