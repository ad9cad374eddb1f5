"""``hear2act view``: results as a static site a person can open from disk or share.

``SITE/index.html`` holds the report's tables and plots and a list of every episode, filterable
by agent, realization, condition, domain, scenario and outcome. Episode pages are replayed
from the records (``listen.replay``): every turn, each user turn with the audio the user
spoke (the same renderer and seed as the run, so the page plays what an audio agent heard),
the state and delivery tags and the ground truth behind a toggle, and the agent's log when
the run kept one. Compare pages put two episodes of one scenario and seed side by side
(agents or conditions) and mark the first turn where they part.

Pages are built for the episodes of a set of scenarios: every episode of each, so that compare
pages always have all agents and conditions. By default scenarios are taken in a seeded order
spread over domains until ``max_pages`` episode pages; ``scenarios`` names them instead, and
``max_pages=None`` builds a page for every episode. Episodes outside the set are still listed
(with the command that builds their page). Clips are stored once per distinct waveform
(content-addressed), as Ogg Vorbis when soundfile is installed (``listen.clips``). Everything
the pages load is in the site folder: no server, no remote asset.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.records import EpisodeRecord
from hear2act_env.listen.clips import encode_clip
from hear2act_env.listen.replay import Replay, ReplayError, RunSettings, replay_episode
from hear2act_env.listen.server import templates

__all__ = ["OUTCOMES", "SiteSummary", "build_site", "outcome_of", "results_files"]

#: Outcome classes of the episode list.
OUTCOMES = ("success", "premature closure", "budget exhausted", "failure", "error")
DEFAULT_MAX_PAGES = 400
_ACT_NAMES = {-1: "invalid", 0: "ask", 1: "clarify", 2: "recommend", 3: "confirm"}


def outcome_of(record: EpisodeRecord) -> str:
    """One of ``OUTCOMES``: error, success, premature closure (confirmed a wrong option),
    budget exhausted (ran out of actions on a wrong one), else failure."""
    if record.error is not None:
        return "error"
    if record.success:
        return "success"
    if record.premature_closure:
        return "premature closure"
    if record.truncated:
        return "budget exhausted"
    return "failure"


def results_files(paths: Sequence[str | Path]) -> list[Path]:
    """Results files named by ``paths``: files as given, folders as their ``results*.jsonl``
    (agent logs left out)."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                p for p in path.glob("results*.jsonl") if not p.name.endswith(".log.jsonl")
            )
            if not found:
                raise ConfigError(f"results: folder {path} has no results*.jsonl file")
            out += found
        elif path.is_file():
            out.append(path)
        else:
            raise ConfigError(f"results: {path} does not exist; expected a results.jsonl file")
    return out


@dataclass(frozen=True)
class _Episode:
    record: EpisodeRecord
    source: Path
    slug: str
    domain: str

    @property
    def group(self) -> tuple[str, str, int]:
        """Episodes that share a scenario and seed (comparable side by side)."""
        k = self.record.key
        return (k.realization, k.scenario, k.run)


@dataclass(frozen=True)
class SiteSummary:
    """What ``build_site`` wrote."""

    out: Path
    episodes: int
    pages: int
    compare_pages: int
    clips: int
    skipped: tuple[str, ...]  # episodes with no page, and why (replay refused)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


def _load(files: Sequence[Path]) -> list[_Episode]:
    from hear2act_env.evaluation.runner import load_records
    from hear2act_env.scenarios.bank import load_scenarios

    episodes: list[_Episode] = []
    used: set[str] = set()
    for index, path in enumerate(files):
        records = load_records(path)
        if not records:
            raise ConfigError(f"results: {path} has no records")
        settings = RunSettings.of_results(path)
        domains = _domains(settings, load_scenarios)
        for r in sorted(records, key=lambda r: r.key.id()):
            k = r.key
            base = _slug(f"{k.agent}-{k.realization}-{k.condition}-{k.scenario}-r{k.run}")
            slug = base if base not in used else f"{base}-f{index}"
            used.add(slug)
            episodes.append(_Episode(r, path, slug, domains.get(k.scenario, "?")))
    return episodes


def _domains(settings: RunSettings, load_scenarios: Any) -> dict[str, str]:
    from hear2act_env.scenarios.bank import load_bank

    try:
        bank = load_scenarios(settings.scenario_file) if settings.scenario_file else load_bank()
    except Exception:  # noqa: BLE001 - the list still works without domain names
        return {}
    return {s.id: s.domain for s in bank}


def _page_scenarios(
    episodes: Sequence[_Episode], chosen: Sequence[str] | None, max_pages: int | None, seed: int
) -> set[str]:
    by_scenario: dict[str, list[_Episode]] = defaultdict(list)
    for e in episodes:
        by_scenario[e.record.key.scenario].append(e)
    if chosen:
        unknown = sorted(set(chosen) - set(by_scenario))
        if unknown:
            raise ConfigError(
                f"scenario: {unknown[:5]} have no episode in these results; expected ids such "
                f"as {sorted(by_scenario)[:3]}"
            )
        return set(chosen)
    if max_pages is None:
        return set(by_scenario)
    # a seeded order spread over domains: one scenario per domain in turn
    rng = np.random.default_rng(seed)
    per_domain: dict[str, list[str]] = defaultdict(list)
    for sid in sorted(by_scenario):
        per_domain[by_scenario[sid][0].domain].append(sid)
    queues = {d: [ids[i] for i in rng.permutation(len(ids))] for d, ids in per_domain.items()}
    order: list[str] = []
    domains = [sorted(queues)[i] for i in rng.permutation(len(queues))]
    while any(queues.values()):
        for d in domains:
            if queues[d]:
                order.append(queues[d].pop(0))
    picked: set[str] = set()
    total = 0
    for sid in order:
        n = len(by_scenario[sid])
        if picked and total + n > max_pages:
            break
        picked.add(sid)
        total += n
    return picked


class _Clips:
    """Content-addressed clip files under ``SITE/audio``."""

    def __init__(self, folder: Path, compress: bool) -> None:
        self.folder, self.compress = folder, compress
        self.names: dict[str, str] = {}

    def add(self, audio: np.ndarray) -> str:
        digest = hashlib.blake2b(np.ascontiguousarray(audio).tobytes(), digest_size=12).hexdigest()
        name = self.names.get(digest)
        if name is None:
            clip = encode_clip(audio, compress=self.compress)
            name = f"{digest}.{clip.extension}"
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / name).write_bytes(clip.data)
            self.names[digest] = name
        return f"../audio/{name}"


def _turn_rows(replay: Replay, clips: _Clips) -> list[dict[str, Any]]:
    rows = []
    for i, t in enumerate(replay.turns):
        rows.append(
            {
                "index": i,
                "speaker": t.speaker,
                "text": t.text,
                "shown": t.shown,
                "state": t.state,
                "delivery": t.delivery,
                "tag_shown": t.tag_shown,
                "audio": clips.add(t.audio) if t.audio is not None and len(t.audio) else None,
                "heard": t.heard,
                "action": None
                if t.action is None
                else {"act": _ACT_NAMES.get(t.action[0], "invalid"), "option": t.action[1] + 1},
                "reply": t.reply,
            }
        )
    return rows


def _log_text(entry: dict[str, Any] | None) -> str | None:
    if entry is None:
        return None
    from hear2act_env.evaluation.agent_logs import format_episode_log

    return format_episode_log(entry, full=True)


def _episode_row(e: _Episode, has_page: bool) -> dict[str, Any]:
    r = e.record
    k = r.key
    return {
        "slug": e.slug,
        "agent": k.agent,
        "realization": k.realization,
        "condition": k.condition,
        "scenario": k.scenario,
        "domain": e.domain,
        "run": k.run,
        "outcome": outcome_of(r),
        "actions": r.actions,
        "reward": round(r.reward, 3),
        "page": has_page,
        "source": e.source.name,
    }


def _first_divergence(a: Sequence[list[int]], b: Sequence[list[int]]) -> int | None:
    """Index (in agent actions) of the first action where two traces differ."""
    for i, (x, y) in enumerate(zip(a, b)):
        if list(x) != list(y):
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def build_site(
    results: Sequence[str | Path],
    out: str | Path,
    *,
    scenarios: Sequence[str] | None = None,
    max_pages: int | None = DEFAULT_MAX_PAGES,
    compress_audio: bool = True,
    plots: bool = True,
    seed: int = 0,
) -> SiteSummary:
    """Write the site for ``results`` (files or benchmark folders) into ``out``."""
    from hear2act_env.evaluation.agent_logs import load_agent_logs
    from hear2act_env.evaluation.report import report

    if max_pages is not None and max_pages < 1:
        raise ConfigError(f"max_pages: got {max_pages}, expected >= 1 (or all)")
    files = results_files(results)
    episodes = _load(files)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"out: {out} is a file; expected a folder for the site")
    index_file = out / "index.html"
    if out.is_dir() and any(out.iterdir()) and not index_file.exists():
        raise ConfigError(
            f"out: {out} is a non-empty folder that holds no site; choose a new or empty folder"
        )
    for sub in ("episodes", "compare", "audio", "report", "static"):
        shutil.rmtree(out / sub, ignore_errors=True)
    (out / "episodes").mkdir(parents=True)
    (out / "compare").mkdir()
    env = templates()
    static = Path(__file__).parent / "static"
    shutil.copytree(static, out / "static")

    records = [e.record for e in episodes]
    report_text = report(records, out / "report", plots=plots)
    plot_files = sorted(p.name for p in (out / "report").glob("*.png"))

    picked = _page_scenarios(episodes, scenarios, max_pages, seed)
    logs: dict[str, dict[str, Any]] = {}
    for path in files:
        logs.update({f"{path}|{k}": v for k, v in load_agent_logs(path).items()})
    clips = _Clips(out / "audio", compress_audio)
    page = env.get_template("episode.html")
    built: dict[str, tuple[_Episode, list[dict[str, Any]]]] = {}
    skipped: list[str] = []
    settings_of = {path: RunSettings.of_results(path) for path in files}
    for e in episodes:
        if e.record.key.scenario not in picked:
            continue
        try:
            replay = replay_episode(e.record, settings_of[e.source])
        except ReplayError as exc:
            skipped.append(str(exc))
            continue
        turns = _turn_rows(replay, clips)
        built[e.slug] = (e, turns)
        log = logs.get(f"{e.source}|{e.record.key.id()}")
        html = page.render(
            title=f"{e.record.key.agent} · {e.record.key.condition} · {e.record.key.scenario}",
            ep=_episode_row(e, True),
            record=e.record,
            scenario=replay.scenario,
            turns=turns,
            options=replay.options,
            final=None if replay.final_option is None else replay.final_option + 1,
            log=_log_text(log),
            compare=_slug("-".join(map(str, e.group))),
        )
        (out / "episodes" / f"{e.slug}.html").write_text(html, encoding="utf-8")

    groups: dict[tuple[str, str, int], list[str]] = defaultdict(list)
    for slug, (e, _) in built.items():
        groups[e.group].append(slug)
    compare = env.get_template("compare.html")
    n_compare = 0
    for group, slugs in sorted(groups.items()):
        columns = []
        for slug in slugs:
            e, turns = built[slug]
            columns.append({"ep": _episode_row(e, True), "turns": turns, "steps": e.record.steps})
        divergence = {
            f"{a['ep']['slug']}|{b['ep']['slug']}": _first_divergence(a["steps"], b["steps"])
            for a in columns
            for b in columns
        }
        html = compare.render(
            title=f"{group[1]} · {group[0]} · run {group[2]}",
            group={"realization": group[0], "scenario": group[1], "run": group[2]},
            columns=columns,
            divergence_json=json.dumps(divergence),
        )
        (out / "compare" / f"{_slug('-'.join(map(str, group)))}.html").write_text(
            html, encoding="utf-8"
        )
        n_compare += 1

    rows = [_episode_row(e, e.slug in built) for e in episodes]
    (out / "static" / "episodes.js").write_text(
        "window.HEAR2ACT_EPISODES = " + json.dumps(rows, separators=(",", ":")) + ";\n",
        encoding="utf-8",
    )
    facets = {
        name: sorted({str(r[name]) for r in rows})
        for name in ("agent", "realization", "condition", "domain")
    }
    index_file.write_text(
        env.get_template("index.html").render(
            title="Hear2Act results",
            report_text=report_text,
            plots=plot_files,
            facets=facets,
            outcomes=OUTCOMES,
            n_episodes=len(rows),
            n_pages=len(built),
            sources=[p.name for p in files],
            results_args=" ".join(str(p) for p in files),
        ),
        encoding="utf-8",
    )
    return SiteSummary(out, len(rows), len(built), n_compare, len(clips.names), tuple(skipped))
