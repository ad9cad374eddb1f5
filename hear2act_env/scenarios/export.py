"""Export a scenario bank as JSONL or as a Hugging Face ``datasets`` folder."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from hear2act_env import safewrite
from hear2act_env.protocol.scenario import Scenario
from hear2act_env.scenarios.bank import dumps_bank

ExportFormat = Literal["jsonl", "hf"]

_CARD = """---
license: cc-by-sa-4.0
pretty_name: Hear2Act scenario bank
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train.jsonl
  - split: test
    path: data/test.jsonl
---
# Hear2Act scenario bank

{n} scenarios ({n_domains} service domains x 10) of the Hear2Act benchmark, exported by
hear2act-env. Each row is one scenario: the user's request, the visible requirement, the favored
attribute, three hidden needs (L1-L3), and 11 candidate options with their roles. Load with
`datasets.load_dataset("path/to/this/folder")`; play them with
`gym.make("Hear2Act-Prosody-Text-v0", scenarios="data/test.jsonl")`.

Seeded from the Schema-Guided Dialogue service schemas (Rastogi et al., 2020), CC BY-SA 4.0.
"""


def export_bank(scenarios: Sequence[Scenario], out: Path, fmt: ExportFormat) -> list[Path]:
    """Write ``scenarios`` to ``out`` (a file for jsonl, a folder for hf); return written paths."""
    if fmt == "jsonl":
        return [safewrite.write_atomic(out, dumps_bank(scenarios))]
    data = safewrite.ensure_folder(out / "data", root=out)
    written = []
    for split in ("train", "test"):
        path = data / f"{split}.jsonl"
        rows = [json.dumps(s.to_dict(), sort_keys=True) for s in scenarios if s.split == split]
        written.append(safewrite.write_text(path, "\n".join(rows) + "\n", root=out))
    card = safewrite.write_text(
        out / "README.md",
        _CARD.format(n=len(scenarios), n_domains=len({s.domain for s in scenarios})),
        root=out,
    )
    return [*written, card]
