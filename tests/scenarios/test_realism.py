"""Bank v4 realism rules (docs/domains.md#bank-v4-options-a-domain-expert-reads-as-real): each
rule fails on a domain that breaks it, and the generator draws options every rule admits."""

import dataclasses
from pathlib import Path

import pytest

from hear2act_env.scenarios.check import check_domain
from hear2act_env.scenarios.domain import load_domain
from hear2act_env.scenarios.exact import scenario_triples
from hear2act_env.scenarios.generator import generate_scenario
from hear2act_env.scenarios.quality import scenario_pool, scenario_text_problems
from hear2act_env.scenarios.realism import (
    domain_realism_problems,
    option_kinds,
    option_problems,
    price_band,
    typical_level,
)

STAGED = Path(__file__).resolve().parents[2] / "tools" / "bank_v4" / "domains"
FILES = sorted(STAGED.glob("*.json"))


@pytest.fixture(scope="module")
def flights():
    return load_domain(STAGED / "domestic-flights.json")


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_staged_domain_is_format_4_and_passes_the_checker(path):
    domain = load_domain(path)
    assert domain.format == 4
    assert check_domain(domain, generate=False) == []


def test_a_clean_domain_has_no_problem(flights):
    assert domain_realism_problems(flights) == []


def _attribute(domain, key, **changes):
    attributes = tuple(
        dataclasses.replace(a, **changes) if a.key == key else a for a in domain.attributes
    )
    return dataclasses.replace(domain, attributes=attributes)


def _need(domain, key, index, **changes):
    a = domain.attribute(key)
    needs = list(a.needs)
    needs[index] = dataclasses.replace(needs[index], **changes)
    return _attribute(domain, key, needs=tuple(needs))


def _one(problems, *words):
    hits = [p for p in problems if all(w in p for w in words)]
    assert hits, problems
    return hits[0]


def test_a_pair_left_out_or_recorded_twice_is_named(flights):
    dropped = dataclasses.replace(flights, compatible=flights.compatible[1:])
    _one(domain_realism_problems(dropped), "pairs of attributes are not recorded")
    twice = dataclasses.replace(flights, compatible=flights.compatible + flights.compatible[:1])
    _one(domain_realism_problems(twice), "recorded twice")


def test_a_hedged_need_cannot_be_l1(flights):
    key = flights.attributes[1].key
    need = flights.attribute(key).needs[0]
    hedged = _need(
        flights, key, 0, statement="I'd rather " + need.statement, priorities=("L1", "L2")
    )
    _one(domain_realism_problems(hedged), f"needs[{need.key}].priorities", "hedged")
    as_wish = _need(flights, key, 0, statement="I'd rather " + need.statement, priorities=("L2",))
    assert not [p for p in domain_realism_problems(as_wish) if "hedged" in p]


@pytest.mark.parametrize(
    "want",
    ["That one would leave me stuck.", "I can't make it work with that.", "It wouldn't do."],
)
def test_a_want_that_talks_about_the_option_is_refused(flights, want):
    key = flights.attributes[0].key
    _one(domain_realism_problems(_need(flights, key, 0, want=want)), "talks about the option")


def test_a_label_built_or_missing_question_is_refused(flights):
    a = flights.attributes[2]
    for ask in (f"What about {a.label}? Does that matter to you?", "", "Departure time"):
        _one(domain_realism_problems(_attribute(flights, a.key, ask=ask)), f"[{a.key}].ask")


def test_price_model_and_kind_mistakes_are_named(flights):
    model = flights.price
    short = dataclasses.replace(
        model, offer=(dataclasses.replace(model.offer[0], points=(0.0,)),) + model.offer[1:]
    )
    _one(domain_realism_problems(dataclasses.replace(flights, price=short)), "points")
    priced = flights.attribute(model.attribute)
    backwards = _attribute(flights, priced.key, levels=tuple(reversed(priced.levels)))
    _one(domain_realism_problems(backwards), "cheapest up")
    kind = flights.kinds[0]
    shared = dataclasses.replace(kind, names=(flights.names[0],))
    _one(
        domain_realism_problems(dataclasses.replace(flights, kinds=(shared, *flights.kinds[1:]))),
        "also in names",
    )


def test_price_band_follows_the_offer_within_a_kind(flights):
    model = flights.price
    offer = model.offer[0]
    kind = next(k for k in flights.kinds if k.price is not None)
    low = min(range(len(offer.points)), key=lambda i: offer.points[i])
    high = max(range(len(offer.points)), key=lambda i: offer.points[i])
    cheap = price_band(flights, kind, {offer.attribute: low})
    dear = price_band(flights, kind, {offer.attribute: high})
    assert min(dear) >= min(cheap) and max(dear) >= max(cheap)
    assert (min(dear), max(dear)) != (min(cheap), max(cheap))


def test_an_option_priced_against_every_kind_is_named(flights):
    model = flights.price
    top = len(flights.attribute(model.attribute).levels) - 1
    cheapest_kind = min(flights.kinds, key=lambda k: k.price)
    shown = {model.attribute: top}
    for ls in cheapest_kind.levels:
        if ls.attribute != model.attribute:
            shown[ls.attribute] = ls.levels[0]
    kinds = option_kinds(flights, shown, flights.names[0])
    assert cheapest_kind not in kinds
    if not kinds:
        assert option_problems(flights, shown, flights.names[0])


def test_a_generated_v4_scenario_is_real_by_every_rule(flights):
    s = generate_scenario(flights, 9)
    assert scenario_text_problems(s) == []
    for c in s.candidates:
        shown = {a.key: v for a, v in zip(s.attributes, c.values)}
        assert option_kinds(flights, shown, c.name), option_problems(flights, shown, c.name)
    assert all(a.ask for a in s.attributes) and s.bank_format == 4
    assert s.needs[0].want
    found = scenario_triples(s, scenario_pool(flights, s))
    assert found.count == s.identifiability.valid_triples
    assert round(found.best_posterior, 6) == s.identifiability.best_posterior
    l1, l2, l3 = (f"{n.attribute}:" for n in s.needs)
    assert any(t[0].startswith(l1) and t[1].startswith(l2) for t in found.triples)


def test_a_price_level_no_kind_charges_is_named(flights):
    model = flights.price
    top = len(flights.attribute(model.attribute).levels) - 1
    # every kind at the cheapest level: the dearest prices are no kind's ordinary price
    kinds = tuple(dataclasses.replace(k, price=0.0) for k in flights.kinds)
    problem = _one(
        domain_realism_problems(dataclasses.replace(flights, kinds=kinds)), "base price", "noise"
    )
    assert flights.attribute(model.attribute).levels[top] in problem


def test_too_few_l1_needs_that_cross_are_named(flights):
    weakened = flights
    for a in flights.attributes:  # no need may be L1 any more, except on one attribute
        if a.key == flights.attributes[0].key:
            continue
        needs = tuple(
            dataclasses.replace(
                n, priorities=tuple(p for p in n.priorities if p != "L1") or ("L2",)
            )
            for n in a.needs
        )
        weakened = _attribute(weakened, a.key, needs=needs)
    _one(domain_realism_problems(weakened), "crosses an L3 one")


def test_the_favored_column_keeps_to_prices_a_requirement_meeting_kind_charges(flights):
    from hear2act_env.scenarios.table import _reachable

    price, cabin, wifi = (flights.attribute(k) for k in ("price", "cabin", "wifi"))
    levels = list(range(len(price.levels)))
    noise = flights.price.noise
    # a requirement every kind can meet: every kind's ordinary prices, nothing beyond
    kept = _reachable(flights, wifi, list(range(len(wifi.levels))), price, levels)
    ordinary = {
        lv
        for k in flights.kinds
        for lv in k.allowed("price", len(levels))
        if abs(lv - typical_level(k.price)) <= noise
    }
    assert set(kept) == ordinary
    # business cabin only: business fares, widened a level at a time to 4 levels, never down
    # to the basic fares
    business = next(k for k in flights.kinds if k.key == "business")
    kept = _reachable(flights, cabin, [3], price, levels)
    assert len(kept) == 4 and set(kept) <= set(business.allowed("price", len(levels)))
    assert min(kept) >= typical_level(business.price) - noise - 1


def _excluding(domain, index, refs):
    profiles = list(domain.profiles)
    profiles[index] = dataclasses.replace(profiles[index], excludes=tuple(refs))
    return dataclasses.replace(domain, profiles=tuple(profiles))


def test_a_profile_rules_needs_out_of_its_pool(flights):
    from hear2act_env.scenarios.domain import domain_problems
    from hear2act_env.scenarios.quality import text_pool

    ref = f"{flights.attributes[1].key}:{flights.attributes[1].needs[0].key}"
    assert ref in {p.id for p in text_pool(flights, "x", ())}
    assert ref not in {p.id for p in text_pool(flights, "x", (), (ref,))}
    _one(domain_problems(_excluding(flights, 0, ["stops:no-such-need"])), "excludes", "no-such")
    assert not [p for p in domain_problems(_excluding(flights, 0, [ref])) if "excludes" in p]


@pytest.mark.slow
def test_the_generator_never_draws_a_need_the_profile_rules_out(flights):
    first = generate_scenario(flights, 3)
    drawn = [
        f"{n.attribute}:{k}"
        for n in first.needs
        for a in flights.attributes
        if a.key == n.attribute
        for k in [o.key for o in a.needs if o.statement == n.statement]
    ]
    ruled = _excluding(flights, 3, drawn[:1])
    again = generate_scenario(ruled, 3)
    pool = {p.id for p in scenario_pool(ruled, again)}
    assert drawn[0] not in pool
    assert all(f"{n.attribute}:" in " ".join(pool) for n in again.needs)
    assert drawn[0] not in {
        f"{n.attribute}:{o.key}"
        for n in again.needs
        for o in ruled.attribute(n.attribute).needs
        if o.statement == n.statement
    }


def test_need_conflicts_are_checked_and_hold_both_ways(flights):
    from hear2act_env.scenarios.domain import domain_problems
    from hear2act_env.scenarios.exact import need_pool

    a, b = flights.attributes[1], flights.attributes[2]
    mine, theirs = f"{a.key}:{a.needs[0].key}", f"{b.key}:{b.needs[0].key}"
    tied = _need(flights, a.key, 0, conflicts=(theirs, b.key))
    assert not [p for p in domain_problems(tied) if "conflicts" in p]
    pool = {p.id: p for p in need_pool(tied)}
    assert pool[mine].conflicts == {theirs, b.key} and mine in pool[theirs].conflicts
    _one(
        domain_problems(_need(flights, a.key, 0, conflicts=("nowhere:x",))), "conflicts", "nowhere"
    )
    _one(domain_problems(_need(flights, a.key, 0, conflicts=(a.key,))), "conflicts", repr(a.key))


def test_a_profile_may_rule_out_a_whole_attribute(flights):
    from hear2act_env.scenarios.domain import domain_problems
    from hear2act_env.scenarios.quality import text_pool

    key = flights.attributes[2].key
    assert any(p.attribute == key for p in text_pool(flights, "x", ()))
    assert not any(p.attribute == key for p in text_pool(flights, "x", (), (key,)))
    assert not [p for p in domain_problems(_excluding(flights, 0, [key])) if "excludes" in p]
    _one(domain_problems(_excluding(flights, 0, ["nowhere"])), "excludes", "nowhere")


def test_a_two_sided_complaint_is_refused_for_an_l1_need(flights):
    a = next(a for a in flights.attributes if any("L1" in n.priorities for n in a.needs))
    k = next(i for i, n in enumerate(a.needs) if "L1" in n.priorities)
    hint = "That leaves either too early or too late for me."
    at = f"attributes[{a.key}].needs[{a.needs[k].key}].hint"
    _one(domain_realism_problems(_need(flights, a.key, k, hint=hint)), at, "either")
    wish = _need(flights, a.key, k, hint=hint, priorities=("L2", "L3"))
    assert not [p for p in domain_realism_problems(wish) if at in p]


@pytest.mark.parametrize(
    "field, said, word, rule",
    [
        ("statement", "I won't sit through a layover longer than two hours.", "won't", "refusal"),
        ("ask_answer", "The layover has to be under two hours for me.", "has to", "deal-breaker"),
    ],
)
def test_a_refusal_or_a_deal_breaker_is_l1_only(flights, field, said, word, rule):
    a = next(a for a in flights.attributes if any("L2" in n.priorities for n in a.needs))
    k = next(i for i, n in enumerate(a.needs) if "L2" in n.priorities)
    at = f"attributes[{a.key}].needs[{a.needs[k].key}].priorities"
    _one(domain_realism_problems(_need(flights, a.key, k, **{field: said})), at, word, rule)
    only = _need(flights, a.key, k, priorities=("L1",), **{field: said})
    assert not [p for p in domain_realism_problems(only) if at in p and rule in p]


def _one_kind_pair(domain, rows, price):
    """An option of ``rows`` and two prices 2+ levels apart at which one and the same kind, and
    no other, admits it (None when the table has none)."""
    from hear2act_env.scenarios.realism import price_band

    for shown, name in rows:
        for kind in option_kinds(domain, shown, name):
            band = price_band(domain, kind, shown)
            only = [
                lv
                for lv in band
                if option_kinds(domain, dict(shown, **{price: lv}), name) == (kind,)
            ]
            if len(only) >= 2 and only[-1] - only[0] >= 2:
                return shown, name, only[0], only[-1]
    return None


@pytest.mark.slow  # generates scenarios (about 5 s each) until one has such an option
def test_an_option_dearer_than_one_that_offers_as_much_is_an_inversion(flights):
    from hear2act_env.scenarios.realism import price_inversions

    price = flights.price.attribute
    found = None
    for index in range(len(flights.profiles)):  # a drawn option of the domain, whichever
        s = generate_scenario(flights, index)
        rows = [({a.key: v for a, v in zip(s.attributes, c.values)}, c.name) for c in s.candidates]
        found = _one_kind_pair(flights, rows, price)
        if found:
            break
    assert found, "no option that one kind alone admits at two prices 2 levels apart"
    shown, name, low, high = found
    dear, cheap = dict(shown, **{price: high}), dict(shown, **{price: low})
    # one offer at two prices of its one kind: the dear one is priced against its offer
    assert price_inversions(flights, [(dear, name), (cheap, name)]) == [(0, 1)]
    assert price_inversions(flights, [(cheap, name), (dear, name)]) == [(1, 0)]
    assert price_inversions(flights, [(cheap, name), (cheap, name)]) == []
