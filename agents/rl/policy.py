"""``RLPolicy``: a saved SB3 model as a ``hear2act_env.policy.Policy``.

The adapter has ``observation_kind = "structured"``: the runner gives it the env's observation
plus the ``StructuredObservation`` keys (text kept, and with A the raw ``audio`` /
``audio_length``). It rebuilds exactly the training observation from those: the prosodic
features through its own ``ProsodyTracker`` (reference = the episode's first user turn, cached
per utterance; with a learned audio encoder, the log-mel spectrograms through a
``LogMelTracker`` with the run's saved settings), then ``encoding.encode`` with the run's saved
``EncoderSpec``; it asks the model
for the greedy action under the same action mask as in training and maps the factored action
back to the env's (act, option, topic).

A model can be played in another access condition than it was trained in only when that
condition provides every key the model reads (a T model ignores a state tag; a T+S model in T
sees "withheld"); a model trained with audio needs audio.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_agents.rl.actions import action_mask, to_env
from hear2act_agents.rl.encoding import EncoderSpec, encode
from hear2act_agents.rl.pretrained import pretrained, pretrained_path
from hear2act_env import jsonsafe
from hear2act_env.config import EnvConfig
from hear2act_env.errors import ConfigError, MissingExtraError
from hear2act_env.policy import Policy
from hear2act_env.wrappers.prosody import ProsodyTracker

__all__ = [
    "RL_PREFIXES",
    "RLPolicy",
    "check_run_config",
    "load_policy",
    "make_rl_agent",
    "read_run_config",
    "resolve_run",
]

#: Agent-spec prefixes of trained RL policies (``ppo:PATH``; ``maskable-ppo:`` is a synonym).
RL_PREFIXES = ("ppo", "maskable-ppo")

_MODELS: dict[str, tuple[Any, dict[str, Any]]] = {}
_LOCK = threading.Lock()


def resolve_run(path: str | Path) -> tuple[Path, Path]:
    """``(model.zip, config.json)`` of a run folder, of a model file beside its config, or of a
    shipped model's name (``hear2act_agents.rl.pretrained``; a path on disk wins over a name)."""
    p = Path(path)
    if not p.exists():
        p = pretrained_path(str(path)) or p
    if p.is_dir():
        model, config = p / "model.zip", p / "config.json"
    else:
        model = p if p.suffix == ".zip" else p.with_suffix(".zip")
        config = model.with_name("config.json")
    if not model.is_file():
        names = ", ".join(pretrained()) or "none"
        raise ConfigError(
            f"model: no SB3 model at {model}; expected a run folder, a model.zip or a shipped "
            f"model name ({names})"
        )
    if not config.is_file():
        raise ConfigError(
            f"model: no config.json beside {model} (written by hear2act_agents.rl.train)"
        )
    return model, config


def read_run_config(config_path: Path) -> dict[str, Any]:
    """A run's ``config.json`` (depth-bounded); unreadable, not JSON or not an object with a
    ``config`` object: a ``ConfigError``."""
    try:
        saved = jsonsafe.load_file(config_path)
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8, not JSON, nested too deeply
        raise ConfigError(f"model: cannot read {config_path} ({exc})") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("config"), dict):
        raise ConfigError(f"model: {config_path} is not a hear2act RL run config")
    saved["config"] = current_layout(saved["config"])
    return saved


#: Env settings that a run config written before ``TrainConfig.env`` held them kept flat.
_FLAT_ENV = ("access", "realization", "turn_cost", "split", "scenarios")
#: Of those, the ones such a file always holds (their defaults would train another run).
_FLAT_REQUIRED = ("access", "realization", "turn_cost")


def current_layout(run: dict[str, Any]) -> dict[str, Any]:
    """A run config (``config.json``'s ``config``) with its env settings in ``env``: one
    written before ``TrainConfig.env`` held them kept access, realization, turn cost, split
    and scenario file flat beside an ``env`` at its defaults; those move into ``env`` (a file
    with no ``env`` at all is read by ``EnvConfig.from_legacy``)."""
    flat = {k: run[k] for k in _FLAT_ENV if k in run}
    env = run.get("env")
    if not flat or not isinstance(env, dict) or any(k not in flat for k in _FLAT_REQUIRED):
        return run  # nothing flat; no env (0.1.0, ``from_legacy``); incomplete: refused
    rest = {k: v for k, v in run.items() if k not in flat}
    return {**rest, "env": {**env, **flat}}


def run_env(run: dict[str, Any], where: str = "config") -> EnvConfig:
    """The env a run config (``read_run_config``'s ``config``) trained in."""
    return EnvConfig.from_stored(run, where)


def check_run_config(saved: dict[str, Any], config_path: Path) -> dict[str, Any]:
    """``saved`` (``read_run_config``) once every field a policy reads has the type and range
    ``hear2act train`` writes; else a ``ConfigError`` naming the file and the field."""
    problem = _config_problem(saved)
    if problem is not None:
        raise ConfigError(
            f"model: {config_path} is not a usable hear2act RL run config ({problem}); "
            "expected the config.json that hear2act train writes"
        )
    return saved


#: The algorithms a run config may name (what ``hear2act train`` saves).
ALGORITHMS = ("MaskablePPO", "PPO")


def _config_problem(saved: dict[str, Any]) -> str | None:
    """What is wrong with the fields a run config's readers use (None: nothing): a model
    folder may come from someone else, so each is checked before any is used."""

    run = saved["config"]
    seed = run.get("seed")
    if any(k in run for k in _FLAT_ENV) or "env" not in run:  # flat settings left: all needed
        missing = [k for k in _FLAT_REQUIRED if k not in run]
        if missing:
            return (
                f"config.{missing[0]}: missing; a run config that keeps its env settings flat "
                f"holds {', '.join(_FLAT_REQUIRED)}"
            )
    if not isinstance(run.get("env", {}), dict):
        return f"config.env: got {run.get('env')!r:.40}, expected an object"
    try:
        run_env(run)
    except ConfigError as exc:
        return str(exc)
    checks = (
        (saved.get("kind") == "hear2act-rl-v1", "kind", "'hear2act-rl-v1'"),
        (saved.get("algorithm") in ALGORITHMS, "algorithm", " or ".join(ALGORITHMS)),
        (isinstance(saved.get("encoder"), dict), "encoder", "an object"),
        (
            isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0,
            "config.seed",
            "an integer >= 0",
        ),
    )
    for ok, field, expected in checks:
        if not ok:
            value = saved.get(field) if "." not in field else run.get(field.split(".", 1)[1])
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            return f"{field}: got {shown}, expected {expected}"
    return None


def _load(path: str | Path) -> tuple[Any, dict[str, Any]]:
    model_path, config_path = resolve_run(path)
    key = str(model_path.resolve())
    with _LOCK:
        hit = _MODELS.get(key)
        if hit is not None:
            return hit
    config = check_run_config(read_run_config(config_path), config_path)
    try:
        if config["algorithm"] == "MaskablePPO":
            from sb3_contrib import MaskablePPO as Algo
        else:
            from stable_baselines3 import PPO as Algo
    except ImportError as exc:
        raise MissingExtraError("rl", exc.name or "stable_baselines3") from None
    try:
        model = Algo.load(model_path, device="cpu")
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, EOFError) as exc:
        # SB3 reads a zip of pickles and tensors: a file that is not one fails in any of these
        raise ConfigError(
            f"model: cannot load {model_path} as a {config['algorithm']} model "
            f"({type(exc).__name__}); expected the model.zip that hear2act train writes"
        ) from None
    with _LOCK:
        _MODELS[key] = (model, config)
    return model, config


class RLPolicy(Policy):
    """A trained model behind the ``Policy`` protocol (greedy, masked, deterministic).

    ``allow_clarify=False`` (a spoken assistant) masks CLARIFY out even for a model trained
    with it; a model trained without CLARIFY never uses it.
    """

    observation_kind = "structured"

    def __init__(
        self,
        model: Any,
        config: dict[str, Any],
        name: str | None = None,
        allow_clarify: bool = True,
    ) -> None:
        self.model = model
        self.config = config
        run = config["config"]
        self.spec = EncoderSpec.from_dict(config["encoder"])
        self.masked = config["algorithm"] == "MaskablePPO"
        self.prune = bool(run.get("mask", True))
        env = run_env(run)
        self.access = env.access
        self.allow_clarify = env.allow_clarify and bool(allow_clarify)
        self.name = name or (
            f"ppo[{env.access},{env.realization},c={env.turn_cost:g},s={run['seed']}]"
        )
        self._tracker: Any = None
        if self.spec.learned:
            from hear2act_env.speech.logmel import LogMelSettings
            from hear2act_env.wrappers.logmel import LogMelTracker

            settings = LogMelSettings.from_dict(self.spec.logmel)
            self._tracker = LogMelTracker(settings, disk_cache=True)
        elif self.spec.with_audio:
            self._tracker = ProsodyTracker(disk_cache=True)
        self._actions = 0

    def _numeric(self, observation: dict[str, Any], first: bool) -> dict[str, Any]:
        obs = dict(observation)
        if self._tracker is not None:
            if "audio" not in obs:
                raise ConfigError(
                    f"{self.name} was trained with audio (access {self.access}); "
                    "play it in an access condition with A"
                )
            update = self._tracker.reset if first else self._tracker.update
            if self.spec.learned:
                obs["logmel"] = update(obs["audio"], obs["audio_length"])
            else:
                obs["prosody"], obs["prosody_delta"] = update(obs["audio"], obs["audio_length"])
        return obs

    def reset(self, observation: dict[str, Any], seed: int | None = None) -> None:
        self._numeric(observation, first=True)
        self._actions = 0

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        obs = self._numeric(observation, first=False)
        x: Any = encode(obs, self.spec)
        if self.spec.learned:
            x = {"vector": x, "logmel": obs["logmel"]}
        kw: dict[str, Any] = {}
        if self.masked:
            kw["action_masks"] = action_mask(
                obs, allow_clarify=self.allow_clarify, prune=self.prune
            )
        index, _ = self.model.predict(x, deterministic=True, **kw)
        self._actions += 1
        return to_env(int(np.asarray(index).reshape(-1)[0]))

    def stats(self) -> dict[str, Any]:
        """Recorded in each episode record (``agent_stats``)."""
        return {"model_access": self.access, "actions": self._actions}


def load_policy(path: str | Path, name: str | None = None, allow_clarify: bool = True) -> RLPolicy:
    """The policy of a run folder (or its ``model.zip``, or a shipped model's name); models are
    cached per process."""
    model, config = _load(path)
    return RLPolicy(model, config, name, allow_clarify=allow_clarify)


def make_rl_agent(spec: str, *, allow_clarify: bool = True) -> RLPolicy:
    """Build an RL agent from a spec ``ppo:PATH`` (PATH: a run folder, its ``model.zip`` or a
    shipped model's name); the registry's factory for the ``ppo``/``maskable-ppo`` prefixes.

    The policy's ``name`` is the spec itself, so records keyed by it can be rebuilt.
    """
    kind, sep, path = spec.partition(":")
    if not sep or kind not in RL_PREFIXES or not path:
        raise ConfigError(f"agent: {spec!r} is not an RL agent spec; expected 'ppo:PATH'")
    return load_policy(path, name=spec, allow_clarify=allow_clarify)
