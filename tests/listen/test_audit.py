"""``hear2act audit``: the clip set, the label store, the scores, the app and the browser."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from hear2act_cli import audit as audit_cli
from hear2act_env.errors import ConfigError
from hear2act_env.listen.audit import folder as pa
from hear2act_env.listen.audit import scores as sc
from hear2act_env.protocol.realizer import ACCEPTANCE_POOL
from hear2act_env.scenarios.bank import load_bank
from hear2act_env.speech.bank_perception import collect_clips
from hear2act_env.speech.perception import is_resolved

N = 10


class ToneRenderer:
    """A tiny renderer for the ``--renderer MODULE:NAME`` path: a tone per delivery."""

    name = "tone"
    version = "1"
    sample_rate = 16000

    def render(self, utt):
        t = np.arange(8000) / 16000
        pitch = 180.0 + 10 * len(utt.delivery)
        return (0.3 * np.sin(2 * np.pi * pitch * t)).astype(np.float32)


@pytest.fixture(scope="module")
def base_audit(tmp_path_factory) -> Path:
    """A 10-clip espeak audit (WAV, for speed), made once; tests copy it."""
    root = tmp_path_factory.mktemp("audit")
    folder = root / "base"
    pa.create_audit(folder, clips=N, seed=0, cache_dir=root / "cache", compress=False)
    return folder


@pytest.fixture
def audit_dir(base_audit, tmp_path) -> Path:
    folder = tmp_path / "audit"
    shutil.copytree(base_audit, folder)
    return folder


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hear2act")
    audit_cli.add(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["audit", *argv])


# --- 1. the clip set ----------------------------------------------------------------------


def test_clip_set_is_balanced_paired_from_the_test_split_and_seeded():
    bank = load_bank()
    specs = pa.select_pairs(bank, 40, seed=3)
    assert len(specs) == 40
    assert sum(s.resolved for s in specs) == 20
    assert all(is_resolved(s.utterance) == s.resolved for s in specs)
    pairs: dict[int, list[pa.ClipSpec]] = {}
    for s in specs:
        pairs.setdefault(s.pair, []).append(s)
    assert len(pairs) == 20
    keys = set()
    for a, b in pairs.values():
        assert (a.utterance.text, a.utterance.persona, a.utterance.variation) == (
            b.utterance.text,
            b.utterance.persona,
            b.utterance.variation,
        )
        assert a.resolved != b.resolved and a.utterance.delivery != b.utterance.delivery
        assert a.utterance.text in ACCEPTANCE_POOL  # only the voice differs
        keys.add((a.utterance.text, a.utterance.persona, a.utterance.variation))
    assert len(keys) == 20  # 20 distinct lines
    # every line is a test-split reaction; the train split plays no part
    test = [s for s in bank if s.split == "test"]
    seen = {(u.text, u.persona, u.variation) for u, _ in collect_clips(test, "prosody", 1.0, 6, 3)}
    assert keys <= seen
    assert pa.select_pairs(test, 40, seed=3) == specs
    with pytest.raises(ConfigError, match="test-split"):
        pa.select_pairs([s for s in bank if s.split == "train"], 40, seed=3)
    # deterministic for a seed, different for another
    assert pa.select_pairs(bank, 40, seed=3) == specs
    assert pa.select_pairs(bank, 40, seed=4) != specs
    for bad in (0, 7, -2):
        with pytest.raises(ConfigError, match="--clips"):
            pa.select_pairs(bank, bad, seed=0)


def test_ids_and_files_are_opaque(base_audit, tmp_path):
    audit = pa.Audit.load(base_audit)
    assert len(audit.clips) == N and sum(c.resolved for c in audit.clips) == N // 2
    files = sorted(p.name for p in (base_audit / "audio").iterdir())
    assert files == sorted(f"{c.id}.wav" for c in audit.clips)
    for c in audit.clips:
        assert re.fullmatch(r"[0-9a-f]{16}", c.id)
        assert c.audio == f"audio/{c.id}.wav"
    # the ids come from a secret salt: the same clip set in a new folder gets new ids
    again = pa.create_audit(tmp_path / "again", clips=N, seed=0, compress=False, cache_dir=tmp_path)
    same = {(c.utterance, c.resolved) for c in again.clips}
    assert same == {(c.utterance, c.resolved) for c in audit.clips}
    assert not {c.id for c in again.clips} & {c.id for c in audit.clips}
    assert again.salt != audit.salt and len(audit.salt) == 32
    # twins with a swapped delivery and class would get unrelated ids, not related ones
    a, b = (c for c in audit.clips if c.pair == 0)
    assert pa.clip_id(audit.salt, a.utterance) == a.id
    assert pa.clip_id("another salt", a.utterance) != a.id


def test_listening_order_is_seeded_per_annotator_and_splits_pairs(base_audit):
    audit = pa.Audit.load(base_audit)
    alice = audit.order("alice")
    assert sorted(alice) == sorted(c.id for c in audit.clips)
    assert audit.order("alice") == alice == pa.Audit.load(base_audit).order("alice")
    assert audit.order("bob") != alice
    for order in [audit.order(f"a{i}") for i in range(30)] + [audit.order("c.d-e_f")]:
        pairs = [audit.by_id[i].pair for i in order]
        assert all(x != y for x, y in zip(pairs, pairs[1:]))
    for bad in ("", "../x", ".hidden", "a b", "é", "x" * 65, None):
        with pytest.raises(ConfigError, match="--annotator"):
            audit.order(bad)  # type: ignore[arg-type]


def test_reopening_keeps_the_settings_and_names_a_changed_one(audit_dir):
    before = pa.Audit.load(audit_dir)
    audit, new = pa.open_or_create(audit_dir)
    assert not new and audit.clips == before.clips
    audit, new = pa.open_or_create(audit_dir, clips=N, seed=0, renderer="espeak")
    assert not new
    for field, value in (
        ("clips", 12),
        ("seed", 1),
        ("renderer", "x:y"),
        ("prosody_strength", 0.5),
    ):
        flag = "--" + field.replace("_", "-")
        with pytest.raises(ConfigError, match=re.escape(flag)):
            pa.open_or_create(audit_dir, **{field: value})
    (audit_dir / "clips.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="clips.json"):
        pa.Audit.load(audit_dir)


def test_any_renderer_by_import_path(tmp_path):
    spec = f"{__name__}:ToneRenderer"
    audit = pa.create_audit(
        tmp_path / "tone", clips=4, renderer=spec, perceiver="shipped", compress=False,
        cache_dir=tmp_path / "cache",
    )  # fmt: skip
    assert audit.renderer == {"name": "tone", "version": "1"}
    assert audit.settings["renderer"] == spec
    assert pa.Audit.load(tmp_path / "tone").settings["renderer"] == spec
    for bad, message in (("nonsense", "MODULE:NAME"), ("no_such_module_x:y", "cannot import"),
                         ("os:getcwd", "not a renderer"), ("os:nope", "has no")):  # fmt: skip
        with pytest.raises(ConfigError, match=message):
            pa.make_renderer(bad)


# --- 2. the label store and the scores ----------------------------------------------------


def test_store_appends_resumes_after_a_torn_line_and_takes_each_clip_once(audit_dir):
    audit = pa.Audit.load(audit_dir)
    order = audit.order("alice")
    store = audit.store("alice")
    assert store.next_clip == order[0] and store.labels == {}
    store.add(order[0], "resolved")
    store.add(order[1], "unresolved")
    path = audit_dir / "labels" / "alice.jsonl"
    lines = path.read_text().splitlines()
    assert [json.loads(x)["clip"] for x in lines] == order[:2]
    assert json.loads(lines[1])["label"] == "unresolved" and json.loads(lines[1])["n"] == 2
    with pytest.raises(pa.LabelConflict, match="labelled already"):
        store.add(order[0], "resolved")
    with pytest.raises(pa.LabelConflict, match="not the current"):
        store.add(order[3], "resolved")
    with pytest.raises(ConfigError, match="label"):
        store.add(order[2], "maybe")
    with pytest.raises(ConfigError, match="not in this audit"):
        store.add("0" * 16, "resolved")
    # a crash mid-write leaves a torn last line: ignored, then cut off before the next append
    with open(path, "ab") as fh:
        fh.write(b'{"clip": "' + order[2].encode() + b'", "lab')
    assert pa.read_labels(path, audit.by_id)[0] == {order[0]: "resolved", order[1]: "unresolved"}
    resumed = audit.store("alice")
    assert resumed.repaired and resumed.next_clip == order[2] and len(resumed.labels) == 2
    resumed.add(order[2], "resolved")
    assert [json.loads(x)["clip"] for x in path.read_text().splitlines()] == order[:3]
    assert audit.store("alice").next_clip == order[3]


def test_bad_label_files_are_named_errors(audit_dir):
    audit = pa.Audit.load(audit_dir)
    with pytest.raises(ConfigError, match="no labels"):
        sc.score_audit(audit_dir)
    ids = [c.id for c in audit.clips]
    path = audit_dir / "labels" / "alice.jsonl"
    good = lambda i: json.dumps({"clip": ids[i], "label": "resolved"})  # noqa: E731
    cases = {
        "not a JSON label line": [good(0), "{oops", good(1)],
        "expected": [good(0), json.dumps({"clip": ids[1], "label": "yes"}), good(2)],
        "not in this audit": [good(0), json.dumps({"clip": "f" * 16, "label": "resolved"})],
        "second time": [good(0), good(0)],
    }
    for message, lines in cases.items():
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=rf"alice\.jsonl:2: .*{message}"):
            sc.score_audit(audit_dir)
        with pytest.raises(ConfigError, match=r"alice\.jsonl:2"):
            audit.store("alice")


def test_cohen_kappa_against_hand_computed_values():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o 0.7, p_e 0.5*0.6+0.5*0.4 = 0.5
    a = [1] * 25 + [0] * 25
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert sc.cohen_kappa(a, b) == pytest.approx(0.4)
    # three classes: p_o 4/6; marginals (1/3,1/3,1/3) and (2/6,3/6,1/6) -> p_e 1/3 -> 0.5
    assert sc.cohen_kappa([0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0]) == pytest.approx(0.5)
    assert sc.cohen_kappa(["r", "u", "u", "r"], ["r", "u", "u", "r"]) == 1.0
    assert sc.cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == pytest.approx(-1.0)
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 2, 20000), rng.integers(0, 2, 20000)
    assert abs(sc.cohen_kappa(x, y)) < 0.03
    # expected agreement 1 (one class everywhere): undefined
    assert np.isnan(sc.cohen_kappa([1, 1, 1], [1, 1, 1]))
    with pytest.raises(ConfigError):
        sc.cohen_kappa([1, 0], [1])
    # the vectorized kappa of the scores is the same function
    for _ in range(20):
        x, y = rng.integers(0, 2, 30).astype(bool), rng.random(30) < 0.3
        w = np.ones((1, 30))
        assert sc._kappa_rows(w, x, y)[0] == pytest.approx(sc.cohen_kappa(x, y), nan_ok=True)


def _hand_labels(audit_dir: Path) -> dict[str, list[str]]:
    """The hand-made case: R0..R4 resolved, U0..U4 unresolved clips (in id order).

    alice labels all: U0 wrongly resolved. bob labels R0..R4, U0..U2: R4 wrongly unresolved.
    The reference perceiver hears R0..R2 and U4 as resolved."""
    data = json.loads((audit_dir / "clips.json").read_text())
    res = [c["id"] for c in data["clips"] if c["resolved"]]
    unres = [c["id"] for c in data["clips"] if not c["resolved"]]
    heard = set(res[:3]) | {unres[4]}
    for c in data["clips"]:
        c["reference"] = c["id"] in heard
    (audit_dir / "clips.json").write_text(json.dumps(data), encoding="utf-8")
    alice = {i: "resolved" for i in res} | {i: "unresolved" for i in unres} | {unres[0]: "resolved"}
    bob = {i: "resolved" for i in res[:4]} | {res[4]: "unresolved"}
    bob |= {i: "unresolved" for i in unres[:3]}
    for name, labels in (("alice", alice), ("bob", bob)):
        lines = [json.dumps({"clip": k, "label": v}) for k, v in labels.items()]
        (audit_dir / "labels" / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    return {"res": res, "unres": unres}


def test_scores_match_the_hand_computation(audit_dir):
    _hand_labels(audit_dir)
    score = sc.score_audit(audit_dir, resamples=500)
    alice, bob = score.annotators
    assert (alice.name, alice.n, bob.name, bob.n) == ("alice", 10, "bob", 8)
    assert (alice.resolved.value, alice.unresolved.value, alice.overall.value) == (1.0, 0.8, 0.9)
    assert (bob.resolved.value, bob.unresolved.value, bob.overall.value) == (0.8, 1.0, 0.875)
    # alice vs model: agree 6/10; p_e = 0.6*0.4 + 0.4*0.6 = 0.48 -> 0.12/0.52
    assert alice.agreement_model.value == pytest.approx(0.6)
    assert alice.kappa_model.value == pytest.approx(0.12 / 0.52)
    # bob vs model (his 8 clips): agree 7/8; p_e = 0.5*3/8 + 0.5*5/8 = 0.5 -> 0.75
    assert bob.agreement_model.value == pytest.approx(0.875)
    assert bob.kappa_model.value == pytest.approx(0.75)
    # the pair on its 8 shared clips: agree 6/8; p_e = 0.75*0.5 + 0.25*0.5 = 0.5 -> 0.5
    (pair,) = score.pairs
    assert (pair.a, pair.b, pair.n) == ("alice", "bob", 8)
    assert pair.agreement.value == pytest.approx(0.75) and pair.kappa.value == pytest.approx(0.5)
    h, m = score.human, score.model
    assert h["resolved"].value == pytest.approx(0.9) and h["unresolved"].value == pytest.approx(0.9)
    assert h["overall"].value == pytest.approx(0.8875)
    assert h["kappa_annotators"].value == pytest.approx(0.5)
    assert h["agreement_model"].value == pytest.approx(0.7375)
    assert h["kappa_model"].value == pytest.approx((0.12 / 0.52 + 0.75) / 2)
    assert (m["resolved"].value, m["unresolved"].value, m["overall"].value) == (0.6, 0.8, 0.7)
    for e in (h["overall"], alice.overall, pair.kappa, m["overall"]):
        assert e.low <= e.value <= e.high and e.high > e.low  # a real interval
    table = score.markdown()
    assert "|  | Human | Reference perceiver |" in table
    assert "| Overall | 0.89 [" in table and "| κ with people | 0.50 [" in table
    assert "| Agreement with the reference perceiver | 0.74 [" in table
    assert "| alice | 10 | 1.00 " in table and "| bob | 8 | 0.80 " in table
    assert "| alice | bob | 8 | 0.75 [" in table
    data = score.to_dict()
    assert data["human"]["overall"]["value"] == pytest.approx(0.8875)
    assert data["annotators"]["bob"]["clips"] == 8 and data["labelled_clips"] == 10
    json.dumps(data, allow_nan=False)


def test_one_annotator_and_undefined_kappa(audit_dir):
    audit = pa.Audit.load(audit_dir)
    store = audit.store("solo")
    for cid in store.order:
        store.add(cid, "resolved")  # one class for everything
    score = sc.score_audit(audit_dir, resamples=200)
    (solo,) = score.annotators
    assert (solo.resolved.value, solo.unresolved.value, solo.overall.value) == (1.0, 0.0, 0.5)
    assert score.human["kappa_annotators"] is None and score.pairs == []
    table = score.markdown()
    assert "| κ with people | n/a |" in table
    refs = [c.reference for c in audit.clips]
    if all(refs) or not any(refs):  # the perceiver also used one class: kappa undefined
        assert np.isnan(solo.kappa_model.value)
    else:
        assert solo.kappa_model.value == pytest.approx(0.0)


# --- the command --------------------------------------------------------------------------


def test_cli_score_and_careless_use(audit_dir, tmp_path, capsys):
    with pytest.raises(ConfigError, match="no labels"):
        audit_cli.run(parse("--score", str(audit_dir)))
    _hand_labels(audit_dir)
    out = tmp_path / "score.json"
    assert audit_cli.run(parse("--score", str(audit_dir), "--json", str(out))) == 0
    printed = capsys.readouterr().out
    assert "| Resolved (O+) | 0.90 [" in printed and "| bob | 8 |" in printed
    assert json.loads(out.read_text())["pairs"][0]["kappa"]["value"] == pytest.approx(0.5)
    with pytest.raises(ConfigError, match="--clips"):
        audit_cli.run(parse("--score", str(audit_dir), "--clips", "4"))
    with pytest.raises(ConfigError, match="not an audit folder"):
        audit_cli.run(parse("--score", str(tmp_path / "nowhere")))
    with pytest.raises(SystemExit):
        parse("--out", "a", "--score", "b")
    with pytest.raises(ConfigError, match="--json"):
        audit_cli.run(parse("--out", str(audit_dir), "--json", "x.json"))


def test_cli_out_makes_then_reopens_and_serves(tmp_path, monkeypatch, capsys):
    from hear2act_env.listen import server

    served = []
    monkeypatch.setattr(server, "serve", lambda app, host, port, **kw: served.append((host, port)))
    folder = tmp_path / "new"
    args = parse(
        "--out", str(folder), "--clips", "4", "--annotator", "ann", "--audio-cache", str(tmp_path)
    )
    assert audit_cli.run(args) == 0
    assert served == [("127.0.0.1", 0)]
    assert pa.Audit.load(folder).settings["clips"] == 4
    assert len(list((folder / "audio").iterdir())) == 4
    assert "made" in capsys.readouterr().out
    assert audit_cli.run(parse("--out", str(folder), "--port", "8123")) == 0
    assert served[-1] == ("127.0.0.1", 8123) and "reopened" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="--seed"):
        audit_cli.run(parse("--out", str(folder), "--seed", "9"))
    with pytest.raises(ConfigError, match="--annotator"):
        audit_cli.run(parse("--out", str(folder), "--annotator", "no/slash"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--out", ""], "--out: got an empty path; expected a folder to write the audit to"),
        (["--out", "  "], "--out: got an empty path ('  '); expected a folder to write the audit"),
        (["--out", "", "--model", "openai:m"], "--out: got an empty path; expected a folder"),
        (["--out", "\t", "--annotator", "ann"], "--out: got an empty path ('\\t'); expected"),
        (["--out", "NEW", "--audio-cache", ""], "--audio-cache: got an empty path; expected"),
        (["--out", "NEW", "--perceiver", " "], "--perceiver: got an empty path (' '); expected"),
        (["--score", ""], "--score: got an empty path; expected an audit folder to score"),
        (["--score", " "], "--score: got an empty path (' '); expected an audit folder"),
        (["--score", "AUDIT", "--json", ""], "--json: got an empty path; expected a file"),
        (["--score", "AUDIT", "--json", "  "], "--json: got an empty path ('  '); expected"),
    ],
)
def test_an_empty_path_is_a_named_error_before_anything_is_made_or_served(
    argv, message, audit_dir, tmp_path, monkeypatch, capsys
):
    """``--out ""`` once built and served an audit in the current folder (``Path("")`` is
    ``.``): every path option of the command refuses an empty or blank value, exit status 2."""
    from hear2act_cli import main
    from hear2act_env.listen import server

    def must_not(*args, **kwargs):
        raise AssertionError(f"reached with an empty path: {args} {kwargs}")

    monkeypatch.setattr(pa, "create_audit", must_not)
    monkeypatch.setattr(server, "serve", must_not)
    _hand_labels(audit_dir)  # so that --score would score, and --json write
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    where = {"NEW": str(tmp_path / "new"), "AUDIT": str(audit_dir)}
    before = sorted(p.relative_to(audit_dir) for p in audit_dir.rglob("*"))
    assert main(["audit", *(where.get(a, a) for a in argv)]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith(f"hear2act: error: {message}"), line
    assert "Traceback" not in captured.err and captured.out == ""
    assert list(here.iterdir()) == [] and not (tmp_path / "new").exists()
    assert sorted(p.relative_to(audit_dir) for p in audit_dir.rglob("*")) == before


# --- 3. the app ---------------------------------------------------------------------------


def _client(folder: Path, annotator: str | None = None):
    from starlette.testclient import TestClient

    from hear2act_env.listen.audit.app import build_app

    return TestClient(build_app(pa.Audit.load(folder), annotator))


def test_app_labels_every_clip_and_resumes(audit_dir):
    audit = pa.Audit.load(audit_dir)
    order = audit.order("carol")
    client = _client(audit_dir)
    start = client.get("/")
    assert start.status_code == 200 and 'name="annotator"' in start.text
    page = client.get("/", params={"annotator": "carol"})
    assert page.status_code == 200 and "Clip 1 of 10" in page.text
    assert f'src="/audio/{order[0]}.wav"' in page.text
    for k in range(4):
        state = client.get("/api/state", params={"annotator": "carol"}).json()
        assert state["labelled"] == k and state["clip"]["id"] == order[k]
        audio = client.get(state["clip"]["audio"])
        assert audio.status_code == 200 and audio.content[:4] == b"RIFF"
        r = client.post(
            "/api/label", json={"annotator": "carol", "clip": order[k], "label": "resolved"}
        )
        assert r.status_code == 200 and r.json()["labelled"] == k + 1
    # a restart: a new app on the same folder continues at clip 5
    client = _client(audit_dir, "carol")
    assert "Clip 5 of 10" in client.get("/").text
    for k in range(4, N):
        label = pa.LABELS[k % 2]
        r = client.post("/api/label", json={"clip": order[k], "label": label})
        assert r.status_code == 200, r.text
    done = r.json()
    assert done == {"annotator": "carol", "labelled": N, "total": N, "clip": None}
    assert "10 of 10 labelled" in client.get("/").text
    saved = pa.read_labels(audit_dir / "labels" / "carol.jsonl", audit.by_id)[0]
    assert list(saved) == order and saved[order[5]] == "unresolved"


def test_app_rejects_bad_input_with_400_json(audit_dir):
    audit = pa.Audit.load(audit_dir)
    order = audit.order("dan")
    client = _client(audit_dir, "dan")
    other = _client(audit_dir)
    post = lambda c, **kw: c.post("/api/label", **kw)  # noqa: E731
    cases = [
        (
            client,
            {"content": b"{broken", "headers": {"content-type": "application/json"}},
            "JSON object",
        ),
        (client, {"json": [order[0], "resolved"]}, "JSON object"),
        (client, {"json": {"clip": "f" * 16, "label": "resolved"}}, "not a clip"),
        (client, {"json": {"clip": 3, "label": "resolved"}}, "not a clip"),
        (client, {"json": {"clip": order[0], "label": "RESOLVED"}}, "label"),
        (client, {"json": {"clip": order[0]}}, "label"),
        (client, {"json": {"annotator": "eve", "clip": order[0], "label": "resolved"}}, "only"),
        (other, {"json": {"clip": order[0], "label": "resolved"}}, "annotator"),
        (
            other,
            {"json": {"annotator": "../etc", "clip": order[0], "label": "resolved"}},
            "annotator",
        ),
    ]
    for c, kwargs, message in cases:
        r = post(c, **kwargs)
        assert r.status_code == 400, (kwargs, r.text)
        assert message in r.json()["error"] and "Traceback" not in r.text
    big = post(client, content=b"x" * 5000, headers={"content-type": "application/json"})
    assert big.status_code == 413 and "bytes" in big.json()["error"]
    assert post(client, content=b'{"clip": 1}').status_code == 415  # no JSON content type
    assert not (audit_dir / "labels" / "dan.jsonl").exists()  # nothing was saved
    assert other.get("/", params={"annotator": "bad name"}).status_code == 400
    assert other.get("/api/state").status_code == 400
    # each clip once, in order: 409 with the current state
    assert post(client, json={"clip": order[0], "label": "unresolved"}).status_code == 200
    again = post(client, json={"clip": order[0], "label": "resolved"})
    assert again.status_code == 409 and again.json()["state"]["clip"]["id"] == order[1]
    ahead = post(client, json={"clip": order[5], "label": "resolved"})
    assert ahead.status_code == 409 and "current" in ahead.json()["error"]
    for path in ("/audio/" + "0" * 16 + ".wav", f"/audio/{order[0]}.ogg", "/audio/clips.json",
                 "/audio/..%2Fclips.json"):  # fmt: skip
        assert client.get(path).status_code == 404
    assert client.get("/static/audit.js").status_code == 200
    assert client.get("/static/style.css").status_code == 200


def test_nothing_served_depends_on_the_class(audit_dir, tmp_path):
    """Swap the deliveries and classes within every pair: every page and API answer (audio
    addresses included) stays byte for byte the same, so none is derived from a label."""
    swapped = tmp_path / "swapped"
    shutil.copytree(audit_dir, swapped)
    data = json.loads((swapped / "clips.json").read_text())
    by_pair: dict[int, list[dict]] = {}
    for c in data["clips"]:
        by_pair.setdefault(c["pair"], []).append(c)
    for a, b in by_pair.values():
        for key in ("delivery", "resolved", "reference"):
            a[key], b[key] = b[key], a[key]
    (swapped / "clips.json").write_text(json.dumps(data))
    assert pa.Audit.load(swapped).order("fay") == pa.Audit.load(audit_dir).order("fay")
    texts = []
    for folder in (audit_dir, swapped):
        client = _client(folder, "fay")
        seen = [client.get("/").text, client.get("/api/state").text]
        for k in range(N):
            clip = client.get("/api/state").json()["clip"]
            assert re.fullmatch(r"/audio/[0-9a-f]{16}\.wav", clip["audio"])
            assert set(clip) == {"id", "audio", "text"}
            r = client.post("/api/label", json={"clip": clip["id"], "label": pa.LABELS[k % 2]})
            seen += [r.text, client.get("/").text]
        texts.append(seen)
    assert texts[0] == texts[1]
    page = texts[0][0]
    delivery_words = ("satisfied", "warm", "enthusiastic", "relieved", "underwhelmed",
                      "lukewarm", "hesitant", "flat", "concerned", "persona", "pair")  # fmt: skip
    assert not any(w in page.lower() for w in delivery_words)


# --- 4. the browser -----------------------------------------------------------------------


def test_browser_completes_a_10_clip_audit_and_scores_it(browser, tmp_path, capsys):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from hear2act_env.listen.audit.app import build_app
    from hear2act_env.listen.server import background_server
    from tests.listen.browser import SCREENSHOTS, media_state

    folder = tmp_path / "audit"
    audit = pa.create_audit(  # Ogg Vorbis, with the dialogue before each clip
        folder, clips=N, seed=1, context=True, cache_dir=tmp_path / "cache"
    )
    wrong = 0
    with background_server(build_app(audit, "gil")) as url:
        browser.get(url + "/")
        progress = lambda: browser.find_element(By.ID, "progress").text  # noqa: E731
        assert progress() == f"Clip 1 of {N}"
        player = browser.find_element(By.ID, "clip-audio")
        state = media_state(browser, player)
        assert state["error"] is None and state["duration"] > 0, state
        shot = tmp_path / "audit.png"
        browser.save_screenshot(str(shot))  # the page as an annotator sees it
        if os.environ.get("HEAR2ACT_SCREENSHOTS") == "1":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(SCREENSHOTS / "audit.png"))
        for k in range(N):
            assert progress() == f"Clip {k + 1} of {N}"
            src = browser.find_element(By.ID, "clip-audio").get_attribute("src")
            clip = audit.by_id[re.search(r"/audio/([0-9a-f]{16})\.(ogg|wav)$", src).group(1)]
            shown = browser.find_elements(By.CSS_SELECTOR, "#context-lines li")
            assert [li.text for li in shown] == list(clip.context)  # this clip's dialogue
            assert browser.find_element(By.ID, "clip-text").text == clip.utterance.text
            answer = clip.label if k not in (2, 7) else pa.LABELS[clip.resolved]  # 2 wrong
            wrong += answer != clip.label
            browser.find_element(By.ID, f"label-{answer}").click()
            WebDriverWait(browser, 10).until(
                lambda d, want=str(k + 1): (
                    d.find_element(By.TAG_NAME, "body").get_attribute("data-labelled") == want
                )
            )
        assert browser.find_element(By.ID, "done").is_displayed()
        assert progress() == f"{N} of {N} labelled"
        assert browser.find_element(By.ID, "message").text == ""
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 1000
    assert wrong == 2
    assert audit_cli.run(parse("--score", str(folder))) == 0
    table = capsys.readouterr().out
    assert re.search(r"^\| gil \| 10 \| .* \| 0\.80 \[", table, re.M), table
