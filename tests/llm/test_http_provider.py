"""A new HTTP provider is a small class: ``HttpChatBackend`` with one attempt (``_exchange``)
gets the settings and their checks, retries, the deadline, the cache and redaction; and the
settings objects (``HttpSettings``, ``LocalGenerationSettings``) are what the backends and
``--setting`` read."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from hear2act_agents.llm.backends.audio import AudioSettings, Qwen2AudioBackend
from hear2act_agents.llm.backends.base import BackendError, LocalGenerationSettings
from hear2act_agents.llm.backends.hf_chat import TransformersChatBackend, TransformersSettings
from hear2act_agents.llm.backends.litellm_backend import LiteLLMBackend
from hear2act_agents.llm.backends.openai_http import (
    HttpChatBackend,
    OpenAIChatBackend,
    OpenAISettings,
)
from hear2act_agents.llm.backends.settings import HttpSettings, setting_types
from hear2act_agents.llm.factory import backend_setting_types, typed_settings
from hear2act_env.errors import ConfigError

USER = [{"role": "user", "content": "hello"}]
KEY = "sk-stub-0123456789abcdef"


class StubProvider(HttpChatBackend):
    """A whole provider: answers from a script of (status, text), one entry per attempt."""

    kind = "stub"

    def __init__(self, model: str, script: list, **settings) -> None:
        super().__init__(model, **settings)
        self.script, self.payloads = list(script), []

    def _exchange(self, payload, budget):
        self.payloads.append(payload)
        status, text = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        time.sleep(0.02)
        body = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}]}
        return status, {}, json.dumps(body).encode()


FAST = {"backoff_base": 0.001, "backoff_max": 0.001}


def test_a_new_provider_retries_and_builds_the_request():
    backend = StubProvider("m", [(503, "busy"), (500, "busy"), (200, "OK")], **FAST)
    assert backend.complete(USER, seed=3) == "OK"
    assert len(backend.payloads) == 3
    payload = backend.payloads[-1]
    assert payload["model"] == "m" and payload["messages"] == USER
    assert payload["max_tokens"] == 2048 and "seed" in payload
    assert backend.name == "stub:m" and backend.shown_url == "the stub API"
    assert backend.last_call.finish_reason == "stop"


def test_a_new_provider_gives_up_after_its_retries():
    backend = StubProvider("m", [(503, "busy")], max_retries=2, **FAST)
    with pytest.raises(BackendError, match=r"stub:m: HTTP 503 after 3 tries"):
        backend.complete(USER)
    assert len(backend.payloads) == 3


def test_a_new_provider_keeps_the_deadline():
    backend = StubProvider(
        "m", [(503, "busy")], max_retries=1000, deadline=0.2, backoff_base=0.01, backoff_max=0.01
    )
    start = time.monotonic()
    with pytest.raises(BackendError, match=r"HTTP 503 after \d+ tries"):
        backend.complete(USER)  # about 0.2 s of 20 ms attempts, not 1001 of them
    assert time.monotonic() - start < 1.0 and len(backend.payloads) < 20


def test_a_new_provider_caches_replies(tmp_path):
    backend = StubProvider("m", [(200, "cached reply")], cache_dir=tmp_path)
    assert backend.complete(USER, seed=1) == "cached reply"
    again = StubProvider("m", [(200, "other")], cache_dir=tmp_path)
    assert again.complete(USER, seed=1) == "cached reply"
    assert again.payloads == [] and again.last_call.cached


def test_a_new_provider_redacts_its_key(monkeypatch):
    monkeypatch.setenv("STUB_KEY", KEY)
    backend = StubProvider("m", [(200, f"the key is {KEY}")], api_key_env="STUB_KEY")
    assert KEY not in backend.complete(USER)
    failing = StubProvider("m", [(400, f"bad key {KEY}")], api_key_env="STUB_KEY")
    with pytest.raises(BackendError) as info:
        failing.complete(USER)
    assert KEY not in str(info.value) and "[redacted]" in str(info.value)


def test_a_new_provider_checks_its_settings():
    with pytest.raises(ConfigError, match=r"^stub backend: timeout must be > 0"):
        StubProvider("m", [(200, "x")], timeout=0)
    with pytest.raises(ConfigError, match=r"^stub backend: top_p must be a finite number"):
        StubProvider("m", [(200, "x")], top_p=float("nan"))
    with pytest.raises(ConfigError, match=r"^stub backend: base_url 'ftp://x' must start"):
        StubProvider("m", [(200, "x")], base_url="ftp://x")
    with pytest.raises(ConfigError, match="the model name is empty"):
        StubProvider("", [(200, "x")])
    with pytest.raises(TypeError, match="temprature"):
        StubProvider("m", [(200, "x")], temprature=0.1)


def test_the_base_makes_no_attempt_of_its_own():
    with pytest.raises(NotImplementedError, match="_exchange"):
        HttpChatBackend("m").complete(USER)


def test_a_settings_object_and_keywords_build_the_same_backend(server):
    settings = OpenAISettings(base_url=server, timeout=5.0, chat_template_kwargs={"a": 1})
    backend = OpenAIChatBackend("scripted", settings, max_tokens=7)
    same = OpenAIChatBackend(
        "scripted", base_url=server, timeout=5.0, chat_template_kwargs={"a": 1}, max_tokens=7
    )
    assert backend.options == same.options == dataclasses.replace(settings, max_tokens=7)
    assert backend.deadline == 10.0 and backend.max_tokens == 7
    assert backend.extra_body == {"chat_template_kwargs": {"a": 1}} == same.extra_body
    assert backend.api_key_env == "OPENAI_API_KEY"
    with pytest.raises(ConfigError, match=r"settings: got HttpSettings, expected OpenAISettings"):
        OpenAIChatBackend("scripted", HttpSettings(base_url=server))


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        HttpSettings().timeout = 1.0  # type: ignore[misc]


def test_the_settings_dataclasses_name_what_each_spec_accepts():
    http = {f.name for f in dataclasses.fields(HttpSettings)}
    assert set(backend_setting_types("openai")) == http == set(backend_setting_types("litellm"))
    assert OpenAIChatBackend.settings_class is OpenAISettings
    assert LiteLLMBackend.settings_class is HttpSettings
    local = {f.name for f in dataclasses.fields(LocalGenerationSettings)}
    assert set(backend_setting_types("hf")) == local | {"trust_remote_code"}
    assert set(backend_setting_types("qwen2-audio")) == local | {"processor"}
    assert TransformersChatBackend.settings_class is TransformersSettings
    assert Qwen2AudioBackend.settings_class is AudioSettings
    assert AudioSettings().max_batch_size == 4 and TransformersSettings().max_batch_size == 8
    types = setting_types(OpenAISettings)
    assert types["api_key_env"] == ("str", False) and types["deadline"] == ("float", True)
    assert setting_types(HttpSettings)["api_key_env"] == ("str", True)
    assert types["extra_body"] == ("dict", True) and types["send_audio"] == ("bool", False)


def test_typed_settings_read_the_dataclass_fields():
    typed = typed_settings("hf:/m", {"max_new_tokens": "12", "trust_remote_code": "yes"})
    assert typed == {"max_new_tokens": 12, "trust_remote_code": True}
    with pytest.raises(ConfigError, match="setting api_key_env: got null, expected a string"):
        typed_settings("openai:m", {"api_key_env": None})
    assert typed_settings("litellm:a/b", {"api_key_env": None}) == {"api_key_env": None}


@pytest.mark.parametrize("value", [{}, [], 0, "", "  "])
@pytest.mark.parametrize("name", ["base_url", "api_key_env"])
def test_an_empty_or_non_text_address_is_refused_not_taken_as_the_default(name, value):
    from hear2act_agents.registry import make_agent
    from hear2act_env.errors import ConfigError

    with pytest.raises(
        ConfigError, match=f"{name}.*(must be a non-empty string|expected a string)"
    ):
        make_agent("openai:m", **{name: value})
