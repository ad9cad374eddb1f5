"""Per-episode agent logs, tokens and cost, the leaderboard, and the transcript-only control."""

from __future__ import annotations

import csv
import json

import gymnasium as gym
import pytest

import hear2act_env  # noqa: F401
from hear2act_agents.llm import make_llm_agent
from hear2act_agents.llm.backends.base import Usage
from hear2act_cli import main
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.agent_logs import (
    find_episode_log,
    format_episode_log,
    load_agent_logs,
    log_path,
)
from hear2act_env.evaluation.rollout import run_episode
from hear2act_env.evaluation.runner import load_records
from hear2act_env.scenarios.bank import load_bank

IDS = [s.id for s in load_bank() if s.split == "test"][:2]


def _eval(server, out, *extra):
    args = ["eval", "--agents", "openai:scripted", "--base-url", server, "--scenarios", *IDS]
    args += ["--realizations", "prosody", "--out", str(out), "--no-plots", *extra]
    return main(args)


def test_usage_parse_refuses_malformed_counts():
    assert Usage.parse({"prompt_tokens": 3, "completion_tokens": 4}) == Usage(3, 4)
    for bad in (None, [], {"prompt_tokens": 3}, {"prompt_tokens": -1, "completion_tokens": 2}):
        assert Usage.parse(bad) is None
    assert Usage.parse({"prompt_tokens": True, "completion_tokens": 1}) is None


def test_eval_writes_one_log_line_per_episode_with_calls_and_tokens(server, tmp_path, capsys):
    out = tmp_path / "ev"
    assert _eval(server, out) == 0
    records = load_records(out / "results.jsonl")
    logs = load_agent_logs(out / "results.jsonl")
    assert sorted(logs) == sorted(r.key.id() for r in records)
    for r in records:
        entry = logs[r.key.id()]
        assert entry["success"] == r.success and entry["error"] is None
        calls = [c for t in entry["turns"] for c in t["calls"]]
        assert len(calls) == r.agent_stats["calls"]
        assert len(entry["turns"]) == r.actions
        # the fake server reports 1 + 1 tokens per call: the record sums them
        assert r.agent_stats["prompt_tokens"] == r.agent_stats["completion_tokens"] == len(calls)
        for call in calls:
            assert call["latency_s"] >= 0 and call["usage"] == {
                "prompt_tokens": 1,
                "completion_tokens": 1,
            }
            system = call["messages"][0]
            assert system["role"] == "system" and system["ref"] in entry["prompts"]
            assert "The conversation so far" in call["messages"][1]["content"]
            assert isinstance(call["reply"], str)
        for turn in entry["turns"]:
            assert turn["outcome"] in ("ok", "reasked", "format_error", "invalid_option")
            assert len(turn["action"]) == 3 and turn["action_text"]
    text = capsys.readouterr().out
    assert "Model calls and tokens" in text
    # report --episode prints one episode's log; an ambiguous part lists the candidates
    one = records[0].key
    assert main(["report", str(out / "results.jsonl"), "--episode", one.id()]) == 0
    shown = capsys.readouterr().out
    assert one.id() in shown and "[reply]" in shown and "tokens" in shown
    assert main(["report", str(out / "results.jsonl"), "--episode", IDS[0]]) == 2
    err = capsys.readouterr().err
    assert "episodes match" in err and IDS[0] in err and "Traceback" not in err


def test_resume_appends_nothing_and_a_torn_log_line_is_dropped(server, tmp_path):
    out = tmp_path / "ev"
    assert _eval(server, out) == 0
    path = log_path(out / "results.jsonl")
    lines = path.read_text().splitlines()
    assert _eval(server, out) == 0  # nothing to run: no new log line
    assert path.read_text().splitlines() == lines
    # a run killed mid-write: drop the last record and tear the last log line
    results = out / "results.jsonl"
    kept = results.read_text().splitlines()[:-1]
    results.write_text("\n".join(kept) + "\n")
    path.write_text("\n".join(lines) + "\n" + lines[-1][:40])
    assert len(load_agent_logs(results)) == len(lines)  # the torn last line is ignored
    assert _eval(server, out) == 0
    new = path.read_text().splitlines()
    assert len(new) == len(lines) + 1 and all(json.loads(x) for x in new)
    assert len(load_agent_logs(results)) == len(lines)


def test_logs_of_an_episode_the_server_failed(server, tmp_path):
    out = tmp_path / "ev"
    args = ["--agents", "openai:down", "--no-probe", "--setting", "max_retries=0"]
    # exit status 3: the run finished, some episodes errored
    assert (
        main(["eval", *args, "--base-url", server, "--scenarios", IDS[0], "--out", str(out)]) == 3
    )
    logs = load_agent_logs(out / "results.jsonl")
    entry = next(iter(logs.values()))
    assert entry["error_kind"] == "infrastructure"
    last = entry["turns"][-1]
    assert last["outcome"] == "no_answer" and "503" in last["calls"][0]["error"]
    assert "no answer" in format_episode_log(entry)


def test_prices_turn_tokens_into_cost(server, tmp_path, capsys):
    out = tmp_path / "ev"
    assert _eval(server, out) == 0
    records = load_records(out / "results.jsonl")
    tokens = sum(r.agent_stats["prompt_tokens"] for r in records)
    prices = tmp_path / "prices.toml"
    prices.write_text('["openai:scripted"]\nprompt = 2.0\ncompletion = 8.0\n')
    capsys.readouterr()
    assert main(["report", str(out / "results.jsonl"), "--prices", str(prices), "--no-plots"]) == 0
    text = capsys.readouterr().out
    with (out / "usage.csv").open() as fh:
        usage = list(csv.DictReader(fh))
    cost = sum(float(row["cost_usd"]) for row in usage)
    # the log beside the results gives each row its seconds per call
    assert all(int(row["latency_calls"]) > 0 for row in usage)
    assert all(float(row["latency_p50_s"]) <= float(row["latency_p95_s"]) for row in usage)
    assert cost == pytest.approx(tokens * (2.0 + 8.0) / 1e6, rel=1e-3)
    assert "cost $" in text
    for bad, needle in [
        ('["m"]\nprompt = -1\ncompletion = 1\n', "prompt: got -1"),
        ('["m"]\nprompt = 1\n', "completion: got None"),
        ('["m"]\nprompt = 1\ncompletion = 1\nextra = 2\n', "unknown fields ['extra']"),
        ("not toml [[[", "not valid TOML"),
    ]:
        prices.write_text(bad)
        assert main(["report", str(out / "results.jsonl"), "--prices", str(prices)]) == 2
        assert needle in capsys.readouterr().err


def test_leaderboard_pairs_variants_and_refuses_mixed_banks(server, tmp_path, capsys):
    out = tmp_path / "ev"
    assert _eval(server, out, "--access", "T", "T+S") == 0
    control = tmp_path / "ctl"
    assert _eval(server, control, "--access", "T", "--perceiver", "self-text") == 0
    files = [str(out / "results.jsonl"), str(control / "results.jsonl")]
    capsys.readouterr()
    assert main(["report", *files, "--leaderboard", "--out", str(tmp_path / "lb")]) == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("| openai:scripted"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] != "-" and cells[2] != "-"  # Success T, T+S - T
    assert cells[3] == "-" and cells[4] == "-"  # A+T and T+S-hat were not run
    assert cells[5] != "-"  # the transcript-only control is paired with T
    assert (
        (tmp_path / "lb" / "leaderboard.csv")
        .read_text()
        .startswith("realization,model,success_t_pct,")
    )
    # a results file of another bank is refused
    man = out / "results.manifest.json"
    data = json.loads(man.read_text())
    data["bank_version"] = 1
    man.write_text(json.dumps(data))
    assert main(["report", *files, "--leaderboard"]) == 2
    assert "different banks" in capsys.readouterr().err


def test_transcript_only_first_stage_uses_the_audio_prompt_without_audio(server):
    agent = make_llm_agent("openai:scripted", base_url=server, perceiver="self-text")
    assert agent.name == "openai:scripted+stage1-text:openai:scripted"
    env = gym.make("Hear2Act-Prosody-Text-v0", max_actions=3)
    run_episode(env, agent, seed=1)
    turns = agent.episode_log()["turns"]
    stages = [c["stage"] for c in turns[0]["calls"]]
    assert stages[0] == "perception" and "decision" in stages
    perception = turns[0]["calls"][0]
    assert (
        "attached recording is the customer's latest turn" in perception["messages"][1]["content"]
    )
    assert perception["audio_clips"] == 0 and perception["cached"] is False  # nothing attached
    assert turns[0]["perceived"]
    stats = agent.stats()
    assert stats["calls"] == sum(len(t["calls"]) for t in turns)


def test_self_perceiver_needs_an_audio_backend(server):
    with pytest.raises(ConfigError, match="'self-text' is the transcript-only"):
        make_llm_agent("openai:scripted", base_url=server, perceiver="self")


def test_eval_refuses_a_text_only_agent_under_audio_access(server, tmp_path, capsys):
    out = tmp_path / "ev"
    args = ["eval", "--agents", "openai:scripted", "--base-url", server, "--scenarios", IDS[0]]
    assert main([*args, "--access", "A+T", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot take audio" in err and "send_audio=true" in err
    assert not (out / "results.jsonl").exists()


def test_hf_tokens_come_from_the_local_tokenizer(tiny_chat):
    pytest.importorskip("torch")
    agent = make_llm_agent(
        f"hf:{tiny_chat}", max_new_tokens=5, device="cpu", topic_matcher="keyword"
    )
    env = gym.make("Hear2Act-Prosody-Text-v0", max_actions=2)
    run_episode(env, agent, seed=0)
    calls = [c for t in agent.episode_log()["turns"] for c in t["calls"]]
    tok = agent.backend._m.tokenizer
    for call in calls:
        from hear2act_agents.llm.backends.hf_chat import render_chat

        prompt = render_chat(tok, _expand(call, agent))
        n = len(tok(prompt, add_special_tokens=False)["input_ids"])
        assert call["usage"]["prompt_tokens"] == n
        assert 1 <= call["usage"]["completion_tokens"] <= 5
    assert agent.stats()["prompt_tokens"] == sum(c["usage"]["prompt_tokens"] for c in calls)


def _expand(call, agent):
    """A logged call's messages with the system prompt put back."""
    prompts = agent.episode_log()["prompts"]
    return [
        {"role": "system", "content": prompts[m["ref"]]} if "ref" in m else m
        for m in call["messages"]
    ]


def test_a_corrupt_log_line_in_the_middle_is_named_and_skipped(tmp_path):
    results = tmp_path / "results.jsonl"
    good = json.dumps({"id": "a|prosody|T|correct|s|0", "error": None, "turns": []})
    log_path(results).write_bytes(good.encode() + b"\n\xff\xfe\n{not json\n")
    with pytest.warns(UserWarning, match=r"results.log.jsonl:2: skipped a corrupt log line"):
        logs = load_agent_logs(results)
    assert list(logs) == ["a|prosody|T|correct|s|0"]  # the torn last line is dropped quietly
    with pytest.warns(UserWarning):
        assert find_episode_log(results, "a")["id"] == "a|prosody|T|correct|s|0"


def test_a_call_always_says_cached_and_audio_clips_even_when_0(server, tmp_path):
    agent = make_llm_agent("openai:scripted", base_url=server, cache_dir=tmp_path / "cache")
    env = gym.make("Hear2Act-Prosody-Text-v0", max_actions=2)
    run_episode(env, agent, seed=3)
    first = [c for t in agent.episode_log()["turns"] for c in t["calls"]]
    run_episode(env, agent, seed=3)  # the same episode again: every reply comes from the cache
    again = [c for t in agent.episode_log()["turns"] for c in t["calls"]]
    assert first and len(again) == len(first)
    assert [(c["cached"], c["audio_clips"]) for c in first] == [(False, 0)] * len(first)
    assert [(c["cached"], c["audio_clips"]) for c in again] == [(True, 0)] * len(again)
    entry = {"id": "x", "key": {}, "turns": agent.episode_log()["turns"], "prompts": {}}
    text = format_episode_log(json.loads(json.dumps(entry)))
    assert "from cache" in text and "clip" not in text  # 0 clips: nothing to say


def test_an_old_log_without_cached_and_audio_clips_still_formats(tmp_path):
    call = {"stage": "decision", "messages": [], "reply": "[ACTION: ASK]", "latency_s": 0.5}
    old = {"id": "a|prosody|T|correct|s|0", "success": True, "error": None}
    old["turns"] = [{"turn": 1, "action_text": "ASK", "outcome": "ok", "calls": [call]}]
    log_path(tmp_path / "r.jsonl").write_text(json.dumps(old) + "\n")
    text = format_episode_log(find_episode_log(tmp_path / "r.jsonl", "s"))
    assert "decision call: 0.500 s, tokens not reported\n" in text
    two = {**call, "audio_clips": 2, "cached": True}
    old["turns"][0]["calls"] = [two]
    assert "0.500 s, tokens not reported, 2 clips, from cache" in format_episode_log(old)
