"""The OpenAI-compatible backend against a real local server process (fake_openai_server)."""

from __future__ import annotations

import threading
import time

import gymnasium as gym
import numpy as np
import pytest

import hear2act_env  # noqa: F401
from hear2act_agents.llm import make_llm_agent
from hear2act_agents.llm.backends.base import BackendError, BackendTimeout
from hear2act_agents.llm.backends.openai_http import OpenAIChatBackend, _retry_after
from hear2act_env.errors import ConfigError, InfrastructureError
from hear2act_env.evaluation.rollout import run_episode

from .conftest import FakeAudio, server_stats

FAST = {"backoff_base": 0.01, "max_retries": 3, "timeout": 10.0}


def _agent(model, server, **kw):
    settings = {**FAST, **kw}
    return make_llm_agent(f"openai:{model}", base_url=server, topic_matcher="keyword", **settings)


def test_full_episode_through_http(server):
    agent = _agent("scripted", server)
    out = run_episode(gym.make("Hear2Act-Prosody-Text-v0"), agent, seed=3)
    assert out.terminated  # the script ends with CONFIRM
    assert agent.stats()["calls"] == len(out.infos) - 1
    assert agent.stats()["format_errors"] == 0
    assert server_stats(server)["requests"]["scripted"] == agent.stats()["calls"]
    acts = [i["last_turn"]["act"] for i in out.infos[1:]]
    assert acts[:3] == ["ask", "ask", "recommend"]
    assert "How about option 3" in out.transcript


def test_request_carries_the_prompt_and_settings(server):
    agent = _agent("scripted", server, temperature=0.3, max_tokens=64)
    env = gym.make("Hear2Act-Prosody-TextState-v0")
    obs, _ = env.reset(seed=2)
    agent.reset(obs, seed=2)
    agent.act(obs)
    body = server_stats(server)["last"]["scripted"]
    assert body["model"] == "scripted" and body["temperature"] == 0.3 and body["max_tokens"] == 64
    assert isinstance(body["seed"], int)
    assert body["messages"][0]["role"] == "system"
    assert "State tag of the user's latest turn" in body["messages"][1]["content"]


def test_a_reasoning_model_gets_the_parameters_its_api_takes(server):
    agent = _agent("scripted", server, reasoning=True, reasoning_effort="low", max_tokens=300)
    env = gym.make("Hear2Act-Prosody-TextState-v0")
    obs, _ = env.reset(seed=2)
    agent.reset(obs, seed=2)
    agent.act(obs)
    body = server_stats(server)["last"]["scripted"]
    assert body["max_completion_tokens"] == 300 and body["reasoning_effort"] == "low"
    assert "max_tokens" not in body and "temperature" not in body and "top_p" not in body
    agent.backend.probe()  # the probe too: a token budget to think in, no temperature
    body = server_stats(server)["last"]["scripted"]
    assert body["max_completion_tokens"] > 1 and "temperature" not in body


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"reasoning": True, "temperature": 0.7}, "no temperature or top_p"),
        ({"reasoning": True, "top_p": 0.9}, "no temperature or top_p"),
        ({"reasoning_effort": "low"}, "applies with reasoning=true"),
        ({"reasoning": True, "reasoning_effort": "max"}, "must be one of minimal"),
    ],
)
def test_reasoning_settings_that_cannot_apply_are_refused(server, settings, words):
    from hear2act_env.errors import ConfigError

    with pytest.raises(ConfigError, match=words):
        _agent("scripted", server, **settings)


def test_cache_makes_reruns_free_and_never_shares_between_models(server, tmp_path):
    env = gym.make("Hear2Act-Prosody-Text-v0")
    first = _agent("scripted", server, cache_dir=tmp_path)
    out1 = run_episode(env, first, seed=4)
    n = server_stats(server)["requests"]["scripted"]
    second = _agent("scripted", server, cache_dir=tmp_path)
    out2 = run_episode(env, second, seed=4)
    assert server_stats(server)["requests"]["scripted"] == n  # all from the cache
    assert out1.transcript == out2.transcript
    entries = list(tmp_path.rglob("*.json"))
    assert len(entries) == n and not list(tmp_path.rglob(".tmp-*"))
    # another model (same replies) gets its own entries; another run index too
    run_episode(env, _agent("flaky", server, cache_dir=tmp_path), seed=4)
    assert server_stats(server)["requests"]["flaky"] > 0
    run_episode(env, _agent("scripted", server, cache_dir=tmp_path, run=1), seed=4)
    assert server_stats(server)["requests"]["scripted"] > n


def test_corrupt_cache_entry_is_a_miss(server, tmp_path):
    backend = OpenAIChatBackend("scripted", base_url=server, cache_dir=tmp_path, **FAST)
    msgs = [{"role": "user", "content": "Assistant: x\nAssistant: y"}]
    reply = backend.complete(msgs, seed=1)
    (entry,) = list(tmp_path.rglob("*.json"))
    entry.write_text("{not json")
    assert backend.complete(msgs, seed=1) == reply
    assert server_stats(server)["requests"]["scripted"] == 2
    assert backend.complete(msgs, seed=1) == reply  # rewritten, now a hit
    assert server_stats(server)["requests"]["scripted"] == 2


def test_rate_limits_are_retried(server):
    backend = OpenAIChatBackend("rate-limit", base_url=server, **FAST)
    reply = backend.complete([{"role": "user", "content": "hi"}])
    assert reply.startswith("[ACTION:")
    assert server_stats(server)["requests"]["rate-limit"] == 3


def test_retry_after_is_honoured(server):
    backend = OpenAIChatBackend("rate-limit-1", base_url=server, **FAST)
    start = time.monotonic()
    backend.complete([{"role": "user", "content": "hi"}])
    assert time.monotonic() - start >= 0.9
    assert server_stats(server)["requests"]["rate-limit-1"] == 2


def test_retry_after_parsing():
    assert _retry_after("3") == 3.0 and _retry_after("0.5") == 0.5
    assert _retry_after(None) is None and _retry_after("soon") is None
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past


def test_server_errors_are_retried_then_counted(server):
    assert (
        OpenAIChatBackend("flaky", base_url=server, **FAST)
        .complete([{"role": "user", "content": "x"}])
        .startswith("[ACTION")
    )
    down = OpenAIChatBackend("down", base_url=server, **{**FAST, "max_retries": 2})
    with pytest.raises(BackendError, match="503"):
        down.complete([{"role": "user", "content": "x"}])
    assert server_stats(server)["requests"]["down"] == 3


@pytest.mark.parametrize("model", ["down", "garbage"])
def test_a_server_that_never_answers_is_an_infrastructure_error(server, model):
    """No answer after the retries is not the agent's failure: ``act`` raises, the runner
    records the episode as an infrastructure error (tests/llm/test_eval_cli.py)."""
    agent = _agent(model, server, max_retries=0)
    env = gym.make("Hear2Act-Prosody-Text-v0")
    obs, _ = env.reset(seed=0)
    agent.reset(obs, seed=0)
    with pytest.raises(InfrastructureError, match="after retries"):
        agent.act(obs)
    assert agent.stats()["api_errors"] == 1


@pytest.mark.parametrize(
    ("model", "counter"),
    [
        ("empty", "empty_replies"),
        ("null-content", "empty_replies"),
        ("invalid-option", "invalid_options"),
        ("never-format", "format_errors"),
    ],
)
def test_bad_answers_are_the_agents_failure_and_never_break_an_episode(server, model, counter):
    agent = _agent(model, server, max_retries=0)
    out = run_episode(gym.make("Hear2Act-Prosody-Text-v0"), agent, seed=0)
    assert out.truncated and len(out.infos) == 21  # 20 open questions, no exception
    assert agent.stats()[counter] == 20
    assert all(i["last_turn"]["act"] == "ask" for i in out.infos[1:])


def test_noaction_reply_is_reasked_once(server):
    agent = _agent("noaction", server)
    env = gym.make("Hear2Act-Prosody-Text-v0")
    obs, _ = env.reset(seed=0)
    agent.reset(obs, seed=0)
    assert agent.act(obs).tolist() == [0, 0, 0]
    stats = agent.stats()
    assert (stats["reasks"], stats["calls"], stats["format_errors"]) == (1, 2, 0)
    body = server_stats(server)["last"]["noaction"]
    assert body["messages"][-1]["role"] == "user" and "[ACTION:" in body["messages"][-1]["content"]


def test_timeouts_are_infrastructure_errors(server):
    agent = _agent("slow", server, timeout=0.3, max_retries=0)
    env = gym.make("Hear2Act-Prosody-Text-v0")
    obs, _ = env.reset(seed=0)
    agent.reset(obs)
    with pytest.raises(InfrastructureError, match="timed out"):
        agent.act(obs)
    assert agent.stats()["timeouts"] == 1
    with pytest.raises(BackendTimeout):
        OpenAIChatBackend(
            "slow", base_url=server, timeout=0.3, max_retries=1, backoff_base=0.01
        ).complete([{"role": "user", "content": "x"}])


def test_auth_and_missing_models_are_configuration_errors(server, monkeypatch):
    monkeypatch.delenv("HEAR2ACT_TEST_KEY", raising=False)
    msgs = [{"role": "user", "content": "x"}]
    backend = OpenAIChatBackend("auth", base_url=server, api_key_env="HEAR2ACT_TEST_KEY", **FAST)
    with pytest.raises(ConfigError, match="HEAR2ACT_TEST_KEY"):
        backend.complete(msgs)
    monkeypatch.setenv("HEAR2ACT_TEST_KEY", "sk-test")
    assert backend.complete(msgs).startswith("[ACTION")
    with pytest.raises(ConfigError, match="not found"):
        OpenAIChatBackend("no-such-model", base_url=server, **FAST).complete(msgs)
    agent = _agent("no-such-model", server)
    obs, _ = gym.make("Hear2Act-Prosody-Text-v0").reset(seed=0)
    agent.reset(obs)
    with pytest.raises(ConfigError):
        agent.act(obs)


def test_concurrency_is_bounded_across_episodes(server):
    agents = [_agent("slowish", server, max_concurrency=2) for _ in range(6)]
    envs = [gym.make("Hear2Act-Prosody-Text-v0", max_actions=2) for _ in agents]
    errors = []

    def episode(env, agent, seed):
        try:
            run_episode(env, agent, seed=seed)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))

    threads = [
        threading.Thread(target=episode, args=(e, a, i))
        for i, (e, a) in enumerate(zip(envs, agents))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stats = server_stats(server)
    assert stats["requests"]["slowish"] == 12
    assert stats["max_concurrent"]["slowish"] == 2


def test_audio_is_sent_as_input_audio(server):
    agent = _agent("scripted", server, send_audio=True)
    env = FakeAudio(gym.make("Hear2Act-Prosody-Text-v0"))
    out = run_episode(env, agent, seed=1)
    assert out.terminated
    body = server_stats(server)["last"]["scripted"]
    part = body["messages"][1]["content"][0]
    assert part["type"] == "input_audio" and part["input_audio"]["format"] == "wav"
    import base64

    wav = base64.b64decode(part["input_audio"]["data"])
    assert wav[:4] == b"RIFF" and len(wav) == 44 + 2 * env.lengths[-2]


def test_wav_encoding_roundtrip():
    import base64
    import io
    import wave

    from hear2act_agents.llm.backends.openai_http import wav_base64

    x = np.linspace(-1, 1, 1600, dtype=np.float32)
    with wave.open(io.BytesIO(base64.b64decode(wav_base64(x)))) as w:
        assert (w.getframerate(), w.getnchannels(), w.getnframes()) == (16000, 1, 1600)


def test_a_trickling_server_hits_the_total_deadline(server):
    """The read timeout (2 s) never fires on a byte every 0.1 s; the deadline (1 s) does."""
    backend = OpenAIChatBackend(
        "trickle", base_url=server, timeout=2.0, deadline=1.0, max_retries=0, backoff_base=0.01
    )
    start = time.monotonic()
    with pytest.raises(BackendTimeout, match="deadline"):
        backend.complete([{"role": "user", "content": "x"}])
    assert time.monotonic() - start < 3.0


def test_a_huge_reply_is_refused_not_buffered(server):
    backend = OpenAIChatBackend(
        "huge", base_url=server, max_reply_bytes=100_000, max_retries=0, backoff_base=0.01
    )
    with pytest.raises(BackendError, match="exceeds 100000 bytes"):
        backend.complete([{"role": "user", "content": "x"}])


@pytest.mark.parametrize(
    ("setting", "value"), [("deadline", 0), ("deadline", -1.0), ("max_reply_bytes", 10)]
)
def test_deadline_and_reply_cap_are_range_checked(server, setting, value):
    with pytest.raises(ConfigError, match=setting):
        OpenAIChatBackend("scripted", base_url=server, **{setting: value})


def test_error_texts_never_carry_the_key(server, monkeypatch):
    monkeypatch.setenv("HEAR2ACT_TEST_KEY", "sk-secret-0123456789abcdef")
    backend = OpenAIChatBackend(
        "echo-headers",
        base_url=server,
        api_key_env="HEAR2ACT_TEST_KEY",
        max_retries=0,
        backoff_base=0.01,
    )
    with pytest.raises(BackendError) as info:
        backend.complete([{"role": "user", "content": "x"}])
    text = str(info.value)
    assert "0123456789abcdef" not in text and "[redacted]" in text


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Bearer abcdefghijklmnop",
        "{'Authorization': 'Bearer abcdefghijklmnop'}",
        "key sk-abcdefghijklmnop here",
        "https://x/v1?api-key=abcdefghijklmnop&x=1",
        "token=abcdefghijklmnop",
    ],
)
def test_redact_strips_what_looks_like_a_secret(text):
    from hear2act_agents.llm.backends.openai_http import redact

    assert "abcdefghijklmnop" not in redact(text)


def test_a_refused_connection_is_an_infrastructure_error_and_stops_the_probe():
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    agent = make_llm_agent("openai:any", base_url=url, max_retries=0, topic_matcher="keyword")
    env = gym.make("Hear2Act-Prosody-Text-v0")
    obs, _ = env.reset(seed=0)
    agent.reset(obs, seed=0)
    with pytest.raises(InfrastructureError, match="connection to .* failed"):
        agent.act(obs)
    with pytest.raises(ConfigError, match="did not answer a probe request"):
        agent.backend.probe()
