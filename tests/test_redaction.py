"""``redact_value``: every text of a settings table or a run configuration redacted, nested
ones too, before it reaches a manifest or an audit model record."""

from __future__ import annotations

import json

from hear2act_env.evaluation.runner import GridConfig, manifest
from hear2act_env.redaction import redact_value

KEY = "sk-fake-0123456789abcdefSECRET"


def test_texts_are_redacted_at_every_depth():
    value = {
        "base_url": f"http://user:pw@127.0.0.1:8000/v1?api_key={KEY}",
        "extra_body": {"headers": [f"Authorization: Bearer {KEY}"], "n": 2, "flag": True},
        "stop": ("END", KEY),
        1: None,
    }
    out = redact_value(value)
    assert KEY not in json.dumps(out) and "pw@" not in json.dumps(out)
    assert out["extra_body"]["n"] == 2 and out["extra_body"]["flag"] is True
    assert out["stop"][0] == "END" and "[redacted]" in out["stop"][1] and out["1"] is None
    assert out["base_url"].startswith("http://127.0.0.1:8000/v1?api_key=")


def test_a_key_inside_a_nested_agent_option_never_reaches_the_manifest():
    config = GridConfig(
        agents=("eager",),
        agent_options={"extra_body": {"api_key": KEY}, "temperature": 0.5},
    )
    written = manifest(config, run={"settings": {"extra_body": {"token": KEY}}})
    text = json.dumps(written)
    assert KEY not in text
    assert written["config"]["agent_options"]["temperature"] == 0.5
