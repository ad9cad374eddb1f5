"""The scores of a perception audit folder (``hear2act audit --score``; paper, Table 11).

Raters are the people (``labels/``), the reference perceiver (its reading of every clip is in
``clips.json``) and any models that labelled the clips (``models/``, ``hear2act audit
--model``). Everything is scored on the clips someone (a person or a model) labelled:

- **Per rater, against the truth:** accuracy on resolved clips, on unresolved clips, overall.
  A model's reply that names neither label counts as a wrong answer ("no answer").
- **Per person:** agreement and Cohen's kappa with the reference perceiver.
- **Per model:** agreement and kappa with each person (on the clips both labelled), averaged
  over people, and with the reference perceiver; "no answer" is a third category there.
- **Per pair of raters** (two people, or a model and a person): agreement and kappa on the
  clips both labelled.
- The table's "Human" column averages the people (each on the clips they labelled); its
  bottom block averages over pairs of people ("with people") and over people ("with the
  reference perceiver").

Intervals are 95% percentile bootstraps over the scored clips (2,000 resamples, seeded): one
set of resampled clip weights serves every figure, so they are paired. Cohen's kappa is
``(p_o - p_e) / (1 - p_e)``; when the expected agreement ``p_e`` is 1 (both raters gave one and
the same label to every clip) it is undefined, reported as NaN ("n/a").
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hear2act_env.bootstrap import LEVEL, N_RESAMPLES, Estimate, draws, estimate
from hear2act_env.cells import markdown_text
from hear2act_env.errors import ConfigError
from hear2act_env.listen.audit.folder import LABELS, PAPER, SPLIT, Audit, read_labels
from hear2act_env.listen.audit.model_labels import model_runs

__all__ = [
    "AnnotatorScore",
    "AuditScore",
    "ModelScore",
    "PairScore",
    "cohen_kappa",
    "score_audit",
]

SCORE_FORMAT = "hear2act-audit-score-v2"
#: Label codes in the score arrays: a model's reply that names neither label is NO_ANSWER.
RESOLVED, UNRESOLVED, NO_ANSWER = 1, 0, 2


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Cohen's kappa of two raters' labels of the same items (any label values).

    ``(p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement and ``p_e`` the agreement
    expected from each rater's label frequencies; NaN when ``p_e`` is 1 (undefined)."""
    a, b = list(a), list(b)
    if len(a) != len(b) or not a:
        raise ConfigError(
            f"cohen_kappa needs two equally long, non-empty label lists ({len(a)}, {len(b)})"
        )
    cats = sorted(set(a) | set(b), key=repr)
    index = {c: i for i, c in enumerate(cats)}
    table = np.zeros((len(cats), len(cats)))
    np.add.at(table, ([index[x] for x in a], [index[y] for y in b]), 1.0)
    table /= table.sum()
    p_o = float(np.trace(table))
    p_e = float(table.sum(axis=1) @ table.sum(axis=0))
    if p_e >= 1.0 - 1e-12:
        return float("nan")
    return (p_o - p_e) / (1.0 - p_e)


def _rate(w: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """Weighted share of ``hit`` per row of weights ``w`` (NaN for an empty row)."""
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (w @ hit.astype(np.float64)) / total, np.nan)


def _kappa_rows(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Cohen's kappa of label codes ``x`` and ``y`` per row of weights ``w`` (NaN where
    undefined)."""
    p_o = _rate(w, x == y)
    p_e = sum(_rate(w, x == c) * _rate(w, y == c) for c in np.union1d(x, y))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(p_e < 1.0 - 1e-12, (p_o - p_e) / (1.0 - p_e), np.nan)


def _mean_rows(rows: list[np.ndarray]) -> np.ndarray | None:
    if not rows:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.vstack(rows), axis=0)


@dataclass(frozen=True)
class AnnotatorScore:
    """One person against the truth and the reference perceiver."""

    name: str
    n: int
    resolved: Estimate
    unresolved: Estimate
    overall: Estimate
    agreement_model: Estimate
    kappa_model: Estimate


@dataclass(frozen=True)
class ModelScore:
    """One model against the truth, the people and the reference perceiver."""

    name: str
    spec: str
    settings: dict[str, Any]
    context: bool
    n: int
    no_answer: int
    resolved: Estimate
    unresolved: Estimate
    overall: Estimate
    agreement_people: Estimate | None
    kappa_people: Estimate | None
    agreement_reference: Estimate
    kappa_reference: Estimate


@dataclass(frozen=True)
class PairScore:
    """Two raters (two people, or a model and a person) on the clips both labelled."""

    a: str
    b: str
    n: int
    agreement: Estimate
    kappa: Estimate
    kind: Literal["people", "model-person"] = "people"


@dataclass
class AuditScore:
    """The scores of an audit folder (``markdown()``: the Table-11 layout; ``to_dict()``)."""

    folder: str
    renderer: dict[str, str]
    settings: dict[str, Any]
    perceiver: str
    clips: int
    labelled: int
    annotators: list[AnnotatorScore]
    pairs: list[PairScore]
    human: dict[str, Estimate | None]
    model: dict[str, Estimate]
    resamples: int
    models: list[ModelScore]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": SCORE_FORMAT,
            "folder": self.folder,
            "renderer": self.renderer,
            "settings": self.settings,
            "perceiver": self.perceiver,
            "clips": self.clips,
            "labelled_clips": self.labelled,
            "interval": {"level": LEVEL, "resamples": self.resamples, "over": "clips"},
            "human": {k: _json(v) for k, v in self.human.items()},
            "model": {k: _json(v) for k, v in self.model.items()},
            "annotators": {
                a.name: {
                    "clips": a.n,
                    "resolved": _json(a.resolved),
                    "unresolved": _json(a.unresolved),
                    "overall": _json(a.overall),
                    "agreement_model": _json(a.agreement_model),
                    "kappa_model": _json(a.kappa_model),
                }
                for a in self.annotators
            },
            "models": {
                m.name: {
                    "spec": m.spec,
                    "settings": m.settings,
                    "context": m.context,
                    "clips": m.n,
                    "no_answer": m.no_answer,
                    "resolved": _json(m.resolved),
                    "unresolved": _json(m.unresolved),
                    "overall": _json(m.overall),
                    "agreement_people": _json(m.agreement_people),
                    "kappa_people": _json(m.kappa_people),
                    "agreement_reference": _json(m.agreement_reference),
                    "kappa_reference": _json(m.kappa_reference),
                }
                for m in self.models
            },
            "pairs": [
                {
                    "a": p.a,
                    "b": p.b,
                    "kind": p.kind,
                    "clips": p.n,
                    "agreement": _json(p.agreement),
                    "kappa": _json(p.kappa),
                }
                for p in self.pairs
            ],
            "paper": dict(PAPER),
        }

    def markdown(self) -> str:
        h, m = self.human, self.model
        name = self.renderer.get("name", "renderer")
        heard = (
            "with the dialogue before each clip"
            if self.settings.get("context")
            else ("without the dialogue before them")
        )
        cols = ["Human", "Reference perceiver", *(markdown_text(x.name) for x in self.models)]

        def row(label: str, human: Any, ref: Any, per_model: Any) -> str:
            cells = [human, ref, *(per_model(x) for x in self.models)]
            return f"| {label} | " + " | ".join(cells) + " |"

        lines = [
            f"Perception audit {markdown_text(str(self.folder))}: {markdown_text(str(name))} "
            f"({markdown_text(str(self.renderer.get('version', '?')))}), "
            f"prosody strength {self.settings.get('prosody_strength')}; {self.clips} clips of the "
            f"{self.settings.get('split', SPLIT)} split ({self.clips // 2} resolved, "
            f"{self.clips // 2} unresolved, in pairs), heard {heard}; {self.labelled} labelled "
            f"by {len(self.annotators)} person(s) and {len(self.models)} model(s)",
            "",
            f"|  | {' | '.join(cols)} |",
            "| --- |" + " --- |" * len(cols),
            *(
                row(
                    label,
                    _fmt(human),
                    _fmt(ref) if ref is not False else "",
                    lambda x, a=attr: _fmt(getattr(x, a)),
                )
                for label, human, ref, attr in (
                    ("Resolved (O+)", h["resolved"], m["resolved"], "resolved"),
                    ("Unresolved (O-)", h["unresolved"], m["unresolved"], "unresolved"),
                    ("Overall", h["overall"], m["overall"], "overall"),
                    (
                        "Agreement with people",
                        h["agreement_annotators"],
                        h["agreement_model"],
                        "agreement_people",
                    ),
                    ("κ with people", h["kappa_annotators"], h["kappa_model"], "kappa_people"),
                    (
                        "Agreement with the reference perceiver",
                        h["agreement_model"],
                        False,
                        "agreement_reference",
                    ),
                    ("κ with the reference perceiver", h["kappa_model"], False, "kappa_reference"),
                )
            ),
            row("No answer", "", "", lambda x: f"{x.no_answer} of {x.n}"),
            "",
            f"Human: the mean over people, each on the clips they labelled; with people: per "
            f"pair of people on the clips both labelled, averaged over pairs. Reference "
            f"perceiver: {self.perceiver}, on the {self.labelled} scored clips. A model: on the "
            f"clips it labelled, a reply naming neither label counted wrong; with people: "
            f"against each person on the clips both labelled, averaged over people. Brackets: "
            f"{LEVEL:.0%} bootstrap intervals over clips ({self.resamples} resamples); "
            f"n/a: undefined.",
            f"Paper, Table 11 (Qwen3-TTS clips, heard with the dialogue): people "
            f"{PAPER['humans']:.2f}, Qwen2.5-Omni {PAPER['Qwen2.5-Omni']:.2f}, κ between "
            f"annotators {PAPER['kappa_annotators']:.2f}.",
        ]
        if self.annotators:
            lines += [
                "",
                "| person | clips | resolved | unresolved | overall | agreement, reference | "
                "κ, reference |",
                "| --- | --- | --- | --- | --- | --- | --- |",
            ]
            lines += [
                f"| {markdown_text(a.name)} | {a.n} | {_fmt(a.resolved)} | {_fmt(a.unresolved)} | "
                f"{_fmt(a.overall)} | {_fmt(a.agreement_model)} | {_fmt(a.kappa_model)} |"
                for a in self.annotators
            ]
        if self.pairs:
            lines += [
                "",
                "| rater | rater | shared clips | agreement | κ |",
                "| --- | --- | --- | --- | --- |",
            ]
            lines += [
                f"| {markdown_text(p.a)} | {markdown_text(p.b)} | {p.n} | {_fmt(p.agreement)} | {_fmt(p.kappa)} |"
                for p in self.pairs
            ]
        return "\n".join(lines) + "\n"


def _fmt(e: Estimate | None) -> str:
    if e is None or not math.isfinite(e.value):
        return "n/a"
    if not (math.isfinite(e.low) and math.isfinite(e.high)):
        return f"{e.value:.2f}"
    return f"{e.value:.2f} [{e.low:.2f}, {e.high:.2f}]"


def _json(e: Estimate | None) -> dict[str, Any] | None:
    if e is None:
        return None
    clean = lambda v: v if math.isfinite(v) else None  # noqa: E731
    return {"value": clean(e.value), "low": clean(e.low), "high": clean(e.high), "n": e.n}


def _code(label: str | None) -> int:
    return RESOLVED if label == LABELS[0] else UNRESOLVED if label == LABELS[1] else NO_ANSWER


class _Weights:
    """The clip weights of the point estimate (row 0) and of every bootstrap resample, and the
    figures computed with them (one row per weighting)."""

    def __init__(self, n: int, resamples: int, seed: int) -> None:
        counts = np.zeros((resamples, n))
        rows = np.repeat(np.arange(resamples), n)
        np.add.at(counts, (rows, draws(n, resamples, seed).ravel()), 1.0)
        self.w = np.vstack([np.ones((1, n)), counts])

    def rate(self, mask: np.ndarray, hit: np.ndarray) -> np.ndarray:
        return _rate(self.w * mask, hit)

    def kappa(self, mask: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return _kappa_rows(self.w * mask, x, y)


def _est(row: np.ndarray, mask: np.ndarray) -> Estimate:
    """The estimate of one figure's rows (point, then resamples) on the clips of ``mask``."""
    return estimate(float(row[0]), row[1:], int(mask.sum()))


def _mean_est(rows: list[np.ndarray], mask: np.ndarray) -> Estimate | None:
    """The mean of several raters' figures (None when there are none)."""
    mean = _mean_rows(rows)
    return None if mean is None else _est(mean, mask)


def score_audit(folder: Path | str, resamples: int = N_RESAMPLES, seed: int = 0) -> AuditScore:
    """Score every person's and model's labels in ``folder`` (a ``ConfigError`` when there are
    none)."""
    audit = Audit.load(folder)
    people = {}
    for name in audit.annotators():
        got, _ = read_labels(audit.labels_path(name), audit.by_id, audit.folder)
        if got:
            people[name] = got
    runs = model_runs(audit)
    if not people and not runs:
        raise ConfigError(
            f"{audit.labels_dir}: no labels yet; a person gives them with hear2act audit --out "
            f"{audit.folder} --annotator NAME, a model with hear2act audit --out "
            f"{audit.folder} --model SPEC"
        )
    names = sorted(people)
    union = [
        c
        for c in audit.clips
        if any(c.id in people[a] for a in names) or any(c.id in got for _, got in runs)
    ]
    n = len(union)
    truth = np.array([RESOLVED if c.resolved else UNRESOLVED for c in union])
    ref = np.array([RESOLVED if c.reference else UNRESOLVED for c in union])
    has = np.array([[c.id in people[a] for c in union] for a in names]).reshape(len(names), n)
    said = np.array([[_code(people[a].get(c.id)) for c in union] for a in names]).reshape(
        len(names), n
    )
    weights = _Weights(n, resamples, seed)
    classes = {
        "resolved": truth == RESOLVED,
        "unresolved": truth == UNRESOLVED,
        "overall": np.ones(n, bool),
    }
    rows: dict[str, list[np.ndarray]] = {
        k: [] for k in (*classes, "agreement_model", "kappa_model")
    }
    scores = []
    for i, name in enumerate(names):
        for k, in_class in classes.items():
            rows[k].append(weights.rate(has[i] & in_class, said[i] == truth))
        rows["agreement_model"].append(weights.rate(has[i], said[i] == ref))
        rows["kappa_model"].append(weights.kappa(has[i], said[i], ref))
        got = {k: _est(rows[k][-1], has[i] & c) for k, c in classes.items()}
        got["agreement_model"] = _est(rows["agreement_model"][-1], has[i])
        got["kappa_model"] = _est(rows["kappa_model"][-1], has[i])
        scores.append(AnnotatorScore(name, int(has[i].sum()), **got))
    pairs, pair_agreements, pair_kappas = [], [], []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            both = has[i] & has[j]
            if not both.any():
                continue
            pair_agreements.append(weights.rate(both, said[i] == said[j]))
            pair_kappas.append(weights.kappa(both, said[i], said[j]))
            pairs.append(
                PairScore(
                    names[i],
                    names[j],
                    int(both.sum()),
                    _est(pair_agreements[-1], both),
                    _est(pair_kappas[-1], both),
                )
            )
    by_person = has.any(axis=0) if names else np.zeros(n, bool)
    human = {k: _mean_est(v, by_person) for k, v in rows.items()}
    human["agreement_annotators"] = _mean_est(pair_agreements, by_person)
    human["kappa_annotators"] = _mean_est(pair_kappas, by_person)
    model = {k: _est(weights.rate(c, ref == truth), c) for k, c in classes.items()}
    models = []
    for run, labels in runs:
        mine = np.array([c.id in labels for c in union])
        code = np.array([_code(labels.get(c.id)) for c in union])
        agree, kap = [], []
        for i, name in enumerate(names):
            both = mine & has[i]
            if not both.any():
                continue
            agree.append(weights.rate(both, code == said[i]))
            kap.append(weights.kappa(both, code, said[i]))
            pairs.append(
                PairScore(
                    run.name,
                    name,
                    int(both.sum()),
                    _est(agree[-1], both),
                    _est(kap[-1], both),
                    "model-person",
                )
            )
        shared = mine & by_person
        acc = {k: _est(weights.rate(mine & c, code == truth), mine & c) for k, c in classes.items()}
        models.append(
            ModelScore(
                run.name,
                run.spec,
                run.settings,
                run.context,
                int(mine.sum()),
                int((code[mine] == NO_ANSWER).sum()),
                acc["resolved"],
                acc["unresolved"],
                acc["overall"],
                _mean_est(agree, shared),
                _mean_est(kap, shared),
                _est(weights.rate(mine, code == ref), mine),
                _est(weights.kappa(mine, code, ref), mine),
            )
        )
    return AuditScore(
        str(audit.folder),
        audit.renderer,
        {**audit.settings, "context": audit.context},
        audit.perceiver.get("source", "?"),
        len(audit.clips),
        n,
        scores,
        pairs,
        human,
        model,
        resamples,
        models,
    )
