"""Env steps per second under a random policy, as ratios to CartPole-v1 in the same run.

    python benchmarks/env_throughput.py [--steps 50000] [--audio-steps 3000]

Every env is made with ``gym.make`` (default wrappers) and stepped with actions sampled from its
action space (seeded), resetting at episode end. ``Hear2Act-Prosody-v0`` (audio) is measured
with a warm cache: the same seeded run is played once before timing. Goals: text env >= 0.25
of CartPole's rate, warm-cache audio env >= 0.05.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import gymnasium as gym

import hear2act_env  # noqa: F401  (registers the ids)


def steps_per_second(env_id: str, steps: int, seed: int = 0, repeats: int = 3, **kwargs) -> float:
    """Random-policy steps per second of ``env_id`` (best of ``repeats`` identical runs)."""
    env = gym.make(env_id, **kwargs)
    best = 0.0
    for _ in range(repeats):
        env.reset(seed=seed)
        env.action_space.seed(seed)
        start = time.perf_counter()
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
        best = max(best, steps / (time.perf_counter() - start))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--audio-steps", type=int, default=3_000)
    args = parser.parse_args()
    cartpole = steps_per_second("CartPole-v1", args.steps)
    text = steps_per_second("Hear2Act-Prosody-Text-v0", args.steps)
    with tempfile.TemporaryDirectory() as cache:
        # repeats=3 over the same seeded run: the first fills the cache, the best is warm
        audio = steps_per_second("Hear2Act-Prosody-v0", args.audio_steps, audio_cache=cache)
    print(f"{'env':<28}{'steps/s':>12}{'ratio to CartPole':>20}")
    print(f"{'CartPole-v1':<28}{cartpole:>12,.0f}{1:>20.2f}")
    print(
        f"{'Hear2Act-Prosody-Text-v0':<28}{text:>12,.0f}{text / cartpole:>20.3f}   (goal >= 0.25)"
    )
    print(
        f"{'Hear2Act-Prosody-v0 (warm)':<28}{audio:>12,.0f}{audio / cartpole:>20.3f}   (goal >= 0.05)"
    )


if __name__ == "__main__":
    main()
