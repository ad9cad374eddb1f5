"""The grid runner: agents x realizations x conditions x scenarios x runs, resumable.

Each episode is a pure function of its key (the seed follows from the key), so the records are
identical whatever the backend (``serial``, ``thread``, ``process``, ``ray``) and worker count.
Workers only compute; the driver alone appends one JSON line per finished episode to the
results file (flushed), next to a manifest of the configuration, package versions and the
scenario bank's checksum. Rerunning with the same output skips finished keys and runs again
the episodes recorded with an error (``retry_errors``); a truncated last line from a killed run
is dropped; loading keeps one record per key. One run writes an output at a time (a lock file
beside it). An exception inside an episode becomes that episode's ``error``, with an
``error_kind`` (``infrastructure``: the model could not be reached; ``config``; ``agent``), and
never stops the grid; errored episodes are left out of every metric.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import platform
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args

import gymnasium as gym

from hear2act_env import interrupts, jsonsafe, safewrite
from hear2act_env.conditions import STATE_FIDELITY, Condition
from hear2act_env.config import EnvConfig, left_to_owner
from hear2act_env.env import Hear2ActEnv
from hear2act_env.errors import ConfigError, InfrastructureError, MissingExtraError
from hear2act_env.evaluation.agent_logs import log_line, log_path
from hear2act_env.evaluation.jsonl import jsonl_lines
from hear2act_env.evaluation.progress import Progress
from hear2act_env.evaluation.records import (
    MAX_RUN,
    EpisodeKey,
    EpisodeRecord,
    ErrorKind,
    record_from_rollout,
)
from hear2act_env.evaluation.rollout import run_episode, wrap_for
from hear2act_env.policy import Policy, agent_log, agent_stats, check_policy
from hear2act_env.protocol.engine import REALIZATIONS
from hear2act_env.redaction import redact_value
from hear2act_env.versions import installed_versions

Backend = Literal["serial", "thread", "process", "ray"]
BACKENDS: tuple[str, ...] = get_args(Backend)
PolicyFactory = Callable[[str], Policy]
#: The audio condition of the benchmark: the voice, read by the reference perceiver (T+S-hat).
AUDIO_CONDITIONS: tuple[Condition, ...] = (Condition.of("A+T", "correct").with_perception(),)
#: The access conditions of the text grid: T, T+S, and T+S under each state intervention.
TEXT_CONDITIONS: tuple[Condition, ...] = (Condition.of("T"), Condition.of("T+S")) + tuple(
    Condition.of("T+S", f) for f in STATE_FIDELITY if f != "correct"
)


_DEFAULT_ENV = EnvConfig()
#: Env settings the grid varies per cell.
_CELL_SETTINGS = ("realization", "access", "state_fidelity")


@dataclass(frozen=True)
class GridConfig:
    """What to run. ``conditions`` are ``Condition`` values (labels such as ``"T+S/shuffled"``
    and stored ``(access, fidelity)`` pairs are parsed into them)."""

    agents: tuple[str, ...]
    realizations: tuple[str, ...] = REALIZATIONS
    conditions: tuple[Condition, ...] = (Condition.of("T"), Condition.of("T+S"))
    scenarios: tuple[str, ...] | None = None
    runs: int = 1
    #: The episodes' env settings; the grid sets ``realization``, ``access`` and
    #: ``state_fidelity`` per cell, so those stay at their defaults here.
    env: EnvConfig = field(default_factory=EnvConfig)
    agent_options: dict[str, Any] = field(default_factory=dict)  # recorded in the manifest
    #: The reference perceiver of the voice-inferred conditions (``A+T/inferred``): the name of
    #: a renderer whose perceiver ships (``espeak``, ``piper``: ``speech.renderers``), or a
    #: model saved by ``hear2act perceive --save-perceiver`` (None: the shipped espeak-ng one).
    perceiver: str | None = None

    def __post_init__(self) -> None:
        if not self.agents:
            raise ConfigError("agents: expected at least one agent name")
        for r in self.realizations:
            if r not in REALIZATIONS:
                raise ConfigError(f"realizations: got {r!r}, expected one of {list(REALIZATIONS)}")
        if isinstance(self.conditions, str | Condition):
            raise ConfigError(f"conditions: got {self.conditions!r}, expected a sequence")
        object.__setattr__(self, "conditions", tuple(Condition.parse(c) for c in self.conditions))
        if not 1 <= self.runs <= MAX_RUN:  # a run index past MAX_RUN would not load back
            raise ConfigError(f"runs: got {self.runs}, expected 1 to {MAX_RUN}")
        left_to_owner(self.env, _CELL_SETTINGS, _DEFAULT_ENV, "the grid (per cell)")

    @property
    def split(self) -> str:
        """The split the grid's scenarios come from."""
        return self.env.split

    def scenario_ids(self) -> list[str]:
        """The scenario ids of the grid."""
        env = _make_env(self, "prosody", Condition.of("T"))
        ids = [s.id for s in env.unwrapped.scenarios]  # type: ignore[attr-defined]
        if self.scenarios is None:
            return ids
        unknown = sorted(set(self.scenarios) - set(ids))
        if unknown:
            raise ConfigError(f"scenarios: unknown ids {unknown[:5]}")
        return list(self.scenarios)

    def keys(self) -> list[EpisodeKey]:
        """Every episode key, in a fixed order."""
        ids = self.scenario_ids()
        return [
            EpisodeKey(agent, realization, *condition.pair(), sid, run)
            for agent, realization, condition, sid, run in itertools.product(
                self.agents, self.realizations, self.conditions, ids, range(self.runs)
            )
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for the manifest); conditions as stored ``[access, fidelity]``, the
        env settings as ``EnvConfig.to_dict``."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "env"}
        data["conditions"] = [list(c.pair()) for c in self.conditions]
        data["env"] = self.env.to_dict()
        return json.loads(json.dumps(data))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GridConfig:
        """Inverse of ``to_dict``; a manifest written before ``EnvConfig`` loads too."""
        if not isinstance(data, dict):
            raise ConfigError(f"config: got {type(data).__name__}, expected an object")
        values = {k: v for k, v in data.items() if k in _GRID_KEYS}
        values["env"] = EnvConfig.from_stored(data)
        for name in ("agents", "realizations", "scenarios"):
            if isinstance(values.get(name), list):
                values[name] = tuple(values[name])
        return cls(**values)


# -- episodes (run in workers) --------------------------------------------------------------
_LOCAL = threading.local()  # envs are reused per worker thread, never shared between threads


def _make_env(config: GridConfig, realization: str, condition: Condition) -> gym.Env:
    cache_key = (id(config), realization, condition)
    configs: dict[int, GridConfig] = _LOCAL.__dict__.setdefault("configs", {})
    if configs.get(id(config)) is not config:  # a new config object: drop envs of an old one
        configs.clear()
        configs[id(config)] = config
        _LOCAL.__dict__["envs"] = {}
        _LOCAL.__dict__["wrapped"] = {}
    envs: dict[tuple, gym.Env] = _LOCAL.__dict__.setdefault("envs", {})
    env = envs.get(cache_key)
    if env is None:
        env = Hear2ActEnv(
            config.env.replace(
                realization=realization,
                access=condition.access,
                state_fidelity=condition.fidelity,
            )
        )
        if condition.perception == "reference":
            from hear2act_env.wrappers.inferred_state import InferredState

            env = InferredState(env, model_path=_perceiver_path(config.perceiver))
        envs[cache_key] = env
    return env


def _perceiver_path(perceiver: str | None) -> str | None:
    """A shipped perceiver's file for a renderer name, else the path as given."""
    if perceiver is None:
        return None
    from hear2act_env.speech.renderers import shipped_perceiver

    shipped = shipped_perceiver(perceiver)
    return str(shipped) if shipped is not None else perceiver


def _wrapped_env(config: GridConfig, key: EpisodeKey, policy: Policy) -> gym.Env:
    """The condition's env wrapped for the policy's observation kind (reused per thread)."""
    base = _make_env(config, key.realization, key.as_condition())
    wrapped: dict[tuple[int, str], gym.Env] = _LOCAL.__dict__.setdefault("wrapped", {})
    cache_key = (id(base), policy.observation_kind)
    env = wrapped.get(cache_key)
    if env is None:
        env = wrapped[cache_key] = wrap_for(base, policy)
    return env


#: A finished episode as a worker returns it: its record and the agent's log (None for agents
#: that keep none: see ``Policy.episode_log``).
Finished = tuple[EpisodeRecord, "dict[str, Any] | None"]


def run_episode_logged(key: EpisodeKey, config: GridConfig, factory: PolicyFactory) -> Finished:
    """Play one episode: its record (an exception becomes its ``error``) and the agent's log,
    also of an episode cut short by an error (the calls made until then)."""
    policy = None
    try:
        policy = factory(key.agent)
        check_policy(policy, f"agent {key.agent!r}")
        env = _wrapped_env(config, key, policy)
        rollout = run_episode(env, policy, seed=key.seed, scenario=key.scenario)
        stats = agent_stats(policy)
        privileged = policy.observation_kind == "privileged"
        record = record_from_rollout(key, rollout, privileged, stats)
    except interrupts.Interrupted:  # stopped by the user: not an outcome of the episode
        raise
    except Exception as exc:  # noqa: BLE001 - recorded, never aborts the grid
        record = EpisodeRecord(
            key=key, seed=key.seed, error=f"{type(exc).__name__}: {exc}", error_kind=_kind(exc)
        )
    return record, agent_log(policy)


def _kind(exc: Exception) -> ErrorKind:
    """What an episode's exception says about who failed."""
    if isinstance(exc, InfrastructureError):
        return "infrastructure"
    if isinstance(exc, ConfigError | MissingExtraError):
        return "config"
    return "agent"


def run_chunk(
    keys: Sequence[EpisodeKey], config: GridConfig, factory: PolicyFactory
) -> list[Finished]:
    """Run several episodes (what a worker does): records with the agents' logs."""
    return [run_episode_logged(k, config, factory) for k in keys]


# -- driver ---------------------------------------------------------------------------------
def manifest(config: GridConfig, run: dict[str, Any] | None = None) -> dict[str, Any]:
    """Configuration, versions and bank checksum of a run; with ``run`` (the resolved
    ``hear2act eval`` configuration, JSON values), that too under ``"run"``, its texts redacted
    like the agent options (``eval --config MANIFEST`` runs it again)."""
    from hear2act_env import __version__
    from hear2act_env.scenarios.bank import BANK_VERSION, bank_checksum

    versions = installed_versions(
        ("gymnasium", "numpy", "torch", "transformers", "stable-baselines3", "ray")
    )
    data = config.to_dict()
    data["agent_options"] = redact_value(data["agent_options"])
    out = {
        "config": data,
        "hear2act_env": __version__,
        "bank_sha256": bank_checksum(),
        "bank_version": BANK_VERSION,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": versions,
    }
    if run is not None:
        out["run"] = redact_value(run)
    return out


def load_records(path: str | Path) -> list[EpisodeRecord]:
    """The records of a results file, one per episode key: the first finished (error-free)
    record of a key, or its latest errored one when it never finished (a resumed run appends a
    retried episode after its error; two runs that raced on one file leave duplicates). A
    truncated last line is ignored."""
    path = Path(path)
    by_key: dict[str, EpisodeRecord] = {}
    for number, text, is_last in jsonl_lines(path, "results"):
        try:
            if text is None:
                raise UnicodeDecodeError("utf-8", b"", 0, 1, "not UTF-8")
            record = EpisodeRecord.from_json(text)
        except (UnicodeDecodeError, ValueError, TypeError, KeyError) as exc:
            if not is_last:  # a torn last line is a killed run's; anything else is named
                warnings.warn(
                    f"{path}:{number}: skipped a corrupt record ({type(exc).__name__}: "
                    f"{str(exc)[:200]}); its episode counts as not run (a resumed run runs it "
                    "again)",
                    stacklevel=2,
                )
            continue
        kept = by_key.get(record.key.id())
        if kept is None or (kept.error is not None):
            by_key[record.key.id()] = record
    return list(by_key.values())


def _prepare_output(
    path: Path, config: GridConfig, run: dict[str, Any] | None = None
) -> list[EpisodeRecord]:
    """Check or write the manifest; drop a torn last line; return the finished records."""
    _drop_torn_tail(path)  # first: a results file that is a link is refused before any write
    man_path = path.with_suffix(".manifest.json")
    current = manifest(config, run)
    previous: dict[str, Any] | None = None
    if man_path.exists():
        try:
            previous = jsonsafe.load_file(man_path)
            before = _results_config(_normalized(previous["config"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(
                f"output: {man_path} is unreadable ({type(exc).__name__}); it does not describe "
                "the results beside it: move both away or use a new output path"
            ) from None
        now = _results_config(_normalized(current["config"]))
        changed = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
        if changed == ["runs"] and _is_int(now["runs"]) and _is_int(before.get("runs")):
            if now["runs"] > before["runs"]:
                changed = []  # more runs of the same grid: only the new ones are played
        if changed:
            raise ConfigError(
                f"output: {path} holds results of a different grid configuration (changed: "
                f"{', '.join(changed)}); use a new output path. Only transport settings "
                f"({', '.join(sorted(TRANSPORT_SETTINGS))}) may change on resume, and runs may "
                "grow (more runs of the same grid)"
            )
    if previous is None or previous["config"] != current["config"]:  # new, or transport
        safewrite.write_atomic(
            man_path, (json.dumps(current, indent=2, sort_keys=True) + "\n").encode()
        )
    return load_records(path)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: Settings that change how a model is reached, not what it answers: a resumed run may change
#: them (a new server address, more concurrency, longer timeouts, another key variable).
TRANSPORT_SETTINGS = frozenset(
    {
        "base_url",
        "api_key_env",
        "timeout",
        "deadline",
        "max_retries",
        "backoff_base",
        "backoff_max",
        "max_retry_after",
        "max_concurrency",
        "max_reply_bytes",
        "cache_dir",
    }
)


_GRID_KEYS = (
    "agents",
    "realizations",
    "conditions",
    "scenarios",
    "runs",
    "agent_options",
    "perceiver",
)


def _results_config(config: dict[str, Any]) -> dict[str, Any]:
    """A manifest's configuration without the transport settings, flattened: what, if changed,
    changes the results."""
    flat = {k: v for k, v in config.items() if k != "agent_options"}
    for k, v in (config.get("agent_options") or {}).items():
        if k not in TRANSPORT_SETTINGS:
            flat[f"agent_options.{k}"] = v
    return flat


def _normalized(config: dict[str, Any]) -> dict[str, Any]:
    """A stored grid configuration in today's form (an old manifest's flat env settings become
    its ``env`` object; a relative scenario file is taken from the current folder; agent options it stored as the texts of ``--setting`` are read as
    ``setting_text`` reads them today); the options stay redacted as stored."""
    from hear2act_env.setting_text import setting_value

    data = GridConfig.from_dict(config).to_dict()
    env = data.get("env")
    if isinstance(env, dict) and isinstance(env.get("scenarios"), str):
        # manifests written before paths were stored absolute hold the path as typed: it was
        # read from the folder the run started in, taken here as the current one
        env["scenarios"] = str(Path(env["scenarios"]).expanduser().absolute())
    options = config.get("agent_options", {})
    if isinstance(options, dict):
        options = {k: setting_value(v) if isinstance(v, str) else v for k, v in options.items()}
    data["agent_options"] = options
    return data


def _chunks(keys: Sequence[EpisodeKey], size: int) -> Iterator[list[EpisodeKey]]:
    for i in range(0, len(keys), size):
        yield list(keys[i : i + size])


#: The most work units a run keeps in flight (threads, processes or Ray tasks); a run starts no
#: more of them than it has work units either.
MAX_WORKERS = 1024

#: Seconds between two looks at the stop flag while the driver waits for workers.
POLL_S = 0.2


def _results(
    backend: str,
    todo: list[EpisodeKey],
    config: GridConfig,
    factory: PolicyFactory,
    workers: int,
    chunk: int,
    ray_address: str | None = None,
) -> Iterable[list[Finished]]:
    """The finished chunks, as they finish. After a stop request (``interrupts``) no new chunk
    starts; chunks that finish meanwhile are still yielded, then ``Interrupted`` is raised and
    the workers are abandoned (threads), terminated (processes) or cancelled (Ray)."""
    # one episode per work unit by default, so every episode is written as it finishes;
    # ``chunk`` > 1 (the benchmark's cheap rule agents) trades that for less overhead
    chunks = list(_chunks(todo, 1 if backend == "serial" else chunk))
    workers = min(workers, len(chunks))  # never more workers (processes, CPUs) than work units
    if backend == "serial" or not chunks:
        for c in chunks:
            interrupts.raise_if_requested()
            yield run_chunk(c, config, factory)
    elif backend == "thread":
        yield from _thread_results(chunks, config, factory, workers)
    elif backend == "process":
        yield from _process_results(chunks, config, factory, workers)
    elif backend == "ray":
        yield from _ray_results(chunks, config, factory, workers, ray_address)
    else:
        raise ConfigError(f"backend: got {backend!r}, expected one of {list(BACKENDS)}")


def _thread_results(
    chunks: list[list[EpisodeKey]], config: GridConfig, factory: PolicyFactory, workers: int
) -> Iterable[list[Finished]]:
    """Chunks on a thread pool, at most ``workers`` in flight (topped up as each finishes)."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    pool = ThreadPoolExecutor(workers)
    try:
        queued = iter(chunks)
        pending = {
            pool.submit(run_chunk, c, config, factory) for c in itertools.islice(queued, workers)
        }
        while pending:
            done, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    finished = future.result()
                except interrupts.Interrupted:  # an episode stopped by the request: not run
                    continue
                yield finished
            interrupts.raise_if_requested()
            for c in itertools.islice(queued, len(done)):
                pending.add(pool.submit(run_chunk, c, config, factory))
    finally:  # in-flight calls are left to end on their own: nothing waits for them
        pool.shutdown(wait=False, cancel_futures=True)


def _ignore_interrupts() -> None:
    """A worker process leaves SIGINT to its parent (which terminates it)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _process_results(
    chunks: list[list[EpisodeKey]], config: GridConfig, factory: PolicyFactory, workers: int
) -> Iterable[list[Finished]]:
    """Chunks on a pool of spawned processes; the pool is terminated on a stop request."""
    import multiprocessing as mp

    # a pool terminated on a stop request leaves its queue locks to multiprocessing's resource
    # tracker, which unlinks them and warns about "leaked semaphore objects" after the
    # command's last line; the tracker starts with the first pool and inherits this
    warning = "ignore:resource_tracker:UserWarning"
    if warning not in os.environ.get("PYTHONWARNINGS", ""):
        os.environ["PYTHONWARNINGS"] = ",".join(
            w for w in (os.environ.get("PYTHONWARNINGS"), warning) if w
        )
    pool = mp.get_context("spawn").Pool(workers, initializer=_ignore_interrupts)
    try:
        results = pool.imap_unordered(_run_chunk_args, [(c, config, factory) for c in chunks])
        while True:
            try:
                finished = results.next(timeout=POLL_S)
            except StopIteration:
                break
            except mp.TimeoutError:
                interrupts.raise_if_requested()
                continue
            yield finished
            interrupts.raise_if_requested()
    finally:
        pool.terminate()
        pool.join()


def _run_chunk_args(args: tuple) -> list[Finished]:
    return run_chunk(*args)


def _ray_results(
    chunks: list[list[EpisodeKey]],
    config: GridConfig,
    factory: PolicyFactory,
    workers: int,
    address: str | None = None,
) -> Iterable[list[Finished]]:
    """Run the chunks as Ray tasks, at most ``workers`` in flight (topped up as each finishes).

    With an ``address`` (else ``$RAY_ADDRESS``) the driver connects to that cluster; without,
    it starts a local Ray with ``workers`` CPUs. A Ray already initialized is used as it is.
    On a stop request the tasks in flight are cancelled (and a Ray started here is shut down)."""
    try:
        import ray
    except ImportError:
        from hear2act_env.errors import MissingExtraError

        raise MissingExtraError("ray", "ray") from None
    address = address or os.environ.get("RAY_ADDRESS") or None
    started = not ray.is_initialized()
    if started:
        if address is None or address == "local":
            ray.init(
                address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False
            )
        else:
            _ray_connect(ray, address)
    remote = ray.remote(num_cpus=1)(run_chunk)
    config_ref, factory_ref = ray.put(config), ray.put(factory)
    queued = iter(chunks)
    pending = [remote.remote(c, config_ref, factory_ref) for c in itertools.islice(queued, workers)]
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=POLL_S)
            for ref in done:
                yield ray.get(ref)
            interrupts.raise_if_requested()
            for c in itertools.islice(queued, len(done)):
                pending.append(remote.remote(c, config_ref, factory_ref))
    except interrupts.Interrupted:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()
        raise


#: Seconds to wait for a Ray cluster's address to accept a connection and answer as one.
RAY_CONNECT_TIMEOUT = 15.0

#: What an HTTP/2 client sends first (RFC 9113, 3.4), then an empty SETTINGS frame.
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _answers_http2(host: str, port: int, timeout: float) -> str | None:
    """None when ``host:port`` answers the HTTP/2 preface with a SETTINGS frame (Ray's GCS and
    Ray Client speak gRPC, which is HTTP/2), else why not; bounded by ``timeout`` in all."""
    import socket

    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout) as conn:
            conn.sendall(_HTTP2_PREFACE)
            head = b""
            while len(head) < 9:
                left = deadline - time.monotonic()
                if left <= 0:
                    return f"no answer within {timeout:g} s"
                conn.settimeout(left)
                data = conn.recv(9 - len(head))
                if not data:
                    return "the connection was closed without an answer"
                head += data
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    if head[3] != 4:  # the frame type of SETTINGS
        return f"it answered {head[:9]!r}, not as a gRPC (HTTP/2) server"
    return None


def _ray_connect(ray: Any, address: str) -> None:
    """Connect the driver to the cluster at ``address``; an unreachable one is a ``ConfigError``.

    ``ray.init`` retries an unreachable address for minutes (it has no timeout), and waits as
    long on a port where something else listens, so the address is first probed with a TCP
    connection and an HTTP/2 preface, both bounded by ``RAY_CONNECT_TIMEOUT``."""
    check = (
        "check that the head node runs (`ray start --head` there), that HOST:PORT is its GCS "
        "address (`ray status` on the head prints it) and that this machine can reach it"
    )
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if address != "auto":  # "auto": the latest cluster started on this machine
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(
                f"ray address: got {address!r}, expected HOST:PORT (or ray://HOST:PORT)"
            )
        problem = _answers_http2(host.strip("[]"), int(port), RAY_CONNECT_TIMEOUT)
        if problem is not None:
            verb = "reach" if "Error" in problem else "talk to"
            raise ConfigError(
                f"ray address: cannot {verb} the Ray cluster at {address} ({problem}); {check}"
            )
    try:
        ray.init(address=address, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
        causes, cause = [], exc
        while cause is not None:
            causes.append(str(cause))
            cause = cause.__cause__ or cause.__context__
        if "auth" in " ".join(causes).lower():  # Ray's token authentication (Ray >= 2.5x)
            check = (
                "the cluster may use token authentication: set RAY_AUTH_MODE=token and give "
                "this machine the head's token (RAY_AUTH_TOKEN, or the file ~/.ray/auth_token), "
                "as on each worker node before its `ray start`"
            )
        first = (str(exc).splitlines() or [""])[0]
        raise ConfigError(
            f"ray address: cannot connect to the Ray cluster at {address} "
            f"({type(exc).__name__}: {first}); {check}"
        ) from None


class _LogWriter:
    """Appends agents' episode logs to the sidecar file, opened on the first log (a grid of
    rule agents writes none); a torn last line left by a killed run is dropped first."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: Any = None
        _drop_torn_tail(path)

    def write(self, batch: Sequence[Finished]) -> None:
        lines = [log_line(r, log) for r, log in batch if log is not None]
        if not lines:
            return
        if self._fh is None:
            self._fh = safewrite.open_append(self.path)
        self._fh.write("".join(line + "\n" for line in lines))
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            os.fsync(self._fh.fileno())
            self._fh.close()


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line without its newline (a run killed mid-write); the file is opened as
    ``safewrite`` allows (a regular file, not a link), never created here."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return
    with safewrite.open_in_place(path) as fh:
        data = fh.read()
        if data and not data.endswith(b"\n"):
            fh.truncate(data.rfind(b"\n") + 1)


def run_grid(
    config: GridConfig,
    output: str | Path,
    factory: PolicyFactory,
    backend: Backend = "serial",
    workers: int = 1,
    chunk: int = 1,
    progress: bool = True,
    retry_errors: bool = True,
    wait: bool = False,
    ray_address: str | None = None,
    run_config: dict[str, Any] | None = None,
) -> list[EpisodeRecord]:
    """Run (or resume) the grid into ``output``; return its records (one per key).

    Resuming skips the keys that have a record; with ``retry_errors`` (the default) the
    episodes recorded with an error are run again. One run writes an output at a time: a second
    run on it stops with a ``ConfigError`` (or, with ``wait``, waits for the first to end).
    ``ray_address`` (else ``$RAY_ADDRESS``): the Ray cluster of the ``ray`` backend, where
    ``workers`` is the number of work units in flight; it changes no record. ``run_config``:
    the command's resolved configuration, stored in the manifest (``manifest``).
    """
    if backend not in BACKENDS:
        raise ConfigError(f"backend: got {backend!r}, expected one of {list(BACKENDS)}")
    if not 1 <= workers <= MAX_WORKERS:
        raise ConfigError(f"workers: got {workers}, expected 1 to {MAX_WORKERS}")
    if ray_address and backend != "ray":
        raise ConfigError(f"ray_address: given with backend {backend!r}; it needs backend 'ray'")
    path = Path(output)
    try:
        safewrite.ensure_folder(path.parent)
        if path.is_dir():
            raise IsADirectoryError(path)
    except OSError as exc:
        raise ConfigError(
            f"output: cannot write results to {path} ({type(exc).__name__}: {exc.strerror or exc})"
            "; choose a writable file path"
        ) from None
    with output_lock(path, wait), interrupts.cooperative():
        interrupts.raise_if_requested()
        records = {r.key.id(): r for r in _prepare_output(path, config, run_config)}
        done = {k for k, r in records.items() if r.error is None or not retry_errors}
        keys = config.keys()
        todo = [k for k in keys if k.id() not in done]
        bar = Progress(len(keys), len(keys) - len(todo), progress)
        logs = _LogWriter(log_path(path))
        try:
            with safewrite.open_append(path) as fh:
                try:
                    for batch in _results(
                        backend, todo, config, factory, workers, chunk, ray_address
                    ):
                        logs.write(batch)  # before the records: a finished record has its log
                        fh.write("".join(r.to_json() + "\n" for r, _ in batch))
                        fh.flush()
                        for r, _ in batch:
                            records[r.key.id()] = r
                        bar.update(r for r, _ in batch)
                finally:
                    os.fsync(fh.fileno())
        except interrupts.Interrupted as exc:
            finished = sum(1 for k in keys if k.id() in records)
            raise interrupts.Interrupted(
                str(exc),
                resume=f"{finished} of {len(keys)} episodes are recorded in {path}; run the "
                "same command again to resume (finished episodes are kept)",
            ) from None
        finally:
            logs.close()
            bar.close()
    return list(records.values())


@contextlib.contextmanager
def output_lock(path: Path, wait: bool = False) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (a ``.lock`` file beside it) for one writer at a
    time; without ``wait``, a held lock is a ``ConfigError`` naming the holder's pid."""
    lock_path = path.with_name(path.name + ".lock")
    with safewrite.open_in_place(lock_path) as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read(64).decode("utf-8", "replace").strip() or "?"
            raise ConfigError(
                f"output: {path} is being written by another run (pid {holder}); wait for it to "
                "finish (or pass --wait), or choose another output"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()).encode("ascii"))
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
