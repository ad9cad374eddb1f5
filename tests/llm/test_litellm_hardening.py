"""``litellm:`` hardening (issue 39): a manifest's LiteLLM model string never chooses the
server a rerun probes, LiteLLM prints no third-party warnings, and a refused connection reads
as one (naming the address) and costs what it costs ``openai:``."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest

import hear2act_env  # noqa: F401
from hear2act_agents.llm.backends.base import BackendError, BackendTimeout
from hear2act_agents.llm.backends.openai_http import OpenAIChatBackend
from hear2act_cli import main
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.runner import GridConfig
from hear2act_env.scenarios.bank import load_bank

# looked up, not imported: imported before load_litellm sets OFFLINE_ENV, LiteLLM fetches
if importlib.util.find_spec("litellm") is None:
    pytest.skip("the litellm extra is not installed", allow_module_level=True)

from hear2act_agents.llm.backends.litellm_backend import LiteLLMBackend  # noqa: E402

IDS = [s.id for s in load_bank() if s.split == "test"][:2]
#: A line Python's ``warnings`` module prints (``path:line: SomeWarning: text``).
WARNING_LINE = re.compile(r"^\S.*:\d+: \w*Warning: ", re.MULTILINE)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


def test_a_manifest_never_chooses_the_server_of_a_litellm_model_string(tmp_path, capsys):
    with socket.socket() as listener:  # where the sent manifest's model string points
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        agent = f"litellm:oobabooga/http://127.0.0.1:{port}"
        run = {
            "agents": [agent],
            "scenarios": IDS[:1],
            "realizations": ["prosody"],
            "access": ["T"],
            "no_plots": True,
            "settings": {"timeout": 5, "max_retries": 0},
        }
        folder = tmp_path / "sent"
        folder.mkdir()
        data = {"config": GridConfig(agents=(agent,)).to_dict(), "run": run}
        (folder / "results.manifest.json").write_text(json.dumps(data))
        assert main(["eval", "--config", str(folder)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert f"agents include {agent}" in err and "give --agents on the command line" in err
        listener.settimeout(0.3)
        with pytest.raises(TimeoutError):  # no probe (nor anything else) reached the server
            listener.accept()[0].close()
    assert not (folder / "results.jsonl").exists()


@pytest.mark.slow  # a subprocess importing LiteLLM (about 15 s)
def test_an_eval_through_litellm_prints_no_third_party_warnings(server, tmp_path):
    args = ["eval", "--agents", "litellm:openai/scripted", "--base-url", server]
    args += ["--scenarios", IDS[0], "--realizations", "prosody", "--access", "T"]
    args += ["--out", str(tmp_path / "ev"), "--no-plots", "--backend", "serial"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS", "LITELLM_LOG")}
    done = subprocess.run(
        [sys.executable, "-m", "hear2act_cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "ev" / "results.jsonl").exists()
    found = WARNING_LINE.findall(done.stderr)
    assert not found and "warnings.warn(" not in done.stderr, done.stderr[-3000:]


def _refused(backend) -> tuple[BackendError, float]:
    start = time.monotonic()
    with pytest.raises(BackendError) as caught:
        backend.complete([{"role": "user", "content": "hi"}])
    return caught.value, time.monotonic() - start


def test_a_refused_connection_reads_as_one_and_costs_what_it_costs_openai():
    port = _closed_port()
    url = f"http://user:hunter2@127.0.0.1:{port}/v1"
    fast = {"max_retries": 3, "backoff_base": 0.05, "timeout": 10.0}
    _refused(LiteLLMBackend("openai/m", base_url=url, max_retries=0))  # LiteLLM's first call
    openai_error, openai_s = _refused(OpenAIChatBackend("m", base_url=url, **fast))
    error, spent = _refused(LiteLLMBackend("openai/m", base_url=url, **fast))
    text = str(error)
    assert not isinstance(error, BackendTimeout)
    assert f"connection to http://127.0.0.1:{port}/v1 failed" in text, text
    assert "Connection refused" in text and "HTTP 500" not in text, text
    assert "hunter2" not in text and "hunter2" not in str(openai_error)
    # the same retries and backoff as openai: (4 tries, 0.05+0.1+0.2 s of waits at least)
    assert 0.34 < openai_s and 0.34 < spent < openai_s + 1.0, (spent, openai_s)
    # and the probe says so in one line
    with pytest.raises(ConfigError, match=r"did not answer a probe request.*Connection refused"):
        LiteLLMBackend("openai/m", base_url=url, **fast).probe()


def test_the_model_strings_server_is_named_when_it_refuses():
    port = _closed_port()
    backend = LiteLLMBackend(
        f"oobabooga/http://u:hunter2@127.0.0.1:{port}", max_retries=0, timeout=5.0
    )
    error, _ = _refused(backend)
    assert f"connection to http://127.0.0.1:{port} failed" in str(error), str(error)
    assert "Connection refused" in str(error) and "hunter2" not in str(error)
