"""Pre-render every utterance a scenario bank can produce into the audio cache."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.protocol.catalog import possible_turns
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.speech.cache import AudioCache
from hear2act_env.speech.renderers import make_renderer
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
    """Distinct utterances of ``scenarios`` under ``realizations``, voiced as the env voices them."""
    seen: dict[Utterance, None] = {}
    for s in scenarios:
        for realization in realizations:
            for text, delivery, variation in possible_turns(s, realization):  # type: ignore[arg-type]
                seen.setdefault(Utterance.spoken(s, text, delivery, variation, strength))
    return list(seen)


#: The env's default audio buffer (``max_audio_seconds=15``): features are of what it shows.
DEFAULT_MAX_SAMPLES = 15 * SAMPLE_RATE


def _ignore_sigint() -> None:
    """A render worker leaves SIGINT to its parent, which terminates the pool."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _render_part(args: tuple[list[Utterance], str | None, bool, str]) -> tuple[float, int]:
    utts, root, features, renderer_spec = args
    cache = AudioCache(root, memory_items=0)
    renderer = make_renderer(renderer_spec)
    store = None
    if features:
        from hear2act_env.speech.cache import cache_key
        from hear2act_env.speech.feature_cache import FeatureCache, utterance_digest, waveform_key
        from hear2act_env.speech.features import bounded_features

        store = FeatureCache(cache.root / "features")
    seconds = 0.0
    for u in utts:
        wave = cache.render(renderer, u, copy=False)
        seconds += len(wave) / SAMPLE_RATE
        if store is not None:
            shown = np.ascontiguousarray(wave[:DEFAULT_MAX_SAMPLES], dtype=np.float32)
            feats = bounded_features(shown)
            store.put(waveform_key(shown), feats)
            # also under the clip's utterance key (Hear2ActEnv.utterance_key): a features-only
            # reader then finds it without rendering
            store.put(utterance_digest(f"{cache_key(renderer, u)}:{DEFAULT_MAX_SAMPLES}"), feats)
    return seconds, cache.stats.misses


def prerender(
    utts: Sequence[Utterance],
    cache_dir: str | Path | None = None,
    workers: int = 1,
    progress: bool = True,
    features: bool = False,
    renderer: str = "espeak",
) -> RenderSummary:
    """Render ``utts`` into the disk cache (``workers`` processes) with a progress line; with
    ``features``, also their prosodic features into the feature cache beside it (as the env's
    default 15 s buffer shows them), so audio RL starts warm. ``renderer``: a renderer spec
    (``speech.renderers``), made once per worker."""
    import multiprocessing as mp

    start = time.perf_counter()
    root = str(cache_dir) if cache_dir else None
    parts = [list(utts[i : i + 200]) for i in range(0, len(utts), 200)]
    seconds = 0.0
    misses = done = 0
    ctx = mp.get_context("spawn")
    workers = min(workers, len(parts))  # a pool starts all its processes at once
    pool_of = ctx.Pool(workers, initializer=_ignore_sigint) if workers > 1 else _Inline()
    with pool_of as pool:
        for sec, miss in pool.imap_unordered(
            _render_part, [(p, root, features, renderer) for p in parts]
        ):
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
