"""A model's labels in an audit folder (``hear2act audit --model``), beside the people's.

People's labels live in ``labels/<name>.jsonl``; a model's in ``models/<slug>.jsonl``, with
``models/<slug>.json`` saying which model gave them: its spec, its settings (secrets
redacted), whether it got the dialogue before each clip, and the instructions it was given.
The slug is the spec in file-name characters plus 8 hex digits of a SHA-256 over the spec and
the settings, so the same model with other settings (a temperature, a token budget) is another
row, and rerunning the same command continues the same file.

A line is the store's (``perception_audit.LabelStore``: appended, fsynced, a torn last line cut
off) with the model's answer: ``label`` is ``resolved``, ``unresolved`` or ``null`` (a reply
that does not give exactly one label, read by ``hear2act_agents.audit_labeller.parse_label``:
neither, both, or one read two ways; it counts against the model in the scores), and ``reply``
(the first 2,000 characters, redacted), ``finish_reason`` and ``usage`` record what came back.
Clips are labelled in id order, the folder's clip-set order, which carries no class
information.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hear2act_env import jsonsafe
from hear2act_env.errors import ConfigError
from hear2act_env.listen.audit.folder import LABELS, Audit, LabelStore, read_labels
from hear2act_env.listen.clips import read_file_under
from hear2act_env.redaction import redact_value
from hear2act_env.safewrite import write_atomic

__all__ = [
    "ANSWERS",
    "MODELS_DIR",
    "ModelRun",
    "model_runs",
    "model_slug",
    "open_model_store",
]

MODELS_DIR = "models"
FORMAT = "hear2act-audit-model-v1"
#: A model's answers: a label, or None for a reply that gives no single label.
ANSWERS: tuple[str | None, ...] = (*LABELS, None)
MAX_META_FILE = 1024 * 1024
_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,56}-[0-9a-f]{8}")


def model_slug(spec: str, settings: dict[str, Any]) -> str:
    """The file name (without suffix) of ``spec`` with ``settings`` in ``models/``."""
    text = json.dumps([spec, redact_value(settings)], sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-._")[:48] or "model"
    return f"{stem}-{digest}"


@dataclass(frozen=True)
class ModelRun:
    """Which model labelled an audit folder's clips, and how."""

    slug: str
    spec: str
    settings: dict[str, Any]
    context: bool
    instructions: str
    created: str = ""

    @property
    def name(self) -> str:
        """The model's row name: its spec, with its settings when it has any."""
        if not self.settings:
            return self.spec
        shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(self.settings.items()))
        return f"{self.spec} ({shown})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "spec": self.spec,
            "settings": self.settings,
            "context": self.context,
            "instructions": self.instructions,
            "created": self.created,
        }

    @classmethod
    def from_dict(cls, slug: str, data: Any) -> ModelRun:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"expected an object with format {FORMAT!r}")
        spec, settings = data.get("spec"), data.get("settings")
        context, instructions = data.get("context"), data.get("instructions")
        if not isinstance(spec, str) or not isinstance(settings, dict):
            raise ValueError("spec must be a string and settings an object")
        if not isinstance(context, bool) or not isinstance(instructions, str):
            raise ValueError("context must be true or false and instructions a string")
        return cls(slug, spec, settings, context, instructions, str(data.get("created", "")))


def _models_dir(audit: Audit) -> Path:
    """``models/`` of the folder: a real folder inside it, never a link (``ConfigError``)."""
    folder = audit.folder / MODELS_DIR
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise ConfigError(f"{folder}: expected a folder of the audit, not a link or a file")
    return folder


def _meta_path(audit: Audit, slug: str) -> Path:
    return _models_dir(audit) / f"{slug}.json"


def _read_meta(audit: Audit, slug: str) -> ModelRun:
    path = _meta_path(audit, slug)
    raw = read_file_under(path, audit.folder, MAX_META_FILE)
    try:
        return ModelRun.from_dict(slug, jsonsafe.loads(raw))
    except ValueError as exc:  # also bad JSON and a nesting too deep
        raise ConfigError(f"{path}: not a readable model record ({exc})") from None


def open_model_store(
    audit: Audit, spec: str, settings: dict[str, Any], instructions: str
) -> tuple[ModelRun, LabelStore]:
    """The record and label store of ``spec`` with ``settings`` in ``audit``: made the first
    time, reopened after (the labels so far are kept). A record that disagrees (other
    instructions, another context setting) is a ``ConfigError`` naming its file."""
    slug = model_slug(spec, settings)
    run = ModelRun(
        slug,
        spec,
        redact_value(dict(settings)),
        audit.context,
        instructions,
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    path = _meta_path(audit, slug)
    if path.exists() or path.is_symlink():
        old = _read_meta(audit, slug)
        for field in ("spec", "settings", "context", "instructions"):
            if getattr(old, field) != getattr(run, field):
                raise ConfigError(
                    f"{path}: these labels were given with another {field}; remove "
                    f"{path.with_suffix('')}.json and .jsonl to label again"
                )
        run = old
    else:
        write_atomic(
            path, (json.dumps(run.to_dict(), indent=1) + "\n").encode("utf-8"), root=audit.folder
        )
    order = [c.id for c in sorted(audit.clips, key=lambda c: c.id)]
    store = LabelStore(path.with_suffix(".jsonl"), order, audit.folder, ANSWERS)
    return run, store


def model_runs(audit: Audit) -> list[tuple[ModelRun, dict[str, str | None]]]:
    """Every model that labelled clips of ``audit`` with its labels, by slug. A record without
    labels is left out; a bad record or label file is a ``ConfigError`` naming it."""
    folder = _models_dir(audit)
    if not folder.is_dir():
        return []
    runs = []
    for meta in sorted(folder.glob("*.json")):
        if not _SLUG.fullmatch(meta.stem):
            continue
        run = _read_meta(audit, meta.stem)
        labels_file = meta.with_suffix(".jsonl")
        if not (labels_file.exists() or labels_file.is_symlink()):
            continue
        labels, _ = read_labels(labels_file, audit.by_id, audit.folder, ANSWERS)
        if labels:
            runs.append((run, labels))
    return runs
