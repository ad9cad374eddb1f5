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
