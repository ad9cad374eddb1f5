"""The HTTP backend against hostile or broken servers: nothing hangs, leaks or fails silently.

- a server that trickles its response headers meets the call's wall-clock deadline;
- a reply that echoes the key reaches no file of a run;
- a stop request (SIGINT) starts no new model call and is never an infrastructure error;
- a reply cut off at ``max_tokens`` is counted as ``truncated``, not as a format error;
- ``send_audio=true`` to a server that ignores audio is refused by the probe.
"""

from __future__ import annotations

import socket
import threading
import time

import gymnasium as gym
import numpy as np
import pytest

import hear2act_env  # noqa: F401
from hear2act_agents.llm import make_llm_agent
from hear2act_agents.llm.backends.base import BackendError, CallInfo
from hear2act_agents.llm.backends.hf_chat import finish_reasons
from hear2act_agents.llm.backends.openai_http import OpenAIChatBackend
from hear2act_agents.llm.parsing import KeywordTopicMatcher, parse_reply
from hear2act_agents.llm.policy import LLMPolicy
from hear2act_agents.llm.prompting import parse_options
from hear2act_cli import main
from hear2act_env import interrupts
from hear2act_env.errors import ConfigError, InfrastructureError
from hear2act_env.evaluation.rollout import run_episode
from hear2act_env.evaluation.runner import load_records
from hear2act_env.scenarios.bank import load_bank

from .conftest import FakeAudio, server_stats

IDS = [s.id for s in load_bank() if s.split == "test"][:1]
MSGS = [{"role": "user", "content": "x"}]


@pytest.fixture(autouse=True)
def _no_stop_request():
    interrupts.reset()
    yield
    interrupts.reset()


def _obs(env_id="Hear2Act-Prosody-Text-v0"):
    obs, _ = gym.make(env_id).reset(seed=0)
    return obs


# -- 1. a wall-clock deadline, headers included ----------------------------------------------


@pytest.fixture
def header_trickler():
    """A local server that answers every connection with one header byte per second (at most
    12, then it hangs up) and stops by itself after 30 s; yields its /v1 base URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()
    started = time.monotonic()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2.0)
            try:
                conn.recv(65536)  # the request (its size does not matter)
                for byte in b"HTTP/1.1 200 OK\r\nX-":
                    if stop.is_set():
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(1.0)
            except OSError:
                return

    def accept() -> None:
        while not stop.is_set() and time.monotonic() - started < 30.0:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
        listener.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop.set()
    thread.join(timeout=5)


def test_trickled_headers_meet_the_wall_clock_deadline_of_the_call(header_trickler):
    """Each header byte comes within the read timeout (2 s); the call's deadline (4 s, retries
    included) still ends it, as an infrastructure error."""
    agent = make_llm_agent(
        "openai:any", base_url=header_trickler, timeout=2, deadline=4, topic_matcher="keyword"
    )
    obs = _obs()
    agent.reset(obs, seed=0)
    start = time.monotonic()
    with pytest.raises(InfrastructureError, match="deadline"):
        agent.act(obs)
    assert time.monotonic() - start < 5.5
    assert agent.stats()["timeouts"] == 1


def test_the_probe_obeys_the_deadline_too(header_trickler):
    backend = OpenAIChatBackend("any", base_url=header_trickler, timeout=2, deadline=3)
    start = time.monotonic()
    with pytest.raises(ConfigError, match="did not answer a probe request"):
        backend.probe()
    assert time.monotonic() - start < 4.5


def test_a_retry_that_would_pass_the_deadline_is_not_made(server):
    backend = OpenAIChatBackend(
        "down", base_url=server, timeout=2, deadline=1.0, max_retries=5, backoff_base=0.6
    )
    start = time.monotonic()
    with pytest.raises(BackendError, match="no time left for another try"):
        backend.complete(MSGS)
    assert time.monotonic() - start < 2.0
    assert server_stats(server)["requests"]["down"] <= 2


# -- 2. no key in any file -------------------------------------------------------------------


def test_a_reply_without_choices_that_echoes_the_key_reaches_no_file(
    server, tmp_path, monkeypatch, capsys
):
    key = "h2a-plain-key-7f3a9c1e5b"  # nothing about it looks like a key: only its value tells
    monkeypatch.setenv("HEAR2ACT_ECHO_KEY", key)
    out = tmp_path / "ev"
    args = ["eval", "--agents", "openai:echo-key", "--base-url", server, "--scenarios", *IDS]
    args += ["--access", "T", "--realizations", "prosody", "--out", str(out), "--no-plots"]
    args += ["--setting", "api_key_env=HEAR2ACT_ECHO_KEY"]
    assert main(args) == 2  # the probe: a malformed reply
    err = capsys.readouterr().err
    assert "malformed reply" in err and key not in err
    assert main([*args, "--no-probe"]) == 3  # finished, the episode errored
    (record,) = load_records(out / "results.jsonl")
    assert record.error_kind == "infrastructure" and "malformed reply" in record.error
    assert "[redacted]" in record.error
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "results.log.jsonl" for p in written)
    assert all(key.encode() not in p.read_bytes() for p in written)
    assert key not in capsys.readouterr().out


def test_logged_replies_and_utterances_are_redacted():
    class Echo:
        name, supports_audio = "echo", False

        def complete(self, messages, *, audio=None, seed=None, run=0):
            return "[ACTION: ASK] [TOPIC: OPEN] my key is sk-abcdefghijklmnop, anything else?"

    policy = LLMPolicy(Echo(), topic_matcher=KeywordTopicMatcher())
    obs = _obs()
    policy.reset(obs, seed=0)
    policy.act(obs)
    assert "abcdefghijklmnop" not in repr(policy.episode_log())


# -- 3. interrupts ---------------------------------------------------------------------------


def test_no_request_starts_after_a_stop_request(server):
    backend = OpenAIChatBackend("scripted", base_url=server, max_retries=0)
    interrupts.request()
    with pytest.raises(interrupts.Interrupted):
        backend.complete(MSGS)
    with pytest.raises(interrupts.Interrupted):
        backend.probe()
    assert "scripted" not in server_stats(server)["requests"]


def test_a_stop_request_wakes_the_backoff_and_is_not_an_infrastructure_error(server):
    agent = make_llm_agent(
        "openai:down", base_url=server, max_retries=3, backoff_base=5.0, topic_matcher="keyword"
    )
    obs = _obs()
    agent.reset(obs, seed=0)
    timer = threading.Timer(0.5, interrupts.request)
    timer.start()
    start = time.monotonic()
    try:
        with pytest.raises(interrupts.Interrupted):
            agent.act(obs)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 2.0  # not the 5 s backoff
    assert server_stats(server)["requests"]["down"] == 1  # no new call after the signal
    assert agent.stats()["api_errors"] == 0


def test_a_stop_request_during_perception_propagates():
    class Perceiver:
        def perceive(self, audio, sample_rate, context=""):
            raise interrupts.Interrupted("stopped by SIGINT")

    class Never:
        name, supports_audio = "never", False

        def complete(self, messages, **kw):  # pragma: no cover - must not be reached
            raise AssertionError("no decision call after a stop")

    policy = LLMPolicy(Never(), perceiver=Perceiver(), topic_matcher=KeywordTopicMatcher())
    env = FakeAudio(gym.make("Hear2Act-Prosody-Text-v0"))
    obs, _ = env.reset(seed=0)
    policy.reset(obs, seed=0)
    with pytest.raises(interrupts.Interrupted):
        policy.act(obs)
    assert policy.stats()["perception_errors"] == 0


def test_local_backends_start_no_generation_after_a_stop(tiny_chat):
    pytest.importorskip("torch")
    from hear2act_agents.llm.backends.hf_chat import TransformersChatBackend

    backend = TransformersChatBackend(tiny_chat, device="cpu", max_new_tokens=2)
    interrupts.request()
    with pytest.raises(interrupts.Interrupted):
        backend.complete(MSGS)


# -- 4. truncated replies --------------------------------------------------------------------


def test_a_cut_off_reply_is_truncated_not_a_format_error(server):
    agent = make_llm_agent("openai:truncated", base_url=server, topic_matcher="keyword")
    obs = _obs()
    agent.reset(obs, seed=0)
    assert agent.act(obs).tolist() == [0, 0, 0]  # the open-question fallback
    stats = agent.stats()
    assert (stats["truncated"], stats["format_errors"], stats["reasks"]) == (1, 0, 1)
    assert stats["truncated_replies"] == 2 and stats["fallbacks"] == 1
    (turn,) = agent.episode_log()["turns"]
    assert turn["outcome"] == "truncated"
    assert [c["finish_reason"] for c in turn["calls"]] == ["length", "length"]
    reminder = server_stats(server)["last"]["truncated"]["messages"][-1]["content"]
    assert "cut off" in reminder


def test_an_empty_cut_off_reply_is_truncated_not_empty(server):
    agent = make_llm_agent("openai:truncated-empty", base_url=server, topic_matcher="keyword")
    obs = _obs()
    agent.reset(obs, seed=0)
    agent.act(obs)
    stats = agent.stats()
    assert (stats["truncated"], stats["empty_replies"], stats["calls"]) == (1, 0, 1)
    assert agent.episode_log()["turns"][0]["outcome"] == "truncated"


def test_every_call_logs_its_finish_reason(server):
    agent = make_llm_agent("openai:scripted", base_url=server, topic_matcher="keyword")
    run_episode(gym.make("Hear2Act-Prosody-Text-v0", max_actions=3), agent, seed=1)
    calls = [c for t in agent.episode_log()["turns"] for c in t["calls"]]
    assert calls and all(c["finish_reason"] == "stop" for c in calls)
    assert agent.stats()["truncated_replies"] == 0


def test_a_cut_off_reply_replayed_from_the_cache_is_still_cut_off(server, tmp_path):
    backend = OpenAIChatBackend("truncated", base_url=server, cache_dir=tmp_path)
    first = backend.complete(MSGS, seed=1)
    assert backend.last_call == CallInfo(backend.last_call.usage, False, "length")
    assert backend.complete(MSGS, seed=1) == first
    assert backend.last_call.cached and backend.last_call.truncated


def test_parse_reply_names_a_cut_off_reply():
    info = parse_options("1. A\n2. B")
    assert parse_reply("Let me think", info, truncated=True).issue == "truncated"
    assert parse_reply("Let me think", info).issue == "no_action"
    usable = parse_reply("[ACTION: CONFIRM] done", info, truncated=True)
    assert usable.usable and usable.issue is None


def test_local_finish_reasons():
    rows = np.array([[5, 6, 7], [5, 2, 0], [2, 0, 0]])
    assert finish_reasons(rows, {0, 2}, 3) == ["length", "stop", "stop"]
    assert finish_reasons(rows, {0, 2}, 4) == ["stop", "stop", "stop"]  # stopped early


def test_a_truncating_policy_stub_counts_truncated():
    class Cut:
        name, supports_audio = "cut", False

        def __init__(self):
            self.last_call = None

        def complete(self, messages, **kw):
            self.last_call = CallInfo(None, finish_reason="length")
            return "[ACTION: RECOMMEND] [OPTION:"

    policy = LLMPolicy(Cut(), topic_matcher=KeywordTopicMatcher())
    obs = _obs()
    policy.reset(obs, seed=0)
    policy.act(obs)
    assert policy.stats()["truncated"] == 1 and policy.stats()["format_errors"] == 0


# -- 5. the hearing probe --------------------------------------------------------------------


def test_the_probe_refuses_a_server_that_ignores_audio(server):
    backend = OpenAIChatBackend("deaf", base_url=server, send_audio=True)
    with pytest.raises(ConfigError, match="ignored the audio") as info:
        backend.probe()
    text = str(info.value)
    assert "--trust-audio" in text and "\n" not in text
    body = server_stats(server)["last"]["deaf"]
    assert body["messages"][0]["content"][0]["type"] == "input_audio"
    with pytest.raises(ConfigError, match="ignored the audio"):
        backend.probe_hearing()


@pytest.mark.parametrize("model", ["hearing", "hearing-details"])
def test_the_probe_accepts_a_server_that_hears(server, model):
    OpenAIChatBackend(model, base_url=server, send_audio=True).probe()
    assert server_stats(server)["requests"][model] == 2  # without and with the recording


def test_without_send_audio_or_with_trust_audio_hearing_is_not_probed(server):
    OpenAIChatBackend("deaf", base_url=server).probe()
    OpenAIChatBackend("deaf", base_url=server, send_audio=True, trust_audio=True).probe()
    assert server_stats(server)["requests"]["deaf"] == 2  # one plain request each


def test_a_server_without_usage_cannot_be_checked(server):
    with pytest.raises(ConfigError, match="reports no token usage.*--trust-audio"):
        OpenAIChatBackend("no-usage", base_url=server, send_audio=True).probe()


def test_trusted_audio_is_counted_for_the_report(server):
    env = FakeAudio(gym.make("Hear2Act-Prosody-Text-v0", max_actions=2))
    trusted = make_llm_agent(
        "openai:deaf", base_url=server, send_audio=True, trust_audio=True, topic_matcher="keyword"
    )
    run_episode(env, trusted, seed=0)
    assert trusted.stats()["unchecked_audio_calls"] == trusted.stats()["calls"] > 0
    checked = make_llm_agent(
        "openai:hearing", base_url=server, send_audio=True, topic_matcher="keyword"
    )
    run_episode(env, checked, seed=0)
    assert checked.stats()["unchecked_audio_calls"] == 0
