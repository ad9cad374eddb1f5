"""Named prompt templates (``--prompt``) and the sampling seed (``--seed``): each template's
wording is pinned to its name, the chosen one is what the server reads and what the manifest
records, and another seed gives other sampled requests of the same episodes."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import hear2act_env  # noqa: F401
from hear2act_agents.llm import make_llm_agent
from hear2act_agents.llm.templates import DEFAULT_PROMPT, TEMPLATES, get_template
from hear2act_cli import main
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.identity import config_hash, configuration
from hear2act_env.scenarios.bank import load_bank

from .conftest import server_stats

#: The digest of each template's wording. A change of wording must come with a new name
#: (``...-v2``), never under an old one: results that name a template must mean one text.
PINNED = {"hear2act-v1": "3ef5aae3337efbf2", "brief-v1": "4f05053c683ba72e"}
FIRST = [s.id for s in load_bank() if s.split == "test"][:1]


def test_each_template_keeps_the_wording_its_name_stands_for():
    assert {name: t.digest() for name, t in TEMPLATES.items()} == PINNED
    assert DEFAULT_PROMPT == "hear2act-v1"


def test_an_unknown_template_is_refused_with_the_known_names():
    with pytest.raises(
        ConfigError, match="prompt: got 'nope', expected one of brief-v1, hear2act-v1"
    ):
        get_template("nope")


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_template_asks_for_the_answer_format_the_parser_reads(name):
    env = gym.make("Hear2Act-Prosody-Text-v0")
    obs, _ = env.reset(seed=1)
    template = get_template(name)
    system = template.system(obs["domain"], obs["options"], True)
    assert obs["options"] in system and "[ACTION: ASK|CLARIFY|RECOMMEND|CONFIRM]" in system
    assert "CLARIFY" not in template.system(obs["domain"], obs["options"], False)
    assert obs["transcript"] in template.user(obs["transcript"], "")


def _agent(server, **kw):
    return make_llm_agent(
        "openai:scripted", base_url=server, topic_matcher="keyword", max_retries=1, **kw
    )


def _first_request(server, agent):
    env = gym.make("Hear2Act-Prosody-Text-v0")
    obs, _ = env.reset(seed=2)
    agent.reset(obs, seed=2)
    agent.act(obs)
    return server_stats(server)["last"]["scripted"]


def test_the_named_template_is_what_the_server_reads(server):
    standard = _first_request(server, _agent(server))
    brief = _first_request(server, _agent(server, prompt="brief-v1"))
    assert standard["messages"][0]["content"].startswith("You are an assistant helping")
    assert brief["messages"][0]["content"].startswith("Help a customer choose")
    assert brief["messages"][1]["content"].endswith("Your action?")
    with pytest.raises(ConfigError, match="prompt: got 'x'"):
        _agent(server, prompt="x")


def test_a_sampling_seed_changes_every_request_seed_and_nothing_else(server):
    plain = _first_request(server, _agent(server, temperature=0.7))
    again = _first_request(server, _agent(server, temperature=0.7, sampling_seed=0))
    other = _first_request(server, _agent(server, temperature=0.7, sampling_seed=5))
    assert plain["seed"] == again["seed"] != other["seed"]
    assert plain["messages"] == other["messages"]
    with pytest.raises(ConfigError, match="sampling_seed"):
        _agent(server, sampling_seed=-1)


def test_eval_records_the_template_and_seed_and_they_make_another_configuration(
    server, tmp_path, capsys
):
    def run(name, *flags):
        out = tmp_path / name
        argv = ["eval", "--agents", "openai:scripted", "--base-url", server, "--no-probe"]
        argv += ["--scenarios", *FIRST, "--access", "T", "--realizations", "prosody"]
        argv += ["--out", str(out), "--no-plots", "--backend", "serial", *flags]
        assert main(argv) == 0, capsys.readouterr().err
        capsys.readouterr()
        return json.loads((out / "results.manifest.json").read_text())["config"]

    default = run("default")
    named_default = run("named", "--prompt", "hear2act-v1", "--seed", "0")
    brief = run("brief", "--prompt", "brief-v1", "--seed", "7")
    assert brief["agent_options"]["prompt"] == "brief-v1"
    assert brief["agent_options"]["sampling_seed"] == 7
    # naming the defaults is the configuration of naming nothing; another template is not
    assert config_hash(configuration(default)) == config_hash(configuration(named_default))
    assert config_hash(configuration(brief)) != config_hash(configuration(default))
    assert (
        main(
            [
                "eval",
                "--agents",
                "openai:scripted",
                "--prompt",
                "nope",
                "--base-url",
                server,
                "--scenarios",
                *FIRST,
                "--out",
                str(tmp_path / "bad"),
            ]
        )
        == 2
    )
    assert "prompt: got 'nope'" in capsys.readouterr().err
