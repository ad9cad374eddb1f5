"""Bank v4 table search: the favored column's spread, crossing slots whose met need may be L1 or
L2 on every open attribute that has one, the design's cost of a best no triple names, and the
generator's way out when that preference leaves no table."""

from pathlib import Path

import numpy as np
import pytest

from hear2act_env.errors import DomainError
from hear2act_env.scenarios import design, generator, table
from hear2act_env.scenarios.domain import load_domain
from hear2act_env.scenarios.exact import need_pool

STAGED = Path(__file__).resolve().parents[2] / "tools" / "bank_v4" / "domains"


@pytest.fixture(scope="module")
def flights():
    return load_domain(STAGED / "domestic-flights.json")


@pytest.mark.parametrize("n_levels", [1, 2, 3, 5, 7, 9])
def test_the_spread_is_as_even_as_the_levels_allow(n_levels):
    rng = np.random.default_rng(0)
    for _ in range(30):
        picked = table._spread(rng, n_levels, 7)
        assert picked == sorted(picked) and len(picked) == 7
        counts = np.bincount(picked, minlength=n_levels)
        assert len(counts) == n_levels
        assert counts.max() - counts.min() <= 1


def test_the_v4_favored_column_spreads_the_seven_between_opening_and_last(flights):
    price = flights.attribute("price")  # lower is better
    rng = np.random.default_rng(3)
    for allowed in ([0, 1, 2, 3, 4], list(range(len(price.levels)))):
        for _ in range(20):
            opening, levels = table._favored_column(rng, price, allowed, balanced=True)
            middle = levels[:7]
            assert opening == min(allowed) and levels[-1] == max(allowed)
            assert opening < min(middle) and max(middle) < levels[-1]
            counts = np.bincount(middle)[min(middle) :]
            width = len(allowed) - 2
            if width >= 7:
                assert len(set(middle)) == 7  # no tie where the levels allow none
            else:
                assert counts.max() - counts.min() <= 1 and len(counts) == width


def test_a_v4_attribute_with_a_level_free_crossing_pair_takes_one(flights):
    checked = 0
    for a in flights.attributes:
        pairs = table._level_free_pairs(a)
        if not pairs:
            continue
        for seed in range(8):
            slots, needs = table._slots_for(np.random.default_rng(seed), a, v4=True)
            assert slots.kinds == ("met", "missed")
            assert (needs[0], needs[1]) in pairs
            assert slots.met_priorities == {"L1", "L2"}
            checked += 1
    assert checked >= 8


def test_open_attributes_lean_to_level_free_ones_unless_told_not_to(flights, monkeypatch):
    seen = []

    class Stop(Exception):
        pass

    def sample(rng, items, weights, k):
        seen.append({a.key: w for a, w in zip(items, weights)})
        raise Stop

    monkeypatch.setattr(table, "_weighted_sample", sample)
    pool = need_pool(flights)
    profile = flights.profiles[0]
    for level_free in (True, False):
        with pytest.raises(Stop):
            table.draw_table(
                np.random.default_rng(0), flights, profile, pool, frozenset(), level_free
            )
    preferred, plain = seen
    assert set(plain.values()) == {1.0}
    for key, weight in preferred.items():
        free = bool(table._level_free_pairs(flights.attribute(key)))
        assert weight == (table.LEVEL_FREE_WEIGHT if free else 1.0)
    assert table.LEVEL_FREE_WEIGHT in preferred.values() and 1.0 in preferred.values()


def test_the_generator_drops_the_preference_after_draws_that_give_no_table(flights, monkeypatch):
    seen = []

    def draw(rng, domain, profile, pool, both, level_free=True):
        seen.append(level_free)
        return None

    monkeypatch.setattr(generator, "draw_table", draw)
    with pytest.raises(DomainError, match="no table"):
        generator.generate_scenario(flights, 0)
    tries, attempts = generator.LEVEL_FREE_TRIES, generator.ATTEMPTS
    assert seen == [True] * tries + [False] * (attempts - tries)


def test_a_design_naming_six_bests_costs_more_than_one_naming_seven():
    # the same attributes in every triple: only the bests differ
    six = [(0, 1, 2, b) for b in range(6) for _ in range(2)]
    seven = [(0, 1, 2, b) for b in range(7) for _ in range(2)]
    gap = design.design_cost(six, 6, per_level=True) - design.design_cost(seven, 6, per_level=True)
    assert gap > design.COVER_WEIGHT
    # bank v3's cost is unchanged by it
    v3_gap = design.design_cost(six, 6) - design.design_cost(seven, 6)
    assert 0 < v3_gap < design.COVER_WEIGHT


def _drawn(best, excess):
    from types import SimpleNamespace

    return SimpleNamespace(
        triples=SimpleNamespace(best_posterior=best),
        kinds=["kind"],
        need_excess=lambda: 0.0,
        level_excess=lambda: excess,
    )


def test_a_table_over_the_best_share_limit_ranks_after_every_table_within_it():
    # best share plus half the excess above 0.10 would put the first ahead of the second
    over = _drawn(generator.MAX_POSTERIOR + 0.01, 0.10)
    within = _drawn(0.20, 0.30)
    assert generator._rank(within) < generator._rank(over)
    # within the limit, the weighted sum decides
    assert generator._rank(_drawn(0.17, 0.10)) < generator._rank(_drawn(0.16, 0.14))
