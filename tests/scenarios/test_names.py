"""Option names agree with the attributes that describe the option's person."""

from __future__ import annotations

import dataclasses

import pytest

from hear2act_env.scenarios.bank import load_bank
from hear2act_env.scenarios.domain import domain_files, load_domain
from hear2act_env.scenarios.quality import domain_text_problems


def _domain(domain_id: str):
    return next(load_domain(p) for p in domain_files() if p.stem == domain_id)


@pytest.mark.parametrize("domain_id", ["therapists", "specialist-doctors"])
def test_a_first_name_beside_a_gender_attribute_is_flagged(domain_id: str) -> None:
    d = _domain(domain_id)
    assert not [p for p in domain_text_problems(d) if "names[" in p]
    bad = dataclasses.replace(d, names=("Amelia Hartley", *d.names[1:]))
    problems = [p for p in domain_text_problems(bad) if "names[" in p]
    assert len(problems) == 1
    assert "names[0] 'Amelia Hartley'" in problems[0] and "'gender'" in problems[0]


def test_business_names_without_a_person_gender_attribute_are_fine() -> None:
    d = _domain("hair-salons")  # levels "women only" / "unisex": not one person's gender
    renamed = dataclasses.replace(d, names=("Amelia Hartley", *d.names[1:]))
    assert not [p for p in domain_text_problems(renamed) if "names[" in p]


def test_shipped_person_names_give_no_first_name() -> None:
    names = {
        c.name
        for s in load_bank()
        if s.domain in ("therapists", "specialist-doctors")
        for c in s.candidates
    }
    assert len(names) == 29  # every name of the two pools is used somewhere
    assert all(n.startswith("Dr. ") or n[1:3] == ". " for n in names)


def test_a_name_that_claims_a_value_is_flagged() -> None:
    """Names are drawn at random: "S. Osei, PhD" listed as a marriage and family therapist
    (the level "clinical psychologist (PhD)" gives the code) or a name holding a whole level
    contradicts the option's own value."""
    d = _domain("therapists")
    assert not [p for p in domain_text_problems(d) if "claims" in p]
    bad = dataclasses.replace(d, names=("S. Osei, PhD", *d.names[1:]))
    problems = [p for p in domain_text_problems(bad) if "claims" in p]
    assert len(problems) == 1 and "names[0] 'S. Osei, PhD' claims 'PhD'" in problems[0]
    hotels = _domain("city-hotels")
    level = next(a for a in hotels.attributes if a.key == "location").levels[0]
    named = dataclasses.replace(hotels, names=(f"The {level.title()} Inn", *hotels.names[1:]))
    assert [p for p in domain_text_problems(named) if "claims" in p]


def test_shipped_names_claim_no_value() -> None:
    problems = [
        p
        for path in domain_files()
        for p in domain_text_problems(load_domain(path))
        if "claims" in p
    ]
    assert problems == []
