"""``hear2act view``: results as a static site a person can open from disk or share.

``SITE/index.html`` holds the leaderboard (a table per realization; also ``report/leaderboard.md``
and ``.csv``), the report's tables and plots and a list of every episode, filterable
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

Results come from anywhere: files are read only when regular and of a bounded size, JSON with a
bounded depth (``jsonsafe``), and a corrupt line, a refused manifest setting or a record that
does not replay is listed on the index page with its reason while the rest is built. The site's
folder holds a marker file (``MARKER``); ``build_site`` rebuilds only a folder that holds one,
and removes nothing but what it writes there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import stat
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env import jsonsafe, safewrite
from hear2act_env.errors import ConfigError, MissingExtraError
from hear2act_env.evaluation.records import EpisodeRecord
from hear2act_env.listen.clips import encode_clip
from hear2act_env.listen.server import STATIC, templates
from hear2act_env.listen.view.replay import (
    Replay,
    ReplayError,
    RunSettings,
    read_regular,
    replay_episode,
)

__all__ = ["MARKER", "OUTCOMES", "SiteSummary", "build_site", "outcome_of", "results_files"]

#: Outcome classes of the episode list.
OUTCOMES = ("success", "premature closure", "budget exhausted", "failure", "error")
DEFAULT_MAX_PAGES = 400
#: The file that marks a folder as a site this module wrote (a small JSON object).
MARKER = ".hear2act-site"
#: What a site folder holds besides the marker: all that a rebuild removes.
_SITE_PARTS = ("index.html", "episodes", "compare", "audio", "report", "static")
#: The most read of one results or agent-log file, and of one record line (bytes).
MAX_RESULTS_BYTES = 1 << 30
MAX_RECORD_BYTES = 4 << 20
#: The most reasons the index page lists (the rest are counted).
_MAX_LISTED = 500
_BIG = 10**6  # no count, action or option index of a record is larger
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
    (agent logs left out); only regular files (a FIFO or a link to a device is never read)."""
    return _results_files(paths)[0]


def _results_files(paths: Sequence[str | Path]) -> tuple[list[Path], list[str]]:
    """``results_files``, with what a folder held that is not a regular results file."""
    out: list[Path] = []
    notes: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = []
            for p in sorted(path.glob("results*.jsonl")):
                if p.name.endswith(".log.jsonl"):
                    continue
                if p.is_file():
                    found.append(p)
                else:
                    notes.append(f"{p}: not read (not a regular file)")
            if not found:
                raise ConfigError(f"results: folder {path} has no results*.jsonl file")
            out += found
        elif path.is_file():
            out.append(path)
        elif path.exists() or path.is_symlink():
            raise ConfigError(
                f"results: {path} is not a regular file or folder; expected a results.jsonl file"
            )
        else:
            raise ConfigError(f"results: {path} does not exist; expected a results.jsonl file")
    return out, notes


def _check_record(r: EpisodeRecord) -> None:
    """A ``ValueError`` naming the field when a loaded record holds what no run writes (the
    checks ``EpisodeRecord.from_json`` leaves to its readers)."""
    k = r.key
    for name in ("agent", "realization", "access", "fidelity", "scenario"):
        value = getattr(k, name)
        if not isinstance(value, str) or not value:
            raise ValueError(f"key.{name}: got {value!r:.60}, expected a non-empty string")
        value.encode("utf-8")  # a UnicodeEncodeError (a ValueError) for a lone surrogate
    if r.error is not None:
        r.error.encode("utf-8")
    if not isinstance(k.run, int) or isinstance(k.run, bool) or not 0 <= k.run <= _BIG:
        raise ValueError(f"key.run: got {k.run!r:.60}, expected an integer in [0, {_BIG}]")
    k.as_condition()  # a ConfigError (a ValueError) for a label no run writes
    for name in ("actions", "reluctant_turns", "confirm_after_reluctant"):
        if not 0 <= getattr(r, name) <= _BIG:
            raise ValueError(f"{name}: got {getattr(r, name)}, expected a count in [0, {_BIG}]")
    if not abs(r.reward) <= _BIG:  # also nan, inf and a huge integer
        raise ValueError(f"reward: got {r.reward!r:.60}, expected a finite number")
    for name in ("final_option", "best"):
        value = getattr(r, name)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or not -1 <= value <= _BIG
        ):
            raise ValueError(f"{name}: got {value!r:.60}, expected an option index or null")
    if not all(
        isinstance(n, str) and isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _BIG
        for n, v in r.counts.items()
    ):
        raise ValueError("counts: expected an object of counts")
    for name in ("recommend_patterns", "revealed"):
        if not all(isinstance(v, str) for v in getattr(r, name)):
            raise ValueError(f"{name}: expected a list of strings")
    if any(abs(v) > _BIG for step in r.steps for v in step):
        raise ValueError("steps: an action value out of range")


def _jsonl(path: Path, what: str) -> tuple[list[tuple[int, Any, str]], list[str]]:
    """``(line number, JSON value, text)`` of each readable line of ``path``, and a note for
    each line or file that is not: size-capped, depth-bounded, never a traceback."""
    try:
        data = read_regular(path, MAX_RESULTS_BYTES)
    except (OSError, ValueError) as exc:
        return [], [f"{path}: not read ({type(exc).__name__}: {exc})"]
    out: list[tuple[int, Any, str]] = []
    notes: list[str] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        if len(line) > MAX_RECORD_BYTES:
            notes.append(f"{where}: skipped a {what} line of {len(line)} bytes (too long)")
            continue
        try:
            text = line.decode("utf-8")
            out.append((number, jsonsafe.loads(text), text))
        except ValueError as exc:  # UnicodeDecodeError and JSONDepthError are ValueErrors
            notes.append(f"{where}: skipped a corrupt {what} line ({type(exc).__name__})")
    return out, notes


def _read_records(path: Path) -> tuple[list[EpisodeRecord], list[str]]:
    """The records of ``path`` (per key: the first finished one, else the latest errored one,
    as ``runner.load_records``), and a note for each line that is not one."""
    lines, notes = _jsonl(path, "results")
    by_key: dict[str, EpisodeRecord] = {}
    for number, _, text in lines:
        try:
            record = EpisodeRecord.from_json(text)
            _check_record(record)
        except (ValueError, TypeError, KeyError, OverflowError) as exc:
            notes.append(
                f"{path}:{number}: skipped a corrupt record ({type(exc).__name__}: "
                f"{str(exc)[:200]})"
            )
            continue
        kept = by_key.get(record.key.id())
        if kept is None or kept.error is not None:
            by_key[record.key.id()] = record
    return list(by_key.values()), notes


def _read_logs(results: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The agent logs beside ``results`` by episode id (as ``agent_logs.load_agent_logs``)."""
    from hear2act_env.evaluation.agent_logs import log_path

    path = log_path(results)
    if not path.exists() and not path.is_symlink():
        return {}, []
    lines, notes = _jsonl(path, "agent log")
    out: dict[str, dict[str, Any]] = {}
    for number, entry, _ in lines:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            notes.append(f"{path}:{number}: skipped a line that is not an agent log entry")
            continue
        kept = out.get(entry["id"])
        if kept is None or kept.get("error") is not None or entry.get("error") is None:
            out[entry["id"]] = entry
    return out, notes


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
    unread: tuple[str, ...] = ()  # lines and files that were not read, and why


def _slug(*parts: str | int) -> str:
    """A file name for ``parts``: a readable part and a short hash of their exact values, so
    that names that read alike (``a:b``, ``a/b``, ``a b``) never share a page."""
    exact = json.dumps(list(parts), ensure_ascii=False)
    digest = hashlib.blake2b(exact.encode("utf-8", "surrogatepass"), digest_size=5).hexdigest()
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(map(str, parts))).strip("._-")[:80]
    readable = readable.rstrip("._-")
    return f"{readable}-{digest}" if readable else digest


def _load(files: Sequence[Path]) -> tuple[list[_Episode], list[str]]:
    episodes: list[_Episode] = []
    notes: list[str] = []
    used: set[str] = set()
    for index, path in enumerate(files):
        records, problems = _read_records(path)
        notes += problems
        if not records:
            notes.append(f"{path}: no records")
            continue
        domains = _domains(RunSettings.of_results(path))
        for r in sorted(records, key=lambda r: r.key.id()):
            k = r.key
            base = _slug(k.agent, k.realization, k.condition, k.scenario, f"r{k.run}")
            slug = base if base not in used else f"{base}-f{index}"
            used.add(slug)
            episodes.append(_Episode(r, path, slug, domains.get(k.scenario, "?")))
    if not episodes:
        where = str(files[0]) if len(files) == 1 else f"{len(files)} results files"
        why = next((f" ({n})" for n in notes if not n.endswith(": no records")), "")
        raise ConfigError(f"results: {where} has no records{why}; expected hear2act eval results")
    return episodes, notes


def _domains(settings: RunSettings) -> dict[str, str]:
    from hear2act_env.scenarios.bank import load_bank, load_scenarios

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
            safewrite.write_atomic(self.folder / name, clip.data, root=self.folder.parent)
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

    try:
        return format_episode_log(entry, full=True)
    except Exception as exc:  # noqa: BLE001 - a hand-edited log line must not stop the site
        return f"(the agent log of this episode is unreadable: {type(exc).__name__})"


def _episode_row(e: _Episode, has_page: bool, note: str | None = None) -> dict[str, Any]:
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
        "note": note,  # why it has no page when its replay was refused
        "source": e.source.name,
    }


def _first_divergence(a: Sequence[list[int]], b: Sequence[list[int]]) -> int | None:
    """Index (in agent actions) of the first action where two traces differ."""
    for i, (x, y) in enumerate(zip(a, b)):
        if list(x) != list(y):
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _marked(out: Path) -> bool:
    """Whether ``out`` holds the marker of a site this module wrote (a regular file)."""
    try:
        if not stat.S_ISREG(os.lstat(out / MARKER).st_mode):
            return False
        data = jsonsafe.loads(read_regular(out / MARKER, 1 << 16))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("site") == "hear2act view"


def _check_out(out: Path) -> None:
    """A ``ConfigError`` when ``out`` cannot hold the site: a file, or a non-empty folder
    without the marker (never the site's own)."""
    if out.is_symlink() and not out.exists():
        raise ConfigError(f"out: {out} is a broken link; expected a folder for the site")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"out: {out} is a file; expected a folder for the site")
    try:
        busy = out.is_dir() and any(out.iterdir())
    except OSError as exc:
        raise ConfigError(f"out: {out} cannot be listed ({exc.strerror or exc})") from None
    if busy and not _marked(out):
        raise ConfigError(
            f"out: {out} is a non-empty folder that holds no site (no {MARKER} file); choose "
            "a new or empty folder"
        )


def _claim_out(out: Path) -> None:
    """Make ``out`` and write its marker: a ``ConfigError`` when it cannot be written."""
    from hear2act_env import __version__

    marker = {"site": "hear2act view", "format": 1, "hear2act_env": __version__}
    try:
        safewrite.ensure_folder(out)
        safewrite.write_atomic(out / MARKER, (json.dumps(marker) + "\n").encode(), root=out)
    except OSError as exc:
        raise ConfigError(
            f"out: cannot write in {out} ({type(exc).__name__}: {exc.strerror or exc}); "
            "expected a folder you can write"
        ) from None


def _clear_out(out: Path) -> None:
    """Remove what an earlier build wrote in ``out`` (links are removed, never followed)."""
    for name in _SITE_PARTS:
        path = out / name
        try:
            if path.is_symlink() or path.is_file():
                path.unlink()
            elif path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        except OSError as exc:
            raise ConfigError(f"out: cannot remove {path} ({exc.strerror or exc})") from None


def _report(records: list[EpisodeRecord], folder: Path, plots: bool) -> str:
    from hear2act_env.evaluation.report import report

    try:
        return report(records, folder, plots=plots)
    except (MissingExtraError, OSError):
        raise
    except Exception as exc:  # noqa: BLE001 - hand-edited records: the list is still useful
        return f"(no summary: these records give no report: {type(exc).__name__}: {exc})"


def _leaderboard(records: list[EpisodeRecord], folder: Path) -> list[dict[str, Any]]:
    """The leaderboard's sections (title, columns, rows of cells) for the index page, also
    written as ``leaderboard.md`` and ``.csv`` beside the report; none when the records give
    no board (the reason is then the only row)."""
    from hear2act_env.evaluation.leaderboard import (
        UNITS,
        leaderboard_columns,
        leaderboard_csv,
        leaderboard_markdown,
        leaderboard_rows,
        sections,
    )

    try:
        rows = leaderboard_rows(records)
    except Exception as exc:  # noqa: BLE001 - hand-edited records: the list is still useful
        return [
            {"title": "Leaderboard", "units": "", "columns": ["note"], "rows": [[f"(none: {exc})"]]}
        ]
    if not rows:
        return []
    safewrite.write_text(
        folder / "leaderboard.md", leaderboard_markdown(rows) + "\n", root=folder.parent
    )
    leaderboard_csv(rows, folder / "leaderboard.csv")
    return [
        {
            "title": title,
            "units": UNITS,
            "columns": leaderboard_columns(part),
            "rows": [r.cells() for r in part],
        }
        for title, part in sections(rows)
    ]


def build_site(
    results: Sequence[str | Path],
    out: str | Path,
    *,
    scenarios: Sequence[str] | None = None,
    max_pages: int | None = DEFAULT_MAX_PAGES,
    compress_audio: bool = True,
    plots: bool = True,
    seed: int = 0,
    renderer: Any = None,
    audio_cache: str | Path | None = None,
) -> SiteSummary:
    """Write the site for ``results`` (files or benchmark folders) into ``out``.

    ``renderer`` and ``audio_cache``: the voice and the audio cache of the replays, the
    caller's own (None: the shipped renderer a manifest names, else espeak; the default cache);
    they replace what a manifest names, which is never imported or written to (episodes whose
    manifest names more are listed as not replayable, ``RunSettings``). ``out`` must be new,
    empty, or a site this function wrote (``MARKER``): nothing else there is removed.
    """
    if max_pages is not None and max_pages < 1:
        raise ConfigError(f"max_pages: got {max_pages}, expected >= 1 (or all)")
    out = Path(out)
    _check_out(out)
    files, unread = _results_files(results)
    _claim_out(out)
    episodes, notes = _load(files)
    unread += notes
    try:
        return _write_site(
            files,
            episodes,
            out,
            tuple(unread),
            scenarios,
            max_pages,
            compress_audio,
            plots,
            seed,
            renderer,
            audio_cache,
        )
    except OSError as exc:
        raise ConfigError(
            f"out: writing the site in {out} failed ({type(exc).__name__}: {exc})"
        ) from None


def _write_site(
    files: list[Path],
    episodes: list[_Episode],
    out: Path,
    unread: tuple[str, ...],
    scenarios: Sequence[str] | None,
    max_pages: int | None,
    compress_audio: bool,
    plots: bool,
    seed: int,
    renderer: Any,
    audio_cache: str | Path | None,
) -> SiteSummary:
    picked = _page_scenarios(episodes, scenarios, max_pages, seed)
    _clear_out(out)
    for part in ("episodes", "compare", "static"):
        safewrite.ensure_folder(out / part, root=out)
    env = templates()
    for asset in sorted(STATIC.iterdir()):
        safewrite.write_atomic(out / "static" / asset.name, asset.read_bytes(), root=out)

    report_text = _report([e.record for e in episodes], out / "report", plots)
    plot_files = sorted(p.name for p in (out / "report").glob("*.png"))
    board = _leaderboard([e.record for e in episodes], out / "report")

    logs: dict[str, dict[str, Any]] = {}
    for path in files:
        found, problems = _read_logs(path)
        unread += tuple(problems)
        logs.update({f"{path}|{k}": v for k, v in found.items()})
    clips = _Clips(out / "audio", compress_audio)
    page = env.get_template("episode.html")
    built: dict[str, tuple[_Episode, list[dict[str, Any]]]] = {}
    skipped: list[str] = []
    notes: dict[str, str] = {}
    settings_of = {path: RunSettings.of_results(path) for path in files}
    for e in episodes:
        if e.record.key.scenario not in picked:
            continue
        try:
            replay = replay_episode(
                e.record, settings_of[e.source], renderer=renderer, audio_cache=audio_cache
            )
        except ReplayError as exc:
            skipped.append(str(exc))
            notes[e.slug] = str(exc)
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
            compare=_slug(*e.group),
        )
        safewrite.write_atomic(
            out / "episodes" / f"{e.slug}.html", html.encode("utf-8", "replace"), root=out
        )

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
            divergence_json=json.dumps(divergence).replace("<", "\\u003c"),
        )
        safewrite.write_atomic(
            out / "compare" / f"{_slug(*group)}.html", html.encode("utf-8", "replace"), root=out
        )
        n_compare += 1

    rows = [_episode_row(e, e.slug in built, notes.get(e.slug)) for e in episodes]
    safewrite.write_text(
        out / "static" / "episodes.js",
        "window.HEAR2ACT_EPISODES = " + json.dumps(rows, separators=(",", ":")) + ";\n",
        root=out,
    )
    facets = {
        name: sorted({str(r[name]) for r in rows})
        for name in ("agent", "realization", "condition", "domain")
    }
    problems = [*skipped, *unread]
    html = env.get_template("index.html").render(
        title="Hear2Act results",
        report_text=report_text,
        leaderboard=board,
        plots=plot_files,
        facets=facets,
        outcomes=OUTCOMES,
        n_episodes=len(rows),
        n_pages=len(built),
        sources=[p.name for p in files],
        results_args=" ".join(shlex.quote(str(p)) for p in files),
        n_skipped=len(skipped),
        n_unread=len(unread),
        problems=problems[:_MAX_LISTED],
        more_problems=max(0, len(problems) - _MAX_LISTED),
    )
    safewrite.write_atomic(out / "index.html", html.encode("utf-8", "replace"), root=out)
    return SiteSummary(
        out, len(rows), len(built), n_compare, len(clips.names), tuple(skipped), unread
    )
