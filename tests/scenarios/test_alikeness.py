"""The generator keeps, of several drawings, the one whose eligible options look most alike.
That choice must read no role: relabelling which eligible option is best leaves the measure
unchanged, so the selection cannot make best stand out (or hide in a way an attacker learns)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hear2act_env.protocol.scenario import Role
from hear2act_env.scenarios import generator
from hear2act_env.scenarios.alikeness import option_spread
from hear2act_env.scenarios.domain import domain_files, load_domain


@pytest.fixture(scope="module")
def scenario():
    domain = load_domain(domain_files()[0])
    return generator.generate_scenario(domain, 0)


def _swap_roles(scenario, a: int, b: int):
    cands = list(scenario.candidates)
    cands[a], cands[b] = (
        replace(cands[a], role=cands[b].role),
        replace(cands[b], role=cands[a].role),
    )
    return replace(scenario, candidates=tuple(cands))


def test_option_spread_reads_no_role(scenario):
    best = scenario.role_index(Role.BEST)
    partials = [i for i, c in enumerate(scenario.candidates) if c.role == Role.PARTIAL]
    base = option_spread(scenario)
    assert base > 0
    for p in partials:
        assert option_spread(_swap_roles(scenario, best, p)) == pytest.approx(base)


def test_option_spread_sees_the_values(scenario):
    """Changing one eligible option's values changes the measure (it is not a constant)."""
    i = next(i for i, c in enumerate(scenario.candidates) if c.role == Role.PARTIAL)
    cands = list(scenario.candidates)
    open_cols = [
        j
        for j, a in enumerate(scenario.attributes)
        if a.key not in (scenario.requirement.attribute, scenario.favored.attribute)
    ]
    values = list(cands[i].values)
    j = open_cols[0]
    values[j] = (values[j] + 1) % len(scenario.attributes[j].levels)
    cands[i] = replace(cands[i], values=tuple(values))
    assert option_spread(replace(scenario, candidates=tuple(cands))) != pytest.approx(
        option_spread(scenario)
    )


def test_the_generator_keeps_the_most_alike_of_its_drawings(monkeypatch):
    """With one drawing the kept scenario is that drawing; with more, the kept one is never
    less alike than the first drawing."""
    domain = load_domain(domain_files()[0])
    spreads = []
    real = generator.option_spread

    def spy(s):
        spreads.append(real(s))
        return spreads[-1]

    monkeypatch.setattr(generator, "option_spread", spy)
    kept = generator.generate_scenario(domain, 3)
    assert len(spreads) >= 2
    assert real(kept) == pytest.approx(min(spreads))
