"""Env steps per second under a random policy, as a ratio to CartPole-v1 in the same run.

    python benchmarks/env_throughput.py [--steps 100000]

Both envs are made with ``gym.make`` (default wrappers) and stepped with actions sampled from
their action spaces, resetting at episode end. Goal: ratio >= 0.25.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import hear2act_env  # noqa: F401  (registers the ids)


def steps_per_second(env_id: str, steps: int, seed: int = 0) -> float:
    """Random-policy steps per second of ``env_id`` (best of 3 runs)."""
    env = gym.make(env_id)
    env.action_space.seed(seed)
    best = 0.0
    for rep in range(3):
        env.reset(seed=seed + rep)
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
    parser.add_argument("--env", default="Hear2Act-Prosody-Text-v0")
    args = parser.parse_args()
    ours = steps_per_second(args.env, args.steps)
    cartpole = steps_per_second("CartPole-v1", args.steps)
    print(f"{'env':<28}{'steps/s':>12}")
    print(f"{args.env:<28}{ours:>12,.0f}")
    print(f"{'CartPole-v1':<28}{cartpole:>12,.0f}")
    print(f"ratio: {ours / cartpole:.2f} (goal >= 0.25)")


if __name__ == "__main__":
    main()
