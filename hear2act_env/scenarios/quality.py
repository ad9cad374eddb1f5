"""Content checks beyond the structural validator: do the texts say what the protocol needs?

``scenario_text_problems`` runs on any scenario; ``domain_text_problems`` on a domain definition
(all its need options, since any of them may become an L1 in some profile).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

from hear2act_env import jsonsafe
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.scenarios.domain import Domain, DomainAttribute, NeedOption
from hear2act_env.scenarios.exact import PoolNeed, need_pool

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
#: Levels that give one person's gender: a domain with such an attribute describes people.
PERSON_GENDER_LEVELS = frozenset({"woman", "man", "nonbinary", "female", "male"})
#: An option name that gives no first name: a title or an initial, then the surname.
_NAME_WITHOUT_FIRST_NAME = re.compile(r"^(Dr\.|[A-Z]\.) [A-Z]")
#: A short code a level gives in parentheses ("clinical psychologist (PhD)").
_LEVEL_CODE = re.compile(r"\(([A-Za-z]{2,6})\)")


@functools.cache
def sgd_index() -> dict[str, dict]:
    """SGD services (name -> description and slots) shipped with the package."""
    path = Path(__file__).parent / "sgd_index.json"
    return jsonsafe.load_file(path)["services"]


def sgd_slots() -> dict[str, list[str]]:
    """SGD service name -> its slot names."""
    return {name: list(s["slots"]) for name, s in sgd_index().items()}


def mentions(text: str, words: tuple[str, ...] | list[str]) -> bool:
    """Whether ``text`` contains a word starting with any of ``words`` (case-insensitive)."""
    return any(re.search(r"(?<![\w$])" + re.escape(w.lower()), text.lower()) for w in words)


def names_exactly(text: str, phrase: str) -> bool:
    """Whether ``text`` contains ``phrase`` as whole words (case-insensitive)."""
    return re.search(r"(?<!\w)" + re.escape(phrase.lower()) + r"(?!\w)", text.lower()) is not None


def sentences(text: str) -> list[str]:
    """``text`` split into sentences, stripped."""
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def scenario_text_problems(s: Scenario) -> list[str]:
    """Problems with what the scenario's texts reveal or repeat."""
    out: list[str] = []
    where = f"scenario {s.id}"
    by_key = {a.key: a for a in s.attributes}
    for need in s.needs:
        attr = by_key[need.attribute]
        if mentions(s.request, attr.keywords):
            out.append(
                f"{where}: request mentions a keyword of hidden need {need.level} ({attr.key})"
            )
        for field in ("statement", "ask_answer"):
            if not mentions(getattr(need, field), attr.keywords):
                out.append(
                    f"{where}: needs[{need.level}].{field} does not mention its attribute {attr.key!r} (keywords {list(attr.keywords)})"
                )
    l1 = s.needs[0]
    for v in l1.satisfied_by:
        if names_exactly(l1.hint, by_key[l1.attribute].levels[v]):
            out.append(
                f"{where}: needs[L1].hint names the satisfying value {by_key[l1.attribute].levels[v]!r}"
            )
    texts = [s.request] + [t for n in s.needs for t in (n.statement, n.ask_answer, n.hint)]
    texts += [s.requirement.restatement, s.favored.restatement]
    seen: set[str] = set()
    for text in texts:
        for sentence in sentences(text):
            if sentence.lower() in seen and len(sentence.split()) > 2:
                out.append(f"{where}: sentence {sentence!r} appears twice")
            seen.add(sentence.lower())
    descriptions = [s.describe(c) for c in s.candidates]
    if len(set(descriptions)) != len(descriptions):
        out.append(f"{where}: candidate descriptions are not unique")
    if len({c.values for c in s.candidates}) != len(s.candidates):
        out.append(f"{where}: two candidates have identical attribute values")
    unknown = [x for x in s.sgd_services if x not in sgd_index()]
    if unknown:
        out.append(f"{where}: sgd_services {unknown} are not SGD services")
    return out


def domain_text_problems(d: Domain) -> list[str]:
    """Problems with a domain's texts, over every need option and profile."""
    out: list[str] = []
    unknown = [x for x in d.sgd_services if x not in sgd_index()]
    if unknown:
        out.append(f"domain {d.id}: sgd_services {unknown} are not services of the SGD schemas")
    for a in d.attributes:
        for option in a.needs:
            out.extend(_need_option_problems(d, a, option))
    out.extend(_name_gender_problems(d))
    out.extend(_name_claim_problems(d))
    for template in d.request_templates:
        named = [
            a.key
            for a in d.attributes
            if mentions(template.replace("{requirement}", ""), a.keywords)
        ]
        if named:
            out.append(
                f"domain {d.id}: request template {template!r} mentions attributes {named}, "
                "any of which may hold a hidden need"
            )
    return out


def _name_gender_problems(d: Domain) -> list[str]:
    """Where an attribute gives a person's gender, a first name would contradict it for some
    options ("Amelia" listed as a man): names then start with a title or an initial."""
    gendered = [a.key for a in d.attributes if PERSON_GENDER_LEVELS & set(a.levels)]
    if not gendered:
        return []
    return [
        f"domain {d.id}: names[{i}] {name!r}: attribute {gendered[0]!r} gives the person's "
        "gender, so a name must not carry a first name (expected a title or an initial, then "
        "the surname, e.g. 'Dr. Raman' or 'R. Alston')"
        for i, name in enumerate(d.names)
        if not _NAME_WITHOUT_FIRST_NAME.match(name)
    ]


def _name_claim_problems(d: Domain) -> list[str]:
    """A name drawn at random must not claim a value the option may not have: no level's code
    in parentheses ("S. Osei, PhD" listed as a marriage and family therapist, beside the level
    "clinical psychologist (PhD)") and no whole level text."""
    out = []
    for a in d.attributes:
        codes = {m for level in a.levels for m in _LEVEL_CODE.findall(level)}
        for i, name in enumerate(d.names):
            claimed = [c for c in codes if names_exactly(name, c)]
            claimed += [level for level in a.levels if names_exactly(name, level)]
            if claimed:
                out.append(
                    f"domain {d.id}: names[{i}] {name!r} claims {claimed[0]!r} of attribute "
                    f"{a.key!r}, which options take at random (expected a name without it)"
                )
    return out


def _need_option_problems(d: Domain, a: DomainAttribute, o: NeedOption) -> list[str]:
    where = f"domain {d.id}: attributes[{a.key}].needs[{o.key}]"
    out = []
    for field in ("statement", "ask_answer"):
        if not mentions(getattr(o, field), a.keywords):
            out.append(
                f"{where}.{field} does not mention the attribute (keywords {list(a.keywords)})"
            )
    for v in o.satisfied_by:
        if names_exactly(o.hint, a.levels[v]):
            out.append(f"{where}.hint names the satisfying value {a.levels[v]!r}")
    if len({o.statement, o.ask_answer, o.hint}) != 3:
        out.append(f"{where}: statement, ask_answer and hint must differ")
    return out


def text_pool(
    domain: Domain, request: str, restatements: Sequence[str], excludes: Sequence[str] = ()
) -> tuple[PoolNeed, ...]:
    """Bank v4: the domain's need pool less the needs a scenario's visible side rules out, so
    that ``scenario_text_problems`` never rejects drawn needs and the exact posterior stays
    exact: needs on an attribute the request mentions, needs with a sentence of the request or
    of the profile's restatements, and the needs (or all needs of the attributes) the profile
    ``excludes``."""
    taken = {_sentence_key(x) for text in (request, *restatements) for x in sentences(text)}
    out = []
    for need in need_pool(domain):
        if need.id in excludes or need.attribute in excludes:
            continue
        attribute, option = domain.need_option(need.id)
        if mentions(request, attribute.keywords):
            continue
        texts = (option.statement, option.ask_answer, option.hint, option.want)
        if any(
            _sentence_key(x) in taken for t in texts for x in sentences(t) if len(x.split()) > 2
        ):
            continue
        out.append(need)
    return tuple(out)


def scenario_pool(domain: Domain, scenario: Scenario) -> tuple[PoolNeed, ...]:
    """The pool ``scenario``'s needs were drawn from: ``text_pool`` for a bank v4 scenario
    (one whose attributes carry their questions; its profile is the one with its situation),
    the whole pool for an older one."""
    if scenario.bank_format < 4:
        return need_pool(domain)
    excludes = next(
        (p.excludes for p in domain.profiles if p.situation == scenario.context.situation), ()
    )
    return text_pool(
        domain,
        scenario.request,
        (scenario.requirement.restatement, scenario.favored.restatement),
        excludes,
    )


def _sentence_key(sentence: str) -> str:
    return " ".join(sentence.lower().split())
