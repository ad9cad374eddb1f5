"""Bank v4 realism rules (docs/domains.md#bank-v4-options-a-domain-expert-reads-as-real).

``domain_realism_problems`` checks a format-4 domain file: every pair of attributes recorded
once, kinds and the price model well formed, names belonging to a kind or to none, needs at
the strength people hold them (a hedged wish is never L1), a direction form (``want``) for
every need that says nothing about any option, and a natural question per attribute.

``option_kinds`` and ``option_problems`` check one drawn option: some kind admits its shown
values and its name, and its price sits within the price model's band for that kind.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence

from hear2act_env.scenarios.capacity import crossing_pairs
from hear2act_env.scenarios.domain import Domain, DomainAttribute, Kind, NeedOption
from hear2act_env.scenarios.quality import names_exactly

__all__ = [
    "HEDGES",
    "REFUSALS",
    "domain_realism_problems",
    "expected_price",
    "is_hedged",
    "names_of",
    "option_kinds",
    "option_problems",
    "price_band",
    "price_inversions",
]

#: Words that make a need a wish rather than a deal-breaker (a hedged need is never L1).
HEDGES = (
    "i'd rather",
    "i would rather",
    "i'd prefer",
    "i would prefer",
    "i'd like",
    "i would like",
    "i'd love",
    "ideally",
    "if possible",
    "if i can",
    "preferably",
    "would be nice",
    "nice to have",
    "i'd lean",
    "not a big deal",
    "a bonus",
    "i'd enjoy",
    "in the mood",
    "matters a bit",
    "matters a little",
    "somewhat",
)
_HEDGE = re.compile(r"(?<!\w)(" + "|".join(re.escape(h) for h in HEDGES) + r")(?!\w)")
#: Words that make a need a deal-breaker; a firm need is L1 only: an L2 or L3 need is said about
#: an option the user may still take.
FIRM = (
    "i need",
    "i can't",
    "i cannot",
    "i won't",
    "i will not",
    "i refuse",
    "has to",
    "have to",
    "must",
    "deal-breaker",
    "non-negotiable",
    "no way",
    "i don't do",
    "i can't do",
    "won't accept",
    "can't be more than",
    "can't be less than",
    "out of the question",
    "not an option",
)
_FIRM = re.compile(r"(?<!\w)(" + "|".join(re.escape(h) for h in FIRM) + r")(?!\w)")
#: Words that refuse outright. A need that may be L2 or L3 is said after "I'm not sure about
#: that one" or "That could work, I guess", so its statement and answer never refuse.
REFUSALS = (
    "i won't",
    "we won't",
    "i will not",
    "i refuse",
    "we refuse",
    "couldn't",
    "could not",
    "no way",
    "is out",
    "are out",
    "i'd never",
    "out of the question",
    "not an option",
    "deal-breaker",
    "non-negotiable",
)
_REFUSAL = re.compile(r"(?<!\w)(" + "|".join(re.escape(h) for h in REFUSALS) + r")(?!\w)")
#: How an assistant's question about an attribute opens: a yes/no or either/or question about a
#: preference, which "That doesn't matter much to me" answers naturally.
ASK_OPENINGS = (
    "does", "do", "is", "are", "would", "will", "any", "have", "has", "should", "can", "could",
)  # fmt: skip
#: A line that talks about the option at hand ("that one", "this plan"): the complaint form.
_DEICTIC = re.compile(
    r"(?<!\w)(that|this)\s+(one|option|choice|plan|place|policy|pick|spot)(?!\w)"
    r"|(?<!\w)(with|on|at|in|from|for|about|by|under) (that|this)(?=[\s.,!?;:]|$)"
    r"|(?<!\w)(it|that|this) (wouldn't|won't|doesn't|isn't|can't|would|will|has|gives|leaves)(?!\w)"
    r"|(?<!\w)that's (too|not|more|less|far|way|only|just|a|an|the)(?!\w)"
)
#: The assistant line bank v3 built from labels; a question must not read like it.
_LABEL_QUESTION = re.compile(r"^\s*what about\b", re.IGNORECASE)
_FIRST_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
#: A two-sided complaint ("either too early or too late"), which never says which side failed.
_EITHER_OR = re.compile(r"\beither\b.*\bor\b")
MAX_ASK_WORDS = 16
MAX_NOISE = 2
MIN_KINDS = 2
#: Attributes that must have a need allowed at L1: with fewer, the L1 need's attribute is easy
#: to guess from the pool alone.
MIN_L1_ATTRIBUTES = 8
#: Attributes whose L1-capable need must cross another (``capacity.crossing_pairs``): a table
#: can then hold the L1 need and the missed L3 need on one attribute, so the L1 need can sit
#: on most open columns rather than the few a table keeps for met needs.
MIN_L1_CROSSING = 7


def is_firm(need: NeedOption) -> bool:
    """Whether the need's statement says it as a deal-breaker (``FIRM``)."""
    return _FIRM.search(_plain(need.statement)) is not None


def is_hedged(need: NeedOption) -> bool:
    """Whether the need's words make it a wish (``HEDGES``) rather than a deal-breaker."""
    return _HEDGE.search(_plain(" ".join((need.statement, need.ask_answer, need.want)))) is not None


def names_of(domain: Domain) -> dict[str, str | None]:
    """Every name of ``domain`` -> the kind it belongs to (None: a name that implies nothing)."""
    out: dict[str, str | None] = dict.fromkeys(domain.names)
    for kind in domain.kinds:
        out.update(dict.fromkeys(kind.names, kind.key))
    return out


def expected_price(domain: Domain, kind: Kind, shown: Mapping[str, int]) -> float:
    """Where the price model puts an option of ``kind`` with ``shown`` values (key -> level),
    before clamping; the price attribute itself is not an input."""
    model = domain.price
    assert model is not None and kind.price is not None
    total = float(kind.price)
    for key, level in shown.items():
        points = model.points(key) if key != model.attribute else None
        if points is not None:
            total += points[level]
    return total


def typical_level(price: float) -> int:
    """The level an expected price rounds to (halves up: 1.5 is level 2)."""
    return math.floor(price + 0.5)


def price_band(domain: Domain, kind: Kind, shown: Mapping[str, int]) -> tuple[int, ...]:
    """The price levels an option of ``kind`` with ``shown`` values may take: within the model's
    noise of its expected level (rounded, clamped to the attribute's levels)."""
    model = domain.price
    assert model is not None
    n = len(domain.attribute(model.attribute).levels)
    centre = min(n - 1, max(0, typical_level(expected_price(domain, kind, shown))))
    return tuple(range(max(0, centre - model.noise), min(n, centre + model.noise + 1)))


def option_kinds(
    domain: Domain, shown: Mapping[str, int], name: str | None = None
) -> tuple[Kind, ...]:
    """The kinds that admit an option with ``shown`` values (attribute key -> level) and
    ``name``: every constrained shown value allowed, the name the kind's or a neutral one, and
    the price (when shown) within the kind's band."""
    owner = names_of(domain).get(name) if name is not None else None
    out = []
    for kind in domain.kinds:
        if owner is not None and owner != kind.key:
            continue
        if any(
            level not in kind.allowed(key, len(domain.attribute(key).levels))
            for key, level in shown.items()
        ):
            continue
        model = domain.price
        if model is not None and model.attribute in shown:
            if shown[model.attribute] not in price_band(domain, kind, shown):
                continue
        out.append(kind)
    return tuple(out)


#: Price levels by which one option must outprice another for ``price_inversions`` to count it.
INVERSION_LEVELS = 2


def price_inversions(
    domain: Domain, options: Sequence[tuple[Mapping[str, int], str]]
) -> list[tuple[int, int]]:
    """Pairs ``(a, b)`` of one table's options (``(shown, name)`` each) where ``a`` costs at
    least ``INVERSION_LEVELS`` price levels more than ``b`` although the price model expects it
    to cost no more (each option read as the admitting kind whose expected price is nearest its
    own): a reader sees a dearer option that offers no more. Empty without a shown price."""
    model = domain.price
    if model is None or not options or model.attribute not in options[0][0]:
        return []
    expected: list[float] = []
    for shown, name in options:
        kinds = option_kinds(domain, shown, name) or domain.kinds
        level = shown[model.attribute]
        priced = [expected_price(domain, k, shown) for k in kinds if k.price is not None]
        expected.append(min(priced, key=lambda e: abs(e - level)) if priced else float(level))
    out = []
    for a, (shown_a, _) in enumerate(options):
        for b, (shown_b, _) in enumerate(options):
            dearer = shown_a[model.attribute] - shown_b[model.attribute] >= INVERSION_LEVELS
            if a != b and dearer and expected[a] <= expected[b]:
                out.append((a, b))
    return out


def option_problems(domain: Domain, shown: Mapping[str, int], name: str) -> list[str]:
    """Why no kind of ``domain`` admits the option (empty when one does)."""
    if option_kinds(domain, shown, name):
        return []
    out = []
    owner = names_of(domain).get(name)
    kinds = [k for k in domain.kinds if owner in (None, k.key)]
    for kind in kinds:
        bad = [
            f"{key}={domain.attribute(key).levels[level]!r}"
            for key, level in shown.items()
            if level not in kind.allowed(key, len(domain.attribute(key).levels))
        ]
        if bad:
            out.append(f"kind {kind.key!r} takes no {', '.join(bad)}")
        elif domain.price is not None and domain.price.attribute in shown:
            band = price_band(domain, kind, shown)
            levels = domain.attribute(domain.price.attribute).levels
            out.append(
                f"kind {kind.key!r} prices it at {[levels[i] for i in band]}, not "
                f"{levels[shown[domain.price.attribute]]!r}"
            )
    return out or [f"name {name!r} belongs to kind {owner!r}, which is not in the domain"]


def domain_realism_problems(domain: Domain) -> list[str]:
    """Problems of a format-4 domain file under the bank v4 rules (empty for format 3)."""
    if domain.format < 4:
        return []
    where = f"domain {domain.id}"
    out: list[str] = []
    if domain.name_rules:
        out.append(f"{where}: name_rules: format 4 puts names that imply a value in a kind")
    for a in domain.attributes:
        out.extend(_attribute_problems(where, a))
    with_l1 = [a.key for a in domain.attributes if any("L1" in n.priorities for n in a.needs)]
    if len(with_l1) < MIN_L1_ATTRIBUTES:
        out.append(
            f"{where}: attributes: {len(with_l1)} attributes have a need allowed at L1 "
            f"({with_l1}); at least {MIN_L1_ATTRIBUTES} must (a deal-breaker worded as one)"
        )
    crossing = [
        a.key for a in domain.attributes if any("L1" in h.priorities for h, _ in crossing_pairs(a))
    ]
    if len(crossing) < MIN_L1_CROSSING:
        out.append(
            f"{where}: attributes: {len(crossing)} attributes have an L1-capable need that "
            f"crosses an L3 one ({crossing}); at least {MIN_L1_CROSSING} must (docs/domains.md)"
        )
    out.extend(_kind_problems(domain))
    out.extend(_price_problems(domain))
    out.extend(_pair_problems(domain))
    out.extend(_sentence_problems(domain))
    return out


def _attribute_problems(where: str, a: DomainAttribute) -> list[str]:
    out = []
    at = f"{where}: attributes[{a.key}]"
    ask = a.ask.strip()
    first = ask.split(" ", 1)[0].lower() if ask else ""
    if (
        not ask.endswith("?")
        or _LABEL_QUESTION.match(ask)
        or len(ask.split()) > MAX_ASK_WORDS
        or first not in ASK_OPENINGS
    ):
        out.append(
            f"{at}.ask: {a.ask!r}: expected a yes/no or either/or question about the user's "
            f"preference (opening with one of {list(ASK_OPENINGS)}), at most {MAX_ASK_WORDS} "
            "words, ending in '?', never 'What about ...': 'That doesn't matter much to me' "
            "must answer it naturally"
        )
    for n in a.needs:
        nat = f"{at}.needs[{n.key}]"
        if not n.want.strip():
            if "L1" in n.priorities:
                out.append(
                    f"{nat}.want: missing (a need that may be L1 needs its words without a "
                    "claim about any option)"
                )
        elif _DEICTIC.search(_plain(n.want)):
            out.append(
                f"{nat}.want: {n.want!r} talks about the option at hand; it must be true of "
                "every option (say what is needed, not what 'that one' lacks)"
            )
        if n.want and n.want in (n.statement, n.ask_answer, n.hint):
            out.append(f"{nat}.want: must differ from statement, ask_answer and hint")
        for v in n.satisfied_by:
            if n.want and names_exactly(n.want, a.levels[v]):
                out.append(f"{nat}.want names the satisfying value {a.levels[v]!r}")
        firm = _FIRM.search(_plain(f"{n.statement} {n.ask_answer}"))
        if firm and {"L2", "L3"} & set(n.priorities):
            out.append(
                f"{nat}.priorities: a deal-breaker ({firm.group(0)!r}) cannot be L2 or L3 (said "
                "after 'I'm not sure about that one' or 'That could work, I guess' about an "
                "option the user still takes); keep L1 only where it is a deal-breaker for "
                "whoever holds it, else word it as a want"
            )
        if "L1" in n.priorities and _EITHER_OR.search(_plain(n.hint)):
            out.append(
                f"{nat}.hint: {n.hint!r} says 'either ... or': a complaint is said about one "
                "failing option, so it names what is wanted, true on whichever side it fails"
            )
        refusal = _REFUSAL.search(_plain(f"{n.statement} {n.ask_answer}"))
        if refusal and {"L2", "L3"} & set(n.priorities):
            out.append(
                f"{nat}.priorities: a refusal ({refusal.group(0)!r}) cannot be L2 or L3 (said "
                "after 'I'm not sure about that one'); word it as what is wanted, or keep L1 only"
            )
        hedge = _HEDGE.search(_plain(" ".join((n.statement, n.ask_answer, n.want))))
        if "L1" in n.priorities and hedge:
            out.append(
                f"{nat}.priorities: a hedged wish ({hedge.group(0)!r}) cannot be L1 (L1 is a deal-breaker); drop L1 or word it as one"
            )
    return out


def _plain(text: str) -> str:
    """``text`` lowercased with typographic apostrophes made plain."""
    return text.lower().replace("\u2019", "'")


def _kind_problems(domain: Domain) -> list[str]:
    where = f"domain {domain.id}: kinds"
    out = []
    if len(domain.kinds) < MIN_KINDS:
        out.append(f"{where}: need at least {MIN_KINDS} kinds of option, got {len(domain.kinds)}")
    keys = [k.key for k in domain.kinds]
    if len(set(keys)) != len(keys):
        out.append(f"{where}: duplicated keys in {keys}")
    seen: dict[str, str] = dict.fromkeys(domain.names, "names")
    attrs = {a.key: a for a in domain.attributes}
    for kind in domain.kinds:
        at = f"{where}[{kind.key}]"
        for name in kind.names:
            if name in seen:
                out.append(f"{at}.names: {name!r} is also in {seen[name]}")
            seen[name] = f"kinds[{kind.key}].names"
        constrained = [ls.attribute for ls in kind.levels]
        if len(set(constrained)) != len(constrained):
            out.append(f"{at}.levels: an attribute is listed twice in {constrained}")
        for ls in kind.levels:
            a = attrs.get(ls.attribute)
            if a is None:
                out.append(f"{at}.levels: {ls.attribute!r} is not an attribute of the domain")
            elif (
                not ls.levels
                or len(set(ls.levels)) != len(ls.levels)
                or any(not 0 <= v < len(a.levels) for v in ls.levels)
            ):
                out.append(
                    f"{at}.levels[{ls.attribute}]: expected distinct indices in "
                    f"[0, {len(a.levels)}), got {list(ls.levels)}"
                )
        if domain.price is not None and kind.price is None:
            out.append(f"{at}.price: the domain has a price model, so every kind needs a base")
    if len(domain.names) < 1 and not any(k.names for k in domain.kinds):
        out.append(f"{where}: no names at all")
    return out


def _price_problems(domain: Domain) -> list[str]:
    model = domain.price
    where = f"domain {domain.id}: price"
    if model is None:
        return []
    attrs = {a.key: a for a in domain.attributes}
    priced = attrs.get(model.attribute)
    if priced is None:
        return [f"{where}.attribute: {model.attribute!r} is not an attribute of the domain"]
    out = []
    numbers = [_FIRST_NUMBER.search(level) for level in priced.levels]
    if all(numbers):
        values = [float(m.group(0).replace(",", "")) for m in numbers]  # type: ignore[union-attr]
        if values != sorted(values):
            out.append(f"{where}.attribute: {model.attribute!r} levels must go from cheapest up")
    if not 0 <= model.noise <= MAX_NOISE:
        out.append(f"{where}.noise: expected 0 to {MAX_NOISE}, got {model.noise}")
    seen = set()
    for offer in model.offer:
        a = attrs.get(offer.attribute)
        if a is None or offer.attribute == model.attribute:
            out.append(f"{where}.offer: {offer.attribute!r} is not another attribute")
            continue
        if offer.attribute in seen:
            out.append(f"{where}.offer: {offer.attribute!r} is listed twice")
        seen.add(offer.attribute)
        if len(offer.points) != len(a.levels):
            out.append(
                f"{where}.offer[{offer.attribute}].points: expected {len(a.levels)} numbers "
                f"(one per level), got {len(offer.points)}"
            )
    for kind in domain.kinds:
        if kind.price is not None and not 0 <= kind.price <= len(priced.levels) - 1:
            out.append(
                f"domain {domain.id}: kinds[{kind.key}].price: expected a level index in "
                f"[0, {len(priced.levels) - 1}], got {kind.price}"
            )
    uncovered = [
        priced.levels[lv]
        for lv in range(len(priced.levels))
        if not any(
            kind.price is not None
            and abs(lv - typical_level(kind.price)) <= model.noise
            and lv in kind.allowed(priced.key, len(priced.levels))
            for kind in domain.kinds
        )
    ]
    if uncovered:
        out.append(
            f"{where}: no kind's base price rounds to within noise ({model.noise}) of {uncovered}: an "
            "option can show such a price only when all its priced attributes push one way; "
            "spread the kinds' bases (or add a kind) so every price level is an ordinary one"
        )
    return out


def _pair_problems(domain: Domain) -> list[str]:
    where = f"domain {domain.id}"
    keys = [a.key for a in domain.attributes]
    wanted = {frozenset(p) for p in itertools.combinations(keys, 2)}
    seen: dict[frozenset[str], str] = {}
    out = []

    def record(pair: Sequence[str], at: str) -> frozenset[str] | None:
        key = frozenset(pair)
        if len(pair) != 2 or len(key) != 2 or not key <= set(keys):
            out.append(f"{where}: {at}: {list(pair)} is not a pair of two attributes")
            return None
        if key in seen:
            out.append(f"{where}: {at}: pair {sorted(key)} is recorded twice ({seen[key]})")
        seen[key] = at
        return key

    for i, pair in enumerate(domain.compatible):
        record(pair, f"compatible[{i}]")
    coherent = {frozenset((r.when.attribute, r.forbid.attribute)) for r in domain.coherence}
    by_kinds = set()
    for kind in domain.kinds:
        constrained = [ls.attribute for ls in kind.levels]
        by_kinds |= {frozenset(p) for p in itertools.combinations(constrained, 2)}
    for i, rule in enumerate(domain.pair_rules):
        at = f"pair_rules[{i}]"
        key = record(rule.pair, at)
        if key is None:
            continue
        if not rule.why.strip():
            out.append(f"{where}: {at}.why: say in words why the values do not go together")
        if rule.by == "coherence" and key not in coherent:
            out.append(f"{where}: {at}: no coherence rule relates {sorted(key)}")
        if rule.by == "kinds" and key not in by_kinds:
            out.append(f"{where}: {at}: no kind constrains both of {sorted(key)}")
        if rule.by == "price":
            model = domain.price
            if model is None or model.attribute not in key:
                out.append(f"{where}: {at}: the price model does not relate {sorted(key)}")
            elif model.points(next(iter(key - {model.attribute}))) is None:
                out.append(f"{where}: {at}: the price model gives the other attribute no points")
    for key in coherent - {k for k, at in seen.items() if "pair_rules" in at}:
        out.append(f"{where}: coherence relates {sorted(key)}: record it in pair_rules")
    missing = sorted(sorted(p) for p in wanted - set(seen))
    if missing:
        out.append(
            f"{where}: {len(missing)} pairs of attributes are not recorded (compatible or "
            f"pair_rules), e.g. {missing[:3]}"
        )
    return out


def _sentence_problems(domain: Domain) -> list[str]:
    """Every need sentence of the domain is said by one need only (two needs of one scenario
    must never repeat each other)."""
    seen: dict[str, str] = {}
    out = []
    for a in domain.attributes:
        for n in a.needs:
            for field in ("statement", "ask_answer", "hint", "want"):
                text = getattr(n, field).strip().lower()
                if not text:
                    continue
                at = f"attributes[{a.key}].needs[{n.key}].{field}"
                if text in seen and not seen[text].startswith(
                    f"attributes[{a.key}].needs[{n.key}]"
                ):
                    out.append(f"domain {domain.id}: {at} repeats {seen[text]}")
                seen.setdefault(text, at)
    return out
