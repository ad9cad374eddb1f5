"""Pre-render every utterance a scenario bank can produce into the audio cache."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.protocol.catalog import possible_turns
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.speech.cache import AudioCache
from hear2act_env.speech.espeak import EspeakRenderer
from hear2act_env.speech.utterance import Utterance


@dataclass(frozen=True)
class RenderSummary:
    """What a pre-render run did."""

    utterances: int
    audio_seconds: float
    wall_seconds: float
    rendered: int  # cache misses (the rest were already cached)


def utterances(
    scenarios: Sequence[Scenario], realizations: Sequence[str], strength: float
) -> list[Utterance]:
    """Distinct utterances of ``scenarios`` under ``realizations`` (voice = scenario persona)."""
    seen: dict[tuple, Utterance] = {}
    for s in scenarios:
        for realization in realizations:
            for text, delivery, variation in possible_turns(s, realization):  # type: ignore[arg-type]
                key = (text, delivery, s.persona, variation)
                if key not in seen:
                    seen[key] = Utterance(text, delivery, s.persona, variation, strength)
    return list(seen.values())


def _render_part(args: tuple[list[Utterance], str | None]) -> tuple[float, int]:
    utts, root = args
    cache = AudioCache(root, memory_items=0)
    renderer = EspeakRenderer()
    seconds = sum(len(cache.render(renderer, u)) for u in utts) / SAMPLE_RATE
    return seconds, cache.stats.misses


def prerender(
    utts: Sequence[Utterance],
    cache_dir: str | Path | None = None,
    workers: int = 1,
    progress: bool = True,
) -> RenderSummary:
    """Render ``utts`` into the disk cache (``workers`` processes) with a progress line."""
    import multiprocessing as mp

    start = time.perf_counter()
    root = str(cache_dir) if cache_dir else None
    parts = [list(utts[i : i + 200]) for i in range(0, len(utts), 200)]
    seconds = 0.0
    misses = done = 0
    ctx = mp.get_context("spawn")
    with ctx.Pool(workers) if workers > 1 else _Inline() as pool:
        for sec, miss in pool.imap_unordered(_render_part, [(p, root) for p in parts]):
            seconds += sec
            misses += miss
            done += 1
            if progress:
                bar = "#" * int(30 * done / max(len(parts), 1))
                print(
                    f"\r[{bar:<30}] {min(done * 200, len(utts))}/{len(utts)} utterances",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
    if progress:
        print(file=sys.stderr)
    return RenderSummary(len(utts), seconds, time.perf_counter() - start, misses)


class _Inline:
    """A serial stand-in for a process pool."""

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def imap_unordered(self, fn, items):  # noqa: ANN001, ANN201
        return map(fn, items)
