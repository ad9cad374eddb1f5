"""The hiding rules (on top of the structural and text checks): what a domain file must hold so
that the visible text of its scenarios cannot give the answer away (docs/domains.md).

- every attribute can hold hidden needs (at least two: any attribute that is not a profile's
  requirement or favored attribute may be shown as a need or a distractor), so a need
  attribute and a distractor look alike to anyone who knows the domain files;
- need texts speak for the user alone (no companions), so any profile may hold any need;
- a situation names no attribute of the domain other than its own requirement and favored
  attribute;
- no sentence of a domain file appears word for word in another domain file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hear2act_env.scenarios.domain import Domain
from hear2act_env.scenarios.quality import mentions, sentences

__all__ = ["COMPANION_WORDS", "cross_domain_duplicates", "domain_hiding_problems"]

MIN_NEEDS_PER_ATTRIBUTE = 2
#: Words that put companions into a need's text (whole words, case-insensitive).
COMPANION_WORDS = (
    "we", "us", "our", "ours", "ourselves", "kid", "kids", "child", "children", "family",
    "partner", "wife", "husband", "friend", "friends", "group", "son", "daughter", "baby",
    "toddler", "toddlers", "parents", "team", "colleagues", "guests", "everyone",
)  # fmt: skip
_COMPANION = re.compile(r"\b(" + "|".join(COMPANION_WORDS) + r")\b", re.IGNORECASE)
#: Domains whose premise is a party (every profile brings them): these words may appear there.
PREMISE_COMPANIONS: dict[str, frozenset[str]] = {
    "pediatric-care": frozenset({"kid", "kids", "child", "children", "son", "daughter", "baby", "toddler", "toddlers"}),
    "family-attractions": frozenset({"we", "us", "our", "ours", "ourselves", "kid", "kids", "child", "children", "family"}),
    "family-house-rentals": frozenset({"we", "us", "our", "ours", "ourselves", "kid", "kids", "child", "children", "family"}),
    "group-dining": frozenset({"we", "us", "our", "ours", "ourselves", "group", "friends", "guests", "everyone", "colleagues", "team"}),
}  # fmt: skip


def _norm(sentence: str) -> str:
    return " ".join(sentence.lower().split())


def domain_sentences(d: Domain) -> set[str]:
    """Every sentence of the domain's user-facing texts (normalized)."""
    texts: list[str] = list(d.request_templates)
    for a in d.attributes:
        for n in a.needs:
            texts += [n.statement, n.ask_answer, n.hint, n.want]
        for r in a.requirements:
            texts += [r.phrase, r.restatement]
        if a.favored is not None:
            texts += [a.favored.phrase, a.favored.restatement]
    texts += [p.situation for p in d.profiles]
    return {_norm(s) for t in texts for s in sentences(t) if len(s.split()) >= 3}


def cross_domain_duplicates(domains: Sequence[Domain]) -> list[str]:
    """Sentences that appear in more than one domain file."""
    seen: dict[str, str] = {}
    out = []
    for d in domains:
        for s in sorted(domain_sentences(d)):
            other = seen.setdefault(s, d.id)
            if other != d.id:
                out.append(f"domain {d.id}: sentence also in domain {other}: {s!r}")
    return out


def domain_hiding_problems(d: Domain) -> list[str]:
    """The hiding rules that one domain file can be checked against on its own."""
    out: list[str] = []
    for a in d.attributes:
        where = f"domain {d.id}: attributes[{a.key}]"
        if len(a.needs) < MIN_NEEDS_PER_ATTRIBUTE:
            out.append(
                f"{where}: needs: every attribute needs at least {MIN_NEEDS_PER_ATTRIBUTE} "
                f"(got {len(a.needs)})"
            )
            continue
        for n in a.needs:
            allowed = PREMISE_COMPANIONS.get(d.id, frozenset())
            for field in ("statement", "ask_answer", "hint", "want"):
                found = next(
                    (
                        m
                        for m in _COMPANION.finditer(getattr(n, field))
                        if m.group(0).lower() not in allowed
                    ),
                    None,
                )
                if found:
                    out.append(
                        f"{where}: needs[{n.key}].{field}: {found.group(0)!r} brings in "
                        "companions; need texts speak for the user alone"
                    )
    for i, p in enumerate(d.profiles):
        own = {p.requirement.split(":")[0], p.favored}
        named = [
            a.key for a in d.attributes if a.key not in own and mentions(p.situation, a.keywords)
        ]
        if named:
            out.append(
                f"domain {d.id}: profiles[{i}].situation names attributes {named}: a situation "
                "explains the visit without pointing at any attribute"
            )
    return out
