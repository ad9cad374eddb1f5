"""The decision prompt: shared instructions, the evidence block per access condition."""

from __future__ import annotations

import difflib

import gymnasium as gym
import pytest

import hear2act_env  # noqa: F401  (registers the env ids)
from hear2act_agents.llm.prompting import (
    build_decision_messages,
    build_perception_messages,
    evidence_block,
    first_sentence,
    parse_options,
    reminder_message,
)
from hear2act_env.scenarios.bank import load_bank


def _obs(env_id: str, seed: int = 7, steps=()):
    env = gym.make(env_id)
    obs, _ = env.reset(seed=seed)
    for a in steps:
        obs, *_ = env.step(a)
    return obs


def _changed_lines(a: str, b: str) -> list[str]:
    diff = difflib.ndiff(a.splitlines(), b.splitlines())
    return [d for d in diff if d.startswith(("+ ", "- "))]


@pytest.mark.parametrize("realization", ["Prosody", "Explicit"])
def test_t_and_ts_prompts_differ_only_in_the_evidence_block(realization):
    steps = [(0, 0, 0), (2, 3, 0)]
    t = build_decision_messages(_obs(f"Hear2Act-{realization}-Text-v0", steps=steps))
    ts_obs = _obs(f"Hear2Act-{realization}-TextState-v0", steps=steps)
    ts = build_decision_messages(ts_obs)
    assert t[0] == ts[0]  # the system prompt (instructions, options, format) is identical
    block = evidence_block(ts_obs)
    assert block and block in ts[1]["content"]
    # removing the evidence block (and the blank line before it) gives the T message back
    assert ts[1]["content"].replace("\n\n" + block, "") == t[1]["content"]
    changed = _changed_lines(t[1]["content"], ts[1]["content"])
    assert all(line[2:] in block for line in changed if line.strip("+- "))


def test_state_block_names_the_tag_and_defines_resolved():
    obs = _obs("Hear2Act-Prosody-TextState-v0")
    text = evidence_block({**obs, "state": 2})
    assert "reluctant (unresolved)" in text
    assert "resolved" in text and "unresolved" in text
    assert "latest turn: resolved. A resolved" in evidence_block({**obs, "state": 1})
    assert evidence_block({**obs, "state": 0}) == ""  # withheld: no label at all


def test_perceived_and_audio_evidence():
    obs = _obs("Hear2Act-Prosody-Text-v0")
    text = evidence_block({**obs, "perceived": "The user sounds hesitant."})
    assert "The user sounds hesitant." in text
    override = evidence_block(obs, perceived="Sounds content.")
    assert "Sounds content." in override
    assert "attached" in evidence_block(obs, audio_attached=True)
    assert evidence_block(obs) == ""


def test_text_and_spoken_assistants_action_menus():
    obs = _obs("Hear2Act-Prosody-Text-v0")
    text = build_decision_messages(obs, allow_clarify=True)[0]["content"]
    spoken = build_decision_messages(obs, allow_clarify=False)[0]["content"]
    assert "CLARIFY" in text and "CLARIFY" not in spoken
    for word in ("ASK", "RECOMMEND", "CONFIRM", "[ACTION:", "[OPTION:", "[TOPIC:", "OPEN"):
        assert word in text and word in spoken
    assert obs["domain"] in text and obs["options"] in text
    assert "CLARIFY" not in reminder_message(False)["content"]


def test_prompt_lists_the_attributes_and_transcript():
    obs = _obs("Hear2Act-Prosody-Text-v0")
    messages = build_decision_messages(obs)
    info = parse_options(obs["options"])
    for label in info.attributes:
        assert f"- {label}" in messages[0]["content"]
    assert obs["transcript"] in messages[1]["content"]


def test_parse_options_on_the_whole_bank():
    for scenario in load_bank():
        info = parse_options(scenario.options_text())
        assert info.n_options == len(scenario.candidates) == 11
        assert list(info.attributes) == [a.label for a in scenario.attributes]
        assert list(info.names) == [c.name for c in scenario.candidates]
        assert all(len(info.values[a]) == 11 for a in info.attributes)


def test_prompts_are_written_in_our_own_words():
    """Distinctive phrases of the paper's prompt cards must not appear."""
    obs = _obs("Hear2Act-Prosody-TextState-v0")
    texts = [m["content"] for m in build_decision_messages({**obs, "perceived": "x"})]
    texts += [m["content"] for m in build_perception_messages(obs["transcript"], "flights")]
    texts.append(reminder_message()["content"])
    paper = [
        "task-oriented service assistant",
        "best fits their needs based only on the information available",
        "Choose exactly ONE action per turn",
        "Ask one focused question",
        "only when the user has clearly accepted it",
        "CONCERN STATE",
        "Listen to the current user audio in the context of the dialogue",
        "Base your judgment only on the user's vocal delivery",
        "personal, demographic, psychological",
        "AUDIO-INFERRED STATE",
        "DIALOGUE TRANSCRIPT",
    ]
    for text in texts:
        for phrase in paper:
            assert phrase.lower() not in text.lower(), phrase


def test_perception_prompt_asks_for_one_sentence_about_delivery():
    msgs = build_perception_messages("User: hi\nAssistant: hello", "city hotels")
    assert "city hotels" in msgs[0]["content"]
    assert "User: hi" in msgs[1]["content"] and "one short sentence" in msgs[1]["content"]
    assert "about" not in build_perception_messages("x")[0]["content"].split(".")[0]


def test_first_sentence():
    assert first_sentence("<think>hmm</think> The user sounds content. More.") == (
        "The user sounds content."
    )
    assert first_sentence("**Unresolved**: she hesitates") == "Unresolved : she hesitates"
    assert first_sentence("") == ""
