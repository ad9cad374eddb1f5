"""The ``litellm:`` agent kind against the fake server, through LiteLLM's OpenAI-compatible
route (``litellm:openai/MODEL`` with ``base_url``): the same calls, logs, tokens, errors and
redaction as ``openai:``."""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import os
import socket
import subprocess
import sys
import time
import wave

import gymnasium as gym
import numpy as np
import pytest

import hear2act_env  # noqa: F401
from hear2act_agents.llm import make_llm_agent
from hear2act_agents.llm.backends.base import BackendError, BackendTimeout
from hear2act_agents.llm.factory import hears_audio
from hear2act_agents.registry import agent_kind
from hear2act_cli import main
from hear2act_env.errors import ConfigError, InfrastructureError, MissingExtraError
from hear2act_env.evaluation.agent_logs import load_agent_logs
from hear2act_env.evaluation.rollout import run_episode
from hear2act_env.evaluation.runner import load_records
from hear2act_env.scenarios.bank import load_bank

from .conftest import server_stats

# looked up, not imported: imported before load_litellm sets OFFLINE_ENV, LiteLLM fetches
if importlib.util.find_spec("litellm") is None:
    pytest.skip("the litellm extra is not installed", allow_module_level=True)

from hear2act_agents.llm.backends import litellm_backend  # noqa: E402
from hear2act_agents.llm.backends.litellm_backend import LiteLLMBackend  # noqa: E402

IDS = [s.id for s in load_bank() if s.split == "test"][:2]
FAST = {"backoff_base": 0.01, "max_retries": 2, "timeout": 10.0}


def _backend(model, server, **kw):
    return LiteLLMBackend(f"openai/{model}", base_url=server, **{**FAST, **kw})


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there once the socket is closed


def _eval(server, out, agent, *extra):
    args = ["eval", "--agents", agent, "--base-url", server, "--scenarios", *IDS]
    args += ["--realizations", "prosody", "--access", "T", "--out", str(out), "--no-plots"]
    return main([*args, *extra])


def test_the_kind_is_registered_and_named_in_the_registry():
    prefix, kind = agent_kind("litellm:anthropic/claude-3-5-haiku-latest")
    assert prefix == "litellm" and kind.takes_settings and "LiteLLM" in kind.help
    with pytest.raises(ConfigError, match="names no provider LiteLLM knows"):
        make_llm_agent("litellm:no-such-provider-model")


def test_a_text_episode_through_the_runner_logs_what_the_server_reports(server, tmp_path):
    out = tmp_path / "ev"
    assert _eval(server, out, "litellm:openai/scripted", "--setting", "max_retries=0") == 0
    records = load_records(out / "results.jsonl")
    logs = load_agent_logs(out / "results.jsonl")
    assert len(records) == len(IDS) and sorted(logs) == sorted(r.key.id() for r in records)
    calls_total = 0
    for r in records:
        assert r.error is None and r.key.agent == "litellm:openai/scripted"
        calls = [c for t in logs[r.key.id()]["turns"] for c in t["calls"]]
        assert len(calls) == r.agent_stats["calls"] > 0
        # the fake server reports 1 prompt + 1 completion token per call
        assert r.agent_stats["prompt_tokens"] == r.agent_stats["completion_tokens"] == len(calls)
        for call in calls:
            assert call["usage"] == {"prompt_tokens": 1, "completion_tokens": 1}
            assert call["cached"] is False and call["audio_clips"] == 0
            assert call["finish_reason"] == "stop" and isinstance(call["reply"], str)
            assert "The conversation so far" in call["messages"][1]["content"]
        calls_total += len(calls)
    # and one probe before the run (eval probes served agents: a server that is down stops it)
    assert server_stats(server)["requests"]["scripted"] == calls_total + 1


def test_token_counts_equal_the_servers_usage(server):
    backend = _backend("deaf", server)  # prompt tokens: the words of the prompt
    text = "one two three four five"
    reply = backend.complete([{"role": "user", "content": text}], seed=4)
    assert reply.startswith("[ACTION:")
    assert backend.last_call.usage.to_dict() == {"prompt_tokens": 5, "completion_tokens": 1}
    body = server_stats(server)["last"]["deaf"]
    assert body["max_tokens"] == 2048 and body["temperature"] == 0.0 and "seed" in body


def test_a_reasoning_model_goes_through_litellm_with_its_own_parameters(server):
    backend = _backend("deaf", server, reasoning=True, reasoning_effort="high", max_tokens=512)
    backend.complete([{"role": "user", "content": "one two"}], seed=4)
    body = server_stats(server)["last"]["deaf"]
    assert body["max_completion_tokens"] == 512 and body["reasoning_effort"] == "high"
    assert "max_tokens" not in body and "temperature" not in body


def test_audio_goes_as_an_input_audio_part_and_the_hearing_probe_passes(server):
    backend = _backend("hearing-details", server, send_audio=True)
    clip = (0.1 * np.sin(np.arange(8000) / 5.0)).astype(np.float32)
    backend.complete([{"role": "user", "content": "listen"}], audio=clip, seed=1)
    parts = server_stats(server)["last"]["hearing-details"]["messages"][0]["content"]
    audio = [p for p in parts if p["type"] == "input_audio"]
    assert len(audio) == 1 and audio[0]["input_audio"]["format"] == "wav"
    with wave.open(io.BytesIO(base64.b64decode(audio[0]["input_audio"]["data"]))) as w:
        assert w.getnframes() == clip.size and w.getframerate() == 16_000
    assert parts[-1] == {"type": "text", "text": "listen"}
    backend.probe()  # hearing-details reports audio tokens: the probe passes
    with pytest.raises(ConfigError, match="ignored the audio"):
        _backend("deaf", server, send_audio=True).probe()


def test_a_deaf_litellm_agent_is_refused_for_audio_conditions(server, tmp_path, capsys):
    assert not hears_audio("litellm:openai/scripted", {})
    assert hears_audio("litellm:openai/scripted", {"send_audio": "true"})
    args = ["eval", "--agents", "litellm:openai/scripted", "--base-url", server]
    args += ["--scenarios", IDS[0], "--access", "A+T", "--out", str(tmp_path / "ev")]
    assert main(args) == 2
    assert "cannot take audio" in capsys.readouterr().err
    assert not (tmp_path / "ev" / "results.jsonl").exists()


def test_a_server_that_is_down_is_an_infrastructure_error(server, tmp_path):
    out = tmp_path / "ev"
    down = _closed_port()
    # the probe before the run stops it at once (exit 2, nothing recorded) ...
    assert _eval(down, out, "litellm:openai/scripted", "--setting", "max_retries=1") == 2
    assert not (out / "results.jsonl").exists() or not load_records(out / "results.jsonl")
    # ... and without it every episode records the outage as infrastructure, never the agent's
    extra = ("--setting", "max_retries=1", "--no-probe")
    assert _eval(down, out, "litellm:openai/scripted", *extra) == 3
    records = load_records(out / "results.jsonl")
    assert records and all(r.error_kind == "infrastructure" for r in records)
    for model in ("down", "garbage"):  # 503 and a reply that is not JSON, after retries
        with pytest.raises(BackendError) as caught:
            _backend(model, server).complete([{"role": "user", "content": "hi"}])
        assert not isinstance(caught.value, BackendTimeout)
        assert server_stats(server)["requests"][model] == FAST["max_retries"] + 1
    agent = make_llm_agent("litellm:openai/down", base_url=server, **FAST)
    with pytest.raises(InfrastructureError, match="failed after retries"):
        run_episode(gym.make("Hear2Act-Prosody-Text-v0"), agent, seed=1)


def test_a_stalled_server_hits_the_deadline(server):
    backend = _backend("slow", server, timeout=5.0, deadline=0.4, max_retries=3)
    start = time.monotonic()
    with pytest.raises(BackendTimeout, match="deadline"):
        backend.complete([{"role": "user", "content": "hi"}])
    assert time.monotonic() - start < 1.2  # the server sleeps 1.5 s
    agent = make_llm_agent("litellm:openai/slow", base_url=server, timeout=0.2, max_retries=0)
    with pytest.raises(InfrastructureError, match="timed out"):
        run_episode(gym.make("Hear2Act-Prosody-Text-v0"), agent, seed=1)
    assert agent.stats()["timeouts"] == 1


def test_requests_the_provider_refuses_are_configuration_errors(server, monkeypatch):
    with pytest.raises(ConfigError, match="not found"):
        _backend("no-such-model", server).complete([{"role": "user", "content": "hi"}])
    monkeypatch.delenv("HEAR2ACT_LITELLM_KEY", raising=False)
    auth = _backend("auth", server, api_key_env="HEAR2ACT_LITELLM_KEY")
    with pytest.raises(ConfigError, match="HEAR2ACT_LITELLM_KEY"):
        auth.complete([{"role": "user", "content": "hi"}])
    monkeypatch.setenv("HEAR2ACT_LITELLM_KEY", "sk-test")
    assert auth.complete([{"role": "user", "content": "hi"}]).startswith("[ACTION:")
    with pytest.raises(ConfigError, match="must start with http"):
        LiteLLMBackend("openai/scripted", base_url="ftp://example.org")


def test_a_key_never_reaches_a_file_or_the_manifest(server, tmp_path, monkeypatch, capsys):
    key = "sk-litellm-secret-0123456789"
    monkeypatch.setenv("HEAR2ACT_LITELLM_KEY", key)
    out = tmp_path / "ev"
    # echo-headers answers 500 with the request's headers, the Authorization one included
    code = _eval(
        server,
        out,
        "litellm:openai/echo-headers",
        "--setting",
        "api_key_env=HEAR2ACT_LITELLM_KEY",
        "--setting",
        "max_retries=0",
        "--no-probe",  # the episodes, not the probe, meet the echoing 500
    )
    assert code == 3
    records = load_records(out / "results.jsonl")
    assert all(r.error_kind == "infrastructure" for r in records)
    assert any("[redacted]" in (r.error or "") for r in records)
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written and all(key.encode() not in p.read_bytes() for p in written)
    manifest = json.loads((out / "results.manifest.json").read_text())
    assert manifest["run"]["agents"] == ["litellm:openai/echo-headers"]
    assert key not in capsys.readouterr().out


def test_litellm_is_imported_lazily_and_never_fetches(monkeypatch):
    code = (
        "import sys, hear2act_env, hear2act_agents, hear2act_agents.llm, hear2act_agents.registry;"
        "print(sorted(m for m in ('litellm', 'torch') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    litellm_backend.load_litellm()
    for name, value in litellm_backend.OFFLINE_ENV.items():
        assert os.environ[name] == value
    monkeypatch.setitem(sys.modules, "litellm", None)  # as if the extra were not installed
    with pytest.raises(MissingExtraError, match=r"hear2act-env\[litellm\]"):
        litellm_backend.load_litellm()
