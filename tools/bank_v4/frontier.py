"""How far table selection alone can take the bank v4 limits (docs/results/scenarios.md).

``python -m tools.bank_v4.frontier --out FILE [--seed S] [--attempts N]`` draws one profile per
staged domain (with ``seed``), draws ``attempts`` tables for it exactly as the generator does
(its seed, request and pool) and keeps every table's best share and per-level need top-3. It
then picks, per profile, the table that minimizes ``best share + lam * level excess`` for
several ``lam`` and writes the bank means each choice would give: the trade-off between the
best-share limit and the per-level limits that choosing among the drawn tables can reach.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

from tools.bank_v4.preview import FOLDER

LAMBDAS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)


def drawing_start(domain_id: str, index: int) -> tuple:
    """What the generator holds before it draws tables for profile ``index`` of a staged
    domain: (domain, profile, its generator, pool, attributes that can take both roles), with
    the generator seeded and the request drawn as ``generator.generate_scenario`` does."""
    from hear2act_env.scenarios import generator
    from hear2act_env.scenarios.capacity import domain_capacity
    from hear2act_env.scenarios.domain import load_domain
    from hear2act_env.scenarios.quality import text_pool

    domain = load_domain(FOLDER / f"{domain_id}.json")
    rng = np.random.default_rng(generator.scenario_seed(domain.id, index))
    profile = domain.profiles[index]
    request = generator._request(rng, domain, index)
    _, req = domain.requirement_option(profile.requirement)
    fav = domain.attribute(profile.favored).favored
    assert fav is not None
    pool = text_pool(domain, request, (req.restatement, fav.restatement), profile.excludes)
    both = frozenset(c.attribute for c in domain_capacity(domain) if c.both_roles)
    return domain, profile, rng, pool, both


def candidates(domain_id: str, index: int, attempts: int) -> list[list[float]]:
    """(best share, L1, L2, L3 top-3, chance) of each table drawn for one profile."""
    from hear2act_env.scenarios.table import draw_table

    domain, profile, rng, pool, both = drawing_start(domain_id, index)
    out = []
    for _ in range(attempts):
        table = draw_table(rng, domain, profile, pool, both)
        if table is None or table.triples is None or not table.triples.count:
            continue
        keys = [a.key for a in table.shown if a.key not in (table.requirement, table.favored)]
        tops = [
            sum(sorted((share.get(k, 0.0) for k in keys), reverse=True)[:3])
            for share in table.triples.level_share
        ]
        out.append([table.triples.best_posterior, *tops, 3 / len(keys)])
    return out


def frontier(rows: list[list[list[float]]]) -> list[dict[str, float]]:
    """Bank means when each profile keeps its table minimizing best share + lam * excess."""
    out = []
    for lam in LAMBDAS:
        picks = []
        for tables in rows:
            a = np.array(tables)
            excess = np.maximum(0, a[:, 1] - a[:, 4] - 0.10) + np.maximum(
                0, a[:, 2] - a[:, 4] - 0.10
            )
            picks.append(a[int(np.argmin(a[:, 0] + lam * excess))])
        p = np.array(picks)
        out.append(
            {
                "lam": lam,
                "best_posterior": float(p[:, 0].mean()),
                "l1_top3": float(p[:, 1].mean()),
                "l2_top3": float(p[:, 2].mean()),
                "chance": float(p[:, 4].mean()),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--attempts", type=int, default=30)
    args = parser.parse_args()
    from concurrent.futures import ProcessPoolExecutor

    ids = sorted(p.stem for p in FOLDER.glob("*.json"))
    draw = random.Random(args.seed)
    jobs = [(d, draw.randrange(10)) for d in ids]
    with ProcessPoolExecutor(2) as pool:
        rows = list(pool.map(candidates, *zip(*jobs), [args.attempts] * len(jobs)))
    rows = [r for r in rows if r]
    result = {
        "profiles": len(rows),
        "tables_per_profile": float(np.mean([len(r) for r in rows])),
        "frontier": frontier(rows),
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for f in result["frontier"]:
        print(
            f"lam {f['lam']:<4}: best share {f['best_posterior']:.3f}  L1 {f['l1_top3']:.3f}  "
            f"L2 {f['l2_top3']:.3f}  chance {f['chance']:.3f}"
        )


if __name__ == "__main__":
    main()
