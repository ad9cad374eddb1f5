"""Audio LLM backends with tiny random Qwen2-Audio and Qwen2.5-Omni thinker models."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

import hear2act_env  # noqa: E402,F401
from hear2act_agents.llm import make_llm_agent  # noqa: E402
from hear2act_agents.llm.backends.audio import (  # noqa: E402
    Qwen2AudioBackend,
    Qwen25OmniBackend,
    _audio_tokens,
    with_audio,
)
from hear2act_agents.llm.perceiver import AudioLLMPerceiver  # noqa: E402
from hear2act_env.errors import ConfigError  # noqa: E402
from hear2act_env.evaluation.rollout import run_episode  # noqa: E402
from hear2act_env.wrappers.perceived import PerceivedState  # noqa: E402

from .conftest import FakeAudio  # noqa: E402
from .tiny import tone  # noqa: E402

MSGS = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "what about price ?"},
]
FAST = {"max_new_tokens": 6, "device": "cpu", "topic_matcher": "keyword"}


def _spoken_env(max_actions=20):
    return FakeAudio(
        gym.make("Hear2Act-Prosody-Text-v0", allow_clarify=False, max_actions=max_actions)
    )


@pytest.mark.parametrize("prefix", ["qwen2-audio", "qwen2.5-omni"])
def test_full_spoken_episode_with_audio(prefix, tiny_qwen2_audio, tiny_omni):
    path = tiny_qwen2_audio if prefix == "qwen2-audio" else tiny_omni
    agent = make_llm_agent(f"{prefix}:{path}", allow_clarify=False, **FAST)
    out = run_episode(_spoken_env(), agent, seed=0)
    assert out.terminated or out.truncated
    stats = agent.stats()
    assert stats["api_errors"] == 0 and stats["calls"] >= len(out.infos) - 1
    assert all(info["last_turn"]["act"] != "clarify" for info in out.infos[1:])
    assert "attached" in agent.log[0].messages[1]["content"]


def test_audio_changes_the_model_input(tiny_qwen2_audio):
    backend = Qwen2AudioBackend(str(tiny_qwen2_audio), max_new_tokens=4, device="cpu")
    proc = backend._m.processor
    from hear2act_agents.llm.backends.base import Request

    with_clip = backend._inputs([Request(MSGS, tone(1.0))])
    without = backend._inputs([Request(MSGS, None)])
    audio_id = proc.tokenizer.convert_tokens_to_ids("<|AUDIO|>")
    n_audio = int((with_clip["input_ids"] == audio_id).sum())
    assert n_audio == _audio_tokens(100) and "input_features" in with_clip
    assert "input_features" not in without
    assert isinstance(backend.complete(MSGS, audio=tone(0.5)), str)


def test_two_stage_inferred_state_with_the_same_model(tiny_omni):
    agent = make_llm_agent(
        f"qwen2.5-omni:{tiny_omni}", allow_clarify=False, perceiver="self", **FAST
    )
    assert agent.name.endswith("+stage1:qwen2.5-omni:" + str(tiny_omni))
    out = run_episode(_spoken_env(max_actions=3), agent, seed=1)
    assert out.infos[-1]["actions"] == len(agent.log)
    for turn in agent.log:
        assert turn.perceived  # stage one's sentence (or the neutral fallback)
        content = turn.messages[1]["content"]
        assert "inferred from the voice" in content and "attached" not in content


def test_audio_llm_perceiver_in_the_wrapper(tiny_qwen2_audio, server):
    backend = Qwen2AudioBackend(str(tiny_qwen2_audio), max_new_tokens=6, device="cpu")
    perceiver = AudioLLMPerceiver(backend, domain="brunch spots")
    env = PerceivedState(_spoken_env(max_actions=2), perceiver)
    obs, _ = env.reset(seed=0)
    assert isinstance(obs["perceived"], str) and obs["perceived"]
    assert env.observation_space.contains(obs)
    # any decision agent reads it: here the HTTP policy sees the sentence, not the audio
    agent = make_llm_agent("openai:scripted", base_url=server, allow_clarify=False, send_audio=True)
    out = run_episode(env, agent, seed=0)
    assert out.truncated or out.terminated
    from .conftest import server_stats

    body = server_stats(server)["last"]["scripted"]
    assert isinstance(body["messages"][1]["content"], str)  # no audio part
    assert "inferred from the voice" in body["messages"][1]["content"]


def test_light_processor_matches_the_real_one(tiny_qwen2_audio):
    from hear2act_agents.llm.backends.base import Request

    real = Qwen2AudioBackend(str(tiny_qwen2_audio), max_new_tokens=4, device="cpu")
    light = Qwen2AudioBackend(
        str(tiny_qwen2_audio), max_new_tokens=4, device="cpu", processor="light"
    )
    assert (real.processor_kind, light.processor_kind) == ("auto", "light")
    clip = tone(1.3)
    a = real._inputs([Request(MSGS, clip)])
    b = light._inputs([Request(MSGS, clip)])
    assert a["input_ids"].tolist() == b["input_ids"].tolist()
    assert np.allclose(a["input_features"].numpy(), b["input_features"].numpy(), atol=1e-5)
    assert real.complete(MSGS, audio=clip) == light.complete(MSGS, audio=clip)


def test_omni_light_processor_episode(tiny_omni):
    agent = make_llm_agent(
        f"qwen2.5-omni:{tiny_omni}", allow_clarify=False, processor="light", **FAST
    )
    assert agent.backend.processor_kind == "light"
    out = run_episode(_spoken_env(max_actions=3), agent, seed=2)
    assert out.infos[-1]["actions"] == 3


def test_thinker_loads_from_a_full_omni_checkpoint(tiny_dir):
    from safetensors.numpy import load_file

    from .tiny import build_omni_full

    full = build_omni_full(tiny_dir / "omni-full", seed=5)
    backend = Qwen25OmniBackend(str(full), max_new_tokens=4, device="cpu")
    model = backend._m.model
    assert type(model).__name__ == "Qwen2_5OmniThinkerForConditionalGeneration"
    saved = load_file(str(full / "model.safetensors"))
    assert saved and all(k.startswith("thinker.") for k in saved)
    # save the loaded thinker again: every weight must be the checkpoint's, not a fresh init
    model.save_pretrained(tiny_dir / "omni-thinker-resaved")
    raw = load_file(str(tiny_dir / "omni-thinker-resaved" / "model.safetensors"))
    resaved = {k.removeprefix("thinker."): v for k, v in raw.items()}
    assert set(resaved) == {k.removeprefix("thinker.") for k in saved}
    for key, value in saved.items():
        assert np.array_equal(resaved[key.removeprefix("thinker.")], value), key
    assert isinstance(backend.complete(MSGS, audio=tone(0.4)), str)


def test_with_audio_attaches_to_the_first_user_message():
    msgs = with_audio(
        [*MSGS, {"role": "assistant", "content": "x"}, {"role": "user", "content": "again"}],
        tone(0.1),
    )
    assert msgs[1]["content"][0]["type"] == "audio" and msgs[3]["content"] == "again"
    assert with_audio(MSGS, None) == MSGS


def test_audio_backend_errors(tmp_path, tiny_chat):
    with pytest.raises(ConfigError):
        Qwen2AudioBackend(str(tmp_path / "nope"))
    with pytest.raises(ConfigError):
        Qwen2AudioBackend(str(tiny_chat), processor="weird")
    with pytest.raises(ConfigError):
        make_llm_agent(f"hf:{tiny_chat}", perceiver="self", device="cpu")


def test_real_env_audio_when_available(tiny_qwen2_audio, tiny_affect):
    """Once the env renders speech (access A+T), the audio agents and wrapper run on it."""
    from hear2act_env.errors import Hear2ActError

    try:
        env = gym.make("Hear2Act-Prosody-Text-v0", access="A+T", allow_clarify=False, max_actions=2)
        obs, _ = env.reset(seed=0)
    except Hear2ActError as exc:  # no speech channel in this build
        pytest.skip(f"env without audio observations: {exc}")
    assert obs["audio"].dtype == np.float32 and 0 < int(obs["audio_length"]) <= obs["audio"].size
    agent = make_llm_agent(f"qwen2-audio:{tiny_qwen2_audio}", allow_clarify=False, **FAST)
    out = run_episode(env, agent, seed=0)
    assert out.infos[-1]["actions"] >= 1 and agent.stats()["api_errors"] == 0
    from hear2act_agents.perceivers import AudioClassifierPerceiver

    wrapped = PerceivedState(env, AudioClassifierPerceiver(tiny_affect, device="cpu"))
    obs, _ = wrapped.reset(seed=1)
    assert obs["perceived"].startswith("The speaker sounds ")
