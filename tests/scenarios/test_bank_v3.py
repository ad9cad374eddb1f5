"""Bank v3: the table first, the needs last (docs/domains.md#bank-v3-the-table-first-the-needs-last). The shipped bank's stored
identifiability is what the exact enumeration gives from the domain files alone, its needs are
one of the valid triples, its limits hold, and the generator's parts do what they claim."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from hear2act_env.errors import DomainError
from hear2act_env.scenarios.bank import load_bank
from hear2act_env.scenarios.capacity import crossing_pairs, domain_capacity
from hear2act_env.scenarios.check import rule_problems
from hear2act_env.scenarios.design import Slots, anneal, design_triples
from hear2act_env.scenarios.domain import domain_files, load_domain
from hear2act_env.scenarios.exact import need_pool, scenario_triples, true_triple
from hear2act_env.scenarios.generator import draw_needs, generate_scenario
from hear2act_env.scenarios.hiding import cross_domain_duplicates, domain_hiding_problems


@pytest.fixture(scope="module")
def shipped():
    domains = {d.id: d for d in (load_domain(p) for p in domain_files())}
    return load_bank(), domains


def test_every_domain_file_meets_the_hiding_rules():
    domains = [load_domain(p) for p in domain_files()]
    assert len(domains) == 48
    assert [p for d in domains for p in domain_hiding_problems(d)] == []
    assert cross_domain_duplicates(domains) == []


def test_stored_identifiability_is_the_exact_enumeration(shipped):
    scenarios, domains = shipped
    for s in scenarios:
        found = scenario_triples(s, domains[s.domain])
        x = s.identifiability
        assert x is not None, s.id
        assert x.valid_triples == found.count, s.id
        assert x.best_posterior == pytest.approx(found.best_posterior, abs=1e-6), s.id
        keys = [a.key for a in s.attributes]
        assert x.need_share == pytest.approx([found.need_share[k] for k in keys], abs=1e-6)


def test_the_needs_are_one_of_the_valid_triples_and_best_follows(shipped):
    scenarios, domains = shipped
    for s in scenarios:
        pool = need_pool(domains[s.domain])
        found = scenario_triples(s, pool)
        truth = true_triple(s, pool)
        assert truth in found.triples, s.id
        best = s.candidates.index(next(c for c in s.candidates if c.role.value == "best"))
        assert found.bests[found.triples.index(truth)] == best, s.id


def test_bank_limits_hold(shipped):
    scenarios, _ = shipped
    posts = np.array([s.identifiability.best_posterior for s in scenarios])
    assert posts.mean() <= 0.16
    assert posts.max() <= 0.25


def test_no_option_breaks_a_coherence_or_name_rule(shipped):
    scenarios, domains = shipped
    assert [p for s in scenarios for p in rule_problems(s, domains[s.domain])] == []


def test_needs_are_drawn_uniformly_among_the_valid_triples():
    class Found:
        count = 7
        triples = tuple((f"a:{i}", "b:x", "c:y") for i in range(7))

    rng = np.random.default_rng(0)
    counts = Counter(draw_needs(rng, Found())[0] for _ in range(7000))
    assert len(counts) == 7
    assert all(abs(n - 1000) < 150 for n in counts.values())


def test_the_table_does_not_depend_on_the_need_texts(tmp_path):
    """The visible part is drawn before any need: rewording every need changes the needs'
    words in the scenario and nothing an agent sees before asking."""
    path = domain_files()[0]
    data = json.loads(path.read_text())
    for attribute in data["attributes"]:
        for need in attribute.get("needs", []):
            need["statement"] = "Reworded: " + need["statement"]
    other = tmp_path / path.name
    other.write_text(json.dumps(data))
    a = generate_scenario(load_domain(path), 0)
    b = generate_scenario(load_domain(other), 0)
    # a is also the shipped one (the default run's check that the generator and the bank agree;
    # conftest's fixtures read scenarios from the bank)
    assert a == next(s for s in load_bank() if s.id == a.id)
    assert a.candidates == b.candidates and a.attributes == b.attributes
    assert a.request == b.request
    assert [n.statement for n in b.needs] == ["Reworded: " + n.statement for n in a.needs]


def test_a_pool_that_cannot_spread_the_bests_is_a_named_domain_error(tmp_path):
    """Every need a hard constraint only: no table admits an (L1, L2, L3) triple; the generator
    says which profile failed and what to add."""
    path = domain_files()[0]
    data = json.loads(path.read_text())
    for attribute in data["attributes"]:
        for need in attribute.get("needs", []):
            need["priorities"] = ["L1"]
    poor = tmp_path / path.name
    poor.write_text(json.dumps(data))
    with pytest.raises(DomainError, match=r"profiles\[0\].*crossing needs"):
        generate_scenario(load_domain(poor), 0)
    for attribute in data["attributes"][3:]:
        attribute["needs"] = []
    poor.write_text(json.dumps(data))
    with pytest.raises(DomainError, match=r"attributes with needs"):
        generate_scenario(load_domain(poor), 0)


def test_crossing_pairs_need_overlap_and_two_differences():
    domain = load_domain(domain_files()[0])
    for attribute in domain.attributes:
        for met, missed in crossing_pairs(attribute):
            a, b = set(met.satisfied_by), set(missed.satisfied_by)
            assert a & b and a - b and b - a
            assert {"L1", "L2"} & set(met.priorities) and "L3" in missed.priorities
    assert any(c.both_roles for c in domain_capacity(domain))


def test_the_design_spreads_the_bests_of_a_rich_table():
    every_mix = frozenset({(0, 0), (0, 1), (1, 0), (1, 1)})
    slots = [Slots(("met", "missed"), frozenset({"L1", "L2"}), every_mix)] * 6
    best_of = [-1] * 256
    for a in range(8):
        for b in range(a + 1, 8):
            best_of[(1 << a) | (1 << b)] = a
    design, triples = anneal(np.random.default_rng(0), slots, best_of)
    assert triples == design_triples(design, slots, best_of)
    counts = Counter(t[3] for t in triples)
    assert len(counts) == 7 and max(counts.values()) / len(triples) <= 0.16
