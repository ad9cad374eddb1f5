"""Export a scenario bank as JSONL or as a Hugging Face ``datasets`` folder, optionally with the
perception check's test clips as a second config (``clips``).

The plain folder is ``data/train.jsonl``, ``data/test.jsonl`` and a ``README.md`` card. With
clips (``ClipExport``), each test clip of ``hear2act perceive`` (``bank_perception.collect_clips``
with ``TEST_SEED`` over the test split, the held-out voices) is written as a 16-bit WAV file
under ``audio/test/`` with a row of ``audio/test/metadata.jsonl`` (the audiofolder layout), and
as ``data/clips/test.parquet`` with the WAV bytes embedded. ``datasets`` loads every config of a
folder with one builder, chosen from the first config's files, so with clips the ``default``
config reads ``data/train.parquet`` and ``data/test.parquet`` (the JSONL rows as parquet) and
``clips`` reads the parquet file. pyarrow is imported only for clips.
"""

from __future__ import annotations

import io
import json
import wave
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hear2act_env import safewrite
from hear2act_env.config import DEFAULT_PROSODY_STRENGTH
from hear2act_env.errors import ConfigError, MissingExtraError
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.scenarios.bank import dumps_bank

ExportFormat = Literal["jsonl", "hf"]

__all__ = [
    "AUDIO_DIR",
    "ClipExport",
    "ClipRow",
    "ExportFormat",
    "export_bank",
    "perception_test_clips",
    "wav_bytes",
]

#: Where the clips' WAV files and ``metadata.jsonl`` go, inside the dataset folder.
AUDIO_DIR = "audio/test"
#: The clips as parquet (what the ``clips`` config loads), inside the dataset folder.
CLIPS_PARQUET = "data/clips/test.parquet"
#: The extra that installs pyarrow (it comes with ``datasets``).
PYARROW_EXTRA = "share"
_SPLITS = ("train", "test")
_SAMPLE_RATE = 16_000

_CARD_HEAD = """---
license: cc-by-sa-4.0
pretty_name: Hear2Act scenario bank
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train.{ext}
  - split: test
    path: data/test.{ext}
"""

_CARD_BODY = """---
# Hear2Act scenario bank

{n} scenarios ({n_domains} service domains x 10) of the Hear2Act benchmark, exported by
hear2act-env. Each row is one scenario: the user's request, the visible requirement, the favored
attribute, three hidden needs (L1-L3), and 11 candidate options with their roles. Load with
`datasets.load_dataset("path/to/this/folder")`; play them with
`gym.make("Hear2Act-Prosody-Text-v0", scenarios="data/test.jsonl")`.

Seeded from the Schema-Guided Dialogue service schemas (Rastogi et al., 2020), CC BY-SA 4.0.
"""

_CLIPS_CONFIG = f"""- config_name: clips
  data_files:
  - split: test
    path: {CLIPS_PARQUET}
"""

_CLIPS_SECTION = """
## Clips (config `clips`)

{n_clips} spoken user reactions: the test clips the perception check (`hear2act perceive`)
scores, from the {which}, rendered by {renderer} at prosody strength
{strength}, 16 kHz mono 16-bit PCM, balanced between resolved and unresolved reactions within
each realization ({realizations}). Under `prosody` an accepting reaction's words are the same
whether the recommendation is resolved or not, and only the voice tells them apart; under
`explicit` the words say it too.

Each clip is a WAV file under `audio/test/`, listed in `audio/test/metadata.jsonl`, and a row of
`data/clips/test.parquet` (the bytes embedded), which the config loads. (`datasets` reads all
configs of a folder with one loader, so here the `default` config reads `data/train.parquet`
and `data/test.parquet`: the rows of the JSONL files, which stay for `gym.make`.)

| column | what it holds |
| --- | --- |
| `audio` | the WAV file (`bytes`, and `path` relative to this folder) |
| `file_name` | the WAV file's path relative to this folder |
| `scenario` | the scenario id the clip comes from |
| `domain` | the scenario's service domain |
| `text` | the words spoken |
| `state` | the user's state behind them: `resolved`, `reluctant` or `concern` |
| `label` | `resolved` or `unresolved` (reluctant and concern): what a listener must hear |
| `voice` | the held-out test voice that speaks |
| `delivery` | the delivery label the voice realizes (e.g. `warm`, `hesitant`) |
| `realization` | `prosody` (Prosody-mediated) or `explicit` (Explicit lexical) |
| `renderer` | the text-to-speech renderer |

```python
import io

import datasets
import soundfile

clips = datasets.load_dataset("path/to/this/folder", "clips", split="test")
clips = clips.cast_column("audio", datasets.Audio(decode=False))  # no torchcodec needed
samples, rate = soundfile.read(io.BytesIO(clips[0]["audio"]["bytes"]), dtype="int16")
```
"""


@dataclass(frozen=True)
class ClipExport:
    """Which clips an hf export adds: the perception check's test clips (``hear2act perceive``
    defaults), over the first ``limit`` test-split scenarios (0: all of them).

    Attributes:
        realizations: the realizations whose clips are written.
        renderer: the voice (a ``Renderer``); None: the default espeak-ng voice.
        cache: an ``AudioCache`` to render through (None: render every clip).
        prosody_strength: the strength the clips are spoken at.
        per_scenario: random recommendations per scenario (``perceive --per-scenario``).
        limit: only the first N test scenarios (0: all); their clips are the ones the check
            would score on those scenarios alone.
    """

    realizations: tuple[str, ...] = ("prosody", "explicit")
    renderer: Any = None
    cache: Any = None
    prosody_strength: float = DEFAULT_PROSODY_STRENGTH
    per_scenario: int = 6
    limit: int = 0


@dataclass(frozen=True)
class ClipRow:
    """One clip's row of ``audio/test/metadata.jsonl`` (``file_name`` relative to that folder)."""

    file_name: str
    scenario: str
    domain: str
    text: str
    state: str
    label: str
    voice: str
    delivery: str
    realization: str
    renderer: str


def export_bank(
    scenarios: Sequence[Scenario],
    out: Path,
    fmt: ExportFormat,
    clips: ClipExport | None = None,
) -> list[Path]:
    """Write ``scenarios`` to ``out`` (a file for jsonl, a folder for hf); return written paths.
    With ``clips`` (hf only), also the perception check's test clips as the ``clips`` config."""
    if fmt == "jsonl":
        if clips is not None:
            raise ConfigError("clips: only an hf export holds clips (got the jsonl format)")
        return [safewrite.write_atomic(out, dumps_bank(scenarios))]
    rendered: list[tuple[ClipRow, np.ndarray]] = []
    if clips is not None:  # rendered first: nothing is written when there are no clips
        _pyarrow()
        if clips.renderer is None:
            clips = replace(clips, renderer=_default_renderer())
        rendered = perception_test_clips(scenarios, clips)
        if not rendered:
            raise ConfigError(
                f"clips: the {_test_scenarios(scenarios, clips.limit)} give no clips (the check "
                "keeps as many resolved as unresolved reactions); take more test scenarios"
            )
    data = safewrite.ensure_folder(out / "data", root=out)
    texts = {split: _split_jsonl(scenarios, split) for split in _SPLITS}
    written = [
        safewrite.write_text(data / f"{split}.jsonl", text, root=out)
        for split, text in texts.items()
    ]
    card = _CARD_HEAD.format(ext="parquet" if clips else "jsonl")
    body = _CARD_BODY.format(n=len(scenarios), n_domains=len({s.domain for s in scenarios}))
    if clips is not None:
        written += _write_scenario_parquet(texts, out)
        rows, clip_paths = _write_clips(rendered, out)
        written += clip_paths
        card += _CLIPS_CONFIG
        body += _clips_section(rows, clips, scenarios)
    written.append(safewrite.write_text(out / "README.md", card + body, root=out))
    return written


def _split_jsonl(scenarios: Sequence[Scenario], split: str) -> str:
    rows = [json.dumps(s.to_dict(), sort_keys=True) for s in scenarios if s.split == split]
    return "\n".join(rows) + "\n"


def _pyarrow() -> tuple[Any, Any, Any]:
    """``pyarrow``, ``pyarrow.json`` and ``pyarrow.parquet``, or ``MissingExtraError``."""
    try:
        import pyarrow as pa
        import pyarrow.json as paj
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingExtraError(PYARROW_EXTRA, exc.name or "pyarrow") from None
    return pa, paj, pq


def _parquet_bytes(table: Any) -> bytes:
    pa, _, pq = _pyarrow()
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def _write_scenario_parquet(texts: dict[str, str], out: Path) -> list[Path]:
    """The JSONL rows of each split as ``data/{split}.parquet``, read by pyarrow's JSON reader
    (the one ``datasets`` reads JSONL with) over both splits, so they share one schema."""
    pa, paj, _ = _pyarrow()
    blob = "".join(texts[split] for split in _SPLITS).encode("utf-8")
    if not blob.strip():
        raise ConfigError("scenarios: nothing to export (no scenarios)")
    table = paj.read_json(io.BytesIO(blob))
    splits = table.column("split").to_pylist()
    parts = {name: table.filter(pa.array([s == name for s in splits])) for name in _SPLITS}
    return [
        safewrite.write_atomic(out / "data" / f"{split}.parquet", _parquet_bytes(part), out)
        for split, part in parts.items()
    ]


def perception_test_clips(
    scenarios: Sequence[Scenario], clips: ClipExport
) -> list[tuple[ClipRow, np.ndarray]]:
    """The perception check's test clips of ``scenarios`` (their test split, the first
    ``clips.limit``) as ``(row, 16-bit samples)``, in ``collect_clips`` order per realization
    (``collect_tagged_clips`` draws the same clips, with their scenario ids); the samples are
    the waveform the check hears (``cache.speak``) on the 16-bit grid."""
    from hear2act_env.protocol.delivery import STATE_OF_DELIVERY
    from hear2act_env.speech.bank_perception import TEST_SEED, collect_tagged_clips
    from hear2act_env.speech.cache import PCM_SCALE, speak

    renderer = clips.renderer if clips.renderer is not None else _default_renderer()
    test = [s for s in scenarios if s.split == "test"]
    test = test[: clips.limit] if clips.limit else test
    domains = {s.id: s.domain for s in test}
    out = []
    for realization in clips.realizations:
        tagged = collect_tagged_clips(
            test, realization, clips.prosody_strength, clips.per_scenario, seed=TEST_SEED
        )
        for i, (utt, resolved, scenario) in enumerate(tagged):
            samples = speak(renderer, utt, clips.cache)
            pcm = np.round(np.clip(samples, -1.0, 1.0) * PCM_SCALE).astype("<i2")
            row = ClipRow(
                file_name=f"{realization}-{i:04d}-{scenario}.wav",
                scenario=scenario,
                domain=domains[scenario],
                text=utt.text,
                state=STATE_OF_DELIVERY[utt.delivery].label,
                label="resolved" if resolved else "unresolved",
                voice=utt.persona,
                delivery=utt.delivery,
                realization=realization,
                renderer=str(renderer.name),
            )
            out.append((row, pcm))
    return out


def _test_scenarios(scenarios: Sequence[Scenario], limit: int) -> str:
    """Which test scenarios the clips come from, in words."""
    n_test = sum(s.split == "test" for s in scenarios)
    if 0 < limit < n_test:
        return f"first {limit} of {n_test} test scenarios"
    return f"{n_test} test scenarios"


def _default_renderer() -> Any:
    from hear2act_env.speech.renderers import make_renderer

    return make_renderer("espeak", "renderer")


def wav_bytes(pcm: np.ndarray, sample_rate: int = _SAMPLE_RATE) -> bytes:
    """Mono 16-bit PCM samples as the bytes of a WAV file."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as fh:
        fh.setnchannels(1)
        fh.setsampwidth(2)
        fh.setframerate(sample_rate)
        fh.writeframes(np.asarray(pcm, dtype="<i2").tobytes())
    return buf.getvalue()


def _write_clips(
    rendered: list[tuple[ClipRow, np.ndarray]], out: Path
) -> tuple[list[ClipRow], list[Path]]:
    """The WAV files, ``metadata.jsonl`` and the clips' parquet file; the rows and paths."""
    pa, _, _ = _pyarrow()
    folder = safewrite.ensure_folder(out / AUDIO_DIR, root=out)
    rows, records, written = [], [], []
    for row, pcm in rendered:
        blob = wav_bytes(pcm)
        written.append(safewrite.write_atomic(folder / row.file_name, blob, out))
        path = f"{AUDIO_DIR}/{row.file_name}"
        records.append({"audio": {"bytes": blob, "path": path}, **asdict(row), "file_name": path})
        rows.append(row)
    meta = "".join(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in rows)
    written.append(safewrite.write_text(folder / "metadata.jsonl", meta, root=out))
    safewrite.ensure_folder(out / Path(CLIPS_PARQUET).parent, root=out)
    table = pa.Table.from_pylist(records, schema=_clips_schema(pa))
    written.append(safewrite.write_atomic(out / CLIPS_PARQUET, _parquet_bytes(table), out))
    return rows, written


def _clips_schema(pa: Any) -> Any:
    """The clips' arrow schema, with the ``datasets`` features (``audio`` an ``Audio``) in its
    metadata, as ``datasets`` writes them."""
    names = [f.name for f in fields(ClipRow)]
    features = {"audio": {"sampling_rate": _SAMPLE_RATE, "_type": "Audio"}}
    features.update({n: {"dtype": "string", "_type": "Value"} for n in names})
    audio = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode("utf-8")}
    return pa.schema([("audio", audio), *((n, pa.string()) for n in names)], metadata=meta)


def _clips_section(rows: list[ClipRow], clips: ClipExport, scenarios: Sequence[Scenario]) -> str:
    """The card's words on the clips."""
    renderer = clips.renderer
    return _CLIPS_SECTION.format(
        n_clips=len(rows),
        which=_test_scenarios(scenarios, clips.limit),
        renderer=f"`{renderer.name}` (version `{renderer.version}`)",
        strength=clips.prosody_strength,
        realizations=", ".join(f"`{r}`" for r in clips.realizations),
    )
