"""One test per structural rule of docs/protocol.md#candidates: break exactly that rule, expect its message."""

from dataclasses import replace

import pytest

from hear2act_env.errors import ScenarioError
from hear2act_env.protocol.scenario import Role, Scenario
from hear2act_env.protocol.validator import CHECKS, problems, validate


def _role(s: Scenario, role: Role) -> int:
    return s.role_index(role)


def _set_value(s: Scenario, index: int, attribute: str, value: int) -> Scenario:
    pos = s.attribute_index(attribute)
    c = s.candidates[index]
    values = list(c.values)
    values[pos] = value
    cands = list(s.candidates)
    cands[index] = replace(c, values=tuple(values))
    return replace(s, candidates=tuple(cands))


def _unsat(s: Scenario, attribute: str, sat) -> int:
    size = len(s.attributes[s.attribute_index(attribute)].levels)
    return next(v for v in range(size) if v not in sat)


def drop_candidate(s):
    return replace(s, candidates=s.candidates[:-1])


def two_bests(s):
    i = _role(s, Role.SAFE)
    cands = list(s.candidates)
    cands[i] = replace(cands[i], role=Role.BEST)
    return replace(s, candidates=tuple(cands))


def duplicate_attribute(s):
    return replace(s, attributes=s.attributes[:-1] + (s.attributes[0],))


def same_need_attribute(s):
    needs = (s.needs[0], replace(s.needs[1], attribute=s.needs[0].attribute), s.needs[2])
    return replace(s, needs=needs)


def value_out_of_range(s):
    return _set_value(s, 0, s.attributes[0].key, 99)


def best_misses_l2(s):
    need = s.needs[1]
    return _set_value(
        s, _role(s, Role.BEST), need.attribute, _unsat(s, need.attribute, need.satisfied_by)
    )


def safe_as_good_as_best(s):
    best = s.candidates[_role(s, Role.BEST)]
    fav = s.favored.attribute
    return _set_value(s, _role(s, Role.SAFE), fav, best.values[s.attribute_index(fav)])


def safe_beats_best(s):
    # swap the favored values of best and safe: safe is then strictly better
    fav = s.attribute_index(s.favored.attribute)
    b, f = _role(s, Role.BEST), _role(s, Role.SAFE)
    vb, vf = s.candidates[b].values[fav], s.candidates[f].values[fav]
    return _set_value(_set_value(s, b, s.favored.attribute, vf), f, s.favored.attribute, vb)


def attractive_not_on_top(s):
    top = s.candidates[_role(s, Role.ATTRACTIVE)].values[s.attribute_index(s.favored.attribute)]
    partial = next(i for i, c in enumerate(s.candidates) if c.role == Role.PARTIAL)
    return _set_value(s, partial, s.favored.attribute, top)


def empty_statement(s):
    return replace(s, needs=(replace(s.needs[0], statement=" "),) + s.needs[1:])


def template_slot_left(s):
    return replace(s, request=s.request + " {budget}")


def bad_id(s):
    return replace(s, id="Flights 1")


RULES = [
    (drop_candidate, "check_candidate_count", "expected 11 candidates"),
    (two_bests, "check_role_counts", "expected 1 'best', got 2"),
    (duplicate_attribute, "check_attributes", "expected 8 distinct keys"),
    (same_need_attribute, "check_need_attributes", "expected 3 distinct attributes"),
    (value_out_of_range, "check_value_sets", "outside [0,"),
    (best_misses_l2, "check_patterns", "(best): expected pattern r111"),
    (safe_as_good_as_best, "check_unique_best", "not worse than best"),
    (safe_beats_best, "check_best_beats_safe", "strictly better than safe"),
    (attractive_not_on_top, "check_attractive_on_top", "not worse than attractive"),
    (empty_statement, "check_texts", "needs[L1].statement: empty text"),
    (template_slot_left, "check_texts", "unfilled template slot"),
    (bad_id, "check_metadata", "is not of the form"),
]


def test_valid_scenario_passes(flights_scenarios):
    for s in flights_scenarios:
        assert problems(s) == []


def test_every_rule_has_a_test():
    assert {r[1] for r in RULES} == {c.__name__ for c in CHECKS}


@pytest.mark.parametrize(("mutate", "rule", "message"), RULES, ids=[r[0].__name__ for r in RULES])
def test_rule_is_enforced(scenario, mutate, rule, message):
    broken = mutate(scenario)
    found = problems(broken)
    assert any(message in p for p in found), found
    assert all(p.startswith(f"scenario {broken.id}: ") for p in found)
    with pytest.raises(ScenarioError, match=broken.id.replace(" ", ".")):
        validate(broken)
