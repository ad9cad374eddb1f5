"""``hear2act play``: a person plays the assistant in the browser, recorded like any agent.

The person is an agent named ``human:NAME``: ``HumanPolicy`` follows the ``Policy`` protocol and
the episodes run through the grid runner (``run_grid``) into an ordinary results file, so
``hear2act report`` and ``--leaderboard`` show human rows with their CIs. The runner plays in a
background thread; ``HumanPolicy.reset`` publishes each episode's first observation to the page
and ``act`` blocks (no timeout: a person may think for minutes) until the browser posts an
action. A local Starlette app (``play_app``) serves the page, its JSON API and the clips.

What the page gets is the observation and nothing else (``PlaySession.state``):

- the domain, the 11 options (the ``options`` text, shown as a table), the transcript (the
  env's own: without T every user turn after the request reads ``[user audio]``);
- with A, one clip per user reaction, ``/audio/<episode>/<turn>.ogg`` (Ogg Opus, else WAV:
  ``clips.encode_clip``; ``<episode>`` is the episode's number in the session's list, ``<turn>``
  the actions taken before it: nothing about its state or delivery is in the URL or the file);
- with S, the state tag of each user reaction (the ``state`` observation, in words);
- the topics to ASK about: the attribute labels of the options text in shown order, read with
  the LLM agents' own parser (``hear2act_env.protocol.options_text.parse_options``).

Never the truth, the scenario id, the seed, the delivery, the realization or (without S) a
state; with S only what the ``state`` observation says. After an episode ends, the page shows
its outcome (success, the option confirmed, the best option) from the record the runner wrote.

JSON API: ``GET /api/state``; ``POST /api/act`` with ``{"act": 0-3, "option": 0-10, "topic":
0-8}`` (the env's action space: ``option`` 0-based, shown as ``option + 1``; ``option`` is
required for RECOMMEND, ``topic`` for ASK, others default to 0; the page also sends
``episode`` and ``turn`` so that a stale tab cannot act on a newer episode); ``POST /api/next``
with ``{}`` (leave an episode's outcome). Invalid input is HTTP 400 with ``{"error": message}``
(415 without a JSON content type, 413 for a body over 4 KB, read no further); an unexpected
failure is a JSON 500 without a traceback. POSTs need ``Content-Type: application/json``, which
a foreign web page cannot send to 127.0.0.1 without a CORS preflight (never answered); a
request whose ``Origin`` is another site is refused (403), and with a local ``--host`` the
``Host`` header must name it (no DNS rebinding). These checks are ``server.guard`` and
``server.read_json``, shared with ``hear2act audit``.

Episodes (``play_config``): one agent, realization and access condition, one run, over a
fixed subset of the split: its scenarios in the order of ``sha256("hear2act-play|" + id)``,
the first ``--episodes`` of them. The subset depends on nothing else (not the name, not the
time), so every person plays the same scenarios with the same seeds as the agents (paired
comparisons hold), a restart with the same arguments resumes the same grid, and a larger
``--episodes`` extends the list (a different list is a different grid: ``run_grid`` refuses
it on an existing output, naming what changed).

Stopping (Ctrl-C, or ``PlaySession.stop``) while an episode is in progress raises
``PlayStopped`` out of ``act``: a ``BaseException``, so the runner does not catch it as the
episode's error. The run ends there and the episode in progress is not recorded at all
(neither a result nor an error record); the next ``hear2act play`` with the same arguments
plays it again from the start (same seed, same opening). Finished episodes are written by the
runner as each ends, so a killed server loses at most the episode in progress.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env import interrupts
from hear2act_env.conditions import Access, Condition
from hear2act_env.config import EnvConfig
from hear2act_env.errors import ConfigError, Hear2ActError, MissingExtraError
from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord
from hear2act_env.evaluation.runner import GridConfig, load_records, run_grid
from hear2act_env.listen import server
from hear2act_env.listen.clips import EncodedClip, encode_clip
from hear2act_env.listen.server import LOCAL_HOSTS
from hear2act_env.protocol.delivery import State
from hear2act_env.protocol.engine import N_ACTS, N_OPTIONS, N_TOPICS, REALIZATIONS, Act

__all__ = [
    "DEFAULT_EPISODES",
    "HUMAN_PREFIX",
    "LOCAL_HOSTS",
    "HumanPolicy",
    "PlayInputError",
    "PlaySession",
    "PlayStopped",
    "default_output",
    "human_agent",
    "parse_action",
    "play_app",
    "play_config",
    "scenario_subset",
]

HUMAN_PREFIX = "human:"
DEFAULT_EPISODES = 10
#: What orders a split's scenarios for the subset (changing it changes every human grid).
SUBSET_SALT = "hear2act-play|"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: The ``state`` observation in words (0: withheld).
STATE_WORDS = {0: "withheld", **{int(s): s.label for s in State}}
OPEN_TOPIC = "anything else? (open question)"
#: Seconds ``POST /api/act`` waits for the env's reply before answering (the page polls on).
ACT_WAIT = 15.0
MAX_BODY = server.MAX_BODY
_NUMBER = re.compile(r"[0-9]{1,9}")
_CLIP_FILE = re.compile(r"([0-9]{1,9})\.([a-z0-9]{1,8})")
STATIC = server.STATIC
_ASSISTANT, _USER = "Assistant: ", "User: "


class PlayStopped(BaseException):  # noqa: N818 - a stop signal, like KeyboardInterrupt
    """The session stopped while the runner waited for the person. A ``BaseException`` so that
    the runner never records it as the episode's error: the episode stays unrecorded."""


class PlayInputError(Hear2ActError, ValueError):
    """An action or request the API refuses (HTTP 400): what was wrong, in one line."""


# -- the grid of a person --------------------------------------------------------------------
def human_agent(name: str) -> str:
    """``"ada"`` -> ``"human:ada"``; a name other than 1-64 letters, digits, ``-_.`` (starting
    with a letter or digit) is a ``ConfigError`` naming the field."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"name: got {name!r}, expected 1 to 64 letters, digits, '-', '_' or '.', starting "
            "with a letter or digit"
        )
    return HUMAN_PREFIX + name


def default_output(name: str) -> Path:
    """``runs/human/NAME/results.jsonl`` (relative to the working folder)."""
    human_agent(name)
    return Path("runs") / "human" / name / "results.jsonl"


def scenario_subset(split: str, episodes: int, scenario_file: str | None = None) -> tuple[str, ...]:
    """The first ``episodes`` scenario ids of ``split`` in the order of
    ``sha256("hear2act-play|" + id)``: the same on every call, for every person."""
    if not isinstance(episodes, int) or isinstance(episodes, bool) or episodes < 1:
        raise ConfigError(f"episodes: got {episodes!r}, expected an integer >= 1")
    ids = GridConfig(
        agents=(HUMAN_PREFIX,), env=EnvConfig(split=split, scenarios=scenario_file)
    ).scenario_ids()
    if episodes > len(ids):
        raise ConfigError(f"episodes: got {episodes}, but split {split!r} has {len(ids)} scenarios")
    ordered = sorted(ids, key=lambda s: hashlib.sha256((SUBSET_SALT + s).encode()).hexdigest())
    return tuple(ordered[:episodes])


#: The env a person plays by default: the test split.
PLAY_ENV = EnvConfig(split="test")


def play_config(
    name: str,
    realization: str = "prosody",
    access: str = "A+T",
    episodes: int = DEFAULT_EPISODES,
    env: EnvConfig = PLAY_ENV,
) -> GridConfig:
    """The grid a person plays: agent ``human:NAME``, one realization and access condition, one
    run over ``scenario_subset`` of ``env``'s split; ``env`` carries the other settings (turn
    cost, scenario file, speech) to every episode and to the manifest."""
    agent = human_agent(name)
    if realization not in REALIZATIONS:
        raise ConfigError(f"realization: got {realization!r}, expected one of {list(REALIZATIONS)}")
    channels = Access.parse(access, "access")
    if not isinstance(env, EnvConfig):
        raise ConfigError(f"env: got {type(env).__name__}, expected an EnvConfig")
    probe = GridConfig(agents=(agent,), env=env)
    probe.scenario_ids()  # a bad split, file or env setting fails here, not in every episode
    return GridConfig(
        agents=(agent,),
        realizations=(realization,),
        conditions=(Condition.of(str(channels)),),
        scenarios=scenario_subset(env.split, episodes, env.scenarios),
        runs=1,
        env=env,
    )


# -- the policy ------------------------------------------------------------------------------
class HumanPolicy:
    """The person at the page as a ``Policy``: ``reset`` publishes the episode, ``act`` waits
    for the browser's action (``PlayStopped`` when the session stops)."""

    observation_kind = "text"

    def __init__(self, session: PlaySession, name: str) -> None:
        self.name = name
        self._session = session
        self._episode: _Episode | None = None
        self._started: float | None = None

    def reset(self, observation: dict[str, Any], seed: int | None = None) -> None:
        self._episode = self._session._begin(observation, seed)
        self._started = time.monotonic()

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        if self._episode is None:
            raise RuntimeError("act() before reset()")
        return self._session._await(self._episode, observation)

    def stats(self) -> dict[str, Any]:
        """The episode's wall time in seconds (from its first observation to its end)."""
        if self._started is None:
            return {}
        return {"seconds": round(time.monotonic() - self._started, 1)}


@dataclass
class _Episode:
    """What the page may show of one episode (all from its observations)."""

    number: int  # 1-based, in the session's list of episodes
    key: EpisodeKey
    domain: str
    options: dict[str, Any]
    topics: list[str]
    names: list[str]
    lines: list[str] = field(default_factory=list)
    turn: int = 0
    clips: dict[int, EncodedClip] = field(default_factory=dict)
    states: dict[int, int] = field(default_factory=dict)


def _options_view(text: str) -> tuple[dict[str, Any], list[str], list[str]]:
    """The options as a table (attribute labels, rows), the topic labels and option names."""
    from hear2act_env.protocol.options_text import parse_options

    info = parse_options(text)
    attributes = list(info.attributes)
    rows = [
        {
            "number": i + 1,
            "name": name,
            "values": [
                info.values.get(a, ())[i] if i < len(info.values.get(a, ())) else ""
                for a in attributes
            ],
        }
        for i, name in enumerate(info.names)
    ]
    if len(rows) != N_OPTIONS:  # not the env's format: show the lines as they are
        lines = [line for line in text.splitlines() if line.strip()]
        rows = [{"number": i + 1, "name": line, "values": []} for i, line in enumerate(lines)]
        attributes = []
    topics = [OPEN_TOPIC, *attributes[: N_TOPICS - 1]]
    return {"attributes": attributes, "rows": rows}, topics, [r["name"] for r in rows]


# -- the session -----------------------------------------------------------------------------
class PlaySession:
    """One person's run of a ``play_config`` grid into ``output``, shared by the runner thread
    and the web app. ``start`` it, serve ``play_app(session)``, ``stop`` it."""

    def __init__(
        self, config: GridConfig, output: str | Path, log: Callable[[str], None] | None = None
    ) -> None:
        if len(config.agents) != 1 or not config.agents[0].startswith(HUMAN_PREFIX):
            raise ConfigError(f"agents: got {list(config.agents)}, expected one 'human:NAME'")
        human_agent(config.agents[0][len(HUMAN_PREFIX) :])
        if len(config.realizations) != 1 or len(config.conditions) != 1:
            raise ConfigError("play: expected one realization and one access condition")
        condition = config.conditions[0]
        if condition.perception is not None:
            raise ConfigError(
                f"access: {condition} reads the voice with a perceiver; a person hears it"
            )
        self.config = config
        self.output = Path(output)
        self.agent = config.agents[0]
        self.access = condition.access
        self.keys = config.keys()
        self._by_seed = {k.seed: k for k in self.keys}
        if len(self._by_seed) != len(self.keys):
            raise ConfigError("scenarios: two episodes of the grid share a seed; drop one")
        self._numbers = {k.id(): i + 1 for i, k in enumerate(self.keys)}
        self.max_actions = config.env.max_actions
        self.allow_clarify = config.env.allow_clarify
        self._log = log or (lambda message: None)
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._version = 0
        self._current: _Episode | None = None  # the episode the runner plays
        self._awaiting = False  # the runner waits in act() for the person
        self._action: np.ndarray | None = None
        self._outcome: dict[str, Any] | None = None  # shown until the person moves on
        self._ended: _Episode | None = None  # the episode of that outcome
        self._summary: dict[str, Any] | None = None
        self._error: BaseException | None = None
        self._stopping = False
        self._started = False
        self._recorded = 0

    # -- control -------------------------------------------------------------------------
    def start(self, timeout: float | None = None) -> None:
        """Start the runner; return once the first episode waits for the person (or all are
        recorded). An error of the run (a lock held, an output of another grid) is raised."""
        if self._thread is not None:
            raise RuntimeError("a PlaySession starts once")
        self._recorded = self._count_recorded()
        self._thread = threading.Thread(target=self._run, name="hear2act-play", daemon=True)
        self._thread.start()
        with self._cond:
            self._cond.wait_for(
                lambda: (
                    self._error is not None
                    or self._summary is not None
                    or self._awaiting
                    or not self._thread.is_alive()
                ),  # type: ignore[union-attr]
                timeout,
            )
            if self._error is not None:
                raise self._error
            self._started = True

    def stop(self, timeout: float = 30.0) -> None:
        """Stop: an episode in progress is left unrecorded (it is played again on resume)."""
        with self._cond:
            self._stopping = True
            self._bump()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- what the page sees --------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The page's JSON: the phase and only what the access condition shows."""
        with self._cond:
            phase = self._phase()
            out: dict[str, Any] = {
                "version": self._version,
                "phase": phase,
                "agent": self.agent,
                "access": str(self.access),
                "clarify": self.allow_clarify,
                "recorded": self._recorded,
                "total": len(self.keys),
            }
            if phase == "ended":
                out["outcome"] = dict(self._outcome or {})
                if self._ended is not None:
                    out["episode"] = self._view(self._ended)
            elif phase in ("waiting", "busy") and self._current is not None:
                out["episode"] = self._view(self._current)
            elif phase == "done":
                out["summary"] = dict(self._summary or {})
            elif phase == "failed":
                exc = self._error
                out["error"] = f"{type(exc).__name__}: {exc}"
            return out

    def wait_settled(self, timeout: float) -> str:
        """Wait (at most ``timeout`` seconds) until the runner is not busy; the phase."""
        with self._cond:
            self._cond.wait_for(lambda: self._phase() != "busy", timeout)
            return self._phase()

    def post_action(
        self, act: int, option: int = 0, topic: int = 0, episode: int | None = None,
        turn: int | None = None,
    ) -> int:  # fmt: skip
        """Hand the person's action to the waiting episode; the state's new version."""
        with self._cond:
            phase = self._phase()
            if phase != "waiting":
                raise PlayInputError(f"no episode is waiting for an action (phase: {phase})")
            current = self._current
            assert current is not None
            if (episode is not None and episode != current.number) or (
                turn is not None and turn != current.turn
            ):
                raise PlayInputError(
                    f"the page is out of date: episode {current.number} waits for action "
                    f"{current.turn + 1}; reload the page"
                )
            self._action = np.array([act, option, topic], dtype=np.int64)
            self._awaiting = False
            return self._bump()

    def next_episode(self) -> int:
        """Leave the outcome of the episode just ended; the state's new version."""
        with self._cond:
            if self._phase() != "ended":
                raise PlayInputError(f"no ended episode to leave (phase: {self._phase()})")
            self._outcome = self._ended = None
            return self._bump()

    def clip(self, episode: int, turn: int) -> EncodedClip | None:
        """A user turn's clip, of the episode on the page (None if there is none)."""
        with self._cond:
            for ep in (self._current, self._ended):
                if ep is not None and ep.number == episode:
                    return ep.clips.get(turn)
        return None

    # -- the runner's side -------------------------------------------------------------
    def _factory(self, name: str) -> HumanPolicy:
        with self._cond:
            if self._stopping:
                raise PlayStopped
            ending, self._current = self._current, None
        if ending is not None:
            self._publish_outcome(ending)
        if name != self.agent:
            raise ConfigError(f"agent: got {name!r}, this session plays {self.agent!r}")
        return HumanPolicy(self, name)

    def _begin(self, obs: dict[str, Any], seed: int | None) -> _Episode:
        key = self._by_seed.get(seed)  # type: ignore[arg-type]
        if key is None:
            raise ConfigError(f"seed: {seed!r} is not the seed of an episode of this grid")
        options, topics, names = _options_view(str(obs["options"]))
        episode = _Episode(self._numbers[key.id()], key, str(obs["domain"]), options, topics, names)
        with self._cond:
            if self._stopping:
                raise PlayStopped
            self._current = episode
            self._bump()
        return episode

    def _await(self, episode: _Episode, obs: dict[str, Any]) -> np.ndarray:
        turn = int(obs["turn"])
        clip = None
        if "audio" in obs and turn not in episode.clips:
            n = int(obs["audio_length"])
            if n > 0:
                clip = encode_clip(np.asarray(obs["audio"])[:n])
        with self._cond:
            if self._stopping:
                raise PlayStopped
            episode.lines = str(obs["transcript"]).split("\n")
            episode.turn = turn
            if clip is not None:
                episode.clips[turn] = clip
            if "state" in obs:
                episode.states[turn] = int(obs["state"])
            self._awaiting = True
            self._bump()
            self._cond.wait_for(lambda: self._action is not None or self._stopping)
            action, self._action = self._action, None
            self._awaiting = False
            if self._stopping:
                raise PlayStopped
            self._bump()
        assert action is not None
        return action

    def _run(self) -> None:
        try:
            records = run_grid(self.config, self.output, self._factory, progress=False)
        except (PlayStopped, interrupts.Interrupted):  # the server stops (and says so)
            with self._cond:
                self._awaiting = False
                self._bump()
            return
        except BaseException as exc:  # noqa: BLE001 - shown on the page, raised by start()
            with self._cond:
                self._error = exc
                self._awaiting = False
                self._bump()
            if self._started:  # start() raises what fails before it returns
                self._log(f"the run stopped: {type(exc).__name__}: {exc}")
            return
        with self._cond:
            ending, self._current = self._current, None
        if ending is not None:
            self._publish_outcome(ending)
        summary = self._make_summary(records)
        with self._cond:
            self._summary = summary
            self._bump()
        self._log(
            f"all {summary['episodes']} episodes recorded ({summary['successes']} successful) in "
            f"{self.output}; see them with: hear2act report {self.output}"
        )

    def _publish_outcome(self, episode: _Episode) -> None:
        records = {r.key.id(): r for r in self._own_records()}
        record = records.get(episode.key.id())
        outcome = _outcome(episode, record)
        recorded = sum(1 for r in records.values() if r.error is None)
        outcome["remaining"] = len(self.keys) - recorded
        with self._cond:
            self._outcome, self._ended, self._recorded = outcome, episode, recorded
            self._bump()
        what = (
            f"error ({outcome['error']})"
            if outcome["error"]
            else ("success" if outcome["success"] else "no success")
        )
        self._log(f"episode {episode.number}/{len(self.keys)} recorded: {what}")

    # -- helpers -------------------------------------------------------------------------
    def _own_records(self) -> list[EpisodeRecord]:
        if not self.output.exists():
            return []
        ids = set(self._numbers)
        return [r for r in load_records(self.output) if r.key.id() in ids]

    def _count_recorded(self) -> int:
        try:
            return sum(1 for r in self._own_records() if r.error is None)
        except (OSError, ValueError):
            return 0

    def _make_summary(self, records: Sequence[EpisodeRecord]) -> dict[str, Any]:
        from hear2act_env.evaluation.metrics import SUCCESS
        from hear2act_env.evaluation.stats import bootstrap

        mine = [r for r in records if r.key.id() in self._numbers]
        ok = [r for r in mine if r.error is None]
        return {
            "episodes": len(ok),
            "successes": sum(r.success for r in ok),
            "errors": len(mine) - len(ok),
            "success": str(bootstrap(ok, SUCCESS)),
            "results": str(self.output),
            "report": f"hear2act report {self.output}",
        }

    def _bump(self) -> int:
        self._version += 1
        self._cond.notify_all()
        return self._version

    def _phase(self) -> str:
        if self._error is not None:
            return "failed"
        if self._stopping:
            return "stopped"
        if self._outcome is not None:
            return "ended"
        if self._summary is not None:
            return "done"
        if self._current is not None and self._awaiting:
            return "waiting"
        return "busy"

    def _view(self, ep: _Episode) -> dict[str, Any]:
        audio, state = self.access.audio, self.access.state
        turns: list[dict[str, Any]] = []
        # the user lines after the request, from the latest back, are the reactions to
        # actions ep.turn, ep.turn - 1, ... (the opening's reaction is turn 0)
        reaction = {}
        t = ep.turn
        for i in range(len(ep.lines) - 1, 0, -1):
            if ep.lines[i].startswith(_USER) and t >= 0:
                reaction[i] = t
                t -= 1
        latest_audio = None
        for i, line in enumerate(ep.lines):
            if line.startswith(_USER):
                item: dict[str, Any] = {"who": "user", "text": line[len(_USER) :]}
            elif line.startswith(_ASSISTANT):
                item = {"who": "assistant", "text": line[len(_ASSISTANT) :]}
            else:
                item = {"who": "note", "text": line}
            turn = reaction.get(i)
            if turn is not None:
                if audio:
                    clip = ep.clips.get(turn)
                    item["audio"] = _clip_url(ep.number, turn, clip) if clip else None
                    if turn == ep.turn:
                        latest_audio = item["audio"]
                if state and turn in ep.states:
                    item["state"] = STATE_WORDS.get(ep.states[turn], str(ep.states[turn]))
            turns.append(item)
        view: dict[str, Any] = {
            "number": ep.number,
            "total": len(self.keys),
            "turn": ep.turn,
            "max_actions": self.max_actions,
            "domain": ep.domain,
            "turns": turns,
            "options": ep.options,
            "topics": ep.topics,
        }
        if audio:
            view["audio"] = latest_audio
        if state and ep.turn in ep.states:
            view["state"] = STATE_WORDS.get(ep.states[ep.turn], str(ep.states[ep.turn]))
        return view


def _clip_url(number: int, turn: int, clip: EncodedClip) -> str:
    return f"/audio/{number}/{turn}.{clip.extension}"


def _outcome(episode: _Episode, record: EpisodeRecord | None) -> dict[str, Any]:
    """An ended episode for the page, from its record (the truth is out once it has ended)."""

    def named(option: int | None) -> dict[str, Any] | None:
        if option is None or not 0 <= option < len(episode.names):
            return None
        return {"number": option + 1, "name": episode.names[option]}

    if record is None:
        return {"number": episode.number, "success": False, "error": "no record was written"}
    return {
        "number": episode.number,
        "success": bool(record.success),
        "final": named(record.final_option),
        "best": named(record.best),
        "actions": record.actions,
        "truncated": record.truncated,
        "error": record.error,
    }


# -- the API ---------------------------------------------------------------------------------
def parse_action(payload: Any, total: int | None = None) -> dict[str, int | None]:
    """The fields of a ``POST /api/act`` body, checked (``PlayInputError`` says what is
    wrong): ``act``, ``option`` (required for RECOMMEND), ``topic`` (required for ASK), and the
    optional ``episode`` and ``turn`` the page saw."""
    if not isinstance(payload, dict):
        raise PlayInputError('expected a JSON object such as {"act": 0, "option": 0, "topic": 1}')
    unknown = sorted(set(payload) - {"act", "option", "topic", "episode", "turn"})
    if unknown:
        raise PlayInputError(f"unknown fields {unknown}; expected act, option, topic")

    def integer(name: str, low: int, high: int | None, required: bool) -> int | None:
        value = payload.get(name)
        if value is None:
            if required:
                raise PlayInputError(f"{name}: missing")
            return None
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or value < low
            or (high is not None and value > high)
        ):
            bound = f"{low} to {high}" if high is not None else f">= {low}"
            raise PlayInputError(f"{name}: got {value!r}, expected an integer {bound}")
        return value

    act = integer("act", 0, N_ACTS - 1, True)
    option = integer("option", 0, N_OPTIONS - 1, act == Act.RECOMMEND)
    topic = integer("topic", 0, N_TOPICS - 1, act == Act.ASK)
    return {
        "act": act,
        "option": option or 0,
        "topic": topic or 0,
        "episode": integer("episode", 1, total, False),
        "turn": integer("turn", 0, None, False),
    }


def play_app(session: PlaySession, allowed_hosts: Sequence[str] | None = None) -> Any:
    """The Starlette app of ``session``: the page, the JSON API, the clips and the static
    files. With ``allowed_hosts``, requests naming another ``Host`` are refused; a request
    from another site's page (its ``Origin``) always is. The app's shutdown stops the session."""
    try:
        from starlette.applications import Starlette
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import Request
        from starlette.responses import HTMLResponse, JSONResponse, Response
        from starlette.routing import Mount, Route
        from starlette.staticfiles import StaticFiles
    except ImportError as exc:
        raise MissingExtraError("listen", exc.name or "starlette") from None

    page = server.templates().get_template("play.html")
    no_store = server.NO_STORE
    error = server.error_response

    async def index(request: Request) -> Response:
        html = page.render(
            agent=session.agent,
            access=str(session.access),
            audio=session.access.audio,
            state=session.access.state,
            total=len(session.keys),
        )
        return HTMLResponse(html, headers=no_store)

    async def api_state(request: Request) -> Response:
        return JSONResponse(session.state(), headers=no_store)

    async def api_act(request: Request) -> Response:
        try:
            fields = parse_action(await server.read_json(request), len(session.keys))
            session.post_action(**fields)  # type: ignore[arg-type]
        except server.Refused as exc:
            return error(exc.status, exc.message)
        except PlayInputError as exc:
            return error(400, str(exc))
        await run_in_threadpool(session.wait_settled, ACT_WAIT)
        return JSONResponse(session.state(), headers=no_store)

    async def api_next(request: Request) -> Response:
        try:
            if await server.read_json(request) != {}:
                raise PlayInputError("expected the JSON object {}")
            session.next_episode()
        except server.Refused as exc:
            return error(exc.status, exc.message)
        except PlayInputError as exc:
            return error(400, str(exc))
        await run_in_threadpool(session.wait_settled, ACT_WAIT)
        return JSONResponse(session.state(), headers=no_store)

    async def audio(request: Request) -> Response:
        number, name = request.path_params["episode"], request.path_params["file"]
        match = _CLIP_FILE.fullmatch(name)
        clip = (
            session.clip(int(number), int(match[1]))
            if match is not None and _NUMBER.fullmatch(number)
            else None
        )
        if clip is None or match[2] != clip.extension:  # type: ignore[index]
            return error(404, "no such clip in the episode on the page")
        return Response(clip.data, media_type=clip.mime, headers=no_store)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        yield
        await run_in_threadpool(session.stop)

    return Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            Route("/api/state", api_state, methods=["GET"]),
            Route("/api/act", api_act, methods=["POST"]),
            Route("/api/next", api_next, methods=["POST"]),
            Route("/audio/{episode}/{file}", audio, methods=["GET"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=server.guard(allowed_hosts),
        exception_handlers=server.error_handlers(),
        lifespan=lifespan,
    )
