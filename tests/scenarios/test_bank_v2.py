"""Bank v2 in progress: the reworked domain files and construction version 2.

The shipped bank is still v1 (its audit test is a strict expected failure). These tests keep
the v2 work honest until it ships: every v2 domain file passes the v2 rules, the 480 scenarios
build and validate, no audit heuristic beats its limit over all 480 scenarios (the 96-scenario
test-split figures still do for three domain-knowledge heuristics), and the learned rankers stay
under a regression bound, not yet all under the v2 limit (docs/domains.md, "Bank v2").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hear2act_env.scenarios.audit import run_audit
from hear2act_env.scenarios.bank import build_bank
from hear2act_env.scenarios.domain import domain_files, load_domain
from hear2act_env.scenarios.quality_v2 import cross_domain_duplicates, domain_v2_problems

V2 = Path(__file__).resolve().parents[2] / "hear2act_env" / "scenarios" / "domains_v2"
#: Where the learned rankers stand today (top-1 0.07-0.15): a regression bound.
RANKER_BOUND = 0.20


@pytest.fixture(scope="module")
def bank_v2():
    return build_bank(V2, version=2)


def test_every_v2_domain_file_meets_the_v2_rules():
    domains = [load_domain(p) for p in domain_files(V2)]
    assert len(domains) == 48
    problems = [p for d in domains for p in domain_v2_problems(d)]
    assert problems == []
    assert cross_domain_duplicates(domains) == []


def test_v2_bank_builds_480_valid_scenarios_with_the_fixed_split(bank_v2):
    assert len(bank_v2) == 480
    assert sum(s.split == "test" for s in bank_v2) == 96
    assert {s.id[-2:] for s in bank_v2 if s.split == "test"} == {"09", "10"}


def test_no_audit_heuristic_beats_its_limit_on_v2(bank_v2):
    report = run_audit(bank_v2, semantic=False, play=False)
    heuristics = [
        f
        for f in report.figures
        if f.group == "best option" and "ranker" not in f.attacker and f.scenarios == "all"
    ]
    assert heuristics and all(f.within_limit for f in heuristics), [
        (f.attacker, f.scenarios, round(f.estimate.value, 3))
        for f in heuristics
        if not f.within_limit
    ]
    rankers = [f for f in report.figures if "ranker" in f.attacker]
    assert all(f.estimate.value <= RANKER_BOUND for f in rankers)
