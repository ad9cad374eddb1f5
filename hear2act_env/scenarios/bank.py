"""The shipped scenario bank and user scenario files.

The bank is ``data/bank.jsonl`` (one scenario per line, generated from the domain files by
``build_bank``) with its SHA-256 in ``data/bank.sha256``; loading verifies the checksum. User
files (JSON list, single JSON object, or JSONL) are parsed and validated up front, failing with
``file:line``, the scenario id, the field and what was expected.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from hear2act_env import jsonsafe
from hear2act_env.errors import Hear2ActError, ScenarioError
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.protocol.validator import problems
from hear2act_env.safewrite import write_atomic

#: Version of the shipped bank, recorded in every run manifest (and RL model config): 3, whose
#: needs are drawn last, uniformly among the need triples its option tables admit
#: (docs/domains.md#bank-v3-the-table-first-the-needs-last; version 2's tables admitted few, so
#: an agent could read the answer off them).
BANK_VERSION = 3
DATA = Path(__file__).parent / "data"
BANK_PATH = DATA / "bank.jsonl"
CHECKSUM_PATH = DATA / "bank.sha256"


def dumps_bank(scenarios: Iterable[Scenario]) -> bytes:
    """The canonical bytes of a bank: one sorted-key compact JSON object per line."""
    lines = [json.dumps(s.to_dict(), sort_keys=True, separators=(",", ":")) for s in scenarios]
    return ("\n".join(lines) + "\n").encode("ascii")


def build_bank(
    domain_folder: str | Path | None = None, workers: int | None = None
) -> list[Scenario]:
    """Generate every scenario from the domain files (sorted by domain id), over ``workers``
    processes (default: one per CPU; each scenario has its own seed, so the bytes do not
    depend on it)."""
    from concurrent.futures import ProcessPoolExecutor

    from hear2act_env.scenarios.domain import domain_files, load_domain
    from hear2act_env.scenarios.generator import generate_scenario

    domains = sorted((load_domain(p) for p in domain_files(domain_folder)), key=lambda d: d.id)
    jobs = [(d, i) for d in domains for i in range(len(d.profiles))]
    workers = workers or os.cpu_count() or 1
    if workers == 1:
        return [generate_scenario(d, i) for d, i in jobs]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(generate_scenario, *zip(*jobs), chunksize=4))


def write_bank(scenarios: Sequence[Scenario], folder: Path = DATA) -> str:
    """Write ``bank.jsonl`` and ``bank.sha256`` into ``folder``; return the checksum."""
    data = dumps_bank(scenarios)
    digest = hashlib.sha256(data).hexdigest()
    write_atomic(folder / BANK_PATH.name, data)
    write_atomic(folder / CHECKSUM_PATH.name, (digest + "\n").encode("ascii"))
    return digest


def bank_checksum() -> str:
    """The recorded SHA-256 of the shipped bank."""
    return CHECKSUM_PATH.read_text(encoding="ascii").strip()


@functools.cache
def load_bank() -> tuple[Scenario, ...]:
    """The shipped bank, checksum-verified (cached per process)."""
    data = BANK_PATH.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != bank_checksum():
        raise Hear2ActError(
            f"{BANK_PATH}: checksum {digest[:12]}... does not match {bank_checksum()[:12]}...: "
            "the installed scenario bank is corrupt; reinstall hear2act-env"
        )
    return tuple(_parse_lines(data.decode("ascii").splitlines(), BANK_PATH, validate=False))


def load_scenarios(path: str | Path) -> tuple[Scenario, ...]:
    """Parse and validate a user scenario file (.json list/object or .jsonl)."""
    path = Path(path)
    if not path.is_file():
        raise ScenarioError(f"scenarios: {path} is not a file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"scenarios: cannot read {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ScenarioError(
            f"{path}:{line}: not UTF-8 text (byte {exc.start}); expected a UTF-8 JSON/JSONL file"
        ) from None
    if path.suffix == ".jsonl":
        scenarios = _parse_lines(text.splitlines(), path, validate=True)
    else:
        data = _json(text, str(path), whole_file=True)
        items = data if isinstance(data, list) else [data]
        scenarios = [
            _parse_one(item, f"{path}:{_line_of(text, item, i)}") for i, item in enumerate(items)
        ]
    if not scenarios:
        raise ScenarioError(f"{path}: contains no scenarios")
    ids = [s.id for s in scenarios]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ScenarioError(f"{path}: duplicated scenario ids {dupes}")
    return tuple(scenarios)


def _parse_lines(lines: list[str], path: Path, validate: bool) -> list[Scenario]:
    out = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        data = _json(line, f"{path}:{lineno}")
        out.append(_parse_one(data, f"{path}:{lineno}") if validate else Scenario.from_dict(data))
    return out


def _json(text: str, where: str, whole_file: bool = False) -> object:
    """``json.loads`` whose every failure (bad syntax, absurd nesting, a number too long to
    convert) is a ``ScenarioError`` naming ``where`` (and the line, for a ``whole_file``)."""
    try:
        return jsonsafe.loads(text)
    except json.JSONDecodeError as exc:
        line = f":{exc.lineno}" if whole_file else ""
        raise ScenarioError(f"{where}{line}: invalid JSON: {exc.msg}") from None
    except jsonsafe.JSONDepthError:
        raise ScenarioError(
            f"{where}: invalid JSON: nested too deeply (over {jsonsafe.MAX_DEPTH} levels)"
        ) from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise ScenarioError(f"{where}: invalid JSON: {exc}") from None


def _parse_one(data: object, where: str) -> Scenario:
    try:
        scenario = Scenario.from_dict(data)  # type: ignore[arg-type]
    except ScenarioError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    found = problems(scenario)
    if found:
        raise ScenarioError(f"{where}: " + "; ".join(found))
    return scenario


def _line_of(text: str, item: object, index: int) -> int:
    """Best-effort line number of the ``index``-th object in a JSON list."""
    if isinstance(item, dict) and isinstance(item.get("id"), str):
        pos = text.find(json.dumps(item["id"]))
        if pos >= 0:
            return text.count("\n", 0, pos) + 1
    return 1 if index == 0 else 0
