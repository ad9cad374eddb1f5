"""What an agent sees of a scenario before it asks anything, as arrays (and, apart, the truth).

Visible: the request (its requirement and favored direction, which a reader understands), the 11
described options in shown order and the opening recommendation. From these, anyone can tell
which options break the stated requirement and rank options on the favored attribute. The
*eligible* options are the ones that could be ``best`` at all: they meet the requirement and are
not the opening (8 in a valid scenario; chance is 1 in 8).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from hear2act_env.protocol.scenario import Role, Scenario
from hear2act_env.scenarios.domain import DomainAttribute

__all__ = ["ScenarioView", "Truth", "desirability", "view_of"]


@dataclass(frozen=True)
class ScenarioView:
    """The visible part of one scenario."""

    id: str
    split: str
    values: np.ndarray  # (n_options, n_attributes) level indices
    n_levels: np.ndarray  # (n_attributes,)
    open_columns: np.ndarray  # attribute positions other than the requirement's and favored's
    opening: int
    violators: np.ndarray  # option indices that break the stated requirement
    eligible: np.ndarray  # option indices that could be best
    favored_rank: np.ndarray  # (n_options,) 0 = best on the favored attribute (ties share)
    description_length: np.ndarray  # (n_options,) characters of each option's description
    desirability: np.ndarray  # (n_options, n_attributes) how generally desirable each value is


@dataclass(frozen=True)
class Truth:
    """What the audit scores against (never shown to an attacker)."""

    best: int
    need_columns: tuple[int, int, int]  # attribute positions of L1, L2, L3


@functools.lru_cache(maxsize=64)
def _domain_desirability(
    domain: str, folder: str | None = None
) -> dict[str, dict[str, float]] | None:
    """Per attribute key and level text, the share of the domain's needs on that attribute that
    the level satisfies (None when the domain is not one of the shipped domain files; a
    scenario may show only some of an attribute's levels, so levels are matched by text)."""
    from hear2act_env.scenarios.domain import domain_files, load_domain

    for path in domain_files(folder):
        if path.stem == domain:
            d = load_domain(path)
            return {a.key: dict(zip(a.levels, level_desirability(a))) for a in d.attributes}
    return None


def level_desirability(a: DomainAttribute) -> np.ndarray:
    """Per level, the share of the attribute's needs (in the domain file) that it satisfies:
    what someone who reads the domain files would call a generally good value."""
    counts = np.zeros(len(a.levels))
    for need in a.needs:
        counts[list(need.satisfied_by)] += 1
    return counts / max(len(a.needs), 1)


def desirability(scenario: Scenario, domains: str | None = None) -> np.ndarray:
    """(n_options, n_attributes): the domain-file desirability of each shown value, from the
    domain files in ``domains`` (default: the shipped ones); zeros for a domain or level that
    has no file there (levels are matched by their text)."""
    table = _domain_desirability(scenario.domain, domains)
    out = np.zeros((len(scenario.candidates), len(scenario.attributes)))
    if table is None:
        return out
    for j, a in enumerate(scenario.attributes):
        levels = table.get(a.key)
        if levels is None:
            continue
        for i, c in enumerate(scenario.candidates):
            out[i, j] = levels.get(a.levels[c.values[j]], 0.0)
    return out


def view_of(
    scenario: Scenario, domains: str | None = None, with_desirability: bool = True
) -> tuple[ScenarioView, Truth]:
    """The visible arrays of ``scenario`` and the truth to score attackers against
    (``with_desirability=False``: zeros instead of the domain files' desirability)."""
    values = np.array([c.values for c in scenario.candidates], dtype=np.int64)
    req = scenario.attribute_index(scenario.requirement.attribute)
    fav = scenario.attribute_index(scenario.favored.attribute)
    meets = np.array([scenario.meets_requirement(c) for c in scenario.candidates])
    opening = scenario.role_index(Role.ATTRACTIVE)
    scores = np.array([scenario.favored_score(c) for c in scenario.candidates])
    rank = np.array([(scores > s).sum() for s in scores])
    eligible = np.array([i for i in range(len(values)) if meets[i] and i != opening])
    view = ScenarioView(
        id=scenario.id,
        split=scenario.split,
        values=values,
        n_levels=np.array([len(a.levels) for a in scenario.attributes]),
        open_columns=np.array([j for j in range(values.shape[1]) if j not in (req, fav)]),
        opening=opening,
        violators=np.flatnonzero(~meets),
        eligible=eligible,
        favored_rank=rank,
        description_length=np.array([len(scenario.describe(c)) for c in scenario.candidates]),
        desirability=desirability(scenario, domains)
        if with_desirability
        else np.zeros(values.shape, dtype=np.float64),
    )
    needs = tuple(scenario.attribute_index(n.attribute) for n in scenario.needs)
    return view, Truth(best=scenario.role_index(Role.BEST), need_columns=needs)  # type: ignore[arg-type]
