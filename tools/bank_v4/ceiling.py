"""What the column design can reach when nothing in the domains holds it back
(docs/results/scenarios.md, "Where the bank v4 limits stand").

``python -m tools.bank_v4.ceiling --out FILE [--designs N] [--steps S] [--domains]`` runs the generator's
own annealer (``design.anneal`` with its bank v4 per-level cost) on idealized slots: every open
attribute takes a met and a missed slot whose needs cross in all four ways, no kind constrains
a row, the opening can serve any slot, and the 8 eligible options are strictly ordered on the
favored attribute. For 6 and 7 open attributes (the two table shapes of the bank) and several
level weights, it writes the mean best share, the per-level need top-3 and the valid-triple
count of the designs found. A real table can only do worse in the design; it does better in
the end only through the pool's other needs, which add triples the design did not plant.

With ``--domains`` it also anneals, for one profile per staged domain and a few drawn tables
each, the design the generator builds (its slots, row bits from the rows' kinds, opening, mixes,
favored order and price penalty) and the same design with each of these lifted in turn, so
the cost of each constraint in the design is measured, not guessed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from tools.bank_v4.preview import FOLDER

LEVEL_WEIGHTS = (0.0, 0.1, 0.3, 0.5, 2.0)
OPEN_ATTRIBUTES = (6, 7)


def _top3(values: list[int], n: int) -> float:
    share = np.bincount(values, minlength=n) / len(values)
    return float(np.sort(share)[::-1][:3].sum())


def ceiling(n_open: int, level_weight: float, designs: int, steps: int) -> dict[str, float]:
    """Means over ``designs`` annealed idealized designs with ``n_open`` open attributes."""
    from hear2act_env.scenarios import design
    from hear2act_env.scenarios.exact import best_lookup

    every_mix = frozenset({(0, 0), (0, 1), (1, 0), (1, 1)})
    slots = [design.Slots(("met", "missed"), frozenset({"L1", "L2"}), every_mix)] * n_open
    best_of = best_lookup(np.arange(8), np.arange(8)).tolist()
    saved = design.LEVEL_WEIGHT
    design.LEVEL_WEIGHT = level_weight
    try:
        rows = []
        for seed in range(designs):
            _, triples = design.anneal(
                np.random.default_rng(seed), slots, best_of, steps=steps, per_level=True
            )
            if not triples:
                continue
            bests = np.bincount([t[3] for t in triples], minlength=8)
            rows.append(
                [
                    bests.max() / len(triples),
                    *(_top3([t[lv] for t in triples], n_open) for lv in range(3)),
                    len(triples),
                ]
            )
    finally:
        design.LEVEL_WEIGHT = saved
    m = np.array(rows).mean(axis=0)
    return {
        "case": f"{n_open} open, weight {level_weight}",
        "open_attributes": n_open,
        "level_weight": level_weight,
        "designs": len(rows),
        "best_posterior": round(float(m[0]), 4),
        "l1_top3": round(float(m[1]), 4),
        "l2_top3": round(float(m[2]), 4),
        "l3_top3": round(float(m[3]), 4),
        "valid_triples": round(float(m[4]), 2),
        "chance": round(3 / n_open, 4),
    }


#: The constraints lifted one at a time (then all together) in the ``--domains`` ablation.
LIFTS = ("none", "row_bits", "opening", "mixes", "favored_ties", "price_penalty", "all")


def _lifted(lift: str, slots: list, best_of: list[int], penalty: Any) -> tuple:
    from hear2act_env.scenarios import design
    from hear2act_env.scenarios.exact import best_lookup

    every_mix = frozenset({(0, 0), (0, 1), (1, 0), (1, 1)})
    every = lift == "all"
    if every or lift == "row_bits":
        slots = [dataclasses.replace(s, row_bits=()) for s in slots]
    if every or lift == "opening":
        slots = [dataclasses.replace(s, opening=None) for s in slots]
    if every or lift == "mixes":
        slots = [dataclasses.replace(s, mixes=every_mix) if len(s.kinds) == 2 else s for s in slots]
    if every or lift == "favored_ties":
        best_of = best_lookup(np.arange(design.N_ELIGIBLE), np.arange(design.N_ELIGIBLE)).tolist()
    if every or lift == "price_penalty":
        penalty = None
    return slots, best_of, penalty


def ablation(domain_id: str, index: int, tables: int) -> list[list[float]]:
    """Per drawn table of one profile: (best share, L1 top-3, triples) of the design annealed
    under each of ``LIFTS`` (same seed for all, so only the constraint differs)."""
    from hear2act_env.scenarios import design, table
    from tools.bank_v4.frontier import drawing_start

    rows: list[list[float]] = []
    real = design.anneal

    def spy(rng, slots, best_of, per_level=False, penalty=None, **kw):  # noqa: ANN001, ANN202
        row: list[float] = []
        for lift in LIFTS:
            s, b, p = _lifted(lift, list(slots), best_of, penalty)
            _, triples = real(np.random.default_rng(1), s, b, per_level=per_level, penalty=p)
            if triples:
                bests = np.bincount([t[3] for t in triples], minlength=design.N_ELIGIBLE)
                row += [bests.max() / len(triples), _top3([t[0] for t in triples], len(s))]
                row.append(len(triples))
            else:
                row += [1.0, 1.0, 0]
        rows.append(row)
        return real(rng, slots, best_of, per_level=per_level, penalty=penalty, **kw)

    domain, profile, rng, pool, both = drawing_start(domain_id, index)
    table.anneal = spy
    try:
        for _ in range(tables):
            table.draw_table(rng, domain, profile, pool, both)
    finally:
        table.anneal = real
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--designs", type=int, default=12)
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--domains", action="store_true", help="also the design ablation")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rows = [
        ceiling(n, lw, args.designs, args.steps) for n in OPEN_ATTRIBUTES for lw in LEVEL_WEIGHTS
    ]
    for r in rows:
        print(
            f"{r['open_attributes']} open, level weight {r['level_weight']}: best share "
            f"{r['best_posterior']:.3f}  L1 {r['l1_top3']:.3f}  L2 {r['l2_top3']:.3f}  "
            f"L3 {r['l3_top3']:.3f}  triples {r['valid_triples']:.1f}  chance {r['chance']:.3f}"
        )
    result: dict[str, Any] = {"designs": args.designs, "steps": args.steps, "ceiling": rows}
    if args.domains:
        result["ablation"] = _ablation(args.seed)
        for r in result["ablation"]["lifted"]:
            print(
                f"design, lifted {r['lift']:<13}: best share {r['best_posterior']:.3f}  "
                f"L1 {r['l1_top3']:.3f}  triples {r['valid_triples']:.1f}"
            )
    args.out.write_text(json.dumps(result, indent=2) + "\n")


def _ablation(seed: int, tables: int = 3) -> dict[str, Any]:
    from concurrent.futures import ProcessPoolExecutor

    ids = sorted(p.stem for p in FOLDER.glob("*.json"))
    draw = random.Random(seed)
    jobs = [(d, draw.randrange(10)) for d in ids]
    with ProcessPoolExecutor(2) as pool:
        found = list(pool.map(ablation, *zip(*jobs), [tables] * len(jobs)))
    m = np.array([r for rs in found for r in rs]).mean(axis=0)
    return {
        "seed": seed,
        "design_steps": _design_steps(),
        "tables": int(sum(len(r) for r in found)),
        "lifted": [
            {
                "lift": lift,
                "best_posterior": round(float(m[3 * k]), 4),
                "l1_top3": round(float(m[3 * k + 1]), 4),
                "valid_triples": round(float(m[3 * k + 2]), 2),
            }
            for k, lift in enumerate(LIFTS)
        ],
    }


def _design_steps() -> int:
    from hear2act_env.scenarios import design

    return design.STEPS


if __name__ == "__main__":
    main()
