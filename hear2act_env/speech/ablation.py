"""Cue ablation of the perception check: which part of the voice carries resolved vs unresolved?

The reference perceiver (``perception.LogisticModel``, L2 logistic regression on standardized
features) is fit on the perception check's train clips and scored on its test clips
(``bank_perception.collect_tagged_clips`` with the check's seeds, the default renderer and
strength), once per *feature set*:

| set | columns |
| --- | --- |
| ``all`` | the 8 ``FEATURE_NAMES`` (the reference perceiver itself: the check's own figure) |
| ``pitch`` | ``f0_median_st``, ``f0_range_st``, ``f0_final_slope_st_per_s`` |
| ``energy`` | ``energy_db``, ``energy_range_db`` |
| ``timing`` | ``rate_peaks_per_s``, ``pause_ratio``, ``voicing_ratio`` |
| ``duration_ratio`` | the clip's duration / the duration of the same line spoken neutral |
| ``duration`` | the clip's duration, seconds (lead and tail silence included) |
| ``lead_silence`` | silence before the first frame within 40 dB of the loudest, seconds |

``voicing_ratio`` is a timing feature: it is the share of the speech span that is voiced, so
it falls with every pause, word gap and slower (longer-consonant) articulation and does not
depend on the F0 values at all; the pitch tracker only supplies the voiced/unvoiced decision.

The *neutral rendering* of a clip is the same utterance (text, persona, variation seed, so
the same natural jitter) at ``prosody_strength`` 0, where every delivery label gets the
neutral settings; dividing by its duration removes the length of the words and the
speaker's jitter, leaving the label's own lengthening (lead, pauses, rate).

The first three rows after ``all`` are the feature *groups*; the last three are the timing
shortcuts a reviewer found. Accuracies come with a 95% percentile interval from a
scenario-level bootstrap over the test clips (``hear2act_env.bootstrap``; the fitted model is
held fixed, so the interval reflects which test scenarios were drawn), overall and per voice
(persona); ``gap`` is the paired bootstrap of ``all`` minus the set.

Targets (the Voice v2 issue; judged on the Prosody-mediated clips only, since Explicit clips
say the need in words and differ in length by their text): the full classifier within ``FULL_RANGE``; every group alone at
least ``GROUP_MIN``; no group, nor the duration ratio (``GAP_SHORTCUTS``), within
``GROUP_GAP`` of the full classifier (a set scoring above the full classifier counts as within).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from hear2act_env.bootstrap import LEVEL, N_RESAMPLES, Estimate, draws, estimate
from hear2act_env.errors import ConfigError
from hear2act_env.speech.cache import AudioCache, speak
from hear2act_env.speech.features import ACTIVE_DB, FEATURE_NAMES, HOP, frames, prosodic_features
from hear2act_env.speech.perception import LogisticModel
from hear2act_env.speech.utterance import Renderer, Utterance

__all__ = [
    "COLUMNS",
    "FEATURE_GROUPS",
    "FEATURE_SETS",
    "AblationReport",
    "ClipTable",
    "SetResult",
    "ablate",
    "bank_ablation",
    "clip_table",
    "lead_silence_s",
]

#: The three feature groups of ``FEATURE_NAMES`` (every feature in exactly one).
FEATURE_GROUPS: dict[str, tuple[str, ...]] = {
    "pitch": ("f0_median_st", "f0_range_st", "f0_final_slope_st_per_s"),
    "energy": ("energy_db", "energy_range_db"),
    "timing": ("rate_peaks_per_s", "pause_ratio", "voicing_ratio"),
}
#: Whole-clip timing measures beyond ``FEATURE_NAMES``.
EXTRA_COLUMNS: tuple[str, ...] = ("duration_ratio", "duration_s", "lead_silence_s")
#: Every column of a ``ClipTable``: the 8 prosodic features, then ``EXTRA_COLUMNS``.
COLUMNS: tuple[str, ...] = FEATURE_NAMES + EXTRA_COLUMNS
#: The feature sets scored, in table order: name -> columns.
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "all": FEATURE_NAMES,
    **FEATURE_GROUPS,
    "duration_ratio": ("duration_ratio",),
    "duration": ("duration_s",),
    "lead_silence": ("lead_silence_s",),
}
FULL_SET = "all"
#: Voice v2 targets: full-classifier accuracy range, group floor, least gap to the full one.
FULL_RANGE = (0.88, 0.96)
GROUP_MIN = 0.65
GROUP_GAP = 0.05
#: Single features held to ``GROUP_GAP`` as well: the duration ratio alone separated resolved
#: from unresolved at 0.92 before the Voice v2 recalibration.
GAP_SHORTCUTS = ("duration_ratio",)

if sorted(c for g in FEATURE_GROUPS.values() for c in g) != sorted(
    FEATURE_NAMES
):  # pragma: no cover
    raise RuntimeError("FEATURE_GROUPS must split FEATURE_NAMES")


def lead_silence_s(wave: np.ndarray, sr: int) -> float:
    """Seconds before the first 10 ms frame within ``ACTIVE_DB`` of the loudest frame (the
    start of ``features``' speech span); 0 for an empty or silent waveform."""
    fr = frames(wave)
    level = 10.0 * np.log10(np.mean(fr * fr, axis=1) + 1e-12)
    if len(level) == 0 or not np.any(np.asarray(wave)):
        return 0.0
    first = int(np.argmax(level > level.max() - ACTIVE_DB))
    return first * HOP / sr


@dataclass(frozen=True)
class ClipTable:
    """Per-clip measurements: ``x`` has one column per ``COLUMNS`` entry."""

    x: np.ndarray
    y: np.ndarray
    personas: tuple[str, ...]
    deliveries: tuple[str, ...]
    groups: tuple[str, ...]  # bootstrap clusters (scenario ids)

    def __post_init__(self) -> None:
        n = len(self.y)
        if self.x.shape != (n, len(COLUMNS)):
            raise ConfigError(
                f"a clip table needs ({n}, {len(COLUMNS)}) values, got {self.x.shape}"
            )
        if not len(self.personas) == len(self.deliveries) == len(self.groups) == n:
            raise ConfigError("a clip table needs one persona, delivery and group per clip")

    def columns(self, names: Sequence[str]) -> np.ndarray:
        """The ``(n, len(names))`` block of the named columns."""
        unknown = [c for c in names if c not in COLUMNS]
        if unknown or not names:
            raise ConfigError(f"unknown or no columns {unknown}; choose from {', '.join(COLUMNS)}")
        return self.x[:, [COLUMNS.index(c) for c in names]]


def clip_table(
    clips: Sequence[tuple[Utterance, bool]] | Sequence[tuple[Utterance, bool, str]],
    renderer: Renderer,
    cache: AudioCache | None = None,
) -> ClipTable:
    """Render each clip and its neutral twin (``prosody_strength`` 0) and measure them.

    The first 8 columns are exactly ``perception.features_of``'s. A clip's group is its third
    element (a scenario id) when given, else the clip is its own group.
    """
    if not clips:
        raise ConfigError("clip_table needs at least one clip")
    sr = renderer.sample_rate
    rows, groups = [], []
    for i, clip in enumerate(clips):
        utt = clip[0]
        wave = speak(renderer, utt, cache)
        neutral = speak(renderer, replace(utt, prosody_strength=0.0), cache)
        duration = len(wave) / sr
        ratio = len(wave) / max(len(neutral), 1)
        extra = np.array([ratio, duration, lead_silence_s(wave, sr)], dtype=np.float32)
        rows.append(np.concatenate([prosodic_features(wave, sr), extra]))
        groups.append(str(clip[2]) if len(clip) > 2 else f"clip-{i}")
    return ClipTable(
        x=np.stack(rows),
        y=np.array([bool(c[1]) for c in clips]),
        personas=tuple(c[0].persona for c in clips),
        deliveries=tuple(c[0].delivery for c in clips),
        groups=tuple(groups),
    )


@dataclass(frozen=True)
class SetResult:
    """Test accuracy of the reference classifier on one feature set."""

    name: str
    columns: tuple[str, ...]
    accuracy: Estimate
    gap: Estimate  # full-set accuracy minus this one (paired bootstrap)
    train_accuracy: float
    per_voice: dict[str, Estimate]
    per_delivery: dict[str, float]

    def to_dict(self) -> dict:
        return {
            "columns": list(self.columns),
            "accuracy": _estimate_dict(self.accuracy),
            "gap_to_full": _estimate_dict(self.gap),
            "train_accuracy": self.train_accuracy,
            "per_voice": {v: _estimate_dict(e) for v, e in self.per_voice.items()},
            "per_delivery": dict(self.per_delivery),
        }


@dataclass(frozen=True)
class Check:
    """One Voice v2 target and whether it holds."""

    target: str
    holds: bool
    detail: str


@dataclass
class AblationReport:
    """Every feature set's figures on one clip set (one realization)."""

    results: dict[str, SetResult]
    n_train: int
    n_test: int
    n_test_groups: int
    l2: float = 1.0
    resamples: int = N_RESAMPLES
    label: str = ""
    voice_clips: dict[str, int] = field(default_factory=dict)
    judged: bool = True  # whether the Voice v2 targets apply to this clip set

    def checks(self) -> list[Check]:
        """The Voice v2 targets (only the sets present are judged)."""
        out = []
        full = self.results.get(FULL_SET)
        if full is not None:
            lo, hi = FULL_RANGE
            a = full.accuracy.value
            out.append(
                Check(f"full classifier within {lo:.2f}-{hi:.2f}", lo <= a <= hi, f"{a:.3f}")
            )
        groups = [self.results[g] for g in FEATURE_GROUPS if g in self.results]
        if groups:
            low = [g.name for g in groups if g.accuracy.value < GROUP_MIN]
            detail = ", ".join(f"{g.name} {g.accuracy.value:.3f}" for g in groups)
            out.append(
                Check(
                    f"every group alone >= {GROUP_MIN:.2f}",
                    not low,
                    detail + (f"; below: {', '.join(low)}" if low else ""),
                )
            )
        if groups and full is not None:
            # the groups, and the duration ratio: the one-number timing shortcut
            alone = groups + [self.results[s] for s in GAP_SHORTCUTS if s in self.results]
            near = [g.name for g in alone if full.accuracy.value - g.accuracy.value < GROUP_GAP]
            detail = ", ".join(
                f"{g.name} {full.accuracy.value - g.accuracy.value:+.3f}" for g in alone
            )
            out.append(
                Check(
                    f"no group (nor the duration ratio) within {GROUP_GAP:.2f} of the full "
                    "classifier",
                    not near,
                    "gaps " + detail + (f"; too close: {', '.join(near)}" if near else ""),
                )
            )
        return out

    def to_dict(self) -> dict:
        return {
            "n_train": self.n_train,
            "n_test": self.n_test,
            "n_test_groups": self.n_test_groups,
            "voice_clips": dict(self.voice_clips),
            "targets_judged": self.judged,
            "sets": {name: r.to_dict() for name, r in self.results.items()},
            "checks": [
                {"target": c.target, "holds": c.holds, "detail": c.detail} for c in self.checks()
            ],
        }

    def table(self) -> str:
        """The overall table (point and CI, gap, per-voice points), per-voice CIs, targets."""
        voices = list(self.voice_clips)
        head = f"{'set':<15}{'cols':>5}  {'accuracy [95% CI]':<22}{'gap to all':>11}  "
        lines = [head + "".join(f"{v:>8}" for v in voices)]
        for r in self.results.values():
            gap = "-" if r.name == FULL_SET else f"{r.gap.value:+.3f}"
            lines.append(
                f"{r.name:<15}{len(r.columns):>5}  {_ci(r.accuracy):<22}{gap:>11}  "
                + "".join(f"{r.per_voice[v].value:>8.3f}" for v in voices)
            )
        lines.append("")
        lines.append("per voice, accuracy (95% CI):")
        names = list(self.results)
        lines.append(f"{'voice':<8}{'clips':>6}  " + "".join(f"{n:>18}" for n in names))
        for v in voices:
            cells = "".join(f"{_short_ci(self.results[n].per_voice[v]):>18}" for n in names)
            lines.append(f"{v:<8}{self.voice_clips[v]:>6}  {cells}")
        lines.append("")
        lines.append(
            "Voice v2 targets:"
            if self.judged
            else "Voice v2 targets (not judged here: they are for the prosody realization):"
        )
        for c in self.checks():
            lines.append(f"  [{'holds' if c.holds else 'FAILS'}] {c.target}: {c.detail}")
        return "\n".join(lines)


def ablate(
    train: ClipTable,
    test: ClipTable,
    sets: Mapping[str, Sequence[str]] | None = None,
    *,
    l2: float = 1.0,
    resamples: int = N_RESAMPLES,
    seed: int = 0,
    label: str = "",
    judged: bool = True,
) -> AblationReport:
    """Fit ``LogisticModel`` on each set's train columns only and score it on the test clips.

    ``sets`` defaults to ``FEATURE_SETS``; ``gap`` is measured against the ``all`` set when it
    is among them (else it is NaN). All sets share one bootstrap draw (paired intervals).
    """
    sets = dict(FEATURE_SETS if sets is None else sets)
    if not sets:
        raise ConfigError("ablate needs at least one feature set")
    if len(train.y) == 0 or len(test.y) == 0:
        raise ConfigError("ablate needs non-empty train and test clips")
    correct = {}
    train_acc = {}
    for name, cols in sets.items():
        model = LogisticModel.fit(train.columns(cols), train.y, l2=l2, feature_names=tuple(cols))
        correct[name] = model.predict(test.columns(cols)) == test.y
        train_acc[name] = float((model.predict(train.columns(cols)) == train.y).mean())
    names = list(sets)
    hits = np.stack([correct[n] for n in names]).astype(np.float64)  # (sets, clips)
    overall = _cluster_bootstrap(hits, test.groups, resamples, seed)
    personas = np.array(test.personas)
    voices = sorted(set(test.personas))
    per_voice = {
        v: _cluster_bootstrap(
            hits[:, personas == v],
            tuple(g for g, p in zip(test.groups, test.personas) if p == v),
            resamples,
            seed,
        )
        for v in voices
    }
    kinds = np.array(test.deliveries)
    full = names.index(FULL_SET) if FULL_SET in names else None
    results = {}
    for i, name in enumerate(names):
        point, samples, n = overall
        if full is not None:
            gap = estimate(point[full] - point[i], samples[full] - samples[i], n)
        else:
            gap = Estimate(float("nan"), float("nan"), float("nan"), n)
        results[name] = SetResult(
            name=name,
            columns=tuple(sets[name]),
            accuracy=estimate(point[i], samples[i], n),
            gap=gap,
            train_accuracy=train_acc[name],
            per_voice={v: estimate(pv[0][i], pv[1][i], pv[2]) for v, pv in per_voice.items()},
            per_delivery={
                d: float(hits[i, kinds == d].mean()) for d in sorted(set(test.deliveries))
            },
        )
    return AblationReport(
        results=results,
        n_train=len(train.y),
        n_test=len(test.y),
        n_test_groups=len(set(test.groups)),
        l2=l2,
        resamples=resamples,
        label=label,
        judged=judged,
        voice_clips={v: int((personas == v).sum()) for v in voices},
    )


def _cluster_bootstrap(
    hits: np.ndarray, groups: Sequence[str], resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Point accuracies ``(sets,)``, bootstrap samples ``(sets, resamples)`` and the number of
    groups: groups are drawn with replacement and pooled (correct clips / clips)."""
    keys = sorted(set(groups))
    index = np.array([keys.index(g) for g in groups])
    sums = np.zeros((hits.shape[0], len(keys)))
    np.add.at(sums.T, index, hits.T)
    counts = np.bincount(index, minlength=len(keys)).astype(np.float64)
    pick = draws(len(keys), resamples, seed)
    samples = sums[:, pick].sum(axis=-1) / counts[pick].sum(axis=-1)
    return hits.mean(axis=1), samples, len(keys)


def _estimate_dict(e: Estimate) -> dict:
    return {"value": e.value, "low": e.low, "high": e.high, "n_groups": e.n}


def _ci(e: Estimate) -> str:
    return f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"


def _short_ci(e: Estimate) -> str:
    return f"{e.value:.2f} ({e.low:.2f}-{e.high:.2f})"


@dataclass
class BankAblation:
    """``AblationReport`` per realization on the perception check's clip sets."""

    strength: float
    reports: dict[str, AblationReport]
    n_train_scenarios: int
    n_test_scenarios: int
    resamples: int = N_RESAMPLES

    def to_dict(self) -> dict:
        return {
            "strength": self.strength,
            "classifier": "LogisticModel (L2 logistic regression, standardized features)",
            "ci": {"level": LEVEL, "resamples": self.resamples, "unit": "test scenario"},
            "n_train_scenarios": self.n_train_scenarios,
            "n_test_scenarios": self.n_test_scenarios,
            "feature_sets": {k: list(v) for k, v in FEATURE_SETS.items()},
            "targets": {
                "full_range": list(FULL_RANGE),
                "group_min": GROUP_MIN,
                "group_gap": GROUP_GAP,
            },
            "realizations": {r: rep.to_dict() for r, rep in self.reports.items()},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def table(self) -> str:
        lines = [
            "Cue ablation: resolved vs unresolved from feature subsets "
            f"(reference classifier, strength {self.strength}); trained on "
            f"{self.n_train_scenarios} train scenarios, tested on {self.n_test_scenarios} test "
            f"scenarios; 95% CI: scenario bootstrap, {self.resamples} resamples",
            "sets: " + "; ".join(f"{k} = {', '.join(v)}" for k, v in FEATURE_SETS.items()),
        ]
        for r, rep in self.reports.items():
            lines.append("")
            lines.append(f"{r} realization: {rep.n_train} train clips, {rep.n_test} test clips")
            lines.append(rep.table())
        return "\n".join(lines)


def bank_ablation(
    train: Sequence,
    test: Sequence,
    strength: float,
    realizations: Sequence[str] = ("prosody", "explicit"),
    renderer: Renderer | None = None,
    cache: AudioCache | None = None,
    per_scenario: int = 6,
    *,
    resamples: int = N_RESAMPLES,
) -> BankAblation:
    """The ablation on the clips of ``bank_perception.perception_check`` (same seeds).

    The Voice v2 targets are judged on the ``prosody`` realization only: the ``explicit`` one
    says the unmet need in words, so its clips also differ in length by text.
    """
    from hear2act_env.speech.bank_perception import TEST_SEED, TRAIN_SEED, collect_tagged_clips

    if not train or not test:
        raise ConfigError("bank_ablation needs train and test scenarios")
    if renderer is None:
        from hear2act_env.speech.espeak import EspeakRenderer

        renderer = EspeakRenderer()
    if cache is None:
        cache = AudioCache()
    reports = {}
    for r in realizations:
        tr = collect_tagged_clips(train, r, strength, per_scenario, seed=TRAIN_SEED)
        te = collect_tagged_clips(test, r, strength, per_scenario, seed=TEST_SEED)
        reports[r] = ablate(
            clip_table(tr, renderer, cache),
            clip_table(te, renderer, cache),
            resamples=resamples,
            label=r,
            judged=r == "prosody",
        )
    return BankAblation(float(strength), reports, len(train), len(test), resamples)
