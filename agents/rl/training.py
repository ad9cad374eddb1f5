"""Train a (Maskable)PPO agent on Hear2Act: ``train(train_env(access="T+S"), timesteps, ...)``.

The agent reads the flat RL observation (``encoding``; structured view, + state with S,
+ prosodic features with A) and acts in the factored ``Discrete(22)`` space (``actions``).
By default it is sb3-contrib's ``MaskablePPO`` with ``actions.action_mask(prune=True)``: the
masks are computed from the words-only observation and remove actions that can only repeat
what was said (re-asking an attribute, recommending an option already ruled out by a stated
constraint, ...); ``mask=False`` trains plain SB3 ``PPO`` on the same spaces.

Training uses the ``train`` split (fixed seeds: the model seed, the vector env's reset seeds
``seed + i``, and the torch/numpy seeds), prints a progress line every ``eval_every`` steps and
never writes TensorBoard logs. Every ``eval_every`` steps the current greedy policy also plays
``eval_episodes`` fixed-seed episodes of ``eval_split`` (default ``test``) for the learning
curve only: the saved model is always the last one, never selected on those episodes.

The env of a run is one ``EnvConfig`` (``TrainConfig.env``; ``train_env(...)`` is the training
default, the train split at ``DEFAULT_TURN_COST``, with your settings); ``TrainConfig`` holds
only training fields beside it. The output folder gets ``model.zip`` (the SB3 model),
``config.json`` (everything needed to rebuild the observation: the env (access, realization,
turn cost, split, scenario file), encoder spec with the prosody scaler,
hyper-parameters, versions, wall time), ``progress.csv`` (the learning curve) and
``sb3/progress.csv`` (SB3's logger, one row per rollout: PPO's own figures and the paper's
metrics over the rollout's episodes, ``hear2act/success``, ``accept``, ``fullfit``,
``premature_closure``, ``actions``; with ``tensorboard=DIR`` the same go to TensorBoard there).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import sys
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_agents.rl.encoding import AUDIO_ENCODERS, EncoderSpec
from hear2act_agents.rl.envs import RL_ENV
from hear2act_env import safewrite
from hear2act_env.conditions import Access
from hear2act_env.config import EnvConfig
from hear2act_env.errors import ConfigError, MissingExtraError

__all__ = [
    "DEFAULT_TURN_COST",
    "TRAIN_ENV",
    "TrainConfig",
    "TrainResult",
    "evaluate_greedy",
    "train",
    "train_env",
]

#: Default per-action cost for training: one action is worth 5% of a success, so a check that
#: is not needed costs visibly but never outweighs finding the best option.
DEFAULT_TURN_COST = 0.05
#: The env a run trains in unless told otherwise: ``RL_ENV`` (the train split, no audio disk
#: cache) at the training turn cost.
TRAIN_ENV = RL_ENV.replace(turn_cost=DEFAULT_TURN_COST)


def train_env(**settings: Any) -> EnvConfig:
    """``TRAIN_ENV`` with ``settings`` (``EnvConfig`` keys, e.g. ``access="A+T"``), checked by
    ``EnvConfig``'s rules."""
    return TRAIN_ENV.replace(**settings)


@dataclass
class TrainConfig:
    """Everything that determines a training run (saved as ``config.json``): the env it trains
    in (``env``: access, realization, turn cost, split, scenario file, ...) and the training
    fields."""

    timesteps: int = 300_000
    seed: int = 0
    mask: bool = True  # MaskablePPO with pruning masks; False: plain PPO
    derived: bool = True  # add the derived part of the encoding
    shuffle_options: bool = True  # augmentation: a fresh option order every training episode
    init_from: str | None = None  # warm start from a run whose observation is a prefix of ours
    tensorboard: str | None = None  # also log to TensorBoard in this folder (needs tensorboard)
    n_envs: int = 0  # 0: 8 for text conditions, 4 for audio
    vec: str = "auto"  # dummy | subproc | auto (subproc for audio)
    n_steps: int = 0  # per env per rollout; 0: 2048 // n_envs
    batch_size: int = 256
    n_epochs: int = 10
    learning_rate: float = 3e-4
    gamma: float = 1.0  # episodes are short; the turn cost alone prices time
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    clip_range: float = 0.2
    net_arch: tuple[int, ...] = (128, 128)
    eval_every: int = 10_000
    eval_episodes: int = 100
    eval_split: str = "test"
    scaler_episodes: int = 60
    torch_threads: int = 1
    env: EnvConfig = field(default_factory=lambda: TRAIN_ENV)
    # with A: "features" (the 8 handcrafted prosodic features) or "learned" (a convolutional
    # encoder over log-mel spectrograms, trained with the policy: audio_encoder.py)
    audio_encoder: str = "features"

    def __post_init__(self) -> None:
        if isinstance(self.env, dict):  # a config.json read back
            self.env = EnvConfig.from_dict(self.env, "env")
        if not isinstance(self.env, EnvConfig):
            raise ConfigError(f"env: got {type(self.env).__name__}, expected an EnvConfig")
        for name in ("timesteps", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{name}: got {value!r}, expected an integer")
        if self.timesteps < 1:
            raise ConfigError(f"timesteps: got {self.timesteps}, expected >= 1")
        if self.vec not in ("auto", "dummy", "subproc"):
            raise ConfigError(f"vec: got {self.vec!r}, expected auto, dummy or subproc")
        if self.audio_encoder not in AUDIO_ENCODERS:
            raise ConfigError(
                f"audio_encoder: got {self.audio_encoder!r}, expected one of {list(AUDIO_ENCODERS)}"
            )
        if self.audio_encoder == "learned" and not self.audio:
            raise ConfigError(
                f"audio_encoder: 'learned' needs an access condition with audio, got access "
                f"{self.access!r} (use A+T or A+T+S)"
            )
        self.net_arch = tuple(int(v) for v in self.net_arch)

    @property
    def access(self) -> str:
        """The access condition (``env.access``)."""
        return self.env.access

    @property
    def realization(self) -> str:
        """The realization (``env.realization``)."""
        return self.env.realization

    @property
    def turn_cost(self) -> float:
        """The per-action cost (``env.turn_cost``)."""
        return self.env.turn_cost

    @property
    def scenarios(self) -> str | None:
        """The scenario file trained on, None for the packaged bank (``env.scenarios``)."""
        return self.env.scenarios

    @property
    def audio(self) -> bool:
        """Whether the access condition includes audio."""
        return Access.parse(self.access).audio

    @property
    def learned(self) -> bool:
        """Whether the audio is read by a learned encoder."""
        return self.audio and self.audio_encoder == "learned"

    @property
    def policy(self) -> str:
        """The SB3 policy class name."""
        return "MultiInputPolicy" if self.learned else "MlpPolicy"

    def resolved_n_envs(self) -> int:
        """The number of parallel envs."""
        return self.n_envs or (4 if self.audio else 8)

    def ppo_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the (Maskable)PPO constructor (CPU, no TensorBoard)."""
        return {
            "n_steps": self.resolved_n_steps(),
            "batch_size": self.batch_size,
            "n_epochs": self.n_epochs,
            "learning_rate": self.learning_rate,
            "gamma": self.gamma,
            "gae_lambda": self.gae_lambda,
            "ent_coef": self.ent_coef,
            "clip_range": self.clip_range,
            "policy_kwargs": self.policy_kwargs(),
            "seed": self.seed,
            "device": "cpu",
            "verbose": 0,
            "tensorboard_log": None,
        }

    def policy_kwargs(self) -> dict[str, Any]:
        """The policy's network: an MLP, after the learned audio encoder with one."""
        if self.learned:
            from hear2act_agents.rl.audio_encoder import policy_kwargs
            from hear2act_env.speech.logmel import LogMelSettings

            return policy_kwargs(list(self.net_arch), n_mels=LogMelSettings().n_mels)
        return {"net_arch": list(self.net_arch)}

    def resolved_n_steps(self) -> int:
        """Steps per env per rollout."""
        return self.n_steps or max(2048 // self.resolved_n_envs(), 16)

    def env_config(self, split: str | None = None) -> EnvConfig:
        """The env of this run (of ``split``, default the training split)."""
        return self.env if split is None else self.env.replace(split=split)

    def env_args(self, split: str | None = None, train: bool = True) -> dict[str, Any]:
        """Keyword arguments of ``envs.make_env`` (without the encoder spec); ``train=False``
        for the evaluation env (the env's own option order)."""
        return {
            "config": self.env_config(split),
            "shuffle_options": self.shuffle_options and train,
            "prune": self.mask,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``config.json``'s ``config``)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["net_arch"] = list(self.net_arch)
        data["env"] = self.env.to_dict()
        return data


@dataclass
class TrainResult:
    """Where a run's files are and what it cost."""

    out_dir: Path
    model_path: Path
    config_path: Path
    progress_path: Path
    wall_s: float
    timesteps: int
    final_eval: dict[str, float]


def _require_sb3(mask: bool) -> tuple[Any, Any]:
    try:
        import stable_baselines3
        import torch
    except ImportError as exc:
        raise MissingExtraError("rl", exc.name or "stable_baselines3") from None
    if mask:
        try:
            import sb3_contrib
        except ImportError:
            raise MissingExtraError("rl", "sb3_contrib") from None
        return sb3_contrib.MaskablePPO, torch
    return stable_baselines3.PPO, torch


def evaluate_greedy(
    model: Any,
    env: Any,
    episodes: int,
    seed: int = 10_000,
    mask: bool = True,
) -> dict[str, float]:
    """Mean return, success rate and actions of the greedy policy over fixed-seed episodes."""
    returns, successes, actions = [], [], []
    for e in range(episodes):
        obs, _ = env.reset(seed=seed + e)
        total, done = 0.0, False
        while not done:
            kw = {"action_masks": env.get_wrapper_attr("action_masks")()} if mask else {}
            action, _ = model.predict(obs, deterministic=True, **kw)
            obs, reward, terminated, truncated, info = env.step(int(action))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
        successes.append(float(info["is_success"]))
        actions.append(float(info["actions"]))
    return {
        "eval_return": float(np.mean(returns)),
        "eval_success": float(np.mean(successes)),
        "eval_actions": float(np.mean(actions)),
    }


def warm_start(model: Any, spec: EncoderSpec, path: str | Path) -> None:
    """Copy a trained run's weights into ``model``.

    The source's observation must be a prefix of ``spec``'s (``EncoderSpec.extends``: e.g. a T
    run into A+T or T+S); the first layers' extra input columns (state, prosody) start at zero,
    so the warm-started agent begins as exactly the source policy.
    """
    from hear2act_agents.rl.policy import _load

    source, source_config = _load(path)
    source_spec = EncoderSpec.from_dict(source_config["encoder"])
    if not spec.extends(source_spec):
        raise ConfigError(
            f"init_from: {path} reads {source_spec.layout()}, not a prefix of {spec.layout()}"
        )
    if type(source).__name__ != type(model).__name__:
        raise ConfigError(
            f"init_from: {path} is a {type(source).__name__}, not a {type(model).__name__}"
        )
    src = source.policy.state_dict()
    dst = model.policy.state_dict()
    for key, value in dst.items():
        old = src.get(key)
        if old is None:
            continue
        if old.shape == value.shape:
            value.copy_(old)
        elif value.ndim == 2 and old.shape[0] == value.shape[0] and old.shape[1] < value.shape[1]:
            value.zero_()
            value[:, : old.shape[1]].copy_(old)
        else:
            raise ConfigError(
                f"init_from: {key} has shape {tuple(old.shape)}, expected {tuple(value.shape)}"
            )
    model.policy.load_state_dict(dst)


def _versions() -> dict[str, str]:
    from hear2act_env.versions import installed_versions

    return installed_versions(
        ("hear2act-env", "gymnasium", "numpy", "torch", "stable-baselines3", "sb3-contrib")
    )


def _scenario_digest(scenarios: str | None) -> str:
    import hashlib

    if scenarios is None:
        from hear2act_env.scenarios.bank import bank_checksum

        return bank_checksum()
    return hashlib.sha256(Path(scenarios).read_bytes()).hexdigest()


def _bank_version(scenarios: str | None) -> int | None:
    """The shipped bank's version (None for a user's scenario file)."""
    from hear2act_env.scenarios.bank import BANK_VERSION

    return BANK_VERSION if scenarios is None else None


def train(
    env: EnvConfig | None = None,
    timesteps: int = 300_000,
    seed: int = 0,
    out_dir: str | Path = "runs/rl/model",
    *,
    progress: bool = True,
    **options: Any,
) -> TrainResult:
    """Train one agent in ``env`` (default ``TRAIN_ENV``; build one with ``train_env``) and save
    ``model.zip``, ``config.json`` and ``progress.csv`` in ``out_dir``.

    ``options`` are further ``TrainConfig`` fields (e.g. ``n_envs``, ``mask``, ``init_from``).
    """
    config = TrainConfig(
        timesteps=timesteps, seed=seed, env=TRAIN_ENV if env is None else env, **options
    )
    return train_config(config, out_dir, progress=progress)


def train_config(config: TrainConfig, out_dir: str | Path, progress: bool = True) -> TrainResult:
    """``train`` from a ``TrainConfig``."""
    algo_cls, torch = _require_sb3(config.mask)
    from stable_baselines3.common.callbacks import BaseCallback, CallbackList
    from stable_baselines3.common.logger import configure as configure_logger
    from stable_baselines3.common.utils import set_random_seed
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor

    from hear2act_agents.rl.envs import env_thunks, fit_prosody_scaler, make_env
    from hear2act_env.evaluation.sb3 import Hear2ActMetricsCallback

    out = safewrite.ensure_folder(Path(out_dir))
    start = time.perf_counter()
    torch.set_num_threads(max(1, config.torch_threads))
    set_random_seed(config.seed)

    def say(text: str) -> None:
        if progress:
            print(text, file=sys.stdout, flush=True)

    scaler: dict[str, Any] = {}
    if config.learned:
        from hear2act_env.speech.logmel import LogMelSettings

        scaler = {"audio_encoder": "learned", "logmel": LogMelSettings().to_dict()}
    elif config.audio:
        say(f"[{out.name}] fitting the prosody scaler on {config.scaler_episodes} episodes ...")
        mean, scale = fit_prosody_scaler(config.env_config(), config.scaler_episodes, config.seed)
        scaler = {"prosody_mean": mean, "prosody_scale": scale}
    spec = EncoderSpec.for_access(config.access, derived=config.derived, **scaler)

    n_envs = config.resolved_n_envs()
    thunks = env_thunks(n_envs, spec=spec, **config.env_args())
    use_subproc = config.vec == "subproc" or (config.vec == "auto" and config.audio)
    venv = SubprocVecEnv(thunks) if use_subproc and n_envs > 1 else DummyVecEnv(thunks)
    venv = VecMonitor(venv, info_keywords=("is_success",))
    venv.seed(config.seed)
    eval_env = make_env(spec=spec, **config.env_args(config.eval_split, train=False))

    model = algo_cls(config.policy, venv, **config.ppo_kwargs())
    # SB3's logger: a CSV per rollout (train/* and the paper's hear2act/* metrics)
    formats = ["csv"] + (["tensorboard"] if config.tensorboard else [])
    if config.tensorboard and importlib.util.find_spec("tensorboard") is None:
        raise ConfigError(
            f"tensorboard: got {config.tensorboard!r}, but the tensorboard package is not "
            "installed (pip install tensorboard); the CSV log in RUN/sb3/ needs nothing"
        )
    sb3_dir = config.tensorboard if config.tensorboard else str(out / "sb3")
    if not config.tensorboard:  # SB3 opens its CSV with open(): make it a regular file first
        safewrite.open_in_place(out / "sb3" / "progress.csv", root=out, truncate=True).close()
    model.set_logger(configure_logger(sb3_dir, formats))
    metrics_callback = Hear2ActMetricsCallback()

    if config.init_from:
        say(f"[{out.name}] warm start from {config.init_from}")
        warm_start(model, spec, config.init_from)

    progress_path = out / "progress.csv"
    fields = [
        "timesteps",
        "wall_s",
        "fps",
        "train_return",
        "train_success",
        "train_length",
        "eval_return",
        "eval_success",
        "eval_actions",
    ]
    handle = io.TextIOWrapper(
        safewrite.open_in_place(progress_path, root=out, truncate=True), "utf-8", newline=""
    )
    writer = csv.DictWriter(handle, fieldnames=fields)
    writer.writeheader()
    last_eval: dict[str, float] = {}

    def log_point(timesteps: int) -> None:
        nonlocal last_eval
        buf = list(model.ep_info_buffer or [])
        wall = time.perf_counter() - start
        row: dict[str, Any] = {
            "timesteps": timesteps,
            "wall_s": round(wall, 2),
            "fps": round(timesteps / max(wall, 1e-9), 1),
            "train_return": float(np.mean([e["r"] for e in buf])) if buf else float("nan"),
            "train_success": float(np.mean([e.get("is_success", np.nan) for e in buf]))
            if buf
            else float("nan"),
            "train_length": float(np.mean([e["l"] for e in buf])) if buf else float("nan"),
        }
        if config.eval_episodes > 0:
            last_eval = evaluate_greedy(model, eval_env, config.eval_episodes, mask=config.mask)
            row.update(last_eval)
        writer.writerow(row)
        handle.flush()
        say(
            f"[{out.name}] {timesteps:>8d} steps {row['fps']:>7.0f} steps/s  "
            f"train return {row['train_return']:+.3f} len {row['train_length']:.1f}  "
            + (
                f"eval({config.eval_split}) return {last_eval['eval_return']:+.3f} "
                f"success {100 * last_eval['eval_success']:.0f}% "
                f"actions {last_eval['eval_actions']:.2f}"
                if last_eval
                else ""
            )
        )

    class Progress(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next_point = config.eval_every

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_point:
                log_point(self.num_timesteps)
                self.next_point += config.eval_every
            return True

    say(
        f"[{out.name}] {type(model).__name__} access={config.access} realization="
        f"{config.realization} turn_cost={config.turn_cost} timesteps={config.timesteps} "
        + (f"audio_encoder={config.audio_encoder} " if config.audio else "")
        + f"seed={config.seed} n_envs={n_envs} ({'subproc' if use_subproc else 'dummy'})"
    )
    try:
        model.learn(
            total_timesteps=config.timesteps,
            callback=CallbackList([Progress(), metrics_callback]),
            progress_bar=False,
        )
        log_point(model.num_timesteps)
    finally:
        handle.close()
        venv.close()
        model.logger.close()  # SB3's CSV (and TensorBoard) writers
    wall = time.perf_counter() - start

    model_path = out / "model.zip"
    packed = io.BytesIO()
    model.save(packed)
    safewrite.write_atomic(model_path, packed.getvalue(), root=out)
    config_path = out / "config.json"
    payload = {
        "kind": "hear2act-rl-v1",
        "algorithm": type(model).__name__,
        "config": config.to_dict(),
        "encoder": spec.to_dict(),
        "n_envs": n_envs,
        "vec": "subproc" if use_subproc else "dummy",
        "n_steps": config.resolved_n_steps(),
        "timesteps_done": int(model.num_timesteps),
        "wall_s": round(wall, 2),
        "cpu_count": os.cpu_count(),
        "final_eval": last_eval,
        "scenarios_sha256": _scenario_digest(config.scenarios),
        "bank_version": _bank_version(config.scenarios),
        "versions": _versions(),
    }
    safewrite.write_text(
        config_path, json.dumps(payload, indent=2, sort_keys=True, default=repr) + "\n", root=out
    )
    say(f"[{out.name}] saved {model_path} ({wall:.0f} s)")
    return TrainResult(
        out, model_path, config_path, progress_path, wall, int(model.num_timesteps), last_eval
    )
