"""What a domain's need pool lets the generator build (docs/domains.md, "Bank v3").

The generator makes option tables that admit many valid need triples (docs/domains.md#bank-v3-the-table-first-the-needs-last). A valid
triple needs, on three distinct open attributes, an L1 and an L2 need that the opening meets
and 4 of the 8 eligible options meet, and an L3 need that the opening misses and 5 eligible
options meet. One attribute can serve in both roles in one table only through two of its needs
that **cross**: they share a level and each has a level the other lacks (for example "at most
$240" and "at least $180"), so that the opening can meet one and miss the other while the
eligible options take every mix the table needs. Needs in the same direction ("at least 4.0",
"at least 4.5") nest and never cross; a need and its complement never cross.
"""

from __future__ import annotations

from dataclasses import dataclass

from hear2act_env.scenarios.domain import Domain, DomainAttribute, NeedOption

__all__ = ["AttributeCapacity", "crossing_pairs", "domain_capacity"]


@dataclass(frozen=True)
class AttributeCapacity:
    """Roles an attribute's needs can take in one table: ``met`` needs (L1/L2, met by the
    opening), ``missed`` needs (L3) and crossing (met, missed) pairs."""

    attribute: str
    met: tuple[str, ...]
    missed: tuple[str, ...]
    crossing: tuple[tuple[str, str], ...]

    @property
    def both_roles(self) -> bool:
        """Whether one table can hold a met and a missed need on this attribute."""
        return bool(self.crossing)


def crossing_pairs(attribute: DomainAttribute) -> tuple[tuple[NeedOption, NeedOption], ...]:
    """(met, missed) need pairs of ``attribute`` that cross: the met one allowed at L1 or L2,
    the missed one at L3, and the two satisfying level sets overlapping with neither
    containing the other."""
    out = []
    for h in attribute.needs:
        if not {"L1", "L2"} & set(h.priorities):
            continue
        for s in attribute.needs:
            if s is h or "L3" not in s.priorities:
                continue
            a, b = set(h.satisfied_by), set(s.satisfied_by)
            if a & b and a - b and b - a:
                out.append((h, s))
    return tuple(out)


def domain_capacity(domain: Domain) -> tuple[AttributeCapacity, ...]:
    """One ``AttributeCapacity`` per attribute of ``domain``."""
    return tuple(
        AttributeCapacity(
            attribute=a.key,
            met=tuple(n.key for n in a.needs if {"L1", "L2"} & set(n.priorities)),
            missed=tuple(n.key for n in a.needs if "L3" in n.priorities),
            crossing=tuple((h.key, s.key) for h, s in crossing_pairs(a)),
        )
        for a in domain.attributes
    )


if __name__ == "__main__":
    import sys

    from hear2act_env.scenarios.domain import domain_files, load_domain

    paths = sys.argv[1:] or [str(p) for p in domain_files()]
    for path in paths:
        d = load_domain(path)
        caps = domain_capacity(d)
        both = [c.attribute for c in caps if c.both_roles]
        print(f"{d.id}: {len(both)} of {len(caps)} attributes can take both roles: {both}")
