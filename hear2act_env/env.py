"""``Hear2ActEnv``: one Hear2Act scenario per episode as a Gymnasium environment."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hear2act_env.config import EnvConfig
from hear2act_env.constants import DOMAIN_MAX, OPTIONS_MAX, TRANSCRIPT_MAX
from hear2act_env.errors import ConfigError, MissingExtraError
from hear2act_env.lexical import SURFACE_OF, LexicalView
from hear2act_env.protocol.delivery import STATE_WITHHELD, State
from hear2act_env.protocol.engine import (
    N_ACTS,
    N_OPTIONS,
    N_TOPICS,
    Act,
    ReplyKind,
    ScenarioFacts,
    UserEngine,
)
from hear2act_env.protocol.realizer import TurnDraw, UserTurn, assistant_line, opening_line, realize
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.protocol.validator import TEXT_CHARSET
from hear2act_env.scenarios.bank import load_bank, load_scenarios

#: Waveforms each env keeps in memory (about 100 kB each) in front of the disk cache.
AUDIO_MEMORY_ITEMS = 512
AUDIO_PLACEHOLDER = "[user audio]"
#: ``info["final_option"]`` while the episode runs.
NO_FINAL_OPTION = -1
_ACT_NAMES = {int(a): a.name.lower() for a in Act}


def transcript_window(lines: list[str], limit: int) -> str:
    """The transcript as one text within ``limit`` characters: every line while they fit; else
    the first line (the request) and the most recent lines, with a marker for those left out."""
    text = "\n".join(lines)
    if len(text) <= limit or not lines:
        return text
    head, kept, size = lines[0], [], 0
    budget = limit - len(head) - 64  # room for the marker line
    for line in reversed(lines[1:]):
        if size + len(line) + 1 > budget:
            break
        kept.append(line)
        size += len(line) + 1
    left_out = len(lines) - 1 - len(kept)
    return "\n".join([head, f"[... {left_out} earlier lines not shown ...]", *reversed(kept)])


class Hear2ActEnv(gym.Env[dict[str, Any], np.ndarray]):
    """Find the best of 11 options for a user whose three needs are unstated.

    ## Description
    Each episode plays one Hear2Act scenario: a service domain (hotels, dentists, ...), a user
    request and 11 options described by 8 attributes. The user has three hidden needs, in
    priority order: **L1** a hard constraint, **L2** a strong preference and **L3** a moderate
    one; the request states only a visible *requirement* and a *favored* attribute ("the less
    it costs the better"). The **best** option meets the requirement and all three needs and
    is the strictly best such option on the favored attribute (a **safe** one meets everything
    too but is worse there). The assistant opens with the **attractive** option: the one that
    looks best from the request alone (ahead on the favored attribute of every option meeting
    the requirement), meets the requirement, L1 and L2, and misses L3 (roles and patterns:
    ``docs/protocol.md``). The user's reaction to that opening is already in the first
    observation. The agent then asks, clarifies and recommends until it confirms an option. A
    deterministic user engine answers each action (``docs/protocol.md#user-engine``). Under the
    ``prosody`` realization a recommendation that misses L2 or L3 gets an accepting line from
    the pool that genuinely resolved replies use: the unmet need is only in the voice (and in
    the ``state`` tag when access includes S). Under ``explicit`` the words say it.

        >>> import gymnasium as gym
        >>> import hear2act_env
        >>> env = gym.make("Hear2Act-Prosody-Text-v0", turn_cost=0.05, split="test")
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step([0, 0, 0])  # an open question

    ## Action Space
    ``MultiDiscrete([4, 11, 9])`` = (act, option, topic). act: 0 ASK, 1 CLARIFY, 2 RECOMMEND,
    3 CONFIRM. option (used by RECOMMEND): index of the option, shown as number ``option + 1`` in
    the ``options`` text. topic (used by ASK): 0 = open question ("anything else?"), 1..8 = the
    scenario's attributes in shown order. An invalid action (CLARIFY with
    ``allow_clarify=False``, or anything outside the space) costs its turn, gets a "sorry?" reply
    and sets ``info["invalid_action"]``; it never raises.

    ## Observation Space
    A ``Dict`` whose keys depend on ``access``:

    - ``domain``: ``Text``, the service domain in words ("domestic flights"), for prompts.
    - ``transcript``: ``Text``, the dialogue so far, one ``User:``/``Assistant:`` line per turn.
      Without T (access ``A``) every user turn after the request reads ``[user audio]``.
    - ``options``: ``Text``, the 11 numbered options with all 8 attribute values.
    - ``turn``: ``Discrete(max_actions + 1)``, agent actions taken so far.
    - ``state`` (access with S): ``Discrete(5)``, the latest user turn's state: 0 withheld,
      1 resolved, 2 reluctant, 3 concern, 4 rejection, after the ``state_fidelity`` intervention.
    - ``audio`` (access with A): ``Box(-1, 1, (n,), float32)``, the latest user turn at 16 kHz,
      zero-padded to ``n = max_audio_seconds * 16000`` samples; ``audio_length``: a 0-d
      ``Box`` with the number of valid samples.

    Text spaces need ``gymnasium.vector.AsyncVectorEnv(..., shared_memory=False)``; SB3 needs a
    numeric observation wrapper (``hear2act_env.wrappers.StructuredObservation``).

    ## Rewards
    1.0 at the end of an episode whose final option is the ``best`` one, else 0; minus
    ``turn_cost`` for every agent action.

    ## Starting State
    The scenario (fixed by ``scenario`` or ``reset(options={"scenario": id})``, otherwise drawn
    uniformly from ``split`` with the env's generator), the request, the opening recommendation
    and the user's reaction to it. The opening is the same for every access condition.

    ## Episode End
    Terminated when the agent CONFIRMs a recommendation the user has not rejected (that option
    is final). Truncated after ``max_actions`` agent actions; the final option is then the
    current recommendation.

    ## Arguments
    ``Hear2ActEnv(config)`` with a ``hear2act_env.config.EnvConfig``, or its settings as keyword
    arguments (``gym.make(id, turn_cost=0.05, renderer="piper")``: the speech settings may be
    given flat); the env's ``config`` attribute holds the checked value. The settings (details in
    ``EnvConfig``): ``realization`` (``"prosody"`` or ``"explicit"``), ``access`` (``"T"``,
    ``"T+S"``, ``"A"``, ``"A+T"``, ``"A+T+S"``; audio needs the ``audio`` extra),
    ``state_fidelity`` (``"correct"``, ``"none"``, ``"always_resolved"``,
    ``"always_unresolved"``, ``"shuffled"``: each user turn, the tag the user would give to a
    uniformly drawn option), ``allow_clarify`` (False for spoken assistants), ``turn_cost``
    (default 0), ``max_actions`` (default 20), ``split`` (``"train"``, ``"test"``, ``"all"``),
    ``scenario`` (one id for every episode), ``scenarios`` (a scenario file or a sequence of
    ``Scenario``; default the shipped bank), ``render_mode`` (``"ansi"``: ``render()`` returns
    the transcript with ``[state/delivery]`` tags), and the speech settings ``renderer``
    (``"espeak"``, ``"piper"``, ``"MODULE:NAME"`` or a 16 kHz renderer object),
    ``prosody_strength`` in [0, 2], ``audio_cache`` (a folder, True/None for the default
    folder, False for memory only) and ``max_audio_seconds`` in (0, 120] (default 15).

    ## Info
    What an agent may read (it knows it already, or it is the episode's outcome):
    ``final_option`` (0-based when the episode ends, ``-1`` before it: one type throughout, as
    vector envs need), ``invalid_action``, ``last_turn`` (the agent's own act, option and topic:
    ``"opening"`` after reset), ``actions`` (taken so far), ``scenario_id`` and, once the
    episode ends, ``is_success`` (the reward says it too; SB3's ``Monitor`` reads it).

    ``truth`` holds everything else, for metrics, replays and privileged baselines, **never
    for an agent's input** under any access condition: ``best`` and ``attractive`` options,
    every option's ``patterns`` and every topic's role (``topics``), the current option's
    ``pattern``, the latest user turn's ``state`` and ``delivery`` (what the voice carries),
    its ``reply`` kind (which tells a need from a distractor) and ``revealed`` (the need levels
    put into words so far, "L1".."L3"). A training loop that feeds ``info`` to a policy should
    drop ``truth``; the observation is what the access condition grants.

    ## Wrapper-facing API
    ``lexical_view()`` returns what the words have said so far (``hear2act_env.lexical``).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, config: EnvConfig | None = None, **kwargs: Any) -> None:
        config = _resolve_config(config, kwargs)
        self.config = config
        speech = config.speech
        self.realization = config.realization
        self.channels = config.channels
        self.access = config.access
        self.state_fidelity = config.state_fidelity
        self.allow_clarify = config.allow_clarify
        self.turn_cost = config.turn_cost
        self.max_actions = config.max_actions
        self.split = config.split
        self.render_mode = config.render_mode
        self.scenarios = _select(_source(config.scenarios), config.split)
        self._by_id = {s.id: s for s in self.scenarios}
        if config.scenario is not None and config.scenario not in self._by_id:
            raise ConfigError(
                f"scenario: {config.scenario!r} is not among the {len(self.scenarios)} scenarios "
                f"of split {config.split!r}"
            )
        self.fixed_scenario = config.scenario
        self.prosody_strength = speech.prosody_strength
        self.max_audio_samples = speech.max_audio_samples
        #: The latest user turn's clip: renderer, utterance and buffer length, as a string key
        #: (None before the first spoken turn). Wrappers that keep derived values of the audio
        #: (``ProsodyFeatures``' feature cache) store them under it.
        self.utterance_key: str | None = None
        #: Set by a wrapper that reads only what it keeps under ``utterance_key`` and drops the
        #: audio from its observations: ``skip_render(key) -> bool``; when True the turn is not
        #: rendered and the raw observation's ``audio_length`` is 0 (never set it otherwise).
        self.skip_render: Callable[[str], bool] | None = None
        self._speech: Any = None  # (renderer, cache), built lazily per process
        if self.channels.audio:
            self._speaker()  # fail now, not mid-episode, when the audio extra is missing

        self.action_space = spaces.MultiDiscrete([N_ACTS, N_OPTIONS, N_TOPICS])
        obs: dict[str, spaces.Space[Any]] = {
            "domain": spaces.Text(DOMAIN_MAX, min_length=1, charset=TEXT_CHARSET),
            "transcript": spaces.Text(TRANSCRIPT_MAX, min_length=1, charset=TEXT_CHARSET),
            "options": spaces.Text(OPTIONS_MAX, min_length=1, charset=TEXT_CHARSET),
            "turn": spaces.Discrete(self.max_actions + 1),
        }
        if self.channels.state:
            obs["state"] = spaces.Discrete(5)
        if self.channels.audio:
            n = self.max_audio_samples
            obs["audio"] = spaces.Box(-1.0, 1.0, (n,), np.float32)
            obs["audio_length"] = spaces.Box(0, n, (), np.int64)
        self.observation_space = spaces.Dict(obs)

        self.scenario: Scenario | None = None
        self._engine: UserEngine | None = None
        self._cache: dict[str, tuple[ScenarioFacts, str, np.ndarray]] = {}

    # -- Gymnasium API -------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        index = int(self.np_random.random() * len(self.scenarios))
        requested = (options or {}).get("scenario", self.fixed_scenario)
        if requested is not None:
            if requested not in self._by_id:
                raise ConfigError(
                    f"options['scenario']: {requested!r} is not a scenario of this env"
                )
            scenario = self._by_id[requested]
        else:
            scenario = self.scenarios[index]
        self.scenario = scenario
        cached = self._cache.get(scenario.id)
        if cached is None:
            cached = self._cache[scenario.id] = (
                ScenarioFacts.of(scenario),
                scenario.options_text(),
                np.array([c.values for c in scenario.candidates], dtype=np.int64),
            )
        facts, self._options_text, self._values = cached
        self._attribute_index = {a.key: i for i, a in enumerate(scenario.attributes)}
        self._engine = UserEngine(scenario, self.realization, self.allow_clarify, facts)
        self._lines: list[str] = []
        self._log: list[tuple[str, str]] = []  # (speaker line, tag) for render
        self._true_states: list[int] = []
        self._actions = 0
        self._done = False
        self._truth = self._make_truth()
        self._asked: set[int] = set()
        self._say("User", scenario.request, tag="", text_visible=True)
        attractive = self._engine.current
        self._say("Assistant", opening_line(scenario, attractive))
        turn = realize(scenario, self._engine.opening(), TurnDraw.from_rng(self.np_random))
        self._user_turn(turn)
        self._last_reply_kind = turn.reply.kind
        last = {"act": "opening", "option": attractive, "topic": 0, "reply": turn.reply.kind.value}
        return self._obs(), self._info(turn, last, invalid=False, final=None)

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Take one agent action (act, option, topic); the user answers. An agent may read
        ``info``'s ``final_option``, ``invalid_action``, ``last_turn`` (its own action),
        ``actions``, ``scenario_id`` and, at the end, ``is_success``; ``info["truth"]`` is the
        ground truth (state, delivery, reply kind, revealed levels, patterns): never an
        agent's input (see "Info" in the class docstring)."""
        if self._engine is None or self.scenario is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        if self._done:
            raise gym.error.ResetNeeded("the episode has ended; call reset()")
        act, option, topic, valid = self._parse(action)
        engine = self._engine
        valid = valid and engine.is_valid(act, option, topic)
        self._actions += 1
        self._say("Assistant", assistant_line(self.scenario, act, option, topic, valid))
        reply = engine.respond(act, option, topic) if valid else engine.respond(-1, 0, 0)
        self._last_reply_kind = reply.kind
        if valid and act == Act.ASK:
            self._asked.add(topic)
        reward = -self.turn_cost
        terminated = reply.kind == ReplyKind.CONFIRMED
        truncated = not terminated and self._actions >= self.max_actions
        turn: UserTurn | None = None
        if not terminated:
            turn = realize(self.scenario, reply, TurnDraw.from_rng(self.np_random))
            self._user_turn(turn)
        final = engine.current if terminated or truncated else None
        if final is not None:
            self._done = True
            reward += 1.0 if final == engine.facts.best else 0.0
        last = {
            "act": _ACT_NAMES.get(act, "invalid") if valid else "invalid",
            "option": option,
            "topic": topic,
            "reply": reply.kind.value,
        }
        info = self._info(turn, last, invalid=not valid, final=final, confirmed_state=reply.state)
        return self._obs(), reward, terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        if self._engine is None:
            raise gym.error.ResetNeeded("call reset() before render(): no episode to show yet")
        return "\n".join(f"{line}{tag}" for line, tag in self._log) + "\n"

    # -- wrapper-facing API --------------------------------------------------------------
    @property
    def last_user_turn(self) -> UserTurn | None:
        """The latest user turn as realized (its full text, delivery label and state, whatever
        the access condition shows): for tools that replay an episode for people
        (``hear2act view``), never for agents."""
        return getattr(self, "_last_turn", None)

    def lexical_view(self) -> LexicalView:
        """What the dialogue has said in words so far (see ``hear2act_env.lexical``).

        The option table, the request's requirement and favored direction, the needs the user
        has put into words, the option under discussion, the latest reply's surface class, the
        actions taken and the topics asked. Never the state or an unsaid need.

        Only what the words said: a need known only from its directional hint (L1) gives no
        satisfying set, only the levels of the options the user turned down with it
        (``ruled_out``); its satisfying set appears once its statement or answer is spoken.
        """
        engine, scenario = self._engine, self.scenario
        if engine is None or scenario is None:
            raise gym.error.ResetNeeded("call reset() before reading the lexical view")
        index = self._attribute_index
        said = engine.named
        needs = {
            scenario.needs[i].level: (
                index[scenario.needs[i].attribute],
                frozenset(scenario.needs[i].satisfied_by),
            )
            for i in sorted(said)
        }
        ruled_out: dict[str, tuple[int, frozenset[int]]] = {}
        if 0 in engine.revealed and 0 not in engine.named:
            column = index[scenario.needs[0].attribute]
            levels = frozenset(int(self._values[o, column]) for o in engine.hinted)
            ruled_out[scenario.needs[0].level] = (column, levels)
        return LexicalView(
            values=self._values,
            n_levels=tuple(len(a.levels) for a in scenario.attributes),
            requirement=(
                index[scenario.requirement.attribute],
                frozenset(scenario.requirement.satisfied_by),
            ),
            favored=(
                index[scenario.favored.attribute],
                1 if scenario.favored.better == "higher" else -1,
            ),
            known_needs=needs,
            current=engine.current,
            surface=SURFACE_OF[self._last_reply_kind],
            actions=self._actions,
            asked=frozenset(self._asked),
            ruled_out=ruled_out,
        )

    # -- internals -----------------------------------------------------------------------
    def _parse(self, action: Any) -> tuple[int, int, int, bool]:
        try:
            arr = np.asarray(action).reshape(-1)
            if (
                arr.shape != (3,)
                or not np.issubdtype(arr.dtype, np.integer)
                and not np.all(arr == np.floor(arr))
            ):
                return -1, 0, 0, False
            act, option, topic = (int(v) for v in arr)
        except (TypeError, ValueError, OverflowError):
            return -1, 0, 0, False
        return act, option, topic, True

    def _say(self, speaker: str, text: str, tag: str = "", text_visible: bool = True) -> None:
        shown = text if text_visible else AUDIO_PLACEHOLDER
        self._lines.append(f"{speaker}: {shown}")
        self._log.append((f"{speaker}: {text}", tag))

    def _user_turn(self, turn: UserTurn) -> None:
        state = turn.reply.state
        self._true_states.append(int(state))
        self._say("User", turn.text, f"  [{state.label}/{turn.delivery}]", self.channels.text)
        self._last_turn = turn
        if self.channels.audio:
            self._audio = self._speak(turn)

    def _speaker(self) -> tuple[Any, Any]:
        if self._speech is None:
            try:
                from hear2act_env.speech.cache import AudioCache
                from hear2act_env.speech.espeak import EspeakRenderer
            except ImportError as exc:  # pragma: no cover - depends on the installed extras
                raise MissingExtraError("audio", exc.name or "espeakng_loader") from None
            speech = self.config.speech
            renderer = speech.renderer if speech.renderer is not None else EspeakRenderer()
            if isinstance(renderer, str):
                from hear2act_env.speech.renderers import make_renderer

                renderer = make_renderer(renderer, "renderer")
            arg = speech.audio_cache
            disk = arg is not False
            root = None if arg in (None, True, False) else arg
            self._speech = (renderer, AudioCache(root, disk=disk, memory_items=AUDIO_MEMORY_ITEMS))
        return self._speech

    def _speak(self, turn: UserTurn) -> np.ndarray:
        from hear2act_env.speech.cache import cache_key
        from hear2act_env.speech.utterance import Utterance

        renderer, cache = self._speaker()
        utt = Utterance.spoken(
            self.scenario,  # type: ignore[arg-type]
            turn.text,
            turn.delivery,
            turn.draw.variation,
            self.prosody_strength,
        )
        # what the audio observation will hold: the clip's key and the buffer that cuts it
        key = cache_key(renderer, utt)
        self.utterance_key = f"{key}:{self.max_audio_samples}"
        if self.skip_render is not None and self.skip_render(self.utterance_key):
            self._audio_truncated = False
            return np.zeros(0, np.float32)  # the reader has what it needs under the key
        wave = cache.render(renderer, utt, copy=False, key=key)
        self._audio_truncated = len(wave) > self.max_audio_samples
        return wave[: self.max_audio_samples]

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_speech"] = None  # renderers and caches hold locks and native handles
        return state

    def _observed_state(self) -> int:
        fidelity = self.state_fidelity
        if fidelity == "correct":
            return self._true_states[-1]
        if fidelity == "none":
            return STATE_WITHHELD
        if fidelity == "always_resolved":
            return int(State.RESOLVED)
        if fidelity == "always_unresolved":
            return int(State.RELUCTANT)
        # shuffled: the tag the user would give to a uniformly drawn option of this scenario,
        # drawn afresh each user turn (from that turn's fixed draw: matched rollouts hold)
        states = self._engine.facts.states  # type: ignore[union-attr]
        return int(states[int(self._last_turn.draw.shuffle * len(states))])

    def _obs(self) -> dict[str, Any]:
        obs: dict[str, Any] = {
            "domain": self.scenario.domain_name,  # type: ignore[union-attr]
            "transcript": transcript_window(self._lines, TRANSCRIPT_MAX),
            "options": self._options_text,
            "turn": self._actions,
        }
        if self.channels.state:
            obs["state"] = self._observed_state()
        if self.channels.audio:
            audio = np.zeros(self.max_audio_samples, np.float32)
            audio[: len(self._audio)] = self._audio
            obs["audio"] = audio
            obs["audio_length"] = np.array(len(self._audio), dtype=np.int64)
        return obs

    def _make_truth(self) -> dict[str, Any]:
        facts = self._engine.facts  # type: ignore[union-attr]
        return {
            "best": facts.best,
            "attractive": facts.attractive,
            "patterns": list(facts.patterns),
            "topics": list(facts.topic_role),
        }

    def _info(
        self,
        turn: UserTurn | None,
        last: dict[str, Any],
        invalid: bool,
        final: int | None,
        confirmed_state: State | None = None,
    ) -> dict[str, Any]:
        engine = self._engine
        assert engine is not None and self.scenario is not None
        state = turn.reply.state if turn else confirmed_state
        reply = last.pop("reply")
        return {
            "is_success": final is not None and final == engine.facts.best,
            "final_option": final if final is not None else NO_FINAL_OPTION,
            "invalid_action": invalid,
            "last_turn": last,
            "truth": {
                **self._truth,
                "patterns": list(self._truth["patterns"]),
                "topics": list(self._truth["topics"]),
                "pattern": engine.facts.patterns[engine.current],
                "state": state.label if state is not None else None,
                "delivery": turn.delivery if turn else None,
                "reply": reply,
                "revealed": [f"L{i + 1}" for i in sorted(engine.revealed)],
            },
            "scenario_id": self.scenario.id,
            "actions": self._actions,
        }


def _resolve_config(config: EnvConfig | None, kwargs: dict[str, Any]) -> EnvConfig:
    """The env's config: ``config`` and/or keyword arguments (``gym.make`` passes the id's
    own settings as keyword arguments: they must agree with a ``config`` given too)."""
    if config is None:
        return EnvConfig.from_kwargs(**kwargs)
    if not isinstance(config, EnvConfig):
        raise ConfigError(f"config: got {type(config).__name__}, expected an EnvConfig")
    if not kwargs:
        return config
    merged = config.replace(**kwargs)
    for name in ("realization", "access"):
        if name in kwargs and getattr(merged, name) != getattr(config, name):
            raise ConfigError(
                f"{name}: the keyword arguments (or the env id) set {getattr(merged, name)!r} "
                f"and config has {getattr(config, name)!r}; make the id that has your "
                "settings, or Hear2ActEnv(config) without keyword arguments"
            )
    return merged


def _source(scenarios: str | Path | Sequence[Scenario] | None) -> tuple[Scenario, ...]:
    if scenarios is None:
        return load_bank()
    if isinstance(scenarios, str | Path):
        return load_scenarios(scenarios)
    items = tuple(scenarios)
    if not items or not all(isinstance(s, Scenario) for s in items):
        raise ConfigError("scenarios: expected a path or a non-empty sequence of Scenario objects")
    return items


def _select(scenarios: tuple[Scenario, ...], split: str) -> tuple[Scenario, ...]:
    chosen = scenarios if split == "all" else tuple(s for s in scenarios if s.split == split)
    if not chosen:
        raise ConfigError(f"split: no scenarios in split {split!r}")
    return chosen
