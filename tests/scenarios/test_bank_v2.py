"""Bank v2 in progress: the reworked domain files and construction version 2.

The shipped bank is still v1 (its audit test is a strict expected failure). These tests keep
the v2 work honest until it ships: every v2 domain file passes the v2 rules (needs cover each
attribute's levels exactly evenly, among others), the 480 scenarios build and validate, open
attributes show a bounded number of levels whatever they hold, the twin attack and every
single-option heuristic and the learned rankers (test split and 5-fold) are within their
limits, and need-attribute detection stays under a regression bound. What is left, the learned
need-attribute scorer a little above its limit (docs/domains.md, "Bank v2"), keeps the full
audit a strict expected failure until the construction answers it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hear2act_env.scenarios.audit import run_audit
from hear2act_env.scenarios.bank import build_bank
from hear2act_env.scenarios.construction_v2 import SHOWN_LEVELS
from hear2act_env.scenarios.domain import domain_files, load_domain
from hear2act_env.scenarios.quality_v2 import cross_domain_duplicates, domain_v2_problems

V2 = Path(__file__).resolve().parents[2] / "hear2act_env" / "scenarios" / "domains_v2"
#: Where the learned need-attribute scorer stands today (0.50 5-fold against a limit of 0.51).
NEED_SCORER_BOUND = 0.53
TWIN = ("shared with last on favored", "shared with closest ahead")


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


@pytest.fixture(scope="module")
def report_v2(bank_v2):
    return run_audit(bank_v2, semantic=False, play=False, domains=str(V2))


def test_open_attributes_show_at_most_the_shown_levels(bank_v2):
    """How many levels an attribute shows must not tell a need from a distractor."""
    for s in bank_v2:
        fixed = {s.requirement.attribute, s.favored.attribute}
        for a in s.attributes:
            if a.key not in fixed:
                assert 2 <= len(a.levels) <= SHOWN_LEVELS, (s.id, a.key)
        for need in s.needs:
            levels = s.attributes[s.attribute_index(need.attribute)].levels
            assert 0 < len(need.satisfied_by) < len(levels), (s.id, need.level)


def _best_option_all(report):
    return [f for f in report.figures if f.group == "best option" and f.scenarios != "test"]


def test_twin_attack_and_single_option_heuristics_are_within_the_limit_on_v2(report_v2):
    heuristics = [f for f in _best_option_all(report_v2) if "ranker" not in f.attacker]
    assert {f.attacker for f in heuristics} >= {f"most {t}" for t in TWIN}
    assert all(f.within_limit for f in heuristics), [
        (f.attacker, round(f.estimate.value, 3)) for f in heuristics if not f.within_limit
    ]


def test_need_attribute_detection_stays_under_its_regression_bound(report_v2):
    scorer = [
        f for f in report_v2.figures if f.group == "need attributes" and "learned" in f.attacker
    ]
    assert scorer and all(f.estimate.value <= NEED_SCORER_BOUND for f in scorer)


def test_learned_rankers_and_zero_question_play_are_within_the_limit_on_v2(report_v2):
    figures = [
        f
        for f in report_v2.figures
        if f.group in ("best option", "zero-question play") and "ranker" in f.attacker
    ]
    assert {f.scenarios for f in figures} == {"test", "5-fold"}
    assert all(f.within_limit for f in figures if f.limit is not None), [
        (f.attacker, f.scenarios, round(f.estimate.value, 3))
        for f in figures
        if f.limit is not None and not f.within_limit
    ]


@pytest.mark.xfail(
    strict=True,
    reason="the learned need-attribute scorer is at 0.52 5-fold, limit 0.51 (docs/domains.md)",
)
def test_v2_is_within_every_limit(report_v2):
    assert not report_v2.violations()
