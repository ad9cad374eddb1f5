"""``EvalRun``: the one typed value an ``eval`` run reads after its door (no namespace)."""

from __future__ import annotations

import dataclasses

import pytest

from hear2act_cli import build_parser, run_config
from hear2act_cli.eval_run import EvalRun
from hear2act_env.errors import ConfigError


def _eval_parser():
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices["eval"]


def test_every_eval_flag_is_a_field_of_the_run():
    fields = {f.name for f in dataclasses.fields(EvalRun)}
    dests = {a.dest for a in _eval_parser()._actions} - {"help", "config", "print_config"}
    assert {("settings" if d == "setting" else d) for d in dests} == fields


def test_a_resolved_configuration_becomes_a_typed_run():
    args = build_parser().parse_args(["eval", "--agents", "eager", "prober", "--runs", "2"])
    resolved, _ = run_config.resolve(args, args.eval_options)
    run = EvalRun.of(resolved)
    assert run.agents == ("eager", "prober") and run.runs == 2
    assert isinstance(run.access, tuple) and isinstance(run.realizations, tuple)
    assert run.agent_settings() == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.runs = 3  # type: ignore[misc]


def test_settings_given_by_flags_reach_the_agents():
    argv = ["eval", "--agents", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--trust-audio"]
    args = build_parser().parse_args([*argv, "--setting", "temperature=0.5"])
    run = EvalRun.of(run_config.resolve(args, args.eval_options)[0])
    settings = run.agent_settings()
    assert settings["base_url"] == "http://127.0.0.1:9/v1" and settings["trust_audio"] is True
    assert "temperature" in settings


def test_a_key_that_is_not_part_of_a_run_is_refused_by_name():
    with pytest.raises(ConfigError, match=r"\['colour'\]"):
        EvalRun.of({"agents": ["eager"], "colour": "red"})
