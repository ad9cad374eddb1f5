"""The perception audit with the dialogue before each clip (``--context``) and with models
beside the people: the context is blind to the class, the page and a model's prompt share one
set of instructions, model label files are read strictly, and a model's scores are exactly
the hand-computed ones."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from hear2act_agents.audit_labeller import build_label_messages, parse_label, prompt_text
from hear2act_env.errors import ConfigError
from hear2act_env.listen.audit import folder as pa
from hear2act_env.listen.audit import instructions as words
from hear2act_env.listen.audit import model_labels as ml
from hear2act_env.listen.audit import scores as sc
from tests.listen.test_audit import _hand_labels

N = 10


@pytest.fixture(scope="module")
def base_context_audit(tmp_path_factory) -> Path:
    """A 10-clip espeak audit made with --context (WAV, for speed)."""
    root = tmp_path_factory.mktemp("audit-context")
    folder = root / "base"
    pa.create_audit(folder, clips=N, seed=0, context=True, cache_dir=root / "cache", compress=False)
    return folder


@pytest.fixture
def context_dir(base_context_audit, tmp_path) -> Path:
    folder = tmp_path / "audit"
    shutil.copytree(base_context_audit, folder)
    return folder


def _client(folder: Path, annotator: str | None = None):
    from starlette.testclient import TestClient

    from hear2act_env.listen.audit.app import build_app

    return TestClient(build_app(pa.Audit.load(folder), annotator))


# --- context ------------------------------------------------------------------------------


def test_context_is_the_dialogue_before_the_clip_and_blind_to_its_class(context_dir):
    audit = pa.Audit.load(context_dir)
    assert audit.context and audit.settings["context"] is True
    by_context: dict[tuple[str, ...], list[bool]] = defaultdict(list)
    by_pair: dict[int, set[tuple[str, ...]]] = defaultdict(set)
    for clip in audit.clips:
        lines = clip.context
        assert lines[0].startswith("User: ") and lines[1].startswith("Assistant: I'd suggest")
        assert lines[-1].startswith("Assistant: ")  # the suggestion the clip answers
        assert all(re.fullmatch(r"(User|Assistant): \S.*", line) for line in lines)
        by_context[lines].append(clip.resolved)
        by_pair[clip.pair].add(lines)
        assert audit.public(clip.id)["context"] == list(lines)
    assert all(len(contexts) == 1 for contexts in by_pair.values())  # a pair shares its lines
    # so the context alone predicts the class at exactly chance: each context has as many
    # resolved as unresolved clips
    assert all(classes.count(True) == classes.count(False) for classes in by_context.values())


def test_same_clips_with_and_without_context(context_dir, tmp_path):
    plain = tmp_path / "plain"
    pa.create_audit(plain, clips=N, seed=0, cache_dir=tmp_path / "c", compress=False)
    a, b = pa.Audit.load(plain), pa.Audit.load(context_dir)
    key = lambda audit: sorted((c.pair, c.resolved, repr(c.utterance)) for c in audit.clips)  # noqa: E731
    assert key(a) == key(b)
    assert not a.context and all(c.context == () for c in a.clips)
    assert set(a.public(a.clips[0].id)) == {"id", "audio", "text"}
    assert "context" not in json.loads((plain / "clips.json").read_text())["clips"][0]


def test_context_is_recorded_and_a_change_is_refused(context_dir):
    audit, new = pa.open_or_create(context_dir)
    assert not new and audit.context
    with pytest.raises(ConfigError, match="--context"):
        pa.open_or_create(context_dir, context=False)
    data = json.loads((context_dir / "clips.json").read_text())
    data["clips"][0]["context"] = ["System: hello"]
    (context_dir / "clips.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="context"):
        pa.Audit.load(context_dir)
    data["clips"][0].pop("context")
    (context_dir / "clips.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="a clip has no context"):
        pa.Audit.load(context_dir)


def test_page_shows_the_context_and_serves_nothing_that_depends_on_the_class(context_dir, tmp_path):
    swapped = tmp_path / "swapped"
    shutil.copytree(context_dir, swapped)
    data = json.loads((swapped / "clips.json").read_text())
    by_pair: dict[int, list[dict]] = defaultdict(list)
    for c in data["clips"]:
        by_pair[c["pair"]].append(c)
    for a, b in by_pair.values():
        for key in ("delivery", "resolved", "reference"):
            a[key], b[key] = b[key], a[key]
    (swapped / "clips.json").write_text(json.dumps(data))
    texts = []
    for folder in (context_dir, swapped):
        client = _client(folder, "gus")
        seen = [client.get("/").text]
        for k in range(N):
            clip = client.get("/api/state").json()["clip"]
            assert set(clip) == {"id", "audio", "text", "context"}
            r = client.post("/api/label", json={"clip": clip["id"], "label": pa.LABELS[k % 2]})
            seen += [r.text]
        texts.append(seen)
    assert texts[0] == texts[1]
    page = texts[0][0]
    audit = pa.Audit.load(context_dir)
    first = audit.by_id[audit.order("gus")[0]]
    assert 'id="clip-context" class="context">' in page  # shown, not hidden
    assert all(f"<li>{line}</li>" in page.replace("&#39;", "'") for line in first.context)


# --- one set of instructions --------------------------------------------------------------


def test_people_and_models_get_the_same_instructions(context_dir, audit_plain):
    for folder, context in ((context_dir, True), (audit_plain, False)):
        audit = pa.Audit.load(folder)
        page = _client(folder, "hal").get("/").text.replace("&#39;", "'")
        clip = audit.by_id[audit.order("hal")[0]]
        system, user = build_label_messages(clip, context)
        for paragraph in words.instructions(context):
            assert paragraph in page and paragraph in system["content"]
        assert (words.CONTEXT in page) == context == (words.CONTEXT in system["content"])
        for label, meaning in words.ANSWERS.items():
            assert meaning in page and f"{label} ({meaning})" in system["content"]
        assert words.PAGE in page and words.PAGE not in system["content"]
        assert f'The user says: "{clip.utterance.text}"' in user["content"]
        assert all(line in user["content"] for line in clip.context) and (
            bool(clip.context) == context
        )
        assert system["content"] == prompt_text(context)


@pytest.fixture
def audit_plain(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("audit-plain")
    pa.create_audit(root / "a", clips=4, seed=1, cache_dir=root / "c", compress=False)
    return root / "a"


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        # one label, as a whole word, in any case, with any punctuation around it
        ("Resolved.", "resolved"),
        ("unresolved", "unresolved"),
        ("RESOLVED", "resolved"),
        ("I'd say **Unresolved**: the voice hesitates.", "unresolved"),
        ("Label: RESOLVED (the need sounds met)", "resolved"),
        ('"resolved"', "resolved"),
        ("Answer: `unresolved`!", "unresolved"),
        ("Resolved. Definitely resolved.", "resolved"),  # the same label twice
        # a label then an explanation that does not name the other one
        ("Unresolved: the user does not sound satisfied.", "unresolved"),
        ("Resolved - no hesitation in the voice.", "resolved"),
        # a negation directly before the only label reverses it
        ("The need is not resolved.", "unresolved"),
        ("Not unresolved.", "resolved"),
        ("It isn't resolved", "unresolved"),
        ("It isn’t resolved", "unresolved"),
        ("never resolved", "unresolved"),
        # both labels: no answer, whatever comes first, negated or not
        ("resolved or unresolved, hard to say", None),
        ("unresolved or resolved", None),
        ("It's not resolved, it's unresolved", None),
        ("Unresolved, although the words say it is resolved.", None),
        ("Resolved (not unresolved).", None),
        ("resolved/unresolved", None),
        ("RESOLVED? UNRESOLVED?", None),
        # one label read two ways: no answer
        ("Resolved? Not resolved.", None),
        # a negation elsewhere before the label in its clause: no answer, never a guess
        ("I don't think it's resolved", None),
        ("not fully resolved", None),
        ("It is not not resolved", None),
        ("The user does not sound happy so unresolved", None),
        # neither label, or a label only inside another word: no answer
        ("I cannot tell.", None),
        ("irresolvedness", None),
        ("unresolvedness", None),
        ("resolvedly", None),
        ("un-resolved", None),
        ("well-resolved", None),
        ("resolved_label", None),
        ("resolve", None),
        ("", None),
        ("   ", None),
        (None, None),
    ],
)
def test_parse_label(reply, label):
    assert parse_label(reply) == label


# --- model labels and their scores --------------------------------------------------------


def _hand_case(folder: Path) -> dict[str, list[str]]:
    """The hand-made case of test_audit.py (alice, bob, the reference perceiver) plus a model
    ``m`` that labels all 10 clips: R0..R3 resolved, R4 no answer, U0..U2 unresolved, U3
    resolved, U4 unresolved."""
    ids = _hand_labels(folder)
    res, unres = ids["res"], ids["unres"]
    audit = pa.Audit.load(folder)
    _, store = ml.open_model_store(audit, "openai:m", {"temperature": 0}, prompt_text(True))
    m = {i: "resolved" for i in res[:4]} | {res[4]: None} | {i: "unresolved" for i in unres}
    m[unres[3]] = "resolved"
    for clip in store.order:
        store.add(clip, m[clip], reply=str(m[clip]))
    return {"res": res, "unres": unres}


def test_model_scores_match_the_hand_computation(context_dir):
    _hand_case(context_dir)
    score = sc.score_audit(context_dir, resamples=500)
    (model,) = score.models
    assert model.name == "openai:m (temperature=0)" and model.context is True
    assert (model.n, model.no_answer) == (10, 1)
    # against the truth: R4 (no answer) and U3 are wrong
    assert (model.resolved.value, model.unresolved.value, model.overall.value) == (0.8, 0.8, 0.8)
    # against the reference perceiver: agree 6/10; three categories: model (1: .5, 0: .4,
    # none: .1), reference (1: .4, 0: .6) -> p_e = .2 + .24 = .44 -> (.6 - .44) / .56
    assert model.agreement_reference.value == pytest.approx(0.6)
    assert model.kappa_reference.value == pytest.approx(0.16 / 0.56)
    # against alice (10 clips): agree 7/10, p_e = .5*.6 + .4*.4 = .46 -> .24/.54;
    # against bob (8 clips): agree 7/8, p_e = .5*.5 + 3/8*.5 = .4375 -> .4375/.5625
    assert model.agreement_people.value == pytest.approx((0.7 + 0.875) / 2)
    assert model.kappa_people.value == pytest.approx((0.24 / 0.54 + 0.4375 / 0.5625) / 2)
    pairs = {(p.a, p.b): p for p in score.pairs}
    mp = pairs[("openai:m (temperature=0)", "bob")]
    assert (mp.kind, mp.n) == ("model-person", 8) and mp.kappa.value == pytest.approx(7 / 9)
    # the people's figures are those of test_audit.py's hand case, unchanged by the model
    assert score.human["overall"].value == pytest.approx(0.8875)
    assert score.human["agreement_annotators"].value == pytest.approx(0.75)
    assert score.model["overall"].value == pytest.approx(0.7)
    for e in (model.overall, model.kappa_people, model.agreement_reference):
        assert e.low <= e.value <= e.high and e.high > e.low
    table = score.markdown()
    assert "| Reference perceiver | openai:m (temperature=0) |" in table
    assert "| No answer |  |  | 1 of 10 |" in table
    assert "heard with the dialogue before each clip" in table
    data = score.to_dict()
    row = data["models"]["openai:m (temperature=0)"]
    assert row["no_answer"] == 1 and row["overall"]["value"] == pytest.approx(0.8)
    json.dumps(data, allow_nan=False)


def test_a_model_alone_is_scored_and_nothing_at_all_is_an_error(context_dir):
    with pytest.raises(ConfigError, match="no labels yet"):
        sc.score_audit(context_dir)
    audit = pa.Audit.load(context_dir)
    _, store = ml.open_model_store(audit, "qwen2-audio:/m", {}, prompt_text(True))
    for clip in store.order[:4]:
        store.add(clip, "unresolved")
    score = sc.score_audit(context_dir, resamples=200)
    (model,) = score.models
    assert model.n == 4 and score.labelled == 4 and score.annotators == []
    assert model.agreement_people is None and score.human["overall"] is None
    assert "| Overall | n/a |" in score.markdown()


def test_model_records_are_read_strictly(context_dir):
    audit = pa.Audit.load(context_dir)
    run, store = ml.open_model_store(audit, "openai:m", {"api_key": "sk-abcdefghijkl"}, "x")
    assert "sk-abcdefghijkl" not in (context_dir / "models" / f"{run.slug}.json").read_text()
    store.add(store.order[0], "resolved")
    # the same model reopens its store; other instructions are refused by name
    _, again = ml.open_model_store(audit, "openai:m", {"api_key": "sk-abcdefghijkl"}, "x")
    assert again.labels == {store.order[0]: "resolved"}
    with pytest.raises(ConfigError, match="another instructions"):
        ml.open_model_store(audit, "openai:m", {"api_key": "sk-abcdefghijkl"}, "y")
    # other settings: another row, another file
    other, _ = ml.open_model_store(audit, "openai:m", {"temperature": 1}, "x")
    assert other.slug != run.slug
    labels = context_dir / "models" / f"{run.slug}.jsonl"
    labels.write_text(labels.read_text() + '{"clip": "nope", "label": "resolved"}\n')
    with pytest.raises(ConfigError, match=rf"{run.slug}.jsonl:2: clip 'nope'"):
        sc.score_audit(context_dir)
    labels.write_text(json.dumps({"clip": store.order[0], "label": "maybe"}) + "\n")
    with pytest.raises(ConfigError, match=r"\.jsonl:1: expected"):
        sc.score_audit(context_dir)
    labels.unlink()
    os.symlink("/etc/hostname", labels)
    with pytest.raises(ConfigError):
        sc.score_audit(context_dir)
    labels.unlink()
    meta = context_dir / "models" / f"{run.slug}.json"
    meta.write_text('{"format": "hear2act-audit-model-v1", "spec": 3}')
    labels.write_text("")
    with pytest.raises(ConfigError, match="not a readable model record"):
        sc.score_audit(context_dir)
