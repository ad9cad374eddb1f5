"""Environment steps per second inside MaskablePPO training, per access condition, and where
the time goes (rendering, prosodic features, engine, observation wrappers, PPO itself).

    python benchmarks/rl_throughput.py [--steps 8192] [--audio-steps 2048] [--access T T+S A+T]
        [--audio-encoder features learned] [--warm] [--subproc] [--cache-dir DIR]

For each access condition the full training stack (``hear2act_agents.rl.envs.make_env``) runs under
``MaskablePPO.learn`` in a ``DummyVecEnv`` (everything in this process, so it can be timed)
with the training defaults (8 envs for text, 4 for audio, 2048 steps per rollout). Timers
wrapped around the entry points split the wall time:

- render: ``Hear2ActEnv._speak`` (espeak-ng synthesis, resampling, the audio cache)
- features: ``ClipTracker.summary``: the prosodic features (pitch track, energy, rate, pauses)
  of ``ProsodyTracker``, or with a learned audio encoder the log-mel spectrogram of
  ``LogMelTracker`` (the encoder itself runs
  inside PPO's forward passes and updates, so its cost is in ``ppo``)
- engine: ``Hear2ActEnv.reset``/``step`` minus render (user engine, realizer, transcript, info)
- structured: ``StructuredObservation.observation`` (the lexical view as arrays)
- encode+mask: ``RLObservation.observation`` and ``action_masks``
- ppo: the rest (policy forward passes during rollouts, GAE, gradient updates, VecEnv glue)

Each audio condition runs once per ``--audio-encoder`` (``features``: the 8 handcrafted prosodic
features, ``learned``: the convolutional encoder over log-mel spectrograms, row ``A+T learned``).
The caches live in ``--cache-dir`` (default: a fresh temporary folder, so the first run of each
condition is cold whatever earlier runs left in the user's cache).

The reference, measured in the same run, is SB3's ``PPO`` on Gymnasium's ``CartPole-v1`` with
the same settings (8 envs in a ``DummyVecEnv``, 2048 steps per rollout, batch 256, 10 epochs,
2x128 MLP, 1 torch thread: ``TrainConfig.ppo_kwargs``): each condition is also reported as a ratio of that rate, which is
what to compare across machines.

With ``--warm`` each audio condition is timed a second time on the same episodes with new envs
(row ``warm``): every clip and its prosodic features then come from the disk caches, the steady
state of training after ``hear2act render --features``. With ``--subproc`` the audio condition is also timed (without the breakdown) in a
``SubprocVecEnv``, which is how ``train`` runs it. Results are printed as a table; the machine's
core count is printed too (the numbers in docs/results/rl.md are from 2 cores).
"""

from __future__ import annotations

import argparse
import functools
import os
import tempfile
import time
from collections import defaultdict

from hear2act_env.conditions import Access

TIMES: dict[str, float] = defaultdict(float)


def _timed(cls: type, name: str, bucket: str) -> None:
    original = getattr(cls, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            TIMES[bucket] += time.perf_counter() - start

    setattr(cls, name, wrapper)


def instrument() -> None:
    """Wrap the entry points with timers (once per process)."""
    from hear2act_agents.rl.encoding import RLObservation
    from hear2act_env.env import Hear2ActEnv
    from hear2act_env.wrappers.clip_summary import ClipTracker
    from hear2act_env.wrappers.structured import StructuredObservation

    _timed(Hear2ActEnv, "_speak", "render")
    # the prosodic features and the log-mel spectrograms: both trackers' one entry point
    _timed(ClipTracker, "summary", "features")
    _timed(Hear2ActEnv, "step", "env")
    _timed(Hear2ActEnv, "reset", "env")
    _timed(StructuredObservation, "observation", "structured")
    _timed(RLObservation, "observation", "encode+mask")
    _timed(RLObservation, "action_masks", "encode+mask")


def run(
    access: str, steps: int, vec: str, seed: int = 0, audio_encoder: str = "features"
) -> tuple[float, dict[str, float]]:
    """Steps per second of ``MaskablePPO.learn`` and the time share of each bucket."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from hear2act_agents.rl.encoding import EncoderSpec
    from hear2act_agents.rl.envs import env_thunks
    from hear2act_agents.rl.training import TrainConfig, train_env

    torch.set_num_threads(1)
    from hear2act_env.speech.logmel import LogMelSettings

    config = TrainConfig(
        env=train_env(access=access), timesteps=steps, seed=seed, audio_encoder=audio_encoder
    )
    logmel = LogMelSettings().to_dict() if config.learned else None
    # unscaled prosody: same cost
    spec = EncoderSpec.for_access(access, audio_encoder=config.audio_encoder, logmel=logmel)
    n_envs = config.resolved_n_envs()
    thunks = env_thunks(n_envs, spec=spec, **config.env_args())
    venv = SubprocVecEnv(thunks) if vec == "subproc" else DummyVecEnv(thunks)
    model = MaskablePPO(config.policy, venv, **config.ppo_kwargs())
    TIMES.clear()
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    wall = time.perf_counter() - start
    venv.close()
    shares = dict(TIMES)
    shares["engine"] = shares.pop("env", 0.0) - shares.get("render", 0.0)
    shares["ppo"] = wall - sum(shares.values())
    return model.num_timesteps / wall, {k: v / wall for k, v in shares.items()}


def reference(steps: int, seed: int = 0) -> float:
    """Steps per second of plain ``PPO`` on ``CartPole-v1`` with the text training settings."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    from hear2act_agents.rl.training import TrainConfig

    torch.set_num_threads(1)
    config = TrainConfig(timesteps=steps, seed=seed)  # access T
    venv = make_vec_env("CartPole-v1", n_envs=config.resolved_n_envs(), seed=seed)
    model = PPO("MlpPolicy", venv, **config.ppo_kwargs())
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    wall = time.perf_counter() - start
    venv.close()
    return model.num_timesteps / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8192, help="PPO steps for text conditions")
    parser.add_argument("--audio-steps", type=int, default=2048, help="PPO steps with audio")
    parser.add_argument("--access", nargs="*", default=["T", "T+S", "A+T"])
    parser.add_argument(
        "--audio-encoder",
        nargs="*",
        default=["features"],
        choices=["features", "learned"],
        help="how audio conditions hear (each is timed)",
    )
    parser.add_argument(
        "--cache-dir", default=None, help="audio and feature caches (default: a fresh temp folder)"
    )
    parser.add_argument("--subproc", action="store_true", help="also time audio in subprocesses")
    parser.add_argument(
        "--warm",
        action="store_true",
        help="audio conditions: also time a second run of the same episodes, whose clips and "
        "features are all in the disk caches (the steady state after `hear2act render "
        "--features`)",
    )
    args = parser.parse_args()
    os.environ["HEAR2ACT_CACHE_DIR"] = args.cache_dir or tempfile.mkdtemp(prefix="h2a-rlbench-")
    instrument()
    cols = ("render", "features", "engine", "structured", "encode+mask", "ppo")
    print(f"cores: {os.cpu_count()}")
    ref = reference(args.steps)
    print(f"reference: PPO on CartPole-v1, same settings: {ref:.0f} steps/s")
    head = f"{'access':<12}{'vec':<9}{'steps/s':>9}{'xCartPole':>11}"
    head += "".join(f"{c:>13}" for c in cols)
    print(head)
    print("-" * len(head))
    arms = [
        (access, encoder)
        for access in args.access
        for encoder in (args.audio_encoder if Access.parse(access).audio else ["features"])
    ]
    for access, encoder in arms:
        with_audio = Access.parse(access).audio
        steps = args.audio_steps if with_audio else args.steps
        label = f"{access} learned" if encoder == "learned" else access
        fps, shares = run(access, steps, "dummy", audio_encoder=encoder)
        cells = "".join(f"{100 * shares.get(c, 0.0):>12.1f}%" for c in cols)
        print(f"{label:<12}{'dummy':<9}{fps:>9.0f}{fps / ref:>11.3f}{cells}", flush=True)
        if args.warm and with_audio:
            # new envs: only the disk caches are warm
            fps, shares = run(access, steps, "dummy", audio_encoder=encoder)
            cells = "".join(f"{100 * shares.get(c, 0.0):>12.1f}%" for c in cols)
            print(f"{label:<12}{'warm':<9}{fps:>9.0f}{fps / ref:>11.3f}{cells}", flush=True)
        if args.subproc and with_audio:
            fps, _ = run(access, steps, "subproc", audio_encoder=encoder)
            blank = "".join(f"{'':>13}" for _ in cols)
            print(f"{label:<12}{'subproc':<9}{fps:>9.0f}{fps / ref:>11.3f}{blank}", flush=True)
    print(
        "shares of PPO training wall time; 'ppo' = policy inference in rollouts, updates and "
        "VecEnv glue"
    )


if __name__ == "__main__":
    main()
