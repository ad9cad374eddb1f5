"""The leak test: under Prosody-mediated, the words of a reaction to a recommendation carry no
information about its state; under Explicit lexical they do."""

import re
from collections import Counter

import numpy as np
import pytest

from hear2act_env.env import Hear2ActEnv

STATES = ("resolved", "reluctant", "concern")


def reactions(realization: str, episodes: int, seed: int) -> list[tuple[str, str]]:
    env = Hear2ActEnv(realization=realization)
    rng = np.random.default_rng(seed)
    out = []
    for e in range(episodes):
        obs, info = env.reset(seed=seed * 100_000 + e)
        out.append((obs["transcript"].rsplit("User: ", 1)[-1], info["truth"]["state"]))
        for option in rng.integers(0, 11, size=8):
            obs, _, _, _, info = env.step(np.array([2, option, 0]))
            out.append((obs["transcript"].rsplit("User: ", 1)[-1], info["truth"]["state"]))
    return [(t, s) for t, s in out if s in STATES]


def bag_of_words_accuracy(train, test) -> float:
    """Multinomial naive Bayes over lower-cased word counts (add-one smoothing)."""
    tok = lambda t: re.findall(r"[a-z']+", t.lower())  # noqa: E731
    vocab = {w: i for i, w in enumerate(sorted({w for t, _ in train for w in tok(t)}))}
    counts = np.ones((len(STATES), len(vocab)))
    prior = np.zeros(len(STATES))
    for text, state in train:
        k = STATES.index(state)
        prior[k] += 1
        for w in tok(text):
            counts[k, vocab[w]] += 1
    logp = np.log(counts / counts.sum(axis=1, keepdims=True))
    logprior = np.log(prior / prior.sum())
    correct = 0
    for text, state in test:
        idx = [vocab[w] for w in tok(text) if w in vocab]
        scores = logprior + logp[:, idx].sum(axis=1)
        correct += STATES[int(np.argmax(scores))] == state
    return correct / len(test)


@pytest.mark.parametrize("realization", ["prosody", "explicit"])
def test_words_reveal_state_only_under_explicit(realization):
    train = reactions(realization, 700, seed=1)
    test = reactions(realization, 300, seed=2)
    majority = Counter(s for _, s in test).most_common(1)[0][1] / len(test)
    accuracy = bag_of_words_accuracy(train, test)
    assert len(test) > 800
    if realization == "prosody":
        assert accuracy <= majority + 0.02, (accuracy, majority)
    else:
        assert accuracy >= majority + 0.3, (accuracy, majority)
