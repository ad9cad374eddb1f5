"""Utterance validation and the Renderer protocol."""

from __future__ import annotations

import pytest

from hear2act_env.errors import ConfigError
from hear2act_env.speech.utterance import Renderer, Utterance


def test_valid_utterance_normalizes_types():
    u = Utterance("Okay, that could work.", "warm", "amber", 3, 1)
    assert u.prosody_strength == 1.0 and isinstance(u.prosody_strength, float)
    assert u.variation == 3


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"delivery": "happy"}, "delivery"),
        ({"persona": "zed"}, "persona"),
        ({"prosody_strength": 2.5}, "prosody_strength"),
        ({"prosody_strength": -0.1}, "prosody_strength"),
        ({"prosody_strength": float("nan")}, "prosody_strength"),
        ({"variation": -1}, "variation"),
        ({"variation": 1.5}, "variation"),
        ({"text": "   "}, "text"),
    ],
)
def test_invalid_fields_raise_config_error_naming_field_and_value(kwargs, field):
    args = {"text": "Okay.", "delivery": "warm", "persona": "amber", "variation": 0}
    args.update(kwargs)
    with pytest.raises(ConfigError) as info:
        Utterance(**args)
    message = str(info.value)
    assert field in message
    assert repr(kwargs[next(iter(kwargs))]) in message


def test_renderer_protocol_is_structural():
    class Fake:
        name = "fake"
        version = "1"
        sample_rate = 16000

        def render(self, utt):  # pragma: no cover - not called
            raise NotImplementedError

    assert isinstance(Fake(), Renderer)


def test_every_name_the_speech_package_exports_resolves() -> None:
    """``hear2act_env.speech`` exports lazily: a name listed there must import (SAMPLE_RATE
    was listed under a module that does not define it)."""
    import hear2act_env.speech as speech
    from hear2act_env.constants import SAMPLE_RATE

    for name in speech.__all__:
        assert getattr(speech, name) is not None, name
    assert speech.SAMPLE_RATE == SAMPLE_RATE
