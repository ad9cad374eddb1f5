"""Local transformers chat models, with a tiny random Qwen2 model saved to tmp_path."""

from __future__ import annotations

import threading

import gymnasium as gym
import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

import hear2act_env  # noqa: E402,F401
from hear2act_agents.llm import make_llm_agent  # noqa: E402
from hear2act_agents.llm.backends.base import MicroBatcher, Request  # noqa: E402
from hear2act_agents.llm.backends.hf_chat import TransformersChatBackend, render_chat  # noqa: E402
from hear2act_env.errors import ConfigError  # noqa: E402
from hear2act_env.evaluation.rollout import run_episode  # noqa: E402

MSGS = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "what about price ?"},
]


def test_full_episode_with_a_tiny_chat_model(tiny_chat):
    agent = make_llm_agent(
        f"hf:{tiny_chat}", max_new_tokens=8, device="cpu", topic_matcher="keyword"
    )
    out = run_episode(gym.make("Hear2Act-Prosody-Text-v0"), agent, seed=0)
    assert out.terminated or out.truncated
    stats = agent.stats()
    assert stats["calls"] >= 1 and stats["api_errors"] == 0 and stats["timeouts"] == 0
    assert len(agent.log) == len(out.infos) - 1


def test_greedy_is_deterministic_and_cached(tiny_chat, tmp_path):
    backend = TransformersChatBackend(
        str(tiny_chat), max_new_tokens=6, device="cpu", cache_dir=tmp_path
    )
    a = backend.complete(MSGS, seed=1)
    b = TransformersChatBackend(str(tiny_chat), max_new_tokens=6, device="cpu").complete(
        MSGS, seed=2
    )
    assert a == b  # greedy: the seed does not matter
    if a:
        assert len(list(tmp_path.rglob("*.json"))) == 1


def test_sampling_is_reproducible_per_seed(tiny_chat):
    backend = TransformersChatBackend(
        str(tiny_chat), max_new_tokens=12, temperature=1.0, device="cpu"
    )
    assert backend.complete(MSGS, seed=3) == backend.complete(MSGS, seed=3)


def test_concurrent_episodes_are_batched(tiny_chat):
    backend = TransformersChatBackend(
        str(tiny_chat), max_new_tokens=4, device="cpu", max_batch_size=4, batch_wait_s=0.2
    )
    replies = {}

    def call(i):
        replies[i] = backend.complete([{"role": "user", "content": f"what about option {i}"}])

    backend.batcher.batch_sizes.clear()
    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(replies) == 4
    assert max(backend.batcher.batch_sizes) > 1
    # batched greedy replies equal one-by-one replies
    solo = TransformersChatBackend(str(tiny_chat), max_new_tokens=4, device="cpu", max_batch_size=1)
    for i in range(4):
        assert solo.complete([{"role": "user", "content": f"what about option {i}"}]) == replies[i]


def test_microbatcher_groups_and_propagates_errors():
    seen = []

    def run(batch):
        seen.append(len(batch))
        if any(r.messages == "boom" for r in batch):
            raise RuntimeError("boom")
        return [str(r.messages) for r in batch]

    mb = MicroBatcher(run, max_batch_size=3, max_wait_s=0.3)
    out = {}

    def call(i):
        try:
            out[i] = mb.submit(Request(f"m{i}"))
        except RuntimeError as exc:
            out[i] = exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(out.values()) == [f"m{i}" for i in range(5)]
    assert sum(seen) == 5 and max(seen) <= 3
    with pytest.raises(RuntimeError):
        MicroBatcher(run).submit(Request("boom"))


def test_system_role_is_merged_when_the_template_rejects_it():
    class NoSystem:
        def apply_chat_template(self, messages, **kw):
            if messages[0]["role"] == "system":
                raise ValueError("System role not supported")
            return "|".join(m["content"] for m in messages)

    assert render_chat(NoSystem(), MSGS) == "Be brief.\n\nwhat about price ?"


def test_bad_paths_are_configuration_errors(tmp_path):
    with pytest.raises(ConfigError):
        make_llm_agent(f"hf:{tmp_path / 'missing'}")
    (tmp_path / "file.bin").write_bytes(b"x")
    with pytest.raises(ConfigError):
        make_llm_agent(f"hf:{tmp_path / 'file.bin'}")
    with pytest.raises(ConfigError):
        make_llm_agent(f"hf:{tmp_path}")  # a folder without a model
