"""The shipped domain files and bank keep the needs hidden: every domain file passes the hiding
rules (needs cover each attribute's levels exactly evenly, among others; no sentence shared
word for word across domains), and open attributes show a bounded number of levels whatever
they hold. The audit's limits are enforced in ``test_audit.py``."""

from __future__ import annotations

from hear2act_env.scenarios.bank import load_bank
from hear2act_env.scenarios.construction import SHOWN_LEVELS
from hear2act_env.scenarios.domain import domain_files, load_domain
from hear2act_env.scenarios.hiding import cross_domain_duplicates, domain_hiding_problems


def test_every_domain_file_meets_the_hiding_rules():
    domains = [load_domain(p) for p in domain_files()]
    assert len(domains) == 48
    problems = [p for d in domains for p in domain_hiding_problems(d)]
    assert problems == []
    assert cross_domain_duplicates(domains) == []


def test_open_attributes_show_at_most_the_shown_levels():
    """How many levels an attribute shows must not tell a need from a distractor."""
    for s in load_bank():
        fixed = {s.requirement.attribute, s.favored.attribute}
        for a in s.attributes:
            if a.key not in fixed:
                assert 2 <= len(a.levels) <= SHOWN_LEVELS, (s.id, a.key)
        for need in s.needs:
            levels = s.attributes[s.attribute_index(need.attribute)].levels
            assert 0 < len(need.satisfied_by) < len(levels), (s.id, need.level)
