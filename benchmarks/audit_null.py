"""How the audit's test-split figures behave when there is nothing to find.

The scenario audit (``hear2act scenarios leakage``) holds best-option attackers to top-1 <= 0.16
against a chance of 1 in 8. On the 96 test-split scenarios one figure's standard error is about
0.034, so an attacker with no signal at all lands above 0.16 a fair share of the time. This
script measures that: it keeps the bank's visible tables and replaces ``best`` by an eligible
option drawn uniformly at random (a bank that gives nothing away, by construction), then scores
every heuristic (each read in its stronger direction over all scenarios, as the audit does) and
the linear ranker (trained on the train split) on the test split.

    python benchmarks/audit_null.py [BANK.jsonl] [--reps 200] [--ranker-reps 30]

It prints, for the leak-free bank: the mean number of heuristic figures above 0.16, the share of
draws in which none is, and how often a figure is *significantly* above 0.16 (its 95% CI above
the limit), the audit's decision rule for test-split figures.
"""

from __future__ import annotations

import argparse

import numpy as np

from hear2act_env.bootstrap import mean_ci
from hear2act_env.scenarios.bank import load_bank, load_scenarios
from hear2act_env.scenarios.leakage import BEST_LIMIT
from hear2act_env.scenarios.leakage.attackers import ConditionalLogit, top1
from hear2act_env.scenarios.leakage.features import OPTION_FEATURES, option_features
from hear2act_env.scenarios.leakage.view import view_of


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bank", nargs="?", default=None, help="a scenario file (default: shipped)")
    ap.add_argument("--reps", type=int, default=200, help="leak-free draws for the heuristics")
    ap.add_argument("--ranker-reps", type=int, default=30, help="draws for the linear ranker")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    scenarios = load_scenarios(args.bank) if args.bank else load_bank()
    views = [view_of(s)[0] for s in scenarios]
    features = [option_features(v) for v in views]
    test = np.array([s.split == "test" for s in scenarios])
    train = np.array([s.split == "train" for s in scenarios])
    rng = np.random.default_rng(args.seed)

    above, significant, points = [], [], []
    for rep in range(args.reps):
        targets = [int(rng.integers(len(v.eligible))) for v in views]
        n_above = n_sig = 0
        for j in range(len(OPTION_FEATURES)):
            hits = {
                sign: np.array([top1(sign * f[:, j], t) for f, t in zip(features, targets)])
                for sign in (1.0, -1.0)
            }
            best_sign = max(hits, key=lambda k: hits[k].mean())
            est = mean_ci(hits[best_sign][test], seed=rep)
            points.append(est.value)
            n_above += est.value > BEST_LIMIT
            n_sig += est.low > BEST_LIMIT
        above.append(n_above)
        significant.append(n_sig)
    above_arr = np.array(above)
    print(
        f"leak-free bank, {len(OPTION_FEATURES)} heuristics on the {int(test.sum())} test "
        f"scenarios, {args.reps} draws:"
    )
    print(f"  figures above {BEST_LIMIT}: mean {above_arr.mean():.2f} per draw")
    print(f"  draws with no figure above {BEST_LIMIT}: {np.mean(above_arr == 0):.2f}")
    print(f"  one figure above {BEST_LIMIT}: {np.mean(np.array(points) > BEST_LIMIT):.3f}")
    print(
        f"  figures significantly above (95% CI low > limit): {np.mean(significant):.3f} per draw"
    )

    ranker_points = []
    idx_train, idx_test = np.flatnonzero(train), np.flatnonzero(test)
    for _ in range(args.ranker_reps):
        targets = [int(rng.integers(len(v.eligible))) for v in views]
        model = ConditionalLogit().fit(
            [features[i] for i in idx_train], [targets[i] for i in idx_train]
        )
        hits = [top1(model.scores(features[i]), targets[i]) for i in idx_test]
        ranker_points.append(float(np.mean(hits)))
    if ranker_points:
        pts = np.array(ranker_points)
        print(
            f"linear ranker on the test split, {args.ranker_reps} draws: mean {pts.mean():.3f}, "
            f"above {BEST_LIMIT} in {np.mean(pts > BEST_LIMIT):.2f} of draws"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
