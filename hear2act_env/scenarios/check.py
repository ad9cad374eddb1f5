"""Check domain files: ``python -m hear2act_env.scenarios.check FILE [FILE ...] [--show]``.

Runs the domain's structural and text checks, generates its 10 scenarios through the
validator and the scenario text checks, and prints one line per domain (or every problem).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hear2act_env.errors import Hear2ActError
from hear2act_env.scenarios.domain import Domain, domain_problems, load_domain
from hear2act_env.scenarios.generator import generate_domain
from hear2act_env.scenarios.quality import domain_text_problems, scenario_text_problems, sgd_slots


def check_domain(domain: Domain) -> list[str]:
    """Every problem found in ``domain`` and the scenarios it generates."""
    found = domain_problems(domain, sgd_slots()) + domain_text_problems(domain)
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
    args = parser.parse_args(argv)
    failed = 0
    for path in args.files:
        try:
            domain = load_domain(path)
        except Hear2ActError as exc:
            print(f"FAIL {path}: {exc}")
            failed += 1
            continue
        found = check_domain(domain)
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


if __name__ == "__main__":
    sys.exit(main())
