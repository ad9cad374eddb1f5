"""One agent registry: every kind is built through ``hear2act eval`` as a spoken assistant."""

from __future__ import annotations

import pytest

from hear2act_agents.registry import AGENT_KINDS, AgentFactory, agent_kind, make_agent
from hear2act_cli import main
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.runner import load_records
from hear2act_env.scenarios.bank import load_bank

SID = next(s.id for s in load_bank() if s.split == "test")
FAST = ["--setting", "max_new_tokens=6", "--setting", "device=cpu"]
FAST += ["--setting", "topic_matcher=keyword"]

#: prefix -> (spec template, access, extra eval arguments); {fixture} is filled in the test.
KINDS = {
    "baseline": ("random", "T", ["--runs", "4"]),
    "openai": ("openai:scripted", "T", ["--base-url", "{server}"]),
    "litellm": ("litellm:openai/scripted", "T", ["--base-url", "{server}"]),
    "hf": ("hf:{tiny_chat}", "T", FAST),
    "qwen2-audio": ("qwen2-audio:{tiny_qwen2_audio}", "A+T", FAST),
    "qwen2.5-omni": ("qwen2.5-omni:{tiny_omni}", "A+T", FAST),
    "ppo": ("ppo:prosody-T-c0.05", "T", []),
    "maskable-ppo": ("maskable-ppo:prosody-T+S-c0.05", "T+S", []),
}


def test_every_registered_kind_is_covered_here():
    assert set(KINDS) == set(AGENT_KINDS)


@pytest.mark.parametrize("prefix", sorted(KINDS))
def test_every_kind_runs_through_eval_as_a_spoken_assistant(prefix, request, tmp_path):
    template, access, extra = KINDS[prefix]
    fill = {
        name: request.getfixturevalue(name)
        for name in ("server", "tiny_chat", "tiny_qwen2_audio", "tiny_omni")
        if "{" + name + "}" in template + " ".join(extra)
    }
    spec = template.format(**fill)
    argv = ["eval", "--agents", spec, "--spoken", "--scenarios", SID, "--access", access]
    argv += ["--realizations", "prosody", "--out", str(tmp_path), "--no-plots"]
    argv += ["--backend", "serial", *[a.format(**fill) for a in extra]]
    assert main(argv) == 0
    records = load_records(tmp_path / "results.jsonl")
    assert records and all(r.key.agent == spec for r in records)
    for r in records:
        assert r.error is None, r.error
        assert r.counts["clarify"] == 0 and r.counts["invalid"] == 0, r.counts


def test_spoken_ppo_regression(tmp_path):
    """``eval --agents ppo:NAME --spoken`` used to record a TypeError for every episode."""
    argv = ["eval", "--agents", "ppo:prosody-T-c0.05", "--spoken", "--access", "T"]
    argv += ["--realizations", "prosody", "--out", str(tmp_path), "--no-plots", "--runs", "1"]
    argv += ["--backend", "serial", "--scenarios", SID]
    assert main(argv) == 0
    [record] = load_records(tmp_path / "results.jsonl")
    assert record.error is None and record.actions >= 1


def test_random_baseline_clarifies_only_when_allowed():
    from hear2act_env import Hear2ActEnv

    def clarifies(allow: bool) -> int:
        agent = make_agent("random", allow_clarify=allow)
        obs, _ = Hear2ActEnv().reset(seed=0)
        agent.reset(obs, seed=0)
        return sum(int(agent.act(obs)[0]) == 1 for _ in range(200))

    assert clarifies(True) > 20 and clarifies(False) == 0


def test_specs_resolve_or_fail_with_the_known_list():
    assert agent_kind("prober")[0] == "baseline"
    assert agent_kind("baseline:prober")[0] == "baseline"
    assert agent_kind("maskable-ppo:x")[0] == "maskable-ppo"
    assert make_agent("maskable-ppo:prosody-T-c0.05").name == "maskable-ppo:prosody-T-c0.05"
    for bad in ("nobody", "gpt:x", "openai:", "", "baseline:nobody"):
        with pytest.raises(ConfigError, match="agent"):
            make_agent(bad)
    with pytest.raises(ConfigError, match="takes no settings"):
        make_agent("prober", temperature=0)
    with pytest.raises(ConfigError, match="takes no settings"):
        make_agent("ppo:prosody-T-c0.05", base_url="http://x")


def test_factory_gives_settings_to_llm_kinds_only(server):
    factory = AgentFactory({"base_url": server}, allow_clarify=False)
    assert factory("prober").name == "prober"  # no settings reach a baseline
    assert factory("openai:scripted").allow_clarify is False
    with pytest.raises(ConfigError):  # a typo in a setting is an error, not ignored
        AgentFactory({"base_url": server, "max_token": 8})("openai:scripted")


def test_eval_rejects_settings_when_no_agent_takes_them(tmp_path, capsys):
    argv = ["eval", "--agents", "prober", "--setting", "temperature=0", "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "apply to LLM agents" in capsys.readouterr().err
