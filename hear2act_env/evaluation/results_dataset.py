"""Results as a Hugging Face ``datasets`` folder: one parquet row per episode record.

``export_results`` reads results JSONL files (``runner.load_records``; several files merge, the
first file's record of a key winning, as ``hear2act report`` merges them) and writes
``data/results.parquet`` with a ``README.md`` dataset card, a folder that
``datasets.load_dataset(folder)`` reads. Key and metric fields are flat columns; the action
counts and agent stats are JSON strings; each row carries its file's manifest (bank version and
checksum, the run's configuration) when the file has one. pyarrow is imported only here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hear2act_env import safewrite
from hear2act_env.errors import ConfigError, MissingExtraError
from hear2act_env.evaluation.records import EpisodeRecord

__all__ = ["COLUMNS", "EXPORT_MARKER", "Column", "check_output", "export_results"]

#: The extra that installs pyarrow (it comes with ``datasets``).
PYARROW_EXTRA = "share"
#: A line of every card this module writes: how a folder is known to be an earlier export.
EXPORT_MARKER = "<!-- written by hear2act export-results -->"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_INT64 = 2**63


@dataclass(frozen=True)
class Column:
    """One column of ``data/results.parquet``: its name, type (a key of ``_ARROW_TYPES``) and
    what it holds (the dataset card's words)."""

    name: str
    kind: str
    doc: str


#: The columns, in order (the dataset card lists them with these words).
COLUMNS: tuple[Column, ...] = (
    Column("agent", "string", "the agent's name as the run recorded it"),
    Column(
        "realization", "string", "`prosody` (Prosody-mediated) or `explicit` (Explicit lexical)"
    ),
    Column("access", "string", "the channels the agent had: `T`, `T+S` or `A+T`"),
    Column("fidelity", "string", "how the state channel was given (`correct`, `shuffled`, ...)"),
    Column("condition", "string", "access and fidelity as one label, e.g. `T+S/shuffled`"),
    Column("scenario", "string", "the scenario id, e.g. `city-hotels-09`"),
    Column("run", "int64", "the run index of this (scenario, condition) episode, from 0"),
    Column("seed", "int64", "the env seed of the episode"),
    Column("success", "bool", "the episode ended on the best option"),
    Column("final_option", "int64", "the option the episode ended on (null: none)"),
    Column("best", "int64", "the scenario's best option"),
    Column("reward", "float64", "the episode's total reward"),
    Column("terminated", "bool", "the episode ended by the agent's decision"),
    Column("truncated", "bool", "the episode was cut at the action limit"),
    Column("actions", "int64", "actions the agent took (its turns)"),
    Column("counts", "json", "actions by kind (`ask_targeted`, `ask_open`, ...), a JSON object"),
    Column(
        "recommend_patterns",
        "strings",
        "each recommendation's pattern: `r`/`v` (requirement met or violated), then L1-L3 bits",
    ),
    Column("steps", "steps", "the actions in order, `[act, option, topic]` each"),
    Column("revealed", "strings", "the needs the user revealed (`L1`, `L2`, `L3`)"),
    Column("premature_closure", "bool", "the agent confirmed an option while a need was unmet"),
    Column("reluctant_turns", "int64", "user turns in the reluctant state the agent answered"),
    Column("confirm_after_reluctant", "int64", "of those, answered by confirming at once (a miss)"),
    Column("privileged", "bool", "the agent was given the ground truth (the oracle)"),
    Column("agent_stats", "json", "the agent's own counters (calls, tokens, ...), a JSON object"),
    Column("error", "string", "why the episode has no result (null: it finished)"),
    Column("error_kind", "string", "`infrastructure`, `config` or `agent` (null: no error)"),
    Column("source", "string", "the results file, relative to the folder the given files share"),
    Column("bank_version", "int64", "the scenario bank version, from the file's manifest"),
    Column("bank_sha256", "string", "the scenario bank's SHA-256, from the file's manifest"),
    Column("hear2act_env", "string", "the hear2act-env version that ran it, from the manifest"),
    Column("config", "json", "the run's configuration from the manifest, a JSON object"),
)


@dataclass(frozen=True)
class SourceFile:
    """A results file with what its manifest says (None where it has no manifest or field)."""

    path: Path
    name: str
    bank_version: int | None
    bank_sha256: str | None
    hear2act_env: str | None
    config: str | None


def check_output(out: str | os.PathLike[str], flag: str = "out") -> Path:
    """``out`` as a ``Path`` when an export may write there: missing, an empty folder, or a
    folder an earlier export wrote (its card carries ``EXPORT_MARKER``); else a
    ``ConfigError`` naming ``flag`` (a file, or a folder of something else)."""
    path = Path(out).expanduser()
    if not str(out).strip():
        raise ConfigError(f"{flag}: an empty path ({str(out)!r}); expected a folder")
    if not path.exists():
        return path
    if not path.is_dir():
        raise ConfigError(f"{flag}: {path} is not a folder; expected a new or empty folder")
    if any(path.iterdir()) and not _is_export(path):
        raise ConfigError(
            f"{flag}: {path} is a folder holding other files (no results dataset card written "
            "by hear2act export-results); expected a new or empty folder, or an earlier export"
        )
    return path


def _is_export(folder: Path) -> bool:
    card = folder / "README.md"
    try:
        return card.is_file() and EXPORT_MARKER in card.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def export_results(results_paths: Sequence[str | os.PathLike[str]], out: Path) -> list[Path]:
    """Write the records of ``results_paths`` to the folder ``out`` as ``data/results.parquet``
    and ``README.md``; return the written paths. A key in several files keeps the first file's
    record. ``ConfigError`` when ``out`` is refused (``check_output``), a file is missing or no
    file holds a record; ``MissingExtraError`` without pyarrow."""
    pa, pq = _pyarrow()
    out = check_output(out)
    sources = _sources([Path(p) for p in results_paths])
    rows = [_row(record, source) for record, source in _merged(sources)]
    if not rows:
        names = ", ".join(str(s.path) for s in sources)
        raise ConfigError(f"results: no records in {names}")
    table = pa.Table.from_pylist(rows, schema=_schema(pa))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    data = safewrite.ensure_folder(out / "data", root=out)
    parquet = safewrite.write_atomic(data / "results.parquet", sink.getvalue().to_pybytes(), out)
    card = safewrite.write_text(out / "README.md", _card(rows, sources), root=out)
    return [parquet, card]


def _pyarrow() -> tuple[Any, Any]:
    """``pyarrow`` and ``pyarrow.parquet``, or ``MissingExtraError``."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingExtraError(PYARROW_EXTRA, exc.name or "pyarrow") from None
    return pa, pq


def _sources(paths: list[Path]) -> list[SourceFile]:
    """Each results file with its manifest's fields; ``ConfigError`` for a missing file."""
    if not paths:
        raise ConfigError("results: no results files given")
    for path in paths:
        if not path.is_file():
            raise ConfigError(f"results: {path} is not a file; expected a results JSONL file")
    return [_source(path, name) for path, name in zip(paths, _relative_names(paths))]


def _source(path: Path, name: str) -> SourceFile:
    """``path`` with what its manifest says: a field that is missing or not of the form a run
    writes (a version >= 1, 64 hex digits, a text, an object) is None."""
    from hear2act_env.evaluation.identity import read_manifest

    man = read_manifest(path) or {}
    version, sha = man.get("bank_version"), man.get("bank_sha256")
    made_by, config = man.get("hear2act_env"), man.get("config")
    version_ok = isinstance(version, int) and not isinstance(version, bool) and 0 < version < _INT64
    return SourceFile(
        path=path,
        name=name,
        bank_version=version if version_ok else None,
        bank_sha256=sha if isinstance(sha, str) and _SHA256.fullmatch(sha) else None,
        hear2act_env=made_by if isinstance(made_by, str) else None,
        config=json.dumps(config, sort_keys=True) if isinstance(config, dict) else None,
    )


def _relative_names(paths: list[Path]) -> list[str]:
    """Each path relative to the folder all of them share (``results.jsonl`` for one file;
    ``a/results.jsonl`` and ``b/results.jsonl`` for two runs side by side)."""
    resolved = [p.resolve() for p in paths]
    common = Path(os.path.commonpath([p.parent for p in resolved]))
    return [p.relative_to(common).as_posix() for p in resolved]


def _merged(sources: list[SourceFile]) -> Iterable[tuple[EpisodeRecord, SourceFile]]:
    """The records of every file, one per key, the first file's winning; an agent name run
    with two configurations is labelled ``NAME@HASH`` per configuration
    (``identity.split_mixed``), so their records never take each other's keys."""
    from hear2act_env.evaluation.identity import read_manifest, relabel, split_mixed
    from hear2act_env.evaluation.runner import load_records

    configs = [
        (str(s.path), man["config"])
        for s in sources
        if isinstance(man := read_manifest(s.path) or {}, dict)
        and isinstance(man.get("config"), dict)
    ]
    renames = split_mixed(configs, "export-results").renames
    seen: set[str] = set()
    for source in sources:
        mine = renames.get(str(source.path), {})
        for record in load_records(source.path):
            record = relabel(record, mine)  # one name, two configurations: two agents here too
            if record.key.id() not in seen:
                seen.add(record.key.id())
                yield record, source


def _row(record: EpisodeRecord, source: SourceFile) -> dict[str, Any]:
    """One record as a row of ``COLUMNS``."""
    key = record.key
    if not -_INT64 <= record.seed < _INT64:
        raise ConfigError(
            f"results: {source.path}: episode {key.id()} has seed {record.seed}, outside the "
            "64-bit integers a parquet column holds"
        )
    return {
        "agent": key.agent,
        "realization": key.realization,
        "access": key.access,
        "fidelity": key.fidelity,
        "condition": key.condition,
        "scenario": key.scenario,
        "run": key.run,
        "seed": record.seed,
        "success": record.success,
        "final_option": record.final_option,
        "best": record.best,
        "reward": float(record.reward),
        "terminated": record.terminated,
        "truncated": record.truncated,
        "actions": record.actions,
        "counts": json.dumps(record.counts, sort_keys=True),
        "recommend_patterns": list(record.recommend_patterns),
        "steps": [list(step) for step in record.steps],
        "revealed": list(record.revealed),
        "premature_closure": record.premature_closure,
        "reluctant_turns": record.reluctant_turns,
        "confirm_after_reluctant": record.confirm_after_reluctant,
        "privileged": record.privileged,
        "agent_stats": json.dumps(record.agent_stats, sort_keys=True),
        "error": record.error,
        "error_kind": record.error_kind,
        "source": source.name,
        "bank_version": source.bank_version,
        "bank_sha256": source.bank_sha256,
        "hear2act_env": source.hear2act_env,
        "config": source.config,
    }


def _schema(pa: Any) -> Any:
    """The arrow schema of ``COLUMNS``."""
    types = {
        "string": pa.string(),
        "json": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "strings": pa.list_(pa.string()),
        "steps": pa.list_(pa.list_(pa.int64())),
    }
    return pa.schema([(c.name, types[c.kind]) for c in COLUMNS])


_KIND_WORDS = {
    "string": "string",
    "json": "string (JSON)",
    "int64": "int64",
    "float64": "float64",
    "bool": "bool",
    "strings": "list of strings",
    "steps": "list of int64 triples",
}

_CARD = """---
pretty_name: Hear2Act results
tags:
- hear2act
- benchmark-results
configs:
- config_name: default
  data_files:
  - split: train
    path: data/results.parquet
---
{marker}
# Hear2Act results

Episode results of the Hear2Act benchmark, exported by hear2act-env (`hear2act export-results`)
from {n_files} results file(s): {n_rows} episodes of {n_agents} agent(s){banks}.

Each row is one episode, identified by (agent, realization, access, fidelity, scenario, run).
Where several files held the same episode, the first file's record was kept. An episode with an
`error` has no result: count it as not run, never as a failure. Load it with

```python
import datasets

results = datasets.load_dataset("path/to/this/folder", split="train")
```

## Columns

| column | type | what it holds |
| --- | --- | --- |
{columns}
"""


def _card(rows: list[dict[str, Any]], sources: list[SourceFile]) -> str:
    """The dataset card: YAML front matter with the config, then the columns explained."""
    banks = sorted({(s.bank_version, s.bank_sha256) for s in sources if s.bank_version})
    shown = "; ".join(f"bank version {v}, SHA-256 {sha or 'unknown'}" for v, sha in banks)
    columns = "\n".join(f"| `{c.name}` | {_KIND_WORDS[c.kind]} | {c.doc} |" for c in COLUMNS)
    return _CARD.format(
        marker=EXPORT_MARKER,
        n_files=len(sources),
        n_rows=len(rows),
        n_agents=len({r["agent"] for r in rows}),
        banks=f" ({shown})" if shown else "",
        columns=columns,
    )
