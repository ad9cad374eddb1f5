"""``backends.base.LocalGeneration``: the arguments the local transformers backends share are
checked and stored in one place, with the messages each backend gave before."""

from __future__ import annotations

import pytest

from hear2act_agents.llm.backends.audio import Qwen2AudioBackend
from hear2act_agents.llm.backends.base import CallTracking, LocalGeneration
from hear2act_agents.llm.backends.hf_chat import TransformersChatBackend
from hear2act_env.errors import ConfigError, Hear2ActError

LIMITS = "max_new_tokens and max_batch_size must be >= 1, temperature >= 0"


@pytest.mark.parametrize(
    "bad", [{"max_new_tokens": 0}, {"max_batch_size": 0}, {"temperature": -0.5}]
)
@pytest.mark.parametrize(
    ("cls", "kind"), [(TransformersChatBackend, "hf"), (Qwen2AudioBackend, "qwen2-audio")]
)
def test_limits_are_refused_before_anything_loads(cls, kind, bad):
    # the path does not exist: the limits are checked before the model is looked for
    with pytest.raises(ConfigError) as info:
        cls("/nonexistent/model", device="cpu", **bad)
    assert str(info.value) == f"{kind} backend: {LIMITS}"
    assert isinstance(info.value, Hear2ActError)


def test_audio_backend_checks_its_processor_first():
    with pytest.raises(ConfigError, match=r"processor: got 'fast', expected 'auto' or 'light'"):
        Qwen2AudioBackend("/nonexistent/model", device="cpu", processor="fast", max_new_tokens=0)


class _Probe(LocalGeneration):
    kind = "probe"


def test_init_generation_stores_the_settings(tmp_path):
    backend = _Probe()
    backend._init_generation(
        str(tmp_path),
        device="cpu",
        dtype="bfloat16",
        temperature=1,
        top_p=0.9,
        max_new_tokens=7,
        max_batch_size=2,
        chat_template_kwargs={"enable_thinking": False},
    )
    assert isinstance(backend, CallTracking)
    assert backend.path == str(tmp_path.resolve()) and backend.device == "cpu"
    assert backend.name == f"probe:{tmp_path}"
    assert isinstance(backend.temperature, float) and backend.temperature == 1.0
    assert backend.settings() == {
        "temperature": 1.0,
        "top_p": 0.9,
        "max_new_tokens": 7,
        "dtype": "bfloat16",
        "chat_template_kwargs": {"enable_thinking": False},
    }


def test_settings_leave_out_empty_template_kwargs():
    backend = _Probe()
    backend._init_generation(
        "some-org/some-model",
        device="cpu",
        dtype=None,
        temperature=0.0,
        top_p=None,
        max_new_tokens=1,
        max_batch_size=1,
        chat_template_kwargs=None,
    )
    assert backend.path == "some-org/some-model"  # a hub id is kept as given
    assert "chat_template_kwargs" not in backend.settings()
