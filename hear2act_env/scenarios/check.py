"""Check domain files: ``python -m hear2act_env.scenarios.check FILE [FILE ...] [--show]``.

Runs the domain's structural, text and hiding checks (``hiding``: sentences shared word for
word with another file of the same folders included), generates its 10 scenarios through the
validator and the scenario text checks, and prints one line per domain (or every problem).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hear2act_env.errors import Hear2ActError
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.scenarios.domain import Domain, domain_problems, load_domain
from hear2act_env.scenarios.generator import generate_domain
from hear2act_env.scenarios.hiding import cross_domain_duplicates, domain_hiding_problems
from hear2act_env.scenarios.quality import domain_text_problems, scenario_text_problems, sgd_slots
from hear2act_env.scenarios.realism import domain_realism_problems


def check_domain(domain: Domain, generate: bool = True) -> list[str]:
    """Every problem found in ``domain`` and (``generate``) the scenarios it generates (about
    a second each)."""
    found = domain_problems(domain, sgd_slots()) + domain_text_problems(domain)
    found += domain_hiding_problems(domain) + domain_realism_problems(domain)
    if found or not generate:
        return found
    try:
        scenarios = generate_domain(domain)
    except Hear2ActError as exc:
        return [str(exc)]
    return [p for s in scenarios for p in scenario_text_problems(s) + rule_problems(s, domain)]


def rule_problems(scenario: Scenario, domain: Domain) -> list[str]:
    """Options of ``scenario`` that break a coherence or name rule of ``domain``."""
    col = {a.key: j for j, a in enumerate(scenario.attributes)}
    out = []
    for c in scenario.candidates:
        for rule in domain.coherence:
            jw, jf = col.get(rule.when.attribute), col.get(rule.forbid.attribute)
            if (
                jw is not None
                and jf is not None
                and c.values[jw] in rule.when.levels
                and c.values[jf] in rule.forbid.levels
            ):
                out.append(f"scenario {scenario.id}: option {c.name!r} breaks a rule: {rule.why}")
        for rule in domain.name_rules:
            j = col.get(rule.attribute)
            if c.name in rule.names and j is not None and c.values[j] not in rule.levels:
                out.append(
                    f"scenario {scenario.id}: option {c.name!r} breaks a name rule: {rule.why}"
                )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--show", action="store_true", help="print the first generated scenario")
    parser.add_argument(
        "--no-generate", action="store_true", help="check the file only; generate no scenario"
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
        found = check_domain(domain, generate=not args.no_generate)
        if found:
            failed += 1
            print(f"FAIL {path} ({len(found)} problems)")
            for msg in found:
                print(f"  - {msg}")
        else:
            print(f"ok   {path}: {len(domain.attributes)} attributes")
            if args.show and not args.no_generate:
                s = generate_domain(domain)[0]
                print(s.request)
                print(s.options_text())
                for n in s.needs:
                    print(n.level, n.attribute, "|", n.statement, "|", n.ask_answer, "|", n.hint)
    return 1 if failed else 0


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
