"""The exact prior-only attacker (docs/domains.md#bank-v3-the-table-first-the-needs-last): valid need triples counted by hand on small
scenarios, checked against the validator itself, found for every shipped scenario, blind to
what an agent does not see, invariant to the shown order; and the exact audit's figures on a
tiny hand-made bank."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from hear2act_env.protocol.jsonmodel import to_jsonable
from hear2act_env.protocol.scenario import (
    Attribute,
    Candidate,
    Context,
    Favored,
    Need,
    Requirement,
    Role,
    Scenario,
)
from hear2act_env.protocol.validator import problems
from hear2act_env.scenarios.bank import load_bank
from hear2act_env.scenarios.domain import (
    Domain,
    DomainAttribute,
    NeedOption,
    domain_files,
    load_domain,
)
from hear2act_env.scenarios.exact import (
    PoolNeed,
    need_pool,
    scenario_triples,
    true_triple,
    valid_triples,
    visible_part,
)
from hear2act_env.scenarios.leakage.exact import (
    NEED_EXPECTED,
    NEED_REALIZED,
    STRUCT_NEED,
    STRUCT_OWN,
    STRUCT_TOP1,
    TOP1_EXPECTED,
    TOP1_REALIZED,
    exact_audit,
    exact_table,
    main,
    split_pool,
)

# -- a hand-made layout --------------------------------------------------------------------
# Shown attributes: price (the requirement: cheap or mid), rating (favored, higher is better),
# four yes/no columns A, B, C, E and two constant columns D, F. The 8 eligible options e0..e7
# have the (A, B, C) patterns 111, 111, 000, 001, 010, 011, 100, 101; the opening O is 110.
# E (in scenario "Y") is a second L2 column: (A, E, C) gives e1, e7 the 111 pair, so e7 (rating
# 7) is best there, while (A, B, C) makes e0 (rating 8) best.
ATTRS = ("price", "rating", "A", "B", "C", "E", "D", "F")
YES_NO = ("no", "yes")
LEVELS = {
    "price": ("cheap", "mid", "pricey"),
    "rating": tuple(f"{r} stars" for r in range(10)),
    **{k: YES_NO for k in "ABCE"},
    "D": ("d0", "d1"),
    "F": ("f0", "f1"),
}
#           price rating A  B  C  E
ROWS = {
    "O": (0, 9, 1, 1, 0, 1),
    "e0": (1, 8, 1, 1, 1, 0),
    "e1": (0, 2, 1, 1, 1, 1),
    "e2": (1, 3, 0, 0, 0, 1),
    "e3": (0, 4, 0, 0, 1, 1),
    "e4": (1, 5, 0, 1, 0, 0),
    "e5": (0, 6, 0, 1, 1, 0),
    "e6": (1, 1, 1, 0, 0, 0),
    "e7": (0, 7, 1, 0, 1, 1),
    "v0": (2, 9, 1, 1, 1, 1),
    "v1": (2, 0, 0, 0, 0, 0),
}
#: Shown order of the options (the opening in the middle, violators among the others).
ORDER = ("e3", "v0", "e0", "e5", "O", "e1", "e7", "v1", "e2", "e6", "e4")


def _pool_need(attribute: str, key: str, texts: tuple[str, ...], **kw) -> PoolNeed:
    nid = f"{attribute}:{key}"
    return PoolNeed(nid, attribute, frozenset(texts), statement=f"I want {nid}.", **kw)


#: The pool: yes/no needs on A, B, C, E, needs on D and F that split nothing, a need on the
#: requirement and the favored attribute (never usable) and one on an attribute not shown.
POOL = (
    *(_pool_need(a, w, (w,)) for a in "ABCE" for w in YES_NO),
    _pool_need("D", "d1", ("d1",)),
    _pool_need("F", "f0", ("f0",)),
    _pool_need("price", "cheap", ("cheap",)),
    _pool_need("rating", "top", ("8 stars", "9 stars")),
    _pool_need("G", "any", ("g",)),
)
POOL_WITHOUT_E = tuple(p for p in POOL if p.attribute != "E")


def _scenario(
    sid: str, truth: tuple[str, str, str], e_constant: bool = False, order=ORDER
) -> Scenario:
    """A valid scenario of the layout whose hidden needs are the ``truth`` "X:yes" needs;
    ``e_constant``: every requirement-meeting option shows "yes" on E."""
    needs = tuple(
        Need(level, a, (1,), f"I want {a}:yes.", f"{a}, yes please.", f"Not enough {a}.")
        for level, a in zip(("L1", "L2", "L3"), truth)
    )
    cols = [ATTRS.index(a) for a in truth]
    candidates = []
    for name in order:
        row = list(ROWS[name]) + [0, 0]
        if e_constant and row[0] < 2:
            row[5] = 1
        bits = "".join(str(row[c]) for c in cols)
        if name == "O":
            role = Role.ATTRACTIVE
        elif row[0] == 2:
            role = Role.VIOLATOR
        elif bits == "111":
            role = Role.BEST if name in ("e0", "e7") else Role.SAFE
        else:
            role = Role.PARTIAL
        candidates.append(Candidate(f"Option {name}", role, tuple(row)))
    scenario = Scenario(
        id=f"hand-{sid}",
        domain="hand",
        domain_name="Hand-made",
        category="personal",
        sgd_services=("Hand_1",),
        split="train",
        persona="amber",
        context=Context("low", "moderate", "novice", "A test."),
        request="Something cheap or mid-priced, please. The higher the rating, the better.",
        attributes=tuple(Attribute(k, k, (k.lower(),), LEVELS[k]) for k in ATTRS),
        requirement=Requirement("price", (0, 1), "cheap or mid-priced", "As I said, not pricey."),
        favored=Favored("rating", "higher", "The higher the rating the better.", "Rating."),
        needs=needs,
        candidates=tuple(candidates),
    )
    assert problems(scenario) == []
    return scenario


@pytest.fixture(scope="module")
def x_scenario() -> Scenario:
    return _scenario("01", ("A", "B", "C"), e_constant=True)


@pytest.fixture(scope="module")
def y_scenario() -> Scenario:
    return _scenario("02", ("A", "E", "C"))


def _index(scenario: Scenario, name: str) -> int:
    return [c.name for c in scenario.candidates].index(f"Option {name}")


# -- hand-counted enumerations ------------------------------------------------------------
def test_one_best_two_triples_the_l1_l2_swap(x_scenario):
    # (A, B, C) and its L1/L2 swap: swapping L1 and L2 maps the pattern set and the opening's
    # 110 onto themselves, so without a priority restriction counts come in pairs.
    result = scenario_triples(x_scenario, POOL)
    assert set(result.triples) == {("A:yes", "B:yes", "C:yes"), ("B:yes", "A:yes", "C:yes")}
    assert result.count == 2
    assert result.best_posterior == 1.0
    assert result.possible_bests == (_index(x_scenario, "e0"),)
    assert result.need_share == {
        "price": 0,
        "rating": 0,
        "A": 1,
        "B": 1,
        "C": 1,
        "E": 0,
        "D": 0,
        "F": 0,
    }
    assert result.attributes_of(0) in {("A", "B", "C"), ("B", "A", "C")}


def test_exactly_one_valid_triple_when_a_need_is_a_hard_constraint(x_scenario):
    hard = tuple(replace(p, priorities=frozenset({"L1"})) if p.id == "A:yes" else p for p in POOL)
    result = scenario_triples(x_scenario, hard)
    assert result.triples == (("A:yes", "B:yes", "C:yes"),)
    assert result.count == 1 and result.bests == (_index(x_scenario, "e0"),)


def test_several_triples_naming_different_bests(y_scenario):
    result = scenario_triples(y_scenario, POOL)
    e0, e7 = _index(y_scenario, "e0"), _index(y_scenario, "e7")
    assert Counter(zip(result.triples, result.bests)) == Counter(
        {
            (("A:yes", "B:yes", "C:yes"), e0): 1,
            (("B:yes", "A:yes", "C:yes"), e0): 1,
            (("A:yes", "E:yes", "C:yes"), e7): 1,
            (("E:yes", "A:yes", "C:yes"), e7): 1,
        }
    )
    expected = np.zeros(11)
    expected[[e0, e7]] = 0.5
    np.testing.assert_allclose(result.posterior, expected)
    assert result.best_posterior == 0.5
    assert result.need_share["A"] == 1 and result.need_share["C"] == 1
    assert result.need_share["B"] == 0.5 and result.need_share["E"] == 0.5
    assert sum(result.need_share.values()) == pytest.approx(3)
    assert true_triple(y_scenario, POOL) == ("A:yes", "E:yes", "C:yes")


def test_a_priority_restriction_removes_triples(y_scenario):
    e0, e7 = _index(y_scenario, "e0"), _index(y_scenario, "e7")
    # E:yes suits only L1 (a hard constraint): (A, E, C) goes, (E, A, C) stays
    only_l1 = tuple(
        replace(p, priorities=frozenset({"L1"})) if p.id == "E:yes" else p for p in POOL
    )
    result = scenario_triples(y_scenario, only_l1)
    assert set(result.triples) == {
        ("A:yes", "B:yes", "C:yes"),
        ("B:yes", "A:yes", "C:yes"),
        ("E:yes", "A:yes", "C:yes"),
    }
    assert result.posterior[e0] == pytest.approx(2 / 3) and result.posterior[e7] == pytest.approx(
        1 / 3
    )
    # C:yes may not be L3 (a mild preference it is not): nothing is left
    no_l3 = tuple(
        replace(p, priorities=frozenset({"L1", "L2"})) if p.id == "C:yes" else p for p in POOL
    )
    empty = scenario_triples(y_scenario, no_l3)
    assert empty.count == 0 and empty.best_posterior == 0.0 and not any(empty.posterior)


def test_need_pool_reads_priorities_and_refuses_unknown_ones():
    domain = _domain(POOL_WITHOUT_E)
    pool = need_pool(domain, {"A:yes": ["L1"]})
    assert {p.id: p.priorities for p in pool}["A:yes"] == frozenset({"L1"})
    assert {p.id: p.priorities for p in pool}["B:yes"] == frozenset({"L1", "L2", "L3"})
    with pytest.raises(ValueError, match="L4"):
        need_pool(domain, {"A:yes": ["L4"]})


def test_a_visible_part_breaking_the_need_free_rules_admits_nothing(x_scenario):
    visible = visible_part(x_scenario)
    values = [list(v) for v in visible.values]
    values[_index(x_scenario, "e0")][1] = 9  # ties the opening on the favored attribute
    assert valid_triples(replace(visible, values=tuple(map(tuple, values))), POOL).count == 0
    values = [list(v) for v in visible.values]
    values[_index(x_scenario, "v1")][0] = 1  # a violator meets the requirement: 9 eligible
    assert valid_triples(replace(visible, values=tuple(map(tuple, values))), POOL).count == 0


def test_blind_to_hidden_needs_and_roles(y_scenario):
    """Only the visible part counts: other needs and shuffled roles (the opening kept) give
    the same result."""
    reference = scenario_triples(y_scenario, POOL)
    roles = [c.role for c in y_scenario.candidates if c.role != Role.ATTRACTIVE][::-1]
    it = iter(roles)
    scrambled = replace(
        y_scenario,
        needs=tuple(replace(n, attribute="D", satisfied_by=(0,)) for n in y_scenario.needs),
        candidates=tuple(
            c if c.role == Role.ATTRACTIVE else replace(c, role=next(it))
            for c in y_scenario.candidates
        ),
    )
    assert scenario_triples(scrambled, POOL) == reference


def test_invariant_to_the_shown_order_of_candidates_and_attributes(y_scenario):
    reference = scenario_triples(y_scenario, POOL)
    rng = np.random.default_rng(0)
    for _ in range(5):
        order = tuple(ORDER[i] for i in rng.permutation(len(ORDER)))
        other = _scenario("02", ("A", "E", "C"), order=order)
        result = scenario_triples(other, POOL)
        assert set(zip(result.triples, result.bests)) == {
            (t, _index(other, y_scenario.candidates[b].name.split()[-1]))
            for t, b in zip(reference.triples, reference.bests)
        }
        for i, c in enumerate(other.candidates):
            assert (
                result.posterior[i] == reference.posterior[_index(y_scenario, c.name.split()[-1])]
            )
    # attributes shown in another order
    perm = rng.permutation(len(ATTRS))
    moved = replace(
        y_scenario,
        attributes=tuple(y_scenario.attributes[j] for j in perm),
        candidates=tuple(
            replace(c, values=tuple(c.values[j] for j in perm)) for c in y_scenario.candidates
        ),
    )
    result = scenario_triples(moved, POOL)
    assert set(result.triples) == set(reference.triples)
    assert result.posterior == reference.posterior and result.need_share == reference.need_share


# -- against the validator and the shipped bank ----------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    domains = {d.id: d for d in (load_domain(p) for p in domain_files())}
    pools = {k: need_pool(d) for k, d in domains.items()}
    return load_bank(), domains, pools


def test_the_true_triple_is_valid_in_every_shipped_scenario(shipped):
    bank, _, pools = shipped
    for s in bank:
        result = scenario_triples(s, pools[s.domain])
        truth = true_triple(s, pools[s.domain])
        assert truth is not None, s.id
        assert truth in result.triples, s.id
        assert result.bests[result.triples.index(truth)] == s.role_index(Role.BEST), s.id


def _by_validator(scenario: Scenario, domain: Domain) -> set[tuple[str, str, str]]:
    """Every pool triple under which the validator accepts the scenario, roles given by the
    triple's patterns (the reference the vectorized search must match)."""
    opening = scenario.role_index(Role.ATTRACTIVE)
    shown = {a.key: a for a in scenario.attributes}
    closed = {scenario.requirement.attribute, scenario.favored.attribute}
    options = []
    for a in domain.attributes:
        if a.key not in shown or a.key in closed:
            continue
        levels = shown[a.key].levels
        for n in a.needs:
            texts = {a.levels[i] for i in n.satisfied_by}
            sat = tuple(j for j, t in enumerate(levels) if t in texts)
            options.append((f"{a.key}:{n.key}", a.key, replace(n, satisfied_by=sat)))
    valid = set()
    for picks in itertools.permutations(options, 3):
        if len({p[1] for p in picks}) < 3:
            continue
        needs = tuple(
            Need(lv, attr, o.satisfied_by, o.statement, o.ask_answer, o.hint)
            for lv, (_, attr, o) in zip(("L1", "L2", "L3"), picks)
        )
        trial = replace(scenario, needs=needs)
        if not all(0 < len(n.satisfied_by) < len(shown[n.attribute].levels) for n in needs):
            continue
        patterns = [trial.pattern(c) for c in trial.candidates]
        twins = sorted(
            (i for i, p in enumerate(patterns) if p == "r111"),
            key=lambda i: -trial.favored_score(trial.candidates[i]),
        )
        roles = []
        for i, p in enumerate(patterns):
            if i == opening:
                roles.append(Role.ATTRACTIVE)
            elif p[0] == "v":
                roles.append(Role.VIOLATOR)
            elif i in twins:
                roles.append(Role.BEST if i == twins[0] else Role.SAFE)
            else:
                roles.append(Role.PARTIAL)
        trial = replace(
            trial, candidates=tuple(replace(c, role=r) for c, r in zip(trial.candidates, roles))
        )
        if not problems(trial):
            valid.add(tuple(p[0] for p in picks))
    return valid


@pytest.mark.slow  # every shipped scenario: about 11 s
def test_matches_the_validator_on_shipped_scenarios(shipped):
    bank, domains, pools = shipped
    for s in bank[::160]:
        assert set(scenario_triples(s, pools[s.domain]).triples) == _by_validator(
            s, domains[s.domain]
        ), s.id


def test_the_structure_solver_sees_every_pool_triple(shipped):
    """Each valid pool triple, read as splits of the shown columns, is a valid split triple."""
    bank, _, pools = shipped
    for s in bank[::12]:
        visible = visible_part(s)
        exact = valid_triples(visible, pools[s.domain])
        splits = valid_triples(visible, split_pool(visible))
        meets = [s.meets_requirement(c) for c in s.candidates]
        by_id = {p.id: p for p in pools[s.domain]}
        found = set(splits.triples)
        for triple in exact.triples:
            ids = []
            for nid in triple:
                need = by_id[nid]
                j = visible.column(need.attribute)
                present = sorted({c.values[j] for c, m in zip(s.candidates, meets) if m})
                texts = [
                    visible.levels[j][v] for v in present if visible.levels[j][v] in need.satisfied
                ]
                ids.append(f"{need.attribute}:{{{'|'.join(texts)}}}")
            assert tuple(ids) in found, (s.id, triple)


# -- the audit -----------------------------------------------------------------------------
def _domain(pool) -> Domain:
    attributes = []
    for key in ATTRS:
        needs = tuple(
            NeedOption(
                p.id.split(":")[1],
                tuple(i for i, t in enumerate(LEVELS[key]) if t in p.satisfied),
                p.statement,
                "Yes.",
                "Hm.",
            )
            for p in pool
            if p.attribute == key
        )
        attributes.append(DomainAttribute(key, key, None, (key.lower(),), LEVELS[key], needs))
    return Domain(
        "hand", "Hand-made", "personal", ("Hand_1",), ("{requirement}",), (), tuple(attributes), ()
    )


def _check_tiny_bank(audit):
    # X: one possible best (e0), shares A, B, C = 1. Y: bests e0 and e7 half each (the truth,
    # e7, ties), shares A = C = 1, B = E = 1/2 (the truth's E ties B for the third place).
    values = {f.label: f.estimate.value for f in audit.figures}
    assert values[TOP1_EXPECTED] == pytest.approx((1 + 0.5) / 2)
    assert values[TOP1_REALIZED] == pytest.approx((1 + 0.5) / 2)
    assert values[NEED_REALIZED] == pytest.approx((1 + 2.5 / 3) / 2)
    assert values[NEED_EXPECTED] == pytest.approx((1 + 2.5 / 3) / 2)
    # the structure solver finds the same splits here (yes/no columns, D and F constant)
    assert values[STRUCT_TOP1] == pytest.approx(0.75)
    assert values[STRUCT_OWN] == pytest.approx(0.75)
    assert values[STRUCT_NEED] == pytest.approx((1 + 2.5 / 3) / 2)
    chance = {f.label: f.chance for f in audit.figures}
    assert chance[TOP1_EXPECTED] == pytest.approx(1 / 8) and chance[NEED_REALIZED] == pytest.approx(
        0.5
    )
    for f in audit.figures:
        assert f.estimate.low <= f.estimate.value <= f.estimate.high and f.estimate.n == 2
    assert [s.count for s in audit.scenarios] == [2, 4]
    assert [s.structure_count for s in audit.scenarios] == [2, 4]
    assert audit.mean_count == 3 and audit.single_best == 0.5
    assert audit.no_valid == () and audit.truth_missing == ()


def test_audit_figures_on_a_tiny_bank(x_scenario, y_scenario, tmp_path):
    bank = [x_scenario, y_scenario]
    _check_tiny_bank(exact_audit(bank, pools={"hand": POOL}))
    # the same from a domain file on disk
    (tmp_path / "hand.json").write_text(json.dumps(to_jsonable(_domain(POOL))))
    audit = exact_audit(bank, domains=tmp_path, bank="tiny")
    _check_tiny_bank(audit)
    table = exact_table(audit)
    assert table.splitlines()[2] == "| figure | value [95% CI] | chance |"
    assert f"| {TOP1_EXPECTED} | 0.750 [" in table


def test_main_prints_the_shipped_table(capsys):
    assert main(["--no-structure"]) == 0
    out = capsys.readouterr().out
    assert "480 scenarios" in out and TOP1_EXPECTED in out and "Timings:" in out
    assert "shipped triple not among the valid ones: 0." in out


def _with_conflicts(pool, conflicts):
    """``pool`` with ``conflicts`` (need id -> refs) set on the named needs."""
    return [
        replace(p, conflicts=frozenset(conflicts[p.id])) if p.id in conflicts else p for p in pool
    ]


def test_conflicting_needs_never_share_a_triple(scenario, flights_domain):
    pool = need_pool(flights_domain)
    found = scenario_triples(scenario, pool)
    a, b, _ = found.triples[0]
    both = sum(1 for t in found.triples if a in t and b in t)
    assert both
    fewer = scenario_triples(scenario, _with_conflicts(pool, {a: {b}}))
    assert not [t for t in fewer.triples if a in t and b in t]
    assert fewer.count == found.count - both
    # listed on either need, the pair is out the same way
    assert scenario_triples(scenario, _with_conflicts(pool, {b: {a}})).triples == fewer.triples


def test_a_need_tied_to_a_shown_attribute_is_not_drawn_beside_it(scenario, flights_domain):
    pool = need_pool(flights_domain)
    found = scenario_triples(scenario, pool)
    a, _, c = found.triples[0]
    other = c.split(":")[0]  # an open attribute of this table
    without = scenario_triples(scenario, _with_conflicts(pool, {a: {other}}))
    assert not [t for t in without.triples if a in t]
    assert without.count == found.count - sum(1 for t in found.triples if a in t)
    absent = "no-such-attribute"  # an attribute the table does not show changes nothing
    assert scenario_triples(scenario, _with_conflicts(pool, {a: {absent}})).count == found.count
