"""Odd files and folders, as a careless or hostile user gives them (or as a results folder
someone sent you holds them), over every ``hear2act`` command: each line ends in a result or a
one-line error with a documented exit status (0 done, 2 bad arguments or an unusable file,
3 episodes errored; argparse's usage errors exit 2), never a traceback, a hang, a write through
a link or a file outside the case's own folder.

Each case runs ``hear2act_cli.main`` in this process, under a ``SIGALRM`` guard, in a fresh
folder holding the odd inputs (``{i}``): empty, not UTF-8, a JSON list, nested 500 deep, 1e400,
NaN, a folder, a FIFO, a link to ``/dev/zero``, a dangling link, a link to a file outside. A
case may also get fresh copies of a finished results folder (``{run}``), an audit folder with
labels (``{audit}``) and a shipped RL model folder (``{model}``), with files replaced by its
``setup``. A page the command would serve is not served (``serve`` returns at once).

Cases that fail on a reader someone else is fixing are ``xfail(strict=True)`` naming it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hear2act_cli import main

#: 523 command lines (about 25 s): CI runs them in its slow step, keeping the default suite short.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_MODEL = ROOT / "agents" / "rl" / "models" / "prosody-T-c0.05"
SHIPPED_PERCEIVER = ROOT / "hear2act_env" / "speech" / "data" / "reference_perceiver.json"
SID = "airport-rides-09"  # the first test-split scenario
SECRET = b"outside the folder: never to be written\n"
#: Seconds one case may take before it counts as a hang.
CASE_SECONDS = 60
BIG = str(10**20)

# markers for ``setup`` entries (anything else is the file's bytes or text)
DIR, FIFO, ZERO, DANGLING, OUTSIDE, OUTSIDE_DIR = (
    "<dir>",
    "<fifo>",
    "<link to /dev/zero>",
    "<dangling link>",
    "<link to the outside file>",
    "<link to the outside folder>",
)

SITE_MARKER = '{"site": "hear2act view", "format": 1}'
DEEP_LIST = "[" * 500 + "]" * 500
DEEP_OBJ = '{"a": ' * 500 + "1" + "}" * 500


# -- the odd inputs every case gets ----------------------------------------------------------
def _inputs(folder: Path, one: bytes) -> None:
    """The odd files of ``{i}``."""
    folder.mkdir()
    for ext in ("json", "jsonl", "toml"):
        (folder / f"empty.{ext}").write_bytes(b"")
        (folder / f"notutf8.{ext}").write_bytes(b"\xff\xfe\xfd\x00 not text \xc3\x28\n")
        os.mkfifo(folder / f"fifo.{ext}")
        (folder / f"zero.{ext}").symlink_to("/dev/zero")
        (folder / f"dangling.{ext}").symlink_to(folder / "nowhere")
        (folder / f"out.{ext}").symlink_to(folder.parent / "outside" / "secret.txt")
        (folder / f"adir.{ext}").mkdir()
    os.mkfifo(folder / "fifo")
    (folder / "zero").symlink_to("/dev/zero")
    (folder / "adir").mkdir()
    (folder / "list.json").write_text("[1, 2, 3]\n")
    (folder / "list.jsonl").write_text("[1, 2]\n[3]\n")
    (folder / "null.json").write_text("null\n")
    (folder / "str.json").write_text('"text"\n')
    (folder / "deep.json").write_text(DEEP_LIST)
    (folder / "deepobj.json").write_text(DEEP_OBJ)
    (folder / "deep.jsonl").write_text(DEEP_OBJ + "\n")
    (folder / "huge.json").write_text('{"x": 1e400, "y": -1e18, "z": 100000000000000000000}\n')
    (folder / "nan.json").write_text('{"x": NaN, "y": Infinity, "z": -Infinity}\n')
    (folder / "deep.toml").write_text("a = " + "[" * 500 + "]" * 500 + "\n")
    (folder / "deeptab.toml").write_text("a = " + "{b = " * 500 + "1" + "}" * 500 + "\n")
    (folder / "deephdr.toml").write_text("[" + ".".join(["a"] * 500) + "]\nb = 1\n")
    (folder / "one.jsonl").write_bytes(one)
    (folder / "new\nline.jsonl").write_bytes(one)
    (folder / "new\nline.toml").write_text("runs = 1\n")
    shutil.copy(SHIPPED_PERCEIVER, folder / "perceiver.json")


@dataclass(frozen=True)
class Bases:
    """Made once: a finished eval folder, an audit folder with labels, the one-scenario file."""

    run: Path
    audit: Path
    one: bytes


@pytest.fixture(autouse=True)
def _no_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` returns at once: a case that would serve a page ends instead."""
    import hear2act_env.listen.server as server

    monkeypatch.setattr(server, "serve", lambda *a, **k: None)


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Bases:
    """One eval run of the eager agent on ``SID``, and a 2-clip audit labelled by ``ada``."""
    import hear2act_env.listen.server as server
    from hear2act_env.scenarios.bank import dumps_bank, load_bank

    tmp = tmp_path_factory.mktemp("bases")
    one = dumps_bank([s for s in load_bank() if s.id == SID])
    run = tmp / "run"
    argv = ["eval", "--agents", "eager", "--scenarios", SID, "--access", "T"]
    argv += ["--realizations", "prosody", "--backend", "serial", "--no-plots", "--out", str(run)]
    assert main(argv) == 0
    audit = tmp / "audit"
    serve, server.serve = server.serve, lambda *a, **k: None
    try:
        assert main(["audit", "--out", str(audit), "--clips", "2"]) == 0
    finally:
        server.serve = serve
    clips = json.loads((audit / "clips.json").read_text())["clips"]
    lines = [
        json.dumps({"clip": c["id"], "label": "resolved", "n": n, "at": "2026-01-01T00:00:00Z"})
        for n, c in enumerate(clips, 1)
    ]
    (audit / "labels" / "ada.jsonl").write_text("\n".join(lines) + "\n")
    (audit / "labels.lock").unlink(missing_ok=True)
    return Bases(run, audit, one)


# -- cases -----------------------------------------------------------------------------------
Setup = tuple[tuple[str, Any], ...]


def case(
    line: str,
    codes: tuple[int, ...] = (2,),
    setup: Setup = (),
    name: str = "",
    xfail: str = "",
) -> Any:
    """One line (``{i}``, ``{w}``, ``{o}``, ``{run}``, ... filled in per case), its accepted exit
    statuses and the files its ``setup`` puts in place first: ``(path under the case's folder,
    bytes | text | a marker | a function of the file's path)``."""
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    short = line
    for base, tag in SHORT.items():
        short = short.replace(base, tag)
    shown = (name + ": " if name else "") + short
    return pytest.param(line, codes, setup, marks=marks, id=shown)


def edit(fn: Callable[[Any], Any]) -> Callable[[Path], None]:
    """A setup that rewrites a JSON file after ``fn`` edited its value in place."""

    def apply(path: Path) -> None:
        data = json.loads(path.read_text())
        fn(data)
        path.write_text(json.dumps(data, allow_nan=True))

    return apply


def lines_of(fn: Callable[[dict], Any]) -> Callable[[Path], None]:
    """A setup that rewrites each JSON line of a JSONL file after ``fn`` edited it in place."""

    def apply(path: Path) -> None:
        out = []
        for text in path.read_text().splitlines():
            data = json.loads(text)
            fn(data)
            out.append(json.dumps(data, allow_nan=True))
        path.write_text("\n".join(out) + "\n")

    return apply


def _set(d: dict, key: str, value: Any) -> dict:
    d[key] = value
    return d


EV = (
    "eval --agents eager --scenarios {sid} --access T --realizations prosody --backend serial "
    "--no-plots"
)
OA = (
    "eval --agents openai:m --base-url http://127.0.0.1:1 --no-probe --setting max_retries=0 "
    "--scenarios {sid} --access T --realizations prosody --backend serial --no-plots "
    "--out {w}/e"
)
BM = (
    "benchmark --agents eager --split test --scenario-file {i}/one.jsonl --no-audio "
    "--backend serial --no-plots"
)
RL = "rl-eval --scenario-file {i}/one.jsonl --no-plots --quiet --backend serial"
#: How the ids show the common beginnings of the lines.
SHORT = {
    EV: "eval[eager]",
    OA: "eval[openai:m]",
    BM: "benchmark[eager]",
    RL: "rl-eval",
    shlex.quote(DEEP_OBJ): "<JSON object 500 deep>",
}
RUNF = "run/results.jsonl"
MAN = "run/results.manifest.json"
LOG = "run/results.log.jsonl"
CLIPS = "audit/clips.json"
CONF = "model/config.json"
LOG_LINE = {
    "id": f"eager|prosody|T|correct|{SID}|0",
    "key": {"agent": "eager", "condition": "T", "scenario": SID, "run": 0},
    "prompts": {"p1": "You are an assistant."},
    "turns": [
        {
            "turn": 1,
            "action_text": "recommend 1",
            "outcome": "ok",
            "calls": [
                {
                    "usage": {"prompt_tokens": 10, "completion_tokens": 2},
                    "latency_s": 0.5,
                    "messages": [
                        {"role": "system", "ref": "p1"},
                        {"role": "user", "content": "hi"},
                    ],
                    "reply": "1",
                }
            ],
        }
    ],
}


def log_with(fn: Callable[[dict], Any]) -> str:
    """An agent log of one line: ``LOG_LINE`` edited in place by ``fn``."""
    entry = json.loads(json.dumps(LOG_LINE))
    fn(entry)
    return json.dumps(entry, allow_nan=True) + "\n"


def _turn(entry: dict) -> dict:
    return entry["turns"][0]


def _call(entry: dict) -> dict:
    return entry["turns"][0]["calls"][0]


def toml_run(text: str, name: str = "", codes: tuple[int, ...] = (2,), **kw: Any) -> Any:
    """``eval --config`` of a TOML run file holding ``text``."""
    return case(
        EV + " --out {w}/e --config {w}/run.toml",
        codes,
        (("w/run.toml", text),),
        name=name or text.strip().splitlines()[0][:40],
        **kw,
    )


def manifest_run(fn: Callable[[dict], Any], name: str, codes: tuple[int, ...] = (2,)) -> Any:
    """``eval --config {run}`` of a results folder whose manifest ``fn`` edited."""
    return case(
        "eval --agents eager --config {run}", codes, ((MAN, edit(fn)),), name=f"manifest {name}"
    )


def prices(text: str, name: str, codes: tuple[int, ...] = (2,), **kw: Any) -> Any:
    return case(
        "report {run}/results.jsonl --no-plots --out {w}/r --prices {w}/p.toml",
        codes,
        (("w/p.toml", text),),
        name=f"prices {name}",
        **kw,
    )


def clips_json(setup: Any, name: str, codes: tuple[int, ...] = (2,), **kw: Any) -> Any:
    return case("audit --score {audit}", codes, ((CLIPS, setup),), name=f"clips.json {name}", **kw)


def rl_config(setup: Any, name: str, codes: tuple[int, ...] = (2,), **kw: Any) -> Any:
    return case(
        RL + " --out {w}/rl {model}", codes, ((CONF, setup),), name=f"config.json {name}", **kw
    )


def episode_log(text: Any, name: str, codes: tuple[int, ...] = (2,), **kw: Any) -> Any:
    return case(
        f"report {{run}}/results.jsonl --episode {SID}",
        codes,
        ((LOG, text),),
        name=f"agent log {name}",
        **kw,
    )


def scenario_field(key: str, value: Any, codes: tuple[int, ...] = (2,)) -> Any:
    """``scenarios validate`` of the one-scenario file with ``key`` set to ``value``."""
    return case(
        "scenarios validate {i}/one.jsonl",
        codes,
        (("in/one.jsonl", lines_of(lambda d: _set(d, key, value))),),
        name=f"scenario {key}={json.dumps(value)[:20]}",
    )


def perceiver(fn: Callable[[dict], Any], name: str) -> Any:
    """``benchmark --perceiver`` of the shipped perceiver edited by ``fn``."""
    return case(
        BM + " --out {w}/b --perceiver {i}/perceiver.json",
        (2,),
        (("in/perceiver.json", edit(fn)),),
        name=f"perceiver {name}",
    )


#: Causes found by this sweep in files their owners are changing (left for them to fix).

CASES = [
    # -- eval --config: TOML files, odd as files ---------------------------------------------
    case(EV + " --out {w}/e --config {i}/empty.toml", (0,)),
    case(EV + " --out {w}/e --config {i}/notutf8.toml"),
    case(EV + " --out {w}/e --config {i}/deep.toml"),
    case(EV + " --out {w}/e --config {i}/deeptab.toml"),
    case(EV + " --out {w}/e --config {i}/deephdr.toml"),
    case(EV + " --out {w}/e --config {i}/fifo.toml"),
    case(EV + " --out {w}/e --config {i}/zero.toml"),
    case(EV + " --out {w}/e --config {i}/dangling.toml"),
    case(EV + " --out {w}/e --config {i}/adir.toml"),
    case(EV + " --out {w}/e --config {i}/out.toml"),
    case(EV + " --out {w}/e --config {i}/new{nl}line.toml", (0,)),
    case(EV + " --out {w}/e --config ''"),
    case(EV + " --out {w}/e --config /proc/self/status"),
    case(EV + " --out {w}/e --config /proc/self/environ"),
    case(EV + " --out {w}/e --config /proc"),
    # -- eval --config: TOML with wrong types and odd numbers ---------------------------------
    toml_run('agents = "eager"\n'),
    toml_run("agents = [{a = 1}]\n"),
    toml_run('runs = "1"\n'),
    toml_run("runs = 1e400\n"),
    toml_run("runs = -1000000000000000000\n"),
    toml_run("runs = nan\n"),
    toml_run("runs = inf\n"),
    toml_run(f"runs = {BIG}\n"),
    toml_run(f"workers = {BIG}\n"),
    toml_run("workers = 0\n"),
    toml_run("out = {a = 1}\n", codes=(2,)),
    toml_run('scenarios = ["{sid}", 5]\n'),
    toml_run("scenario_file = 5\n"),
    toml_run('scenario_file = "{i}/zero.jsonl"\n'),
    toml_run('scenario_file = "{i}/fifo.jsonl"\n'),
    toml_run('scenario_file = ""\n'),
    toml_run('split = "dev"\n'),
    toml_run("access = []\n"),
    toml_run('access = ["Q"]\n'),
    toml_run('no_probe = "yes"\n'),
    toml_run("settings = 5\n"),
    toml_run("[settings]\nwhen = 1979-05-27\n", name="settings: a date"),
    toml_run("[settings]\ntemperature = {a = {b = 1}}\n", name="settings: a table"),
    toml_run("no_such_key = 1\n"),
    toml_run("prices = 5\n"),
    toml_run('[prices.eager]\nprompt = "1"\ncompletion = 1\n', name="inline prices: a string"),
    toml_run("[prices.eager]\nprompt = nan\ncompletion = 1\n", name="inline prices: nan"),
    toml_run('prices = "{i}/fifo.toml"\n'),
    toml_run(
        f"[prices.eager]\nprompt = 1{'0' * 400}\ncompletion = 1\n",
        name="inline prices: an integer of 400 digits",
    ),
    # -- eval --config: a manifest (a .json file or a results folder) -------------------------
    case("eval --agents eager --config {i}/list.json"),
    case("eval --agents eager --config {i}/null.json"),
    case("eval --agents eager --config {i}/str.json"),
    case("eval --agents eager --config {i}/deep.json"),
    case("eval --agents eager --config {i}/deepobj.json"),
    case("eval --agents eager --config {i}/notutf8.json"),
    case("eval --agents eager --config {i}/empty.json"),
    case("eval --agents eager --config {i}/zero.json"),
    case("eval --agents eager --config {i}/fifo.json"),
    case("eval --agents eager --config {i}/adir.json"),
    case("eval --agents eager --config {i}/out.json"),
    case("eval --agents eager --config {i}/nan.json"),
    case("eval --agents eager --config {run}", (0,), name="a finished run"),
    manifest_run(lambda m: _set(m, "run", []), "run: a list"),
    manifest_run(lambda m: _set(m, "run", None), "run: null"),
    manifest_run(lambda m: _set(m, "config", None), "config: null", (0, 2)),
    manifest_run(lambda m: m["run"].update(agents={"a": 1}), "agents: an object"),
    manifest_run(lambda m: m["run"].update(runs="1"), "runs: a string"),
    manifest_run(lambda m: m["run"].update(runs=float("inf")), "runs: Infinity"),
    manifest_run(lambda m: m["run"].update(workers=float("nan")), "workers: NaN"),
    manifest_run(lambda m: m["run"].update(runs=-(10**18)), "runs: -1e18"),
    manifest_run(lambda m: m["run"].update(runs=10**20), "runs: 1e20"),
    manifest_run(lambda m: m["run"].update(base_url="http://x"), "base_url"),
    manifest_run(lambda m: m["run"].update(settings=[]), "settings: a list"),
    manifest_run(lambda m: m["run"].update(settings={"k": None}), "settings: null"),
    manifest_run(lambda m: m["run"].update(settings={"trust_remote_code": True}), "trust code"),
    manifest_run(lambda m: m["run"].update(agents=["ppo:/x"]), "a pickled agent", (0,)),
    manifest_run(lambda m: m["run"].update(out={"x": 1}), "out: an object", (0,)),
    manifest_run(lambda m: m["run"].update(scenario_file="/dev/zero"), "scenario_file /dev/zero"),
    case("eval --agents eager --config {run}", (2,), ((MAN, FIFO),), name="manifest a FIFO"),
    case("eval --agents eager --config {run}", (2,), ((MAN, ZERO),), name="manifest /dev/zero"),
    case("eval --agents eager --config {run}", (2,), ((MAN, DIR),), name="manifest a folder"),
    case("eval --agents eager --config {run}", (2,), ((MAN, OUTSIDE),), name="manifest outside"),
    # -- eval --prices and report --prices -----------------------------------------------------
    case(EV + " --out {w}/e --prices {i}/empty.toml", (0,)),
    case(EV + " --out {w}/e --prices {i}/notutf8.toml"),
    case(EV + " --out {w}/e --prices {i}/deep.toml"),
    case(EV + " --out {w}/e --prices {i}/zero.toml"),
    case(EV + " --out {w}/e --prices {i}/adir.toml"),
    case(EV + " --out {w}/e --prices {i}/dangling.toml"),
    case(EV + " --out {w}/e --prices ''"),
    case(EV + " --out {w}/e --prices /proc/self/status"),
    prices('[m]\nprompt = "1"\ncompletion = 1\n', "a string"),
    prices("[m]\nprompt = nan\ncompletion = 1\n", "nan"),
    prices("[m]\nprompt = inf\ncompletion = 1\n", "inf"),
    prices("[m]\nprompt = 1e400\ncompletion = 1\n", "1e400"),
    prices("[m]\nprompt = -1e18\ncompletion = 1\n", "-1e18"),
    prices(f"[m]\nprompt = {BIG}\ncompletion = 1\n", "1e20"),  # over MAX_PRICE
    prices(
        f"[m]\nprompt = 1{'0' * 400}\ncompletion = 1\n",
        "an integer of 400 digits",
    ),
    prices("[m]\nprompt = true\ncompletion = 1\n", "a boolean"),
    prices("m = 5\n", "a number for a table"),
    prices("[m]\nprompt = 1\ncompletion = 1\nextra = 2\n", "an extra field"),
    prices("[m]\nprompt = 1\ncompletion = [1]\n", "a list"),
    # -- eval --scenario-file, --response-cache, --perceiver, --setting -----------------------
    case(EV + " --out {w}/e --scenario-file {i}/zero.jsonl"),
    case(EV + " --out {w}/e --scenario-file {i}/notutf8.jsonl"),
    case(EV + " --out {w}/e --scenario-file {i}/list.json"),
    case(EV + " --out {w}/e --scenario-file {i}/adir.json"),
    case(EV + " --out {w}/e --scenario-file {i}/dangling.jsonl"),
    case(EV + " --out {w}/e --scenario-file ''"),
    case(EV + " --out {w}/e --scenario-file /proc/self/status"),
    case(EV + " --out {w}/e --scenario-file {i}/new{nl}line.jsonl", (0,)),
    case(OA + " --response-cache {i}/zero"),
    case(OA + " --response-cache {i}/fifo"),
    case(OA + " --response-cache {i}/empty.json"),
    case(OA + " --response-cache ''"),
    case(OA + " --perceiver prosody:{i}/notutf8.json"),
    case(OA + " --perceiver prosody:{i}/deep.json"),
    case(OA + " --perceiver prosody:{i}/list.json"),
    case(OA + " --perceiver prosody:{i}/nan.json"),
    case(OA + " --perceiver prosody:{i}/zero.json"),
    case(OA + " --perceiver prosody:{i}/fifo.json"),
    case(OA + " --perceiver prosody:{i}/adir"),
    case(OA + " --perceiver prosody:"),
    case(OA + " --perceiver affect:{i}/zero"),
    case(OA + " --perceiver affect:{i}/empty.json"),
    case(OA + " --setting max_concurrency=1e400"),
    case(OA + " --setting temperature=NaN"),
    case(OA + " --setting timeout=-1e18"),
    case(OA + f" --setting max_tokens={BIG}"),
    case(OA + " --setting extra_body=" + shlex.quote(DEEP_OBJ)),
    case(OA + " --setting base_url={}"),
    # -- eval and benchmark: numbers -----------------------------------------------------------
    case(EV + " --out {w}/e --runs " + BIG),
    case(EV + " --out {w}/e --workers " + BIG),
    case(EV + " --out {w}/e --runs ''"),
    case(EV + " --out {w}/e --runs 1e400"),
    case(EV + " --out {w}/e --workers inf"),
    case(BM + " --out {w}/b --runs " + BIG),
    case(BM + " --out {w}/b --workers " + BIG),
    case(BM + " --out {w}/b --runs nan"),
    case(BM + " --out {w}/b --workers -1"),
    # -- eval --out: a results folder with odd files (resumed) --------------------------------
    case(EV + " --out {i}/zero"),
    case(EV + " --out {i}/fifo"),
    case(EV + " --out {i}/empty.json"),
    case(EV + " --out ''"),
    case(EV + " --out /proc/self"),
    case(EV + " --out {run}", (2,), ((RUNF, OUTSIDE),), name="results.jsonl outside"),
    case(EV + " --out {run}", (2,), ((RUNF, ZERO),), name="results.jsonl /dev/zero"),
    case(EV + " --out {run}", (2,), ((RUNF, FIFO),), name="results.jsonl a FIFO"),
    case(EV + " --out {run}", (2,), ((RUNF, DIR),), name="results.jsonl a folder"),
    case(EV + " --out {run}", (0,), ((RUNF, b"\xff\xfe\n"),), name="results.jsonl not UTF-8"),
    case(EV + " --out {run}", (0,), ((RUNF, "[1]\nnull\n"),), name="results.jsonl lists"),
    case(EV + " --out {run}", (0,), ((RUNF, DEEP_OBJ + "\n"),), name="results.jsonl deep"),
    case(
        EV + " --out {run}",
        (0,),
        ((RUNF, lines_of(lambda d: _set(d, "key", "x"))),),
        name="results.jsonl key a string",
    ),
    case(
        EV + " --out {run}",
        (0,),
        ((RUNF, lines_of(lambda d: _set(d, "actions", float("inf")))),),
        name="results.jsonl actions Infinity",
    ),
    case(
        EV + " --out {run}",
        (0,),
        ((RUNF, lines_of(lambda d: d["key"].update(run=10**20))),),
        name="results.jsonl run 1e20",
    ),
    case(EV + " --out {run}", (2,), (("run/results.jsonl.lock", OUTSIDE),), name="lock outside"),
    case(EV + " --out {run}", (2,), (("run/results.jsonl.lock", FIFO),), name="lock a FIFO"),
    case(EV + " --out {run}", (2,), (("run/results.jsonl.lock", DIR),), name="lock a folder"),
    case(EV + " --out {run}", (0, 2), ((MAN, "[1, 2]"),), name="manifest a list"),
    case(EV + " --out {run}", (0, 2), ((MAN, DEEP_OBJ),), name="manifest deep"),
    case(EV + " --out {run}", (0, 2), ((MAN, b"\xff\xfe"),), name="manifest not UTF-8"),
    case(EV + " --out {run}", (0, 2), ((MAN, ZERO),), name="manifest /dev/zero"),
    case(EV + " --out {run}", (0, 2), ((MAN, FIFO),), name="manifest a FIFO"),
    case(EV + " --out {run}", (0, 2), ((MAN, OUTSIDE),), name="manifest outside"),
    case(
        EV + " --out {run}",
        (0, 2),
        ((MAN, edit(lambda m: _set(m, "bank_version", {"x": 1}))),),
        name="manifest bank_version an object",
    ),
    case(
        EV + " --out {run}",
        (0, 2),
        ((MAN, edit(lambda m: _set(m, "config", []))),),
        name="manifest config a list",
    ),
    case(EV + " --out {run}", (0,), (("run/conditions.csv", OUTSIDE),), name="csv outside"),
    case(BM + " --out {run}", (2,), ((RUNF, OUTSIDE),), name="results.jsonl outside"),
    case(BM + " --out {run}", (0, 2), ((MAN, "null"),), name="manifest null"),
    # -- benchmark: --scenario-file, --perceiver ----------------------------------------------
    case(BM.replace("{i}/one.jsonl", "{i}/zero.jsonl") + " --out {w}/b"),
    case(BM.replace("{i}/one.jsonl", "{i}/fifo.jsonl") + " --out {w}/b"),
    case(BM.replace("{i}/one.jsonl", "{i}/deep.jsonl") + " --out {w}/b"),
    case(BM.replace("{i}/one.jsonl", "{i}/out.jsonl") + " --out {w}/b"),
    case(BM.replace("{i}/one.jsonl", "''") + " --out {w}/b"),
    case(BM.replace("{i}/one.jsonl", "{i}/new{nl}line.jsonl") + " --out {w}/b", (0,)),
    case(BM + " --out {w}/b --perceiver {i}/empty.json"),
    case(BM + " --out {w}/b --perceiver {i}/list.json"),
    case(BM + " --out {w}/b --perceiver {i}/null.json"),
    case(BM + " --out {w}/b --perceiver {i}/deepobj.json"),
    case(BM + " --out {w}/b --perceiver {i}/nan.json"),
    case(BM + " --out {w}/b --perceiver {i}/zero.json"),
    case(BM + " --out {w}/b --perceiver {i}/adir"),
    case(BM + " --out {w}/b --perceiver ''"),
    case(BM + " --out {w}/b --perceiver /proc/self/status"),
    perceiver(lambda m: _set(m, "weights", "abc"), "weights a string"),
    perceiver(lambda m: m["weights"].__setitem__(0, float("nan")), "a weight NaN"),
    perceiver(lambda m: m["weights"].__setitem__(0, {"x": 1}), "a weight an object"),
    perceiver(lambda m: _set(m, "bias", None), "bias null"),
    perceiver(lambda m: _set(m, "bias", "1e400"), "bias a string"),
    perceiver(lambda m: _set(m, "feature_names", ["x"]), "feature_names short"),
    perceiver(lambda m: _set(m, "kind", 5), "kind a number"),
    # -- report: results files -----------------------------------------------------------------
    case("report {i}/empty.jsonl --no-plots --out {w}/r"),
    case("report {i}/notutf8.jsonl --no-plots --out {w}/r"),
    case("report {i}/list.jsonl --no-plots --out {w}/r"),
    case("report {i}/deep.jsonl --no-plots --out {w}/r"),
    case("report {i}/zero.jsonl --no-plots --out {w}/r"),
    case("report {i}/fifo.jsonl --no-plots --out {w}/r"),
    case("report {i}/dangling.jsonl --no-plots --out {w}/r"),
    case("report {i}/out.jsonl --no-plots --out {w}/r"),
    case("report '' --no-plots --out {w}/r"),
    case("report /proc/self/status --no-plots --out {w}/r"),
    case("report {run} --no-plots --out {w}/r"),
    case(
        "report {run}/results.jsonl --no-plots --out {w}/r",
        (0, 2),
        ((RUNF, lines_of(lambda d: _set(d, "success", "yes"))),),
        name="success a string",
    ),
    case(
        "report {run}/results.jsonl --no-plots --out {w}/r",
        (0, 2),
        ((RUNF, lines_of(lambda d: _set(d, "reward", float("nan")))),),
        name="reward NaN",
    ),
    case(
        "report {run}/results.jsonl --no-plots --out {w}/r",
        (0, 2),
        ((RUNF, lines_of(lambda d: _set(d, "actions", -(10**18)))),),
        name="actions -1e18",
    ),
    case(
        "report {run}/results.jsonl --no-plots --out {w}/r",
        (0, 2),
        ((RUNF, lines_of(lambda d: _set(d, "steps", json.loads(DEEP_LIST)))),),
        name="steps deep",
    ),
    case(
        "report {run}/results.jsonl --no-plots --out {w}/r",
        (0, 2),
        ((RUNF, lines_of(lambda d: d["key"].update(agent={"x": 1}))),),
        name="agent an object",
    ),
    case(
        "report {run}/results.jsonl --no-plots --out {w}/r",
        (0, 2),
        ((RUNF, lines_of(lambda d: _set(d, "agent_stats", {"usage": {"prompt_tokens": "x"}}))),),
        name="usage a string",
    ),
    case(
        "report {run}/results.jsonl --no-plots --out {w}/r",
        (0, 2),
        ((RUNF, lines_of(lambda d: _set(d, "error_kind", {"x": 1}))),),
        name="error_kind an object",
    ),
    case("report {run}/results.jsonl {run}/results.jsonl --no-plots --out {w}/r", (0,)),
    case("report {run}/results.jsonl --no-plots --out {i}/zero"),
    case("report {run}/results.jsonl --no-plots --out {i}/fifo"),
    case("report {run}/results.jsonl --no-plots --out {i}/empty.json"),
    case("report {run}/results.jsonl --no-plots --out /proc/self"),
    case(
        "report {run}/results.jsonl --no-plots --out {run}",
        (0,),
        (("run/conditions.csv", OUTSIDE),),
        name="csv outside",
    ),
    case(
        "report {run}/results.jsonl --no-plots --out {run}",
        (0, 2),
        (("run/conditions.csv", ZERO),),
        name="csv /dev/zero",
    ),
    case(  # replaced by the new table (renamed over it), never opened
        "report {run}/results.jsonl --no-plots --out {run}",
        (0,),
        (("run/conditions.csv", FIFO),),
        name="csv a FIFO",
    ),
    case(
        "report {run}/results.jsonl --no-plots --out {run}",
        (2,),
        (("run/conditions.csv", DIR),),
        name="csv a folder",
    ),
    case(
        "report {run}/results.jsonl --leaderboard --out {w}/r",
        (2,),
        ((MAN, edit(lambda m: _set(m, "bank_version", {"x": 1}))),),
        name="bank_version an object",
    ),
    case(
        "report {run}/results.jsonl --leaderboard --out {w}/r",
        (2,),
        ((MAN, "[]"),),
        name="manifest a list",
    ),
    case(
        "report {run}/results.jsonl --leaderboard --out {w}/r",
        (2,),
        ((MAN, ZERO),),
        name="manifest /dev/zero",
    ),
    case(
        "report {run}/results.jsonl --leaderboard --out {w}/r",
        (2,),
        ((MAN, FIFO),),
        name="manifest a FIFO",
    ),
    case(
        "report {run}/results.jsonl --leaderboard --out {w}/r",
        (2,),
        ((MAN, DEEP_LIST),),
        name="manifest deep",
    ),
    case(
        "report {run}/results.jsonl --leaderboard --out {w}/r",
        (0, 2),
        ((MAN, edit(lambda m: _set(m, "bank_sha256", 10**20))),),
        name="bank_sha256 a number",
    ),
    case(
        "report {run}/results.jsonl --leaderboard --out {w}/r",
        (0, 2),
        (("run/leaderboard.md", OUTSIDE), (MAN, edit(lambda m: None))),
        name="leaderboard.md outside",
    ),
    # -- report --episode: the agent log -------------------------------------------------------
    episode_log(json.dumps(LOG_LINE) + "\n", "valid", (0,)),
    episode_log(log_with(lambda e: _set(e, "key", [])), "key a list", (0, 2)),
    episode_log(log_with(lambda e: _set(e, "prompts", [])), "prompts a list", (0, 2)),
    episode_log(log_with(lambda e: _set(e, "turns", {"a": 1})), "turns an object", (0, 2)),
    episode_log(log_with(lambda e: _set(e, "turns", ["x"])), "a turn a string", (0, 2)),
    episode_log(log_with(lambda e: _set(_turn(e), "calls", 5)), "calls a number", (0, 2)),
    episode_log(
        log_with(lambda e: _set(_call(e), "usage", {"prompt_tokens": "x"})),
        "tokens a string",
        (0, 2),
    ),
    episode_log(
        log_with(lambda e: _set(_call(e), "usage", {"prompt_tokens": float("inf")})),
        "tokens Infinity",
        (0, 2),
    ),
    episode_log(log_with(lambda e: _set(_call(e), "usage", [1])), "usage a list", (0, 2)),
    episode_log(
        log_with(lambda e: _set(_call(e), "latency_s", "slow")), "latency a string", (0, 2)
    ),
    episode_log(
        log_with(lambda e: _set(_call(e), "audio_clips", "x")), "audio_clips a string", (0, 2)
    ),
    episode_log(
        log_with(lambda e: _set(_call(e), "messages", ["x"])), "a message a string", (0, 2)
    ),
    episode_log(
        log_with(lambda e: _set(_call(e), "messages", [{"ref": 5}])), "ref a number", (0, 2)
    ),
    episode_log(log_with(lambda e: _set(e, "id", 5)), "id a number"),
    episode_log(DEEP_OBJ + "\n", "deep"),
    episode_log(b"\xff\xfe\n", "not UTF-8"),
    episode_log(ZERO, "/dev/zero"),
    episode_log(FIFO, "a FIFO"),
    episode_log(DIR, "a folder"),
    episode_log(OUTSIDE, "outside"),
    episode_log(
        json.dumps(LOG_LINE) + "\n" + json.dumps({**LOG_LINE, "id": "x|y"}) + "\n",
        "two episodes, a part of both",
        (0, 2),
    ),
    # -- view ----------------------------------------------------------------------------------
    case("view {i}/empty.jsonl --no-plots --out {w}/s", (0, 2)),
    case("view {i}/notutf8.jsonl --no-plots --out {w}/s", (0, 2)),
    case("view {i}/list.jsonl --no-plots --out {w}/s", (0, 2)),
    case("view {i}/deep.jsonl --no-plots --out {w}/s", (0, 2)),
    case("view {i}/zero.jsonl --no-plots --out {w}/s"),
    case("view {i}/fifo.jsonl --no-plots --out {w}/s"),
    case("view {i}/dangling.jsonl --no-plots --out {w}/s"),
    case("view {i}/adir --no-plots --out {w}/s", (0, 2)),
    case("view '' --no-plots --out {w}/s"),
    case("view /proc --no-plots --out {w}/s", (0, 2)),
    case("view /proc/self/status --no-plots --out {w}/s", (0, 2)),
    case("view {run} --no-plots --max-pages 1 --out {w}/s", (0,)),
    case("view {run} --no-plots --max-pages " + BIG + " --out {w}/s", (0,)),
    case("view {run} --no-plots --seed " + BIG + " --out {w}/s", (0,)),
    case("view {run} --no-plots --scenarios '' --out {w}/s", (0, 2)),
    case("view {run} --no-plots --out {i}/zero"),
    case("view {run} --no-plots --out {i}/fifo"),
    case("view {run} --no-plots --out {i}/empty.json"),
    case("view {run} --no-plots --out ''"),
    case("view {run} --no-plots --out {run}", (0, 2), name="out: the results folder"),
    case("view {run} --no-plots --audio-cache {i}/zero --out {w}/s"),
    case("view {run} --no-plots --audio-cache {i}/fifo --out {w}/s"),
    case("view {run} --no-plots --out {w}/s", (0, 2), ((MAN, "[]"),), name="manifest a list"),
    case("view {run} --no-plots --out {w}/s", (0, 2), ((MAN, DEEP_OBJ),), name="manifest deep"),
    case("view {run} --no-plots --out {w}/s", (0, 2), ((MAN, ZERO),), name="manifest /dev/zero"),
    case(
        "view {run} --no-plots --out {w}/s",
        (0, 2),
        ((MAN, edit(lambda m: m["config"]["env"]["speech"].update(renderer="os:system"))),),
        name="manifest renderer os:system",
    ),
    case(
        "view {run} --no-plots --out {w}/s",
        (0, 2),
        ((MAN, edit(lambda m: m["config"]["env"]["speech"].update(renderer={"x": 1}))),),
        name="manifest renderer an object",
    ),
    case(
        "view {run} --no-plots --out {w}/s",
        (0, 2),
        (
            (
                MAN,
                edit(lambda m: m["config"]["env"]["speech"].update(prosody_strength=float("nan"))),
            ),
        ),
        name="manifest prosody_strength NaN",
    ),
    case(
        "view {run} --no-plots --out {w}/s",
        (0, 2),
        ((MAN, edit(lambda m: m["config"]["env"].update(max_actions=10**20))),),
        name="manifest max_actions 1e20",
    ),
    case(
        "view {run} --no-plots --out {w}/s",
        (0, 2),
        ((RUNF, lines_of(lambda d: _set(d, "steps", [["x", None, {}]]))),),
        name="steps of odd types",
    ),
    case(
        "view {run} --no-plots --out {w}/s",
        (0, 2),
        ((RUNF, lines_of(lambda d: _set(d, "seed", 10**20))),),
        name="seed 1e20",
    ),
    case("view {run} --no-plots --out {w}/s", (0, 2), ((LOG, ZERO),), name="agent log /dev/zero"),
    case("view {run} --no-plots --out {w}/s", (0, 2), ((LOG, FIFO),), name="agent log a FIFO"),
    case(
        "view {run} --no-plots --out {w}/s",
        (0, 2),
        ((LOG, log_with(lambda e: _set(e, "turns", ["x"]))),),
        name="agent log a turn a string",
    ),
    case(
        "view {run} --no-plots --out {w}/s",
        (0, 2),
        ((LOG, log_with(lambda e: _set(e, "key", []))),),
        name="agent log key a list",
    ),
    case(
        "view {run} --no-plots --out {w}/s",
        (0,),
        (("w/s/.hear2act-site", SITE_MARKER), ("w/s/index.html", OUTSIDE)),
        name="a site whose index.html leads outside",
    ),
    case(
        "view {run} --no-plots --out {w}/s",
        (0, 2),
        (("w/s/.hear2act-site", SITE_MARKER), ("w/s/episodes", OUTSIDE_DIR)),
        name="a site whose episodes folder leads outside",
    ),
    case(
        "view {run} --no-plots --out {w}/s",
        (2,),
        (("w/s/.hear2act-site", ZERO),),
        name="marker /dev/zero",
    ),
    case(
        "view {run} --no-plots --out {w}/s",
        (0, 2),
        (("w/s/.hear2act-site", DEEP_LIST),),
        name="marker deep",
    ),
    case(
        "view {run} --no-plots --out {w}/s",
        (0, 2),
        (("w/s/.hear2act-site", FIFO),),
        name="marker a FIFO",
    ),
    # -- audit --score and audit --out: the audit folder ---------------------------------------
    case("audit --score {audit}", (0,), name="a labelled audit"),
    clips_json("", "empty"),
    clips_json(b"\xff\xfe", "not UTF-8"),
    clips_json("[]", "a list"),
    clips_json("null", "null"),
    clips_json(DEEP_OBJ, "deep"),
    clips_json(ZERO, "/dev/zero"),
    clips_json(FIFO, "a FIFO"),
    clips_json(DIR, "a folder"),
    clips_json(OUTSIDE, "outside"),
    clips_json(DANGLING, "dangling"),
    clips_json(edit(lambda d: d["clips"][0].update(variation=float("inf"))), "variation Infinity"),
    clips_json(edit(lambda d: d["clips"][0].update(prosody_strength="x")), "strength a string"),
    clips_json(
        edit(lambda d: d["clips"][0].update(prosody_strength=float("nan"))), "strength NaN", (0, 2)
    ),
    clips_json(edit(lambda d: d["clips"][0].update(id={"x": 1})), "id an object"),
    clips_json(edit(lambda d: d["clips"][0].update(text=None)), "text null"),
    clips_json(edit(lambda d: d["clips"][0].update(persona=5)), "persona a number"),
    clips_json(edit(lambda d: d["clips"][0].update(delivery="shouting")), "delivery unknown"),
    clips_json(
        edit(lambda d: d["clips"][0].update(audio="../../outside/secret.txt")), "audio outside"
    ),
    clips_json(edit(lambda d: d["clips"][0].update(pair="x")), "pair a string"),
    clips_json(edit(lambda d: _set(d, "settings", "x")), "settings a string"),
    clips_json(edit(lambda d: d["settings"].update(clips="2")), "settings.clips a string"),
    clips_json(edit(lambda d: _set(d, "clips", {"a": 1})), "clips an object"),
    clips_json(edit(lambda d: _set(d, "perceiver", [])), "perceiver a list", (0, 2)),
    clips_json(edit(lambda d: _set(d, "salt", {"x": 1})), "salt an object", (0, 2)),
    case(
        "audit --score {audit}",
        (2,),
        (("audit/labels/ada.jsonl", "[1]\n"),),
        name="labels a list",
    ),
    case(
        "audit --score {audit}",
        (2,),
        (("audit/labels/ada.jsonl", DEEP_OBJ + "\n"),),
        name="labels deep",
    ),
    case(
        "audit --score {audit}",
        (2,),
        (("audit/labels/ada.jsonl", b"\xff\n"),),
        name="labels not UTF-8",
    ),
    case(
        "audit --score {audit}", (2,), (("audit/labels/ada.jsonl", ZERO),), name="labels /dev/zero"
    ),
    case("audit --score {audit}", (2,), (("audit/labels/ada.jsonl", FIFO),), name="labels a FIFO"),
    case("audit --score {audit}", (2,), (("audit/labels/ada.jsonl", DIR),), name="labels a folder"),
    case(
        "audit --score {audit}", (2,), (("audit/labels/ada.jsonl", OUTSIDE),), name="labels outside"
    ),
    case("audit --score {audit}", (2,), (("audit/labels", ZERO),), name="labels folder /dev/zero"),
    case(
        "audit --score {audit}",
        (2,),
        (("audit/labels", OUTSIDE_DIR),),
        name="labels folder outside",
    ),
    case(
        "audit --score {audit}",
        (0, 2),
        (("audit/models/m.jsonl", "[1]\n"),),
        name="model labels a list",
    ),
    case(
        "audit --score {audit}",
        (0, 2),
        (("audit/models/m.jsonl", ZERO),),
        name="model labels /dev/zero",
    ),
    case(
        "audit --score {audit}",
        (0, 2),
        (("audit/models/m.jsonl", DEEP_OBJ + "\n"),),
        name="model labels deep",
    ),
    case(
        "audit --score {audit}", (2,), (("audit/audio", OUTSIDE_DIR),), name="audio folder outside"
    ),
    case("audit --score ''"),
    case("audit --score {i}/empty.json"),
    case("audit --score {i}/zero"),
    case("audit --score /proc"),
    case("audit --score {audit} --json {i}/fifo"),
    case("audit --score {audit} --json {i}/zero"),
    case("audit --score {audit} --json {i}/adir"),
    case("audit --score {audit} --json ''"),
    case("audit --score {audit} --json {i}/out.json", (0,)),
    case("audit --out {audit}", (0,), name="reopen"),
    case("audit --out {audit}", (2,), ((CLIPS, "[]"),), name="reopen: clips.json a list"),
    case("audit --out {audit}", (2,), ((CLIPS, ZERO),), name="reopen: clips.json /dev/zero"),
    case("audit --out {audit} --clips " + BIG),
    case("audit --out {audit} --seed " + BIG),
    case("audit --out {audit} --annotator ''"),
    case("audit --out {audit} --prosody-strength 1e400"),
    case("audit --out {w}/a --clips " + BIG),
    case("audit --out {w}/a --clips 2 --seed " + BIG, (0,)),
    case("audit --out {w}/a --clips 2 --perceiver {i}/deep.json"),
    case("audit --out {w}/a --clips 2 --perceiver {i}/list.json"),
    case("audit --out {w}/a --clips 2 --perceiver {i}/zero.json"),
    case("audit --out {w}/a --clips 2 --perceiver {i}/fifo.json"),
    case("audit --out {w}/a --clips 2 --perceiver {i}/adir"),
    case("audit --out {w}/a --clips 2 --audio-cache {i}/zero", (0, 2)),
    case("audit --out {i}/zero"),
    case("audit --out {i}/fifo"),
    case(
        "audit --out {w}/a --clips 2",
        (0, 2),
        (("w/a/audio", OUTSIDE_DIR),),
        name="audio outside",
    ),
    case(
        "audit --out {w}/a --clips 2",
        (0, 2),
        (("w/a/clips.json", DANGLING),),
        name="dangling clips.json",
    ),
    # -- rl-eval: model folders ----------------------------------------------------------------
    case(RL + " --out {w}/rl {model}", (0,), name="the shipped model"),
    rl_config("", "empty"),
    rl_config(b"\xff\xfe", "not UTF-8"),
    rl_config("[]", "a list"),
    rl_config(DEEP_OBJ, "deep"),
    rl_config(ZERO, "/dev/zero"),
    rl_config(FIFO, "a FIFO"),
    rl_config(DIR, "a folder"),
    rl_config(OUTSIDE, "outside"),
    rl_config(edit(lambda c: _set(c, "config", [])), "config a list"),
    rl_config(edit(lambda c: _set(c, "kind", "x")), "kind unknown"),
    rl_config(edit(lambda c: c["config"].update(turn_cost="x")), "turn_cost a string"),
    rl_config(edit(lambda c: c["config"].update(turn_cost=float("nan"))), "turn_cost NaN"),
    # one rule for the turn cost (EnvConfig's: finite, >= 0), whoever wrote the file
    rl_config(edit(lambda c: c["config"].update(turn_cost=1e300)), "turn_cost 1e300", (0,)),
    rl_config(edit(lambda c: c["config"].pop("turn_cost")), "turn_cost missing"),
    rl_config(edit(lambda c: c["config"].update(realization=5)), "realization a number"),
    rl_config(edit(lambda c: c["config"].update(access="Q")), "access unknown"),
    rl_config(edit(lambda c: c["config"].update(access=["T"])), "access a list"),
    rl_config(edit(lambda c: c["config"].update(seed="x")), "seed a string"),
    rl_config(edit(lambda c: c.pop("encoder")), "encoder missing"),
    rl_config(edit(lambda c: _set(c, "encoder", [])), "encoder a list"),
    rl_config(edit(lambda c: _set(c, "algorithm", {"x": 1})), "algorithm an object"),
    rl_config(edit(lambda c: c["config"].update(env=[])), "env a list"),
    case(
        RL + " --out {w}/rl {model}",
        (2,),
        (("model/model.zip", b"not a zip"),),
        name="model.zip garbage",
    ),
    case(RL + " --out {w}/rl {model}", (2,), (("model/model.zip", b""),), name="model.zip empty"),
    case(
        RL + " --out {w}/rl {model}", (2,), (("model/model.zip", ZERO),), name="model.zip /dev/zero"
    ),
    case(RL + " --out {w}/rl {model}", (2,), (("model/model.zip", FIFO),), name="model.zip a FIFO"),
    case(
        RL + " --out {w}/rl {model}", (2,), (("model/model.zip", DIR),), name="model.zip a folder"
    ),
    case(RL + " --out {w}/rl ''"),
    case(RL + " --out {w}/rl /proc"),
    case(RL + " --out {w}/rl {i}/adir"),
    case(RL + " --out {w}/rl {i}/zero"),
    case(RL + " --out {w}/rl ppo:{i}/fifo"),
    case(RL + " --out {w}/rl --runs " + BIG + " {model}"),
    case(RL + " --out {w}/rl --workers " + BIG + " {model}"),
    case(RL + " --out {w}/rl --turn-cost inf {model}"),
    case(RL + " --out {w}/rl --turn-cost '' {model}"),
    case(RL + " --out {i}/zero {model}"),
    case(RL + " --out '' {model}"),
    case(
        RL + " --out {w}/rl {model}",
        (2,),
        (("w/rl/model.jsonl", OUTSIDE),),
        name="results outside",
    ),
    case(RL.replace("{i}/one.jsonl", "{i}/deep.jsonl") + " --out {w}/rl {model}"),
    case(RL.replace("{i}/one.jsonl", "{i}/zero.jsonl") + " --out {w}/rl {model}"),
    case(
        EV + " --out {w}/e --agents ppo:{model}",
        (2,),
        ((CONF, "[]"),),
        name="eval: config.json a list",
    ),
    case("demo --agent ppo:{model}", (2,), ((CONF, ZERO),), name="demo: config.json /dev/zero"),
    # -- scenarios -----------------------------------------------------------------------------
    case("scenarios validate {i}/empty.jsonl"),
    case("scenarios validate {i}/notutf8.json"),
    case("scenarios validate {i}/list.jsonl"),
    case("scenarios validate {i}/null.json"),
    case("scenarios validate {i}/str.json"),
    case("scenarios validate {i}/huge.json"),
    case("scenarios validate {i}/nan.json"),
    case("scenarios validate {i}/zero.jsonl"),
    case("scenarios validate {i}/fifo.json"),
    case("scenarios validate {i}/dangling.json"),
    case("scenarios validate {i}/out.jsonl"),
    case("scenarios validate ''"),
    case("scenarios validate /proc/self/status"),
    case("scenarios validate {i}/new{nl}line.jsonl", (0,)),
    scenario_field("id", {"x": 1}),
    scenario_field("id", ""),
    scenario_field("domain", 5),
    scenario_field("candidates", "x"),
    scenario_field("attributes", None),
    scenario_field("needs", [[[]]]),
    scenario_field("split", "dev"),
    scenario_field("context", []),
    scenario_field("requirement", float("nan")),
    scenario_field("identifiability", {"x": 1e308}),
    case(
        "scenarios validate {i}/one.jsonl",
        (2,),
        (("in/one.jsonl", lines_of(lambda d: d["candidates"][0].update(values=None))),),
        name="scenario a candidate's values null",
    ),
    case("scenarios show {sid} --scenario-file {i}/zero.jsonl"),
    case("scenarios show {sid} --scenario-file {i}/deep.jsonl"),
    case("scenarios list --scenario-file {i}/fifo.jsonl"),
    case("scenarios list --scenario-file {i}/adir.jsonl"),
    case("scenarios export --out {i}/zero"),
    case("scenarios export --out {i}/fifo"),
    case("scenarios export --out {i}/adir"),
    case("scenarios export --out ''"),
    case("scenarios export --out /proc/self/x.jsonl"),
    case("scenarios export --out {i}/out.jsonl --scenario-file {i}/one.jsonl", (0,)),
    case("scenarios export --format hf --out {i}/empty.json"),
    case(
        "scenarios export --format hf --out {w}/hf --scenario-file {i}/one.jsonl",
        (0, 2),
        (("w/hf/data", OUTSIDE_DIR),),
        name="data folder outside",
    ),
    case(
        "scenarios export --format hf --out {w}/hf --scenario-file {i}/one.jsonl",
        (0, 2),
        (("w/hf/README.md", OUTSIDE),),
        name="README outside",
    ),
    case("scenarios leakage --no-semantic --no-episodes --scenario-file {i}/zero.jsonl"),
    case("scenarios leakage --no-semantic --no-episodes --json {i}/zero"),
    case("scenarios leakage --no-semantic --no-episodes --json {i}/fifo"),
    case("scenarios leakage --no-semantic --no-episodes --json {i}/adir"),
    case("scenarios leakage --no-semantic --no-episodes --json ''"),
    case(
        "scenarios leakage --no-semantic --no-episodes --scenario-file {i}/one.jsonl --domains {i}/zero"
    ),
    case(
        "scenarios leakage --no-semantic --no-episodes --scenario-file {i}/one.jsonl --domains {i}/adir"
    ),
    case(
        "scenarios leakage --no-semantic --no-episodes --scenario-file {i}/one.jsonl --domains {w}/d",
        (2,),
        (("w/d/airport-rides.json", DEEP_OBJ),),
        name="a domain file deep",
    ),
    case(
        "scenarios leakage --no-semantic --no-episodes --scenario-file {i}/one.jsonl --domains {w}/d",
        (2,),
        (("w/d/airport-rides.json", ZERO),),
        name="a domain file /dev/zero",
    ),
    case(
        "scenarios leakage --no-semantic --no-episodes --scenario-file {i}/one.jsonl --domains {w}/d",
        (2,),
        (("w/d/airport-rides.json", "[]"),),
        name="a domain file a list",
    ),
    # -- demo, render, perceive ----------------------------------------------------------------
    case("demo --seed " + BIG, (0, 2)),
    case("demo --scenario ''"),
    case("demo --agent ppo:{i}/zero"),
    case("demo --agent ppo:''"),
    case("demo --save-audio {i}/zero"),
    case("demo --save-audio {i}/fifo"),
    case("demo --save-audio {i}/empty.json"),
    case("demo --save-audio /proc/self"),
    case(
        "demo --save-audio {w}/wav",
        (0, 2),
        (("w/wav/resolved_" + "{persona}" + "_v0.wav", OUTSIDE),),
        name="a WAV outside",
    ),
    case("render --limit 1 --scenario-file {i}/zero.jsonl --audio-cache {w}/c"),
    case("render --limit 1 --scenario-file {i}/deep.json --audio-cache {w}/c"),
    case("render --limit 1 --scenario-file {i}/notutf8.jsonl --audio-cache {w}/c"),
    case("render --limit 1 --scenario-file {i}/one.jsonl --audio-cache {i}/zero"),
    case("render --limit 1 --scenario-file {i}/one.jsonl --audio-cache {i}/fifo"),
    case("render --limit 1 --scenario-file {i}/one.jsonl --audio-cache {i}/empty.json"),
    case("render --limit 1 --scenario-file {i}/one.jsonl --audio-cache /proc/self"),
    case("render --limit 1 --scenario-file {i}/one.jsonl --audio-cache {w}/c --workers " + BIG),
    case(
        "render --limit 1 --scenario-file {i}/one.jsonl --audio-cache {w}/c --prosody-strength inf"
    ),
    case("render --limit '' --audio-cache {w}/c"),
    case("render --limit 1e400 --audio-cache {w}/c"),
    case("perceive --save-perceiver {i}/zero"),
    case("perceive --save-perceiver {i}/fifo"),
    case("perceive --save-perceiver {i}/adir"),
    case("perceive --save-perceiver /proc/self/x.json"),
    case("perceive --ablation --json {i}/zero"),
    case("perceive --ablation --json {i}/fifo"),
    case("perceive --ablation --json ''"),
    case("perceive --per-scenario " + BIG),
    case("perceive --per-scenario 0"),
    case("perceive --train-stride ''"),
    case("perceive --curve 1 nan"),
    case("perceive --curve 1e400"),
    case("perceive --prosody-strength -1"),
    case("perceive --renderer ''"),
    # -- blank paths: never the current folder, never "not given" ---------------------------
    case("render --limit 1 --scenario-file {i}/one.jsonl --audio-cache ''"),
    case("render --limit 1 --scenario-file '' --audio-cache {w}/c"),
    case("perceive --save-perceiver ''"),
    case("perceive --audio-cache ''"),
    case("demo --save-audio ''"),
    case("scenarios show {sid} --scenario-file ''"),
    case("scenarios leakage --no-semantic --no-episodes --domains ''"),
    case("play --name ada --episodes 1 --scenario-file '' --out {w}/p/r.jsonl"),
    case(RL.replace("{i}/one.jsonl", "''") + " --out {w}/rl {model}"),
    case("view {run} --no-plots --audio-cache '' --out {w}/s"),
    case("train --timesteps 1 --quiet --out ''"),
    case("train --timesteps 1 --quiet --root ' '"),
    case("train --timesteps 1 --quiet --out {w}/t --init-from ''"),
    case("train --timesteps 1 --quiet --out {w}/t --tensorboard ''"),
    case(
        "report {run}/results.jsonl --episode nothing-like-it",
        (2,),
        ((LOG, json.dumps(LOG_LINE) + "\n"),),
        name="agent log: no episode matches",
    ),
    case(OA + " --setting timeout=nan"),
    case(OA + " --setting top_p=NaN"),
    case(OA + " --setting backoff_max=inf"),
    # -- train: refused before any training ----------------------------------------------------
    case("train --timesteps 1 --quiet --out {w}/t --scenario-file {i}/zero.jsonl"),
    case("train --timesteps 1 --quiet --out {w}/t --scenario-file {i}/fifo.jsonl"),
    case("train --timesteps 1 --quiet --out {w}/t --scenario-file {i}/deep.json"),
    case("train --timesteps 1 --quiet --out {w}/t --scenario-file {i}/list.json"),
    case("train --timesteps 1 --quiet --out {w}/t --scenario-file ''"),
    case("train --timesteps 1 --quiet --out {i}/zero"),
    case("train --timesteps 1 --quiet --out {i}/fifo"),
    case("train --timesteps 1 --quiet --out {i}/empty.json"),
    case("train --timesteps 1 --quiet --root {i}/zero"),
    case("train --timesteps 1 --quiet --out {w}/t --init-from {i}/adir"),
    case("train --timesteps 1 --quiet --out {w}/t --init-from {i}/zero"),
    case(
        "train --timesteps 1 --quiet --out {w}/t --init-from {model}",
        (2,),
        ((CONF, "[]"),),
        name="init config.json a list",
    ),
    case("train --timesteps " + BIG + " --quiet --out {w}/t"),
    case("train --timesteps 1 --seed " + BIG + " --quiet --out {w}/t"),
    case("train --timesteps 1 --threads " + BIG + " --quiet --out {w}/t"),
    case("train --timesteps 1 --n-envs " + BIG + " --quiet --out {w}/t"),
    case("train --timesteps 1 --eval-episodes " + BIG + " --quiet --out {w}/t"),
    case("train --timesteps 1 --max-actions " + BIG + " --quiet --out {w}/t"),
    case("train --timesteps 1 --turn-cost 1e400 --quiet --out {w}/t"),
    case("train --timesteps 1 --eval-every '' --quiet --out {w}/t"),
    # -- play (served pages return at once) ----------------------------------------------------
    case("play --name ada --episodes 1 --out {i}/zero"),
    case("play --name ada --episodes 1 --out {i}/fifo"),
    case("play --name ada --episodes 1 --out {i}/adir"),
    case("play --name ada --episodes 1 --out {i}/out.jsonl"),
    case("play --name ada --episodes 1 --out {w}/p/results.jsonl", (0,)),
    case(
        "play --name ada --episodes 1 --out {w}/p/results.jsonl",
        (0, 2),
        (("w/p/results.manifest.json", ZERO),),
        name="manifest /dev/zero",
    ),
    case("play --name ada --episodes 1 --out ''"),
    case("play --name ada --episodes " + BIG),
    case("play --name '' --episodes 1"),
    case("play --name ../x --episodes 1"),
    case("play --name ada --episodes 1 --scenario-file {i}/zero.jsonl --out {w}/p/r.jsonl"),
    case("play --name ada --episodes 1 --scenario-file {i}/deep.json --out {w}/p/r.jsonl"),
    case("play --name ada --episodes 1 --turn-cost nan --out {w}/p/r.jsonl"),
]


# -- running a case --------------------------------------------------------------------------
class CaseTimeout(BaseException):
    """A case ran past ``CASE_SECONDS`` (a hang)."""


def _on_alarm(signum: int, frame: Any) -> None:  # noqa: ARG001
    raise CaseTimeout(f"still running after {CASE_SECONDS} s")


def _fill(text: str, place: dict[str, str]) -> str:
    for key, value in place.items():
        text = text.replace("{" + key + "}", value)
    return text


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file() or stat.S_ISFIFO(os.lstat(path).st_mode):
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _put(path: Path, value: Any, place: dict[str, str], tmp: Path) -> None:
    """Put ``value`` (``Setup``) at ``path``."""
    if callable(value):
        value(path)
        return
    if os.path.lexists(path):
        _remove(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    outside = tmp / "outside"
    if value == DIR:
        path.mkdir()
    elif value == FIFO:
        os.mkfifo(path)
    elif value == ZERO:
        path.symlink_to("/dev/zero")
    elif value == DANGLING:
        path.symlink_to(path.parent / "nowhere")
    elif value == OUTSIDE:
        path.symlink_to(outside / "secret.txt")
    elif value == OUTSIDE_DIR:
        path.symlink_to(outside)
    elif isinstance(value, bytes):
        path.write_bytes(value)
    else:
        path.write_text(_fill(value, place))


def _snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every entry below ``folder``: (mode, mtime_ns, bytes of regular files)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            info = os.lstat(path)
            data = path.read_bytes() if stat.S_ISREG(info.st_mode) else b""
            out[str(path.relative_to(folder))] = (info.st_mode, info.st_mtime_ns, data)
    return out


def _listing(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()


@pytest.fixture
def place(tmp_path: Path, bases: Bases, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The case's folder: odd inputs, an outside file, a working folder to run in."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    _inputs(tmp_path / "in", bases.one)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    from hear2act_env.protocol.scenario import PERSONAS

    return {
        "i": str(tmp_path / "in"),
        "w": str(tmp_path / "w"),
        "o": str(outside / "secret.txt"),
        "run": str(tmp_path / "run"),
        "audit": str(tmp_path / "audit"),
        "model": str(tmp_path / "model"),
        "sid": SID,
        "nl": "\n",
        "persona": PERSONAS[0],
    }


def _copy_bases(line: str, setup: Setup, place: dict[str, str], bases: Bases) -> None:
    """Fresh copies of the folders the case names (``{run}``, ``{audit}``, ``{model}``)."""
    sources = {"run": bases.run, "audit": bases.audit, "model": SHIPPED_MODEL}
    for key, source in sources.items():
        if "{" + key + "}" in line or any(p.startswith(key + "/") for p, _ in setup):
            shutil.copytree(source, place[key], symlinks=True)


def test_the_sweep_is_large_and_covers_every_command() -> None:
    lines = [p.values[0] for p in CASES]
    assert len(lines) >= 150
    commands = {line.split()[0] for line in lines}
    assert commands == {
        "demo", "render", "perceive", "scenarios", "benchmark", "eval", "report", "train",
        "rl-eval", "view", "play", "audit",
    }  # fmt: skip
    assert len({p.id for p in CASES}) == len(CASES), "case ids repeat"


@pytest.mark.parametrize(("line", "codes", "setup"), CASES)
def test_an_odd_file_ends_in_a_result_or_one_line_error(
    line: str, codes: tuple[int, ...], setup: Setup, place: dict[str, str], bases: Bases, capsys
) -> None:
    tmp = Path(place["i"]).parent
    _copy_bases(line, setup, place, bases)
    for rel, value in setup:
        _put(tmp / _fill(rel, place), value, place, tmp)
    argv = [_fill(part, place) for part in shlex.split(line)]
    outside = _snapshot(tmp / "outside")
    around = {p: _listing(p) for p in (ROOT, tmp.parent)}
    capsys.readouterr()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(CASE_SECONDS)
    usage = False
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code, usage = exc.code, True
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err[-2000:]
    assert code in (0, 2, 3), f"exit {code}: {err[-1500:]}"
    if usage:
        assert code == 2, err[-800:]
    elif code != 0:
        last = [text for text in err.splitlines() if text.strip()][-1:]
        assert last and last[0].startswith("hear2act:"), f"exit {code}: {err[-1500:]}"
    assert code in codes, f"exit {code}, expected {codes}: {err[-1500:]}"
    assert _snapshot(tmp / "outside") == outside, "a file outside the case's folders changed"
    assert {p: _listing(p) for p in around} == around, "a file was made outside the case's folder"
