"""``make_llm_agent``: specs, settings, errors, light imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hear2act_agents.llm import SPEC_PREFIXES, make_llm_agent
from hear2act_agents.llm.factory import split_spec
from hear2act_agents.llm.policy import STAT_KEYS
from hear2act_env.errors import ConfigError, MissingExtraError
from hear2act_env.policy import Policy


@pytest.mark.parametrize("spec", ["gpt-4o", "anthropic:claude", "openai", "hf", "", "vllm:x"])
def test_unknown_specs_list_the_known_prefixes(spec):
    with pytest.raises(ConfigError) as err:
        make_llm_agent(spec)
    if spec not in ("openai", "hf"):
        for prefix in SPEC_PREFIXES:
            assert f"'{prefix}:'" in str(err.value)


def test_split_spec():
    assert split_spec("openai:Qwen/Qwen2.5-7B-Instruct") == ("openai", "Qwen/Qwen2.5-7B-Instruct")
    assert split_spec("qwen2.5-omni:/models/omni") == ("qwen2.5-omni", "/models/omni")
    with pytest.raises(ConfigError):
        split_spec("openai:")


def test_openai_agent_settings_and_errors(server, tmp_path):
    agent = make_llm_agent(
        "openai:scripted", base_url=server, temperature=0.2, max_tokens=32, run=2
    )
    assert isinstance(agent, Policy) and agent.name == "openai:scripted" and agent.run == 2
    assert agent.backend.temperature == 0.2 and agent.backend.url == f"{server}/chat/completions"
    assert set(agent.stats()) == set(STAT_KEYS)
    assert make_llm_agent("openai:scripted", base_url=server, name="mine").name == "mine"
    with pytest.raises(ConfigError, match="unknown settings"):
        make_llm_agent("openai:scripted", base_url=server, temprature=0.2)
    with pytest.raises(ConfigError):
        make_llm_agent("openai:scripted", base_url="ftp://nowhere")
    with pytest.raises(ConfigError):
        make_llm_agent("openai:scripted", base_url=server, max_concurrency=0)
    with pytest.raises(ConfigError):
        make_llm_agent("openai:scripted", base_url=server, topic_matcher="magic")
    with pytest.raises(ConfigError, match="no model folder"):
        make_llm_agent("hf:/nowhere", base_url=server)
    with pytest.raises(ConfigError, match="base_url applies to 'openai:'"):
        make_llm_agent(f"hf:{tmp_path}", base_url=server)
    with pytest.raises(ConfigError, match="perceiver"):
        make_llm_agent("openai:scripted", base_url=server, perceiver="self")


def test_keyword_matcher_threshold_setting(server):
    agent = make_llm_agent(
        "openai:scripted", base_url=server, topic_matcher="keyword", topic_threshold=0.9
    )
    assert agent._matcher.threshold == 0.9


def test_missing_extra_is_reported(monkeypatch):
    monkeypatch.setitem(sys.modules, "httpx", None)  # import httpx now raises ImportError
    with pytest.raises(MissingExtraError) as err:
        make_llm_agent("openai:any", base_url="http://127.0.0.1:9/v1")
    assert err.value.extra == "llm" and err.value.module == "httpx"
    assert 'pip install "hear2act-env[llm]"' in str(err.value)


def test_importing_the_llm_layer_is_light():
    code = (
        "import sys, hear2act_agents.llm, hear2act_agents.llm.factory, hear2act_agents.llm.backends.openai_http, "
        "hear2act_agents.llm.backends.hf_chat, hear2act_agents.llm.backends.audio, hear2act_agents.perceivers, "
        "hear2act_env.wrappers.perceived\n"
        "heavy = [m for m in ('torch', 'transformers', 'httpx') if m in sys.modules]\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("setting", "value", "attribute", "expected"),
    [
        ("send_seed", "false", "send_seed", False),
        ("send_seed", "Yes", "send_seed", True),
        ("send_seed", 0, "send_seed", False),
        ("max_tokens", "12", "max_tokens", 12),
        ("temperature", "0.5", "temperature", 0.5),
        (
            "extra_body",
            '{"chat_template_kwargs": {"enable_thinking": false}}',
            "extra_body",
            {"chat_template_kwargs": {"enable_thinking": False}},
        ),
    ],
)
def test_text_settings_take_the_parameters_type(server, setting, value, attribute, expected):
    agent = make_llm_agent("openai:scripted", base_url=server, **{setting: value})
    assert getattr(agent.backend, attribute) == expected


@pytest.mark.parametrize(
    ("setting", "value", "expected"),
    [
        ("send_seed", "maybe", "true or false"),
        ("max_tokens", 1.5, "an integer"),
        ("max_tokens", "lots", "an integer"),
        ("extra_body", "[1, 2]", "a JSON object"),
        ("temperature", "warm", "a number"),
    ],
)
def test_text_settings_that_do_not_fit_are_named(server, setting, value, expected):
    with pytest.raises(ConfigError, match=f"setting {setting}: got .*, expected {expected}"):
        make_llm_agent("openai:scripted", base_url=server, **{setting: value})
