import json

import pytest

from hear2act_env.errors import Hear2ActError, ScenarioError
from hear2act_env.protocol.scenario import Role, Scenario


def test_json_round_trip_is_exact(scenario):
    data = json.loads(json.dumps(scenario.to_dict()))
    assert Scenario.from_dict(data) == scenario
    assert Scenario.from_dict(data).to_dict() == scenario.to_dict()


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.pop("request"), "missing field 'request'"),
        (lambda d: d.update(colour="red"), "unknown field(s) ['colour']"),
        (lambda d: d.update(split="validation"), "split: got 'validation'"),
        (
            lambda d: d["needs"][1].update(satisfied_by="all"),
            "needs[1].satisfied_by: expected a list",
        ),
        (lambda d: d["candidates"][3].update(role="hero"), "candidates[3].role: got 'hero'"),
        (
            lambda d: d["candidates"][0]["values"].__setitem__(0, "x"),
            "candidates[0].values[0]: expected int",
        ),
        (lambda d: d["context"].update(urgency=True), "context.urgency: got True"),
    ],
)
def test_from_dict_names_scenario_and_field(scenario, mutate, expected):
    data = scenario.to_dict()
    mutate(data)
    with pytest.raises(ScenarioError) as err:
        Scenario.from_dict(data)
    assert scenario.id in str(err.value)
    assert expected in str(err.value)
    assert isinstance(err.value, Hear2ActError)


def test_patterns_and_roles(scenario):
    patterns = {c.role: scenario.pattern(c) for c in scenario.candidates if c.role != Role.PARTIAL}
    assert patterns[Role.BEST] == "r111"
    assert patterns[Role.ATTRACTIVE] == "r110"


def test_options_text_numbers_from_one(scenario):
    lines = scenario.options_text().splitlines()
    assert len(lines) == 11
    assert lines[0].startswith("1. ") and lines[-1].startswith("11. ")
