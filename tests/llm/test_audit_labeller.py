"""``hear2act audit --model``: an audio LLM labels an audit folder's clips, over HTTP (the fake
server) and locally (tiny random Qwen2-Audio and Qwen2.5-Omni models)."""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import shutil
import wave
from pathlib import Path

import pytest

from hear2act_agents.audit_labeller import label_audit
from hear2act_agents.llm.factory import make_backend
from hear2act_cli import audit as audit_cli
from hear2act_env.errors import ConfigError, InfrastructureError
from hear2act_env.listen.audit import folder as pa
from hear2act_env.listen.audit import instructions as words
from hear2act_env.listen.audit import scores as sc
from hear2act_env.listen.audit.model_labels import model_runs

from .conftest import server_stats

N = 10


@pytest.fixture(scope="module")
def base_audit(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("audit-models")
    pa.create_audit(
        root / "base", clips=N, seed=0, context=True, cache_dir=root / "cache", compress=False
    )
    return root / "base"


@pytest.fixture
def audit_dir(base_audit, tmp_path) -> Path:
    shutil.copytree(base_audit, tmp_path / "audit")
    return tmp_path / "audit"


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hear2act")
    audit_cli.add(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["audit", *argv])


def model_args(folder: Path, server: str, model: str, *more: str) -> argparse.Namespace:
    return parse(
        "--out", str(folder), "--model", f"openai:{model}", "--base-url", server,
        "--setting", "send_audio=true", "--setting", "max_retries=0", *more,
    )  # fmt: skip


def expected_label(folder: Path, clip: pa.AuditClip) -> str:
    """The fake ``labeller``'s rule, computed from the folder's own file: even frames ->
    resolved."""
    with wave.open(io.BytesIO((folder / clip.audio).read_bytes())) as w:
        return "resolved" if w.getnframes() % 2 == 0 else "unresolved"


def test_a_served_model_labels_every_clip_and_is_scored(audit_dir, server, capsys):
    assert audit_cli.run(model_args(audit_dir, server, "labeller")) == 0
    out = capsys.readouterr().out
    assert "labelled 10 clip(s) now, 10 of 10 in all (0 without a usable answer)" in out
    audit = pa.Audit.load(audit_dir)
    ((run, labels),) = model_runs(audit)
    assert run.spec == "openai:labeller" and run.context is True
    assert run.settings == {"send_audio": True}  # typed; max_retries is not the model's answer
    want = {c.id: expected_label(audit_dir, c) for c in audit.clips}
    assert labels == want and len(set(want.values())) == 2  # both answers occur
    # what the server got for the last clip: the instructions, the context, the words, audio
    body = server_stats(server)["last"]["labeller"]
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    assert words.TASK in system and words.CONTEXT in system
    texts = " ".join(p.get("text", "") for p in user if p.get("type") == "text")
    last = audit.by_id[sorted(audit.by_id)[-1]]
    assert f'The user says: "{last.utterance.text}"' in texts
    assert all(line in texts for line in last.context)
    assert [p["type"] for p in user].count("input_audio") == 1
    lines = [json.loads(x) for x in (audit_dir / "models" / f"{run.slug}.jsonl").open()]
    assert lines[0]["usage"]["prompt_tokens"] > 0 and lines[0]["reply"]
    assert lines[0]["finish_reason"] == "stop"
    # the scores: computed here from the truth and the labeller's rule
    score = sc.score_audit(audit_dir, resamples=200)
    (model,) = score.models
    right = [want[c.id] == c.label for c in audit.clips]
    assert model.overall.value == pytest.approx(sum(right) / N)
    res = [want[c.id] == c.label for c in audit.clips if c.resolved]
    assert model.resolved.value == pytest.approx(sum(res) / len(res))
    ref = [want[c.id] == ("resolved" if c.reference else "unresolved") for c in audit.clips]
    assert model.agreement_reference.value == pytest.approx(sum(ref) / N)
    assert audit_cli.run(parse("--score", str(audit_dir))) == 0
    assert "| openai:labeller (send_audio=true) |" in capsys.readouterr().out
    # a rerun (another retry count, a timeout) continues the same row: nothing left to do,
    # no label request sent
    before = server_stats(server)["requests"]["labeller"]
    again = model_args(audit_dir, server, "labeller", "--no-probe", "--setting", "timeout=30")
    assert audit_cli.run(again) == 0
    assert "labelled 0 clip(s) now, 10 of 10" in capsys.readouterr().out
    assert server_stats(server)["requests"]["labeller"] == before + 2  # the hearing check only


def test_an_outage_stops_the_run_keeps_the_labels_and_resumes(audit_dir, server, capsys):
    assert audit_cli.run(model_args(audit_dir, server, "labeller-down-after-3")) == 3
    assert "3 of 10 labels are saved" in capsys.readouterr().err
    audit = pa.Audit.load(audit_dir)
    ((run, labels),) = model_runs(audit)
    assert len(labels) == 3
    # the server is back (its counter reset): the rerun labels 3 more, none twice
    from .conftest import server_reset

    server_reset(server)
    assert audit_cli.run(model_args(audit_dir, server, "labeller-down-after-3")) == 3
    assert "6 of 10 labels are saved" in capsys.readouterr().err
    ((_, labels),) = model_runs(audit)
    assert len(labels) == 6
    raw = (audit_dir / "models" / f"{run.slug}.jsonl").read_text().splitlines()
    assert len(raw) == 6 and len({json.loads(x)["clip"] for x in raw}) == 6
    assert all(v is not None for v in labels.values())  # an outage is never a wrong answer


def test_a_torn_last_line_from_a_killed_run_is_cut_and_its_clip_labelled_again(
    audit_dir, server, capsys
):
    """kill -9 in the middle of writing a label leaves a torn last line: the rerun cuts it and
    labels that clip again, every other clip once."""
    assert audit_cli.run(model_args(audit_dir, server, "labeller-down-after-3")) == 3
    (path,) = (audit_dir / "models").glob("*.jsonl")
    whole = path.read_bytes()
    path.write_bytes(whole[: whole.rstrip(b"\n").rfind(b"\n") + 1] + b'{"clip": "ab')
    from .conftest import server_reset

    server_reset(server)  # the same model again: 2 labels kept, the torn third redone
    assert audit_cli.run(model_args(audit_dir, server, "labeller-down-after-3")) == 3
    assert "5 of 10 labels are saved" in capsys.readouterr().err
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == 5 and len({x["clip"] for x in lines}) == 5
    assert [x["clip"] for x in lines] == sorted(x["clip"] for x in lines)  # in id order


def _main_args(folder: Path, server: str, model: str, *more: str) -> list[str]:
    return [
        "audit", "--out", str(folder), "--model", f"openai:{model}", "--base-url", server,
        "--setting", "send_audio=true", "--setting", "max_retries=0", *more,
    ]  # fmt: skip


def test_an_outage_mid_run_exits_3_like_eval_with_one_line_saying_what_is_saved(
    audit_dir, server, capsys
):
    """An outage after some labels is the run's trouble, not the command's: exit status 3
    (as ``eval`` with errored episodes), one line with the count saved, no traceback; the
    same command continues."""
    from hear2act_cli import main
    from hear2act_cli.status import EXIT_EPISODE_ERRORS

    assert main(_main_args(audit_dir, server, "labeller-down-after-3")) == EXIT_EPISODE_ERRORS
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("hear2act: error: --model openai:labeller-down-after-3: ")
    assert "3 of 10 labels are saved; run the same command again to continue" in line
    assert "Traceback" not in captured.err and "labelled" not in captured.out
    audit = pa.Audit.load(audit_dir)
    ((_, labels),) = model_runs(audit)
    assert len(labels) == 3
    # the library call raises (a caller decides); the command turns it into status 3
    spec = "openai:labeller-down-after-3"
    backend = make_backend(spec, base_url=server, send_audio=True, max_retries=0)
    with pytest.raises(InfrastructureError, match="3 of 10 labels are saved"):
        label_audit(audit, backend, spec, {"send_audio": "true", "max_retries": "0"})
    # with the probe skipped, an outage from the first call on is the same: 3, nothing saved
    fresh = audit_dir.parent / "fresh"
    shutil.copytree(audit_dir, fresh)
    shutil.rmtree(fresh / "models")
    args = _main_args(fresh, server, "down", "--no-probe", "--trust-audio")
    assert main(args) == EXIT_EPISODE_ERRORS
    (line,) = capsys.readouterr().err.splitlines()
    assert "0 of 10 labels are saved" in line


def test_a_server_down_at_the_start_fails_the_probe_with_exit_2_as_eval_does(
    audit_dir, server, capsys
):
    from hear2act_cli import main
    from hear2act_cli.status import EXIT_BAD_CONFIG

    assert main(_main_args(audit_dir, server, "down")) == EXIT_BAD_CONFIG
    err = capsys.readouterr().err
    assert "did not answer a probe request" in err and "Traceback" not in err
    assert not (audit_dir / "models").exists()


class Hedges:
    """An audio backend whose every reply names both labels, the first one first."""

    supports_audio = True
    name = "hedge"

    def __init__(self, reply: str) -> None:
        self.reply = reply

    def complete(self, messages, *, audio=None, seed=None, run=0):
        return self.reply


@pytest.mark.parametrize(
    "reply", ["resolved or unresolved, hard to say", "It's not resolved, it's unresolved"]
)
def test_a_model_that_names_both_labels_has_no_answer_not_the_first_label(audit_dir, reply):
    audit = pa.Audit.load(audit_dir)
    done = label_audit(audit, Hedges(reply), "openai:hedge", {})
    assert (done.labelled, done.no_answer) == (N, N)
    ((_, labels),) = model_runs(audit)
    assert set(labels.values()) == {None}
    (model,) = sc.score_audit(audit_dir, resamples=50).models
    assert model.no_answer == N and model.overall.value == 0.0


def test_a_folder_served_to_people_is_not_labelled_by_a_model_meanwhile(audit_dir, server):
    """Two commands on one folder: the model run waits for no one, it is refused by name."""
    with pa.serving_lock(audit_dir):
        with pytest.raises(ConfigError, match="served by another hear2act audit"):
            audit_cli.run(model_args(audit_dir, server, "labeller"))
    assert not (audit_dir / "models").exists()


def test_replies_without_a_label_count_against_the_model(audit_dir, server, capsys):
    assert audit_cli.run(model_args(audit_dir, server, "labeller-mute")) == 0
    assert "(10 without a usable answer)" in capsys.readouterr().out
    (model,) = sc.score_audit(audit_dir, resamples=100).models
    assert model.no_answer == 10 and model.overall.value == 0.0


def test_a_model_that_cannot_hear_is_refused_before_any_label(audit_dir, server):
    with pytest.raises(ConfigError, match="cannot take audio"):
        audit_cli.run(
            parse("--out", str(audit_dir), "--model", "openai:labeller", "--base-url", server)
        )
    for extra in ((), ("--no-probe",)):  # a server that drops the audio, probe or not
        with pytest.raises(ConfigError, match="hear"):
            audit_cli.run(model_args(audit_dir, server, "deaf", *extra))
    with pytest.raises(ConfigError, match="404|does not exist|not found"):
        audit_cli.run(model_args(audit_dir, server, "no-such-model"))
    assert not (audit_dir / "models").exists() or not any((audit_dir / "models").iterdir())


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--model", "openai:x", "--annotator", "ann"], "--annotator"),
        (["--setting", "temperature=0"], "--setting: only with --model"),
        (["--trust-audio"], "--trust-audio: only with --model"),
        (["--model", "nope:x"], "unknown"),
        (["--model", "openai:x", "--setting", "nonsense=1"], "unknown settings"),
        (["--model", "openai:x", "--setting", "name=me"], "configure an agent"),
    ],
)
def test_careless_model_flags_are_named_errors(argv, match, audit_dir):
    with pytest.raises(ConfigError, match=match):
        audit_cli.run(parse("--out", str(audit_dir), *argv))


def test_score_refuses_model_flags(audit_dir):
    with pytest.raises(ConfigError, match="--model"):
        audit_cli.run(parse("--score", str(audit_dir), "--model", "openai:x"))
    with pytest.raises(ConfigError, match="--context"):
        audit_cli.run(parse("--score", str(audit_dir), "--context"))


@pytest.mark.parametrize("prefix", ["qwen2-audio", "qwen2.5-omni"])
def test_local_audio_models_label_the_clips(prefix, audit_dir, tiny_qwen2_audio, tiny_omni):
    path = tiny_qwen2_audio if prefix == "qwen2-audio" else tiny_omni
    spec = f"{prefix}:{path}"
    settings = {"max_new_tokens": 3, "device": "cpu"}
    audit = pa.Audit.load(audit_dir)
    done = label_audit(audit, make_backend(spec, **settings), spec, settings)
    assert (done.labelled_now, done.labelled, done.total) == (N, N, N)
    ((run, labels),) = model_runs(audit)
    assert run.spec == spec and set(labels) == set(audit.by_id)
    assert set(labels.values()) <= {"resolved", "unresolved", None}
    (model,) = sc.score_audit(audit_dir, resamples=50).models
    assert model.n == N and model.no_answer == sum(v is None for v in labels.values())


def test_a_litellm_model_labels_the_clips(audit_dir, server, capsys):
    if importlib.util.find_spec("litellm") is None:  # not imported here: the backend imports
        pytest.skip("the litellm extra is not installed")  # it offline (no cost-map fetch)
    args = parse(
        "--out", str(audit_dir), "--model", "litellm:openai/labeller", "--base-url", server,
        "--setting", "send_audio=true", "--setting", "max_retries=0",
    )  # fmt: skip
    assert audit_cli.run(args) == 0
    audit = pa.Audit.load(audit_dir)
    ((run, labels),) = model_runs(audit)
    assert run.spec == "litellm:openai/labeller"
    assert labels == {c.id: expected_label(audit_dir, c) for c in audit.clips}


class StopsAfter:
    """An audio backend that answers ``resolved`` and asks the run to stop (as the first
    Ctrl-C does) during its ``n``-th call."""

    supports_audio = True
    name = "stub"

    def __init__(self, n: int) -> None:
        self.n, self.calls = n, 0

    def complete(self, messages, *, audio=None, seed=None, run=0):
        from hear2act_env import interrupts

        self.calls += 1
        assert audio is not None and audio.dtype.name == "float32" and audio.size > 1000
        if self.calls == self.n:
            interrupts.request()
        return "Resolved."


def test_a_stop_request_keeps_the_call_in_flight_and_resumes(audit_dir):
    from hear2act_env import interrupts

    audit = pa.Audit.load(audit_dir)
    try:
        with pytest.raises(interrupts.Interrupted) as stopped:
            label_audit(audit, StopsAfter(3), "openai:stub", {})
    finally:
        interrupts.reset()
    assert stopped.value.resume.startswith("3 of 10 labels are saved in ")
    backend = StopsAfter(0)
    done = label_audit(audit, backend, "openai:stub", {})
    assert (done.labelled_now, done.labelled, backend.calls) == (7, 10, 7)
