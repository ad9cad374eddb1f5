"""What each rule of the staged domains costs the built tables, measured on the tables
themselves (docs/results/scenarios.md, "Where the bank v4 limits stand").

``python -m tools.bank_v4.lifts --out FILE [--workers N] [--cases ...]`` builds one drawn profile
of each staged domain (the same profiles for every case: ``SAMPLE_SEED``) with the generator as
it is, and again with the domain files changed one way (``CASES``), and writes for each case
the exact prior-only figures the bank v4 limits are about: the mean best share, the L1, L2
and L3 need top-3 (expected, from the exact posterior) and chance, and the valid triples.

Where ``ceiling.py`` lifts constraints inside the column design, this lifts them in the
domain files and the search, and reads the built tables: the need priorities (a hedged wish
never L1; a deal-breaker never L3), the kinds (which values a kind of option can take; the
price bands stay), a need pool with every threshold in the direction its needs already take,
and a longer search (more tables drawn, a longer exact repair). The changed domains are not
candidates for the bank: lifting a priority or a kind breaks the realism rules that put it
there; the point is to know which rule the limits pull against.
"""

from __future__ import annotations

import argparse
import copy
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tools.bank_v4.preview import FOLDER

#: The draw of one profile per domain, the same for every case.
SAMPLE_SEED = 123


def _drop_priorities(d: dict[str, Any], which: tuple[str, ...] | None) -> dict[str, Any]:
    """Needs whose priorities are ``which`` (None: every need) may take any priority."""
    for a in d["attributes"]:
        for need in a.get("needs", []):
            if which is None or tuple(need.get("priorities") or ()) == which:
                need.pop("priorities", None)
    return d


def _drop_kind_levels(d: dict[str, Any]) -> dict[str, Any]:
    """Kinds keep their price band and nothing else they fix."""
    price = (d.get("price") or {}).get("attribute")
    for kind in d.get("kinds", []):
        kind["levels"] = [rule for rule in kind["levels"] if rule["attribute"] == price]
    return d


def _every_threshold(d: dict[str, Any]) -> dict[str, Any]:
    """Every attribute whose needs are thresholds one way (all ``levels[:k]``, or all
    ``levels[k:]``) gets a need at each threshold it lacks, the first need's priorities and
    made-up words (they are never shown: the tables are only measured)."""
    for a in d["attributes"]:
        needs = a.get("needs", [])
        n = len(a["levels"])
        have = {tuple(need["satisfied_by"]) for need in needs}
        below = [tuple(range(k)) for k in range(1, n)]
        above = [tuple(range(k, n)) for k in range(1, n)]
        if not needs or any(c in have for c in below) == any(c in have for c in above):
            continue  # unordered, or thresholds both ways already
        cuts = below if any(c in have for c in below) else above
        for i, cut in enumerate(c for c in cuts if c not in have):
            extra = copy.deepcopy(needs[0])
            extra["key"] = f"threshold-{i}"
            extra["satisfied_by"] = list(cut)
            extra.pop("crosses", None)
            for field in ("statement", "ask_answer", "want", "hint"):
                if field in extra:
                    extra[field] = f"Measured only: {a['key']} threshold {i}."
            needs.append(extra)
    return d


#: Each case: how it changes a domain file, and the generator's search settings.
CASES: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], dict[str, Any]]] = {
    "as staged": (lambda d: d, {}),
    "hedged wishes may be L1": (lambda d: _drop_priorities(d, ("L2", "L3")), {}),
    "L1-or-L2 needs may be L3": (lambda d: _drop_priorities(d, ("L1", "L2")), {}),
    "no priorities": (lambda d: _drop_priorities(d, None), {}),
    "no priorities, kinds fix only price": (
        lambda d: _drop_kind_levels(_drop_priorities(d, None)),
        {},
    ),
    "every threshold a need": (_every_threshold, {}),
    "twice the tables": (lambda d: d, {"attempts": 60, "design_steps": 1250}),
    "longer exact repair": (lambda d: d, {"repair_steps": 3000}),
}


def _search(settings: dict[str, Any]) -> None:
    """Set the generator's search knobs in this process (a worker)."""
    from hear2act_env.scenarios import design, generator, table

    generator.ATTEMPTS = settings.get("attempts", generator.ATTEMPTS)
    design.STEPS = settings.get("design_steps", design.STEPS)
    table.REPAIR_STEPS = settings.get("repair_steps", table.REPAIR_STEPS)


def _generate(job: tuple[str, str, int, dict[str, Any]]) -> Any:
    from hear2act_env.errors import Hear2ActError
    from hear2act_env.scenarios.domain import load_domain
    from hear2act_env.scenarios.generator import generate_scenario

    folder, domain_id, index, settings = job
    _search(settings)
    try:
        return generate_scenario(load_domain(Path(folder) / f"{domain_id}.json"), index)
    except Hear2ActError as exc:
        return str(exc)


def measure(case: str, workers: int) -> dict[str, Any]:
    """The exact figures of one case over the sampled profiles."""
    from concurrent.futures import ProcessPoolExecutor

    from hear2act_env.scenarios.leakage.exact import exact_audit

    change, settings = CASES[case]
    with tempfile.TemporaryDirectory() as tmp:
        ids = []
        for path in sorted(FOLDER.glob("*.json")):
            data = change(json.loads(path.read_text()))
            (Path(tmp) / path.name).write_text(json.dumps(data))
            ids.append(data["id"])
        picks = np.random.default_rng(SAMPLE_SEED).integers(0, 10, size=len(ids))
        jobs = [(tmp, d, int(k), settings) for d, k in zip(ids, picks)]
        clock = time.perf_counter()
        with ProcessPoolExecutor(workers) as pool:
            made = list(pool.map(_generate, jobs, chunksize=1))
        seconds = time.perf_counter() - clock
        scenarios = [s for s in made if not isinstance(s, str)]
        audit = exact_audit(scenarios, domains=tmp, bank=case, structure=False)
    figures = {f.label: f for f in audit.figures}

    def expected(word: str) -> float:
        (label,) = [k for k in figures if word in k and "expected" in k]
        return round(figures[label].estimate.value, 4)

    top1 = next(k for k in figures if "top-1, expected" in k)
    return {
        "case": case,
        "profiles": len(jobs),
        "failed": len(jobs) - len(scenarios),
        "best_posterior": round(figures[top1].estimate.value, 4),
        "l1_top3": expected("L1 need"),
        "l2_top3": expected("L2 need"),
        "l3_top3": expected("L3 need"),
        "chance": round(next(iter(f.chance for k, f in figures.items() if "L1" in k)), 4),
        "valid_triples": round(float(np.mean([s.count for s in audit.scenarios])), 2),
        "seconds": round(seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cases", nargs="*", choices=list(CASES), default=list(CASES))
    args = parser.parse_args()
    rows = []
    for case in args.cases:
        rows.append(measure(case, max(1, args.workers)))
        print(json.dumps(rows[-1]), flush=True)
    data = {"sample_seed": SAMPLE_SEED, "cases": rows}
    args.out.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
