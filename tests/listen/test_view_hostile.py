"""hear2act view on results from anywhere: a shared folder is data, never code or a write path.

Every odd input ends in a built site (what cannot be replayed listed with its reason) or a
one-line error with exit status 2: never a traceback, a hang, an import or a write outside
``--out``. The CLI runs in-process; no browser.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hear2act_agents.registry import make_agent
from hear2act_cli import main
from hear2act_env.config import EnvConfig
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.runner import GridConfig, run_grid
from hear2act_env.listen.view.replay import RunSettings
from hear2act_env.listen.view.site import MARKER, MAX_RESULTS_BYTES, build_site

SCENARIO = "dentists-09"
EVIL = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\ndef boom():\n    return None\n"


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    """Two episodes (prober, random; T) of one test scenario, with their manifest."""
    out = tmp_path_factory.mktemp("hostile-grid") / "results.jsonl"
    config = GridConfig(
        agents=("prober", "random"),
        realizations=("prosody",),
        conditions=("T",),
        scenarios=(SCENARIO,),
        env=EnvConfig(split="test"),
    )
    run_grid(config, out, make_agent, progress=False)
    return out


@pytest.fixture(autouse=True)
def no_hang():
    """A read that blocks (a FIFO) fails the test instead of hanging it."""

    def stop(signum, frame):  # noqa: ANN001, ARG001 - a signal handler
        raise TimeoutError("hear2act view hung")

    before = signal.signal(signal.SIGALRM, stop)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, before)


def _lines(grid: Path) -> list[dict]:
    return [json.loads(line) for line in grid.read_text().splitlines()]


def _manifest(grid: Path) -> dict:
    return json.loads(grid.with_suffix(".manifest.json").read_text())


def _folder(tmp: Path, grid: Path, records: list | None = None, manifest=None) -> Path:
    """A results folder: ``records`` (dicts or raw lines; default the grid's) and ``manifest``
    (a dict, raw text, or None: the grid's)."""
    folder = tmp / "res"
    folder.mkdir(exist_ok=True)
    records = _lines(grid) if records is None else records
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"
    (folder / "results.jsonl").write_text(text, encoding="utf-8", errors="surrogateescape")
    manifest = _manifest(grid) if manifest is None else manifest
    (folder / "results.manifest.json").write_text(
        manifest if isinstance(manifest, str) else json.dumps(manifest)
    )
    return folder


def _with_config(grid: Path, **changes) -> dict:
    """The grid's manifest as a version-0.1.0 one (flat split, scenario_file, env_kwargs)
    with ``changes``: the viewer reads those through EnvConfig's compatibility reader."""
    manifest = _manifest(grid)
    env = manifest["config"].pop("env")
    manifest["config"].update(split=env["split"], scenario_file=None, env_kwargs={})
    manifest["config"].update(changes)
    return manifest


def _with_env(grid: Path, speech: dict | None = None, **changes) -> dict:
    """The grid's manifest (today's form) with ``changes`` to its env and ``speech``."""
    manifest = _manifest(grid)
    manifest["config"]["env"].update(changes)
    manifest["config"]["env"]["speech"].update(speech or {})
    return manifest


def _with_kwargs(grid: Path, **kwargs) -> dict:
    return _with_config(grid, env_kwargs=kwargs)


def _record(grid: Path, index: int = 0, **changes) -> dict:
    data = _lines(grid)[index]
    for name, value in changes.items():
        if name.startswith("key_"):
            data["key"][name[4:]] = value
        else:
            data[name] = value
    return data


def _snapshot(root: Path, skip: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` but ``skip``, with size and mtime (links not followed)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d != skip]
        for name in [*filenames, *dirnames]:
            st = os.lstat(here / name)
            out[str(here / name)] = (st.st_size, st.st_mtime_ns)
    return out


def _rows(site: Path) -> list[dict]:
    text = (site / "static" / "episodes.js").read_text()
    return json.loads(text.removeprefix("window.HEAR2ACT_EPISODES = ").rstrip().rstrip(";"))


# -- cases: each builds its input under tmp and returns the results arguments ---------------
Case = Callable[[Path, Path], list[str]]


def _results(records=None, manifest=None) -> Case:
    """A results folder: ``records`` and ``manifest`` as ``_folder`` takes them, or functions
    of the grid's results file that make them."""

    def build(tmp: Path, grid: Path) -> list[str]:
        lines = records(grid) if callable(records) else records
        return [str(_folder(tmp, grid, lines, manifest(grid) if callable(manifest) else manifest))]

    return build


def _raw(data: bytes) -> Case:
    def build(tmp: Path, grid: Path) -> list[str]:  # noqa: ARG001
        (tmp / "results.jsonl").write_bytes(data)
        return [str(tmp / "results.jsonl")]

    return build


def _fifo_file(tmp: Path, grid: Path) -> list[str]:  # noqa: ARG001
    os.mkfifo(tmp / "results.jsonl")
    return [str(tmp / "results.jsonl")]


def _fifo_in_folder(tmp: Path, grid: Path) -> list[str]:
    folder = _folder(tmp, grid)
    os.mkfifo(folder / "results-2.jsonl")
    return [str(folder)]


def _zero_link(tmp: Path, grid: Path) -> list[str]:  # noqa: ARG001
    (tmp / "results.jsonl").symlink_to("/dev/zero")
    return [str(tmp / "results.jsonl")]


def _zero_in_folder(tmp: Path, grid: Path) -> list[str]:
    folder = _folder(tmp, grid)
    (folder / "results-zero.jsonl").symlink_to("/dev/zero")
    return [str(folder)]


def _manifest_fifo(tmp: Path, grid: Path) -> list[str]:
    folder = _folder(tmp, grid)
    (folder / "results.manifest.json").unlink()
    os.mkfifo(folder / "results.manifest.json")
    return [str(folder)]


def _manifest_zero(tmp: Path, grid: Path) -> list[str]:
    folder = _folder(tmp, grid)
    (folder / "results.manifest.json").unlink()
    (folder / "results.manifest.json").symlink_to("/dev/zero")
    return [str(folder)]


def _sparse_huge(tmp: Path, grid: Path) -> list[str]:
    folder = _folder(tmp, grid)
    with open(folder / "results.jsonl", "r+b") as fh:
        fh.truncate(MAX_RESULTS_BYTES + 1)  # sparse: nothing is written
    return [str(folder)]


def _scenario_file_special(kind: str) -> Case:
    """A manifest whose scenario file (``bank.json`` beside it) is a FIFO or a device."""

    def build(tmp: Path, grid: Path) -> list[str]:
        folder = _folder(tmp, grid, manifest=_with_config(grid, scenario_file="bank.json"))
        if kind == "fifo":
            os.mkfifo(folder / "bank.json")
        else:
            (folder / "bank.json").symlink_to("/dev/zero")
        return [str(folder)]

    return build


def _twice(tmp: Path, grid: Path) -> list[str]:
    folder = _folder(tmp, grid)
    return [str(folder / "results.jsonl"), str(folder), str(folder / "results.jsonl")]


def _odd_file_name(tmp: Path, grid: Path) -> list[str]:
    """A results file whose name is not UTF-8, with a corrupt line (its path is printed)."""
    folder = tmp / "odd"
    folder.mkdir()
    name = os.fsencode(folder) + b"/results-\xff.jsonl"
    with open(name, "wb") as fh:
        fh.write(grid.read_bytes() + b"{oops\n")
    return [str(folder)]


def _empty_folder(tmp: Path, grid: Path) -> list[str]:  # noqa: ARG001
    (tmp / "empty").mkdir()
    return [str(tmp / "empty")]


def _missing(tmp: Path, grid: Path) -> list[str]:  # noqa: ARG001
    return [str(tmp / "nothing.jsonl")]


def _truncated(grid: Path) -> list:
    a, b = grid.read_text().splitlines()
    return [a[: len(a) // 2], b, b[: len(b) // 3]]


def _agent_log_garbage(tmp: Path, grid: Path) -> list[str]:
    folder = _folder(tmp, grid)
    (folder / "results.log.jsonl").write_bytes(
        b"[" * 50_000 + b"]" * 50_000 + b"\n\xff\xfe\n" + b'{"id": 5}\n{"id": "x", "turns": 7}\n'
    )
    return [str(folder)]


def _agent_names(grid: Path) -> list:
    names = ["openai:a/b", "a:b", "a b", "../../etc", "<script>alert(1)</script>", "Ünï 声"]
    return [_record(grid, i % 2, key_agent=name) for i, name in enumerate(names)]


DEEP = "[" * 50_000 + "]" * 50_000
#: name -> (build, expected exit status, text the output or the index page must hold)
CASES: dict[str, tuple[Case, int, str]] = {
    "empty file": (_raw(b""), 2, "no records"),
    "binary garbage": (_raw(os.urandom(4096) + b"\n\x00\xff" * 100), 2, "no records"),
    "only blank lines": (_raw(b"\n \n\t\n"), 2, "no records"),
    "a folder with no results": (_empty_folder, 2, "no results"),
    "a missing file": (_missing, 2, "does not exist"),
    "a FIFO as results file": (_fifo_file, 2, "not a regular file"),
    "a FIFO in a results folder": (_fifo_in_folder, 0, "not a regular file"),
    "a link to /dev/zero": (_zero_link, 2, "not a regular file"),
    "a link to /dev/zero in a folder": (_zero_in_folder, 0, "not a regular file"),
    "a manifest that is a FIFO": (_manifest_fifo, 0, "not a regular file"),
    "a manifest linked to /dev/zero": (_manifest_zero, 0, "not a regular file"),
    "a sparse results file past the cap": (_sparse_huge, 2, "no records"),
    "truncated lines": (_results(_truncated), 0, "corrupt results line"),
    "a line that is not UTF-8": (
        _results(lambda g: [*g.read_text().splitlines(), '{"key": "\udcff"}']),
        0,
        "corrupt results line",
    ),
    "a 50000-deep line": (_results(lambda g: [*g.read_text().splitlines(), DEEP]), 0, "corrupt"),
    "a 5 MB line": (
        _results(lambda g: [*g.read_text().splitlines(), '"' + "x" * (5 << 20) + '"']),
        0,
        "too long",
    ),
    "a JSON array as record": (
        _results(lambda g: [*g.read_text().splitlines(), "[1]"]),
        0,
        "corrupt record",
    ),
    "a 5000-digit number": (
        _results(lambda g: [json.dumps(_record(g, actions="N")).replace('"N"', "9" * 5000)]),
        2,
        "no records",
    ),
    "negative actions": (_results(lambda g: [_record(g, actions=-3), _record(g, 1)]), 0, "actions"),
    "huge actions": (_results(lambda g: [_record(g, actions=10**40), _record(g, 1)]), 0, "actions"),
    "an infinite reward": (
        _results(lambda g: [_record(g, reward=float("inf")), _record(g, 1)]),
        0,
        "reward",
    ),
    "a run that is a string": (
        _results(lambda g: [_record(g, key_run="0"), _record(g, 1)]),
        0,
        "key.run",
    ),
    "an access label no run writes": (
        _results(lambda g: [_record(g, key_access="Z"), _record(g, 1)]),
        0,
        "corrupt record",
    ),
    "a huge action value": (
        _results(lambda g: [_record(g, steps=[[0, 10**30, 0]]), _record(g, 1)]),
        0,
        "steps",
    ),
    "an unknown scenario": (
        _results(lambda g: [_record(g, key_scenario="no-such-99"), _record(g, 1)]),
        0,
        "no-such-99",
    ),
    "an unknown realization": (
        _results(lambda g: [_record(g, key_realization="whisper"), _record(g, 1)]),
        0,
        "whisper",
    ),
    "seed -1": (_results(lambda g: [_record(g, seed=-1), _record(g, 1)]), 0, "cannot be replayed"),
    "a huge seed": (_results(lambda g: [_record(g, seed=10**30), _record(g, 1)]), 0, "wrote"),
    "a 5000-action trace": (
        _results(lambda g: [_record(g, steps=[[0, 0, 0]] * 5000), _record(g, 1)]),
        0,
        "ended at action",
    ),
    "odd agent names": (_results(_agent_names), 0, "episode pages"),
    "the same results three times": (_twice, 0, "6 episodes listed"),
    "a results file name that is not UTF-8": (_odd_file_name, 0, "corrupt results line"),
    "a lone surrogate in a name": (
        _results(lambda g: [_record(g, key_agent="\udcff"), _record(g, 1)]),
        0,
        "UnicodeEncodeError",
    ),
    "a lone surrogate in an error": (
        _results(lambda g: [_record(g, error="\ud800", error_kind="agent"), _record(g, 1)]),
        0,
        "corrupt record",
    ),
    "agent_stats the report cannot read": (  # a corrupt line since values are checked
        _results(
            lambda g: [
                _record(g, agent_stats={"calls": "many", "unchecked_audio_calls": []}),
                _record(g, 1),
            ]
        ),
        0,
        "agent_stats.calls",
    ),
    "a 400-digit reward": (
        _results(lambda g: [_record(g, reward=10**400), _record(g, 1)]),
        0,
        "reward",
    ),
    "a garbage agent log": (_agent_log_garbage, 0, "agent log"),
    "a manifest that is not JSON": (_results(manifest="{not json"), 0, "manifest"),
    "a 50000-deep manifest": (_results(manifest=DEEP), 0, "JSONDepthError"),
    "a manifest that is a list": (_results(manifest="[1, 2]"), 0, "config"),
    "config that is not an object": (_results(manifest='{"config": [1]}'), 0, "config"),
    "env_kwargs a list": (
        _results(manifest=lambda g: _with_config(g, env_kwargs=[1])),
        0,
        "env_kwargs",
    ),
    "renderer os:system": (
        _results(manifest=lambda g: _with_kwargs(g, renderer="os:system")),
        0,
        "os:system",
    ),
    "renderer builtins:exec": (
        _results(manifest=lambda g: _with_kwargs(g, renderer="builtins:exec")),
        0,
        "builtins:exec",
    ),
    "renderer not a string": (
        _results(manifest=lambda g: _with_kwargs(g, renderer={"a": 1})),
        0,
        "renderer",
    ),
    "an unknown renderer name": (
        _results(manifest=lambda g: _with_kwargs(g, renderer="festival")),
        0,
        "festival",
    ),
    "an unknown env kwarg": (
        _results(manifest=lambda g: _with_kwargs(g, frobnicate=1)),
        0,
        "frobnicate",
    ),
    "env kwarg access": (_results(manifest=lambda g: _with_kwargs(g, access="T")), 0, "access"),
    "env kwarg scenarios": (
        _results(manifest=lambda g: _with_kwargs(g, scenarios="/x.json")),
        0,
        "scenarios",
    ),
    "a 400-digit turn cost": (
        _results(manifest=lambda g: _with_kwargs(g, turn_cost=10**400, prosody_strength=1e999)),
        0,
        "prosody_strength is inf",
    ),
    "a negative turn cost": (
        _results(manifest=lambda g: _with_kwargs(g, turn_cost=-1)),
        0,
        "turn_cost",
    ),
    "a huge max_actions": (
        _results(manifest=lambda g: _with_kwargs(g, max_actions=10**30)),
        0,
        "max_actions",
    ),
    "an unknown split": (_results(manifest=lambda g: _with_config(g, split="secret")), 0, "split"),
    "env: a renderer to import": (
        _results(manifest=lambda g: _with_env(g, speech={"renderer": "os:system"})),
        0,
        "env.speech.renderer",
    ),
    "env: scenarios /etc/passwd": (
        _results(manifest=lambda g: _with_env(g, scenarios="/etc/passwd")),
        0,
        "env.scenarios",
    ),
    "env: an audio cache path": (
        _results(manifest=lambda g: _with_env(g, speech={"audio_cache": "/tmp/x"})),
        0,
        "env.speech.audio_cache",
    ),
    "env: a negative turn cost": (
        _results(manifest=lambda g: _with_env(g, turn_cost=-1)),
        0,
        "env.turn_cost",
    ),
    "env: an unknown setting": (
        _results(manifest=lambda g: _with_env(g, colour="blue")),
        0,
        "env.colour",
    ),
    "scenario_file /etc/passwd": (
        _results(manifest=lambda g: _with_config(g, scenario_file="/etc/passwd")),
        0,
        "scenario_file",
    ),
    "scenario_file ../../x.json": (
        _results(manifest=lambda g: _with_config(g, scenario_file="../../x.json")),
        0,
        "x.json",
    ),
    "scenario_file a link to /dev/zero": (_scenario_file_special("zero"), 0, "regular file"),
    "scenario_file a FIFO": (_scenario_file_special("fifo"), 0, "regular file"),
    "scenario_file a number": (
        _results(manifest=lambda g: _with_config(g, scenario_file=7)),
        0,
        "scenario_file",
    ),
    "a perceiver path that is missing": (
        _results(manifest=lambda g: _with_config(g, perceiver="../model.json")),
        0,
        "episode pages",  # only the voice-inferred conditions need it: these episodes replay
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_odd_viewer_input(grid, tmp_path, monkeypatch, capsys, name):
    build, status, text = CASES[name]
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    args = build(work, grid)
    site = tmp_path / "site"
    before = _snapshot(tmp_path, site)
    rc = main(["view", *args, "--out", str(site), "--no-plots", "--max-pages", "all"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert _snapshot(tmp_path, site) == before  # nothing written outside --out
    assert rc == status, (out, err)
    if status == 2:
        assert not out and err.count("\n") == 1 and err.startswith("hear2act: error: ")
        assert text in err, err
        return
    index = (site / "index.html").read_text()
    assert (site / MARKER).is_file() and "wrote" in out
    assert text in out + index, (out, index[-2000:])
    rows = _rows(site)
    assert rows and all(
        (site / "episodes" / f"{r['slug']}.html").is_file() for r in rows if r["page"]
    )
    assert all(r["page"] or r["note"] for r in rows)  # every episode has a page or a reason
    assert all(p.resolve().is_relative_to(site.resolve()) for p in site.rglob("*"))


# -- defect 1: a manifest names code or a write path ---------------------------------------
def test_a_manifest_renderer_is_never_imported(grid, tmp_path, monkeypatch, capsys):
    marker = tmp_path / "PWNED"
    folder = _folder(tmp_path, grid, manifest=_with_kwargs(grid, renderer="evil_mod:boom"))
    for where in (folder, tmp_path):
        (where / "evil_mod.py").write_text(EVIL.format(marker=str(marker)))
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))  # as `python -m hear2act_cli view .` has it
    monkeypatch.delitem(sys.modules, "evil_mod", raising=False)
    rc = main(["view", ".", "--out", str(tmp_path / "site"), "--no-plots"])
    out = capsys.readouterr().out
    assert not marker.exists(), "the manifest's renderer ran"
    assert "evil_mod" not in sys.modules and rc == 0
    rows = _rows(tmp_path / "site")
    assert len(rows) == 2 and not any(r["page"] for r in rows)
    assert all("evil_mod:boom" in r["note"] and "--renderer" in r["note"] for r in rows)
    assert "not replayable" in (tmp_path / "site" / "static" / "view.js").read_text()
    assert "evil_mod:boom" in (tmp_path / "site" / "index.html").read_text() and "no page" in out


def test_the_viewers_own_renderer_replaces_the_manifests(grid, tmp_path, capsys):
    folder = _folder(tmp_path, grid, manifest=_with_kwargs(grid, renderer="evil_mod:boom"))
    site = tmp_path / "site"
    rc = main(["view", str(folder), "--out", str(site), "--no-plots", "--renderer", "espeak"])
    assert rc == 0 and all(r["page"] for r in _rows(site)), capsys.readouterr()
    assert main(["view", str(folder), "--out", str(site), "--renderer", "no_such_mod:X"]) == 2
    assert "--renderer" in capsys.readouterr().err


def test_a_manifest_audio_cache_is_never_written(grid, tmp_path, capsys):
    theirs = tmp_path / "their-cache"
    theirs.mkdir()
    folder = _folder(tmp_path, grid, manifest=_with_kwargs(grid, audio_cache=str(theirs)))
    site = tmp_path / "site"
    assert main(["view", str(folder), "--out", str(site), "--no-plots"]) == 0
    rows = _rows(site)
    assert not any(r["page"] for r in rows) and all("audio_cache" in r["note"] for r in rows)
    mine = tmp_path / "my-cache"
    argv = ["view", str(folder), "--out", str(site), "--no-plots", "--audio-cache", str(mine)]
    assert main(argv) == 0 and all(r["page"] for r in _rows(site))
    assert list(theirs.iterdir()) == [] and any(mine.rglob("*.h2a"))  # the replays' audio
    (tmp_path / "a-file").write_text("x")
    argv[-1] = str(tmp_path / "a-file")
    assert main(argv) == 2 and "--audio-cache" in capsys.readouterr().err


def test_a_relative_scenario_file_is_read_from_the_results_folder(grid, tmp_path, monkeypatch):
    from hear2act_env.scenarios.bank import load_bank

    scenario = next(s for s in load_bank() if s.id == SCENARIO)
    folder = _folder(tmp_path, grid, manifest=_with_config(grid, scenario_file="bank/mine.json"))
    (folder / "bank").mkdir()
    (folder / "bank" / "mine.json").write_text(json.dumps([scenario.to_dict()]))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    settings = RunSettings.of_results(folder / "results.jsonl")
    assert settings.scenario_file == str(folder / "bank" / "mine.json") and not settings.refused
    summary = build_site([folder], tmp_path / "site", plots=False)
    assert summary.pages == 2 and summary.skipped == ()


# -- defect 2: --out removes only what the site wrote ---------------------------------------
def _someone_elses(folder: Path) -> dict[str, tuple[int, int]]:
    for sub in ("static", "report", "audio", "episodes"):
        (folder / sub).mkdir(parents=True)
        (folder / sub / "keep.txt").write_text("mine")
    (folder / "index.html").write_text("<h1>my homepage</h1>")
    return _snapshot(folder, folder / "nothing")


def test_out_never_removes_what_it_did_not_write(grid, tmp_path, capsys):
    home = tmp_path / "home"
    before = _someone_elses(home)
    assert main(["view", str(grid), "--out", str(home), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(home) in err and "holds no site" in err
    assert _snapshot(home, home / "nothing") == before
    # a site of its own is rebuilt; a link inside it is removed, never followed
    site = tmp_path / "site"
    assert main(["view", str(grid), "--out", str(site), "--no-plots"]) == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    shutil.rmtree(site / "audio", ignore_errors=True)
    (site / "audio").symlink_to(outside)
    (site / "notes.txt").write_text("the user's own notes")
    assert main(["view", str(grid), "--out", str(site), "--no-plots"]) == 0
    assert (outside / "keep.txt").read_text() == "mine" and not (site / "audio").is_symlink()
    assert (site / "notes.txt").read_text() == "the user's own notes"
    assert json.loads((site / MARKER).read_text())["site"] == "hear2act view"


def test_a_marker_that_is_a_link_or_garbage_is_no_marker(grid, tmp_path):
    for n, make in enumerate(
        (
            lambda p: p.symlink_to(tmp_path / "elsewhere.json"),
            lambda p: p.write_text("[" * 10_000),
            lambda p: p.mkdir(),
        )
    ):
        folder = tmp_path / f"busy{n}"
        folder.mkdir()
        (tmp_path / "elsewhere.json").write_text('{"site": "hear2act view"}')
        (folder / "index.html").write_text("theirs")
        make(folder / MARKER)
        with pytest.raises(ConfigError, match="holds no site"):
            build_site([grid], folder, plots=False)
        assert (folder / "index.html").read_text() == "theirs"


def test_an_empty_or_missing_out_is_fine(grid, tmp_path):
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new" / "deeper"):
        assert build_site([grid], out, plots=False).pages == 2
        assert (out / MARKER).is_file()


# -- defect 6: an unwritable --out is one line, before any work -----------------------------
@pytest.mark.parametrize("where", ["a file", "under a file", "under /proc", "read-only"])
def test_an_unwritable_out_is_one_line(grid, tmp_path, capsys, where):
    (tmp_path / "file").write_text("x")
    out = {
        "a file": tmp_path / "file",
        "under a file": tmp_path / "file" / "site",
        "under /proc": Path("/proc/hear2act-site"),
        "read-only": tmp_path / "ro" / "site",
    }[where]
    if where == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root writes in a read-only folder")
        (tmp_path / "ro").mkdir(mode=0o555)
    assert main(["view", str(grid), "--out", str(out), "--no-plots"]) == 2
    out_text, err = capsys.readouterr()
    assert not out_text and err.count("\n") == 1 and "out:" in err, err


# -- defect 4: slugs ------------------------------------------------------------------------
def test_agents_whose_names_read_alike_get_their_own_pages(grid, tmp_path):
    names = ["openai:a/b", "openai_a_b", "a:b", "a/b", "a b", "a_b"]
    records = [_record(grid, 0, key_agent=name) for name in names]
    folder = _folder(tmp_path, grid, records=records)
    site = tmp_path / "site"
    build_site([folder], site, plots=False)
    rows = _rows(site)
    assert sorted(r["agent"] for r in rows) == sorted(names)
    assert len({r["slug"] for r in rows}) == len(names) and all(r["page"] for r in rows)
    for r in rows:
        page = (site / "episodes" / f"{r['slug']}.html").read_text()
        assert f"<title>{r['agent']} ·" in page.replace("&#39;", "'")
    again = tmp_path / "again"
    build_site([folder], again, plots=False)  # stable: the same names give the same slugs
    assert [r["slug"] for r in _rows(again)] == [r["slug"] for r in rows]


def test_a_script_in_a_name_is_text(grid, tmp_path):
    records = [_record(grid, 0, key_agent="<script>alert(1)</script>")]
    site = tmp_path / "site"
    build_site([_folder(tmp_path, grid, records=records)], site, plots=False)
    for page in site.rglob("*.html"):
        assert "<script>alert" not in page.read_text(), page
