"""Build the bank v4 preview from the staged domain files and measure it.

``python -m tools.bank_v4.preview --out /tmp/bank_v4.jsonl [--workers N] [--domains a b]
[--sample N --seed S]`` (``--measure``: only the price-against-offer count of ``--out``)
writes the scenarios (one JSON object per line, the bank's canonical bytes), then prints the
exact prior-only audit (overall and per need priority) and the realism rules over every option
(a kind admits its values, name and price), every scenario's text checks and every option's
coherence. Nothing here touches the shipped bank (version 3) until the switch.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hear2act_env.protocol.scenario import Scenario
from hear2act_env.safewrite import write_atomic
from hear2act_env.scenarios.bank import dumps_bank
from hear2act_env.scenarios.check import rule_problems
from hear2act_env.scenarios.domain import Domain, domain_files, load_domain
from hear2act_env.scenarios.leakage.exact import exact_audit, exact_table
from hear2act_env.scenarios.quality import scenario_text_problems
from hear2act_env.scenarios.realism import option_problems, price_inversions

FOLDER = Path(__file__).parent / "domains"


def _generate(domain: Domain, index: int) -> Scenario | str:
    from hear2act_env.errors import Hear2ActError
    from hear2act_env.scenarios.generator import generate_scenario

    try:
        return generate_scenario(domain, index)
    except Hear2ActError as exc:
        return str(exc)


def build(
    domains: list[Domain], workers: int, sample: int | None = None, seed: int = 0
) -> tuple[list[Scenario], list[str]]:
    """Every scenario of ``domains`` (sorted by id), or ``sample`` of them drawn with ``seed``,
    over ``workers`` processes, and the profiles that failed (their errors)."""
    from concurrent.futures import ProcessPoolExecutor

    import numpy as np

    jobs = [(d, i) for d in sorted(domains, key=lambda d: d.id) for i in range(len(d.profiles))]
    if sample is not None:
        picked = np.random.default_rng(seed).choice(
            len(jobs), size=min(sample, len(jobs)), replace=False
        )
        jobs = [jobs[int(i)] for i in sorted(picked)]
    if workers == 1:
        made = [_generate(d, i) for d, i in jobs]
    else:
        with ProcessPoolExecutor(workers) as pool:
            made = list(pool.map(_generate, *zip(*jobs), chunksize=1))
    return [s for s in made if not isinstance(s, str)], [s for s in made if isinstance(s, str)]


def realism_problems(scenarios: list[Scenario], domains: dict[str, Domain]) -> list[str]:
    """Every option no kind admits, every text problem and every coherence clash."""
    out = []
    for s in scenarios:
        d = domains[s.domain]
        out += scenario_text_problems(s) + rule_problems(s, d)
        for c in s.candidates:
            shown = {a.key: v for a, v in zip(s.attributes, c.values)}
            out += [f"scenario {s.id}: {c.name!r}: {p}" for p in option_problems(d, shown, c.name)]
    return out


def inversion_line(scenarios: list[Scenario], domains: dict[str, Domain]) -> str:
    """How many tables hold a pair priced against its offer (``realism.price_inversions``)."""
    pairs = []
    for s in scenarios:
        options = [
            ({a.key: v for a, v in zip(s.attributes, c.values)}, c.name) for c in s.candidates
        ]
        pairs.append(len(price_inversions(domains[s.domain], options)))
    hit = sum(1 for n in pairs if n)
    return (
        f"price against the offer: {hit} of {len(scenarios)} tables have a pair priced "
        f"against its offer ({sum(pairs)} pairs)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--domains", nargs="*", help="domain ids (default: all staged)")
    parser.add_argument("--sample", type=int, help="build only this many profiles, drawn")
    parser.add_argument("--seed", type=int, default=0, help="the draw's seed (with --sample)")
    parser.add_argument(
        "--measure", action="store_true", help="measure the scenarios already in --out"
    )
    args = parser.parse_args(argv)
    domains = {d.id: d for d in (load_domain(p) for p in domain_files(FOLDER))}
    if args.measure:
        from hear2act_env.scenarios.bank import load_scenarios

        print(inversion_line(list(load_scenarios(args.out)), domains))
        return 0
    chosen = [domains[k] for k in args.domains] if args.domains else list(domains.values())
    clock = time.perf_counter()
    scenarios, failed = build(chosen, max(1, args.workers), args.sample, args.seed)
    seconds = time.perf_counter() - clock
    write_atomic(args.out, dumps_bank(scenarios))
    print(f"{len(scenarios)} scenarios in {seconds:.0f} s over {args.workers} workers: {args.out}")
    for line in failed:
        print("FAILED", line)
    print(exact_table(exact_audit(scenarios, domains=FOLDER, bank="the bank v4 preview")))
    found = realism_problems(scenarios, domains)
    print(f"realism: {len(found)} problems")
    print(inversion_line(scenarios, domains))
    for line in found[:40]:
        print("  -", line)
    return 1 if found or failed else 0


if __name__ == "__main__":
    sys.exit(main())
