"""The shipped domain files and bank keep the needs hidden: every domain file passes the hiding
rules (needs cover each attribute's levels exactly evenly, among others; no sentence shared
word for word across domains), and open attributes show a bounded number of levels whatever
they hold; distractors imitate the needs' kinds in the right proportion, each on an attribute
matched in levels to the need it imitates. The audit's limits are enforced in ``test_audit.py``."""

from __future__ import annotations

import numpy as np
import pytest

from hear2act_env.errors import DomainError
from hear2act_env.scenarios.bank import load_bank
from hear2act_env.scenarios.construction import SHOWN_LEVELS, imitated_needs
from hear2act_env.scenarios.domain import DomainAttribute, domain_files, load_domain
from hear2act_env.scenarios.generator import _like_needs
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


@pytest.mark.parametrize("distractors", [3, 4])
def test_one_open_column_in_three_is_of_the_l3_kind(distractors):
    """The opening is on the unmet side of L3 only; with ``distractors + 3`` open columns, one
    distractor (3 or 4 of them) imitates L3 so that a column of that kind is a need as often as
    a column of the other kind, and where it stands in the order is random."""
    places = set()
    for seed in range(200):
        kinds = imitated_needs(np.random.default_rng(seed), distractors)
        assert len(kinds) == distractors and kinds.count(2) == 1, kinds
        assert set(kinds) - {2} <= {0, 1}
        places.add(kinds.index(2))
    assert places == set(range(distractors))


def _attribute(key: str, levels: int) -> DomainAttribute:
    return DomainAttribute(key, key, None, (key,), tuple(f"{key} {i}" for i in range(levels)))


@pytest.mark.parametrize("seed", range(20))
def test_each_distractor_matches_the_need_it_imitates_in_levels_shown(seed):
    """A distractor is the pool attribute closest in levels shown to the need it imitates (not
    to a need drawn apart from it): an L3-kind distractor on 3 levels beside an L3 need on 5
    was what the quadratic need scorer read (docs/domains.md)."""
    rng = np.random.default_rng(seed)
    needs = [_attribute("n3", 3), _attribute("n4", 4), _attribute("n7", 7)]  # 7 shows 5
    pool = [_attribute(f"p{k}{i}", k) for k in (2, 3, 4, 5, 6) for i in range(2)]
    kinds = [int(rng.random() * 3) for _ in range(4)]
    picked = _like_needs(rng, pool, needs, kinds)
    assert len({a.key for a in picked}) == len(picked) == 4
    left = list(pool)
    for attribute, kind in zip(picked, kinds):
        target = min(len(needs[kind].levels), SHOWN_LEVELS)
        shown = lambda a: min(len(a.levels), SHOWN_LEVELS)  # noqa: E731
        assert abs(shown(attribute) - target) == min(abs(shown(a) - target) for a in left)
        left.remove(attribute)


def test_too_few_distractor_attributes_is_a_named_domain_error():
    needs = [_attribute("n3", 3), _attribute("n4", 4), _attribute("n5", 5)]
    with pytest.raises(DomainError, match="need 3 distractor attributes, the domain has too few"):
        _like_needs(np.random.default_rng(0), [_attribute("p3", 3)], needs, [0, 1, 2])
