"""Check domain files: ``python -m hear2act_env.scenarios.check FILE [FILE ...] [--show]``.

Runs the domain's structural, text and hiding checks (``hiding``: sentences shared word for
word with another file of the same folders included), generates its 10 scenarios through the
validator and the scenario text checks, and prints one line per domain (or every problem).
``--semantic`` adds, for information, how much the situations point at the needs (MiniLM).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hear2act_env.errors import Hear2ActError
from hear2act_env.scenarios.domain import Domain, domain_problems, load_domain
from hear2act_env.scenarios.generator import generate_domain
from hear2act_env.scenarios.hiding import (
    cross_domain_duplicates,
    domain_hiding_problems,
    situation_need_similarity,
)
from hear2act_env.scenarios.quality import domain_text_problems, scenario_text_problems, sgd_slots


def check_domain(domain: Domain) -> list[str]:
    """Every problem found in ``domain`` and the scenarios it generates."""
    found = domain_problems(domain, sgd_slots()) + domain_text_problems(domain)
    found += domain_hiding_problems(domain)
    if found:
        return found
    try:
        scenarios = generate_domain(domain)
    except Hear2ActError as exc:
        return [str(exc)]
    return [p for s in scenarios for p in scenario_text_problems(s)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--show", action="store_true", help="print the first generated scenario")
    parser.add_argument(
        "--semantic",
        action="store_true",
        help="also print how much the situations point at the needs (MiniLM; information)",
    )
    args = parser.parse_args(argv)
    failed = _check_cross_domain(args.files)
    for path in args.files:
        try:
            domain = load_domain(path)
        except Hear2ActError as exc:
            print(f"FAIL {path}: {exc}")
            failed += 1
            continue
        found = check_domain(domain)
        if args.semantic:
            _print_semantic(domain)
        triples = {tuple(r.split(":")[0] for r in p.needs) for p in domain.profiles}
        if found:
            failed += 1
            print(f"FAIL {path} ({len(found)} problems)")
            for msg in found:
                print(f"  - {msg}")
        else:
            print(
                f"ok   {path}: {len(domain.attributes)} attributes, {len(triples)} distinct need triples"
            )
            if args.show:
                s = generate_domain(domain)[0]
                print(s.request)
                print(s.options_text())
                for n in s.needs:
                    print(n.level, n.attribute, "|", n.statement, "|", n.ask_answer, "|", n.hint)
    return 1 if failed else 0


def _print_semantic(domain: Domain) -> None:
    """How much the situations point at the needs (MiniLM; information, not a failure)."""
    from hear2act_env.text_encoder import minilm_available

    if not minilm_available():
        return
    rows = situation_need_similarity(domain)
    top3 = sum(r[1] for r in rows) / len(rows)
    l1 = sum(r[2] for r in rows) / len(rows)
    chance = sum(r[3] for r in rows) / len(rows)
    print(
        f"info {domain.id}: situations vs needs (MiniLM): needs in top 3 {top3:.2f} "
        f"(chance {chance:.2f}), L1 top 1 {l1:.2f} (chance {chance / 3:.2f})"
    )


def _check_cross_domain(files: list[Path]) -> int:
    """Sentences shared with another domain file of the same folders (1 if any)."""
    folders = {p.resolve().parent for p in files}
    domains = []
    for folder in sorted(folders):
        for path in sorted(folder.glob("*.json")):
            try:
                domains.append(load_domain(path))
            except Hear2ActError:
                continue
    mine = {load_domain(p).id for p in files if p.is_file()}
    dups = [
        m
        for m in cross_domain_duplicates(domains)
        if any(f"domain {d}:" in m or f"in domain {d}:" in m for d in mine)
    ]
    for msg in dups:
        print(f"FAIL {msg}")
    return 1 if dups else 0


if __name__ == "__main__":
    sys.exit(main())
