"""The human perception audit of a renderer (paper, appendix E; ``hear2act audit``).

People listen to reaction clips and say whether the user's need sounds met (resolved) or
not (unresolved). Their answers are compared with the intended state, with each other and
with the reference perceiver, in the layout of the paper's Table 11. This module has the
logic: the clip set, the label store and the scores (no web; the app is ``audit_app``).

**Clip set.** Reactions are collected from the test split under the Prosody-mediated
realization (``bank_perception.collect_clips``: the replies to seeded random recommendations
whose state is resolved, reluctant or concern). Under that realization every such reply is a
line of the shared acceptance pool, so only the voice tells the states apart. Distinct
(line, voice, variation) triples are drawn at random (seeded); each becomes a *pair*: the
triple spoken once with a resolved delivery and once with an unresolved one (reluctant or
concern). Each delivery is one the test split actually produced for that triple when it
produced one, else one drawn uniformly from the state's labels. A set of ``N`` clips is
``N / 2`` pairs: balanced by construction, and within a pair only the delivery differs.

**Blinding.** A clip's id is 16 hex digits of a SHA-256 over a secret salt (random per folder,
kept in ``clips.json``) and the utterance; audio files are ``audio/<id>.ogg`` (or ``.wav``).
``clips.json`` keeps the utterances, true classes and the reference perceiver's readings;
the page and the API only ever get a clip's id, audio address and words (the same words for
both members of a pair). Each annotator hears every clip once, in an order shuffled from the
seed, the salt and the annotator's name (stable across restarts), redrawn (up to 200 times)
so that the two members of a pair never follow each other. No correctness feedback is given.

**Labels.** ``labels/<annotator>.jsonl``: one JSON object per answer (``clip``, ``label``,
``n``, ``at``), appended, flushed and fsynced as given. A last line without its newline is a
torn write: reading ignores it and the writer cuts it off before appending. Any other bad line
(not JSON, unknown clip, a clip labelled twice) is an error naming the file and line. The
store only accepts the annotator's next clip, so resuming continues at the first unlabelled
one and no clip is labelled twice; one ``hear2act audit`` at a time makes or serves a folder
(``serving_lock``: ``labels.lock``, the runner's ``output_lock``). Every file of the folder
(``clips.json``, labels, audio) is read only as a regular file inside it, not through a link
as its last part, and up to a size cap (``clips.read_file_under``); JSON nests at most
``jsonsafe.MAX_DEPTH`` deep.

**Reference perceiver.** Chosen when the folder is made and stored there with its readings:
``auto`` (default) is the shipped model (``speech/data/reference_perceiver.json``, what the
``InferredState`` wrapper reads) for espeak, and for any other renderer a model trained the way
``hear2act perceive --save-perceiver`` trains it (``train_reference`` on every second train-split
scenario, rendered by that renderer); ``shipped``, ``train`` or the path of a saved model
force a choice. Its readings are taken from the clips' waveforms before encoding.

**Scores.** Per annotator: accuracy on resolved clips, on unresolved clips and overall, raw
agreement and Cohen's kappa with the reference perceiver. Per pair of annotators: agreement
and kappa on the clips both labelled. The table's "Human" column averages the annotators
(each on the clips they labelled), "Model" is the reference perceiver on the clips at least
one annotator labelled; its bottom block averages over annotator pairs and annotators. The
95% intervals are percentile bootstraps over those clips (2,000 resamples, seeded). Cohen's
kappa is ``(p_o - p_e) / (1 - p_e)``; when the expected agreement ``p_e`` is 1 (both raters gave
one and the same class to every clip) it is undefined, reported as NaN ("n/a").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import secrets
import stat
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env import interrupts, jsonsafe
from hear2act_env.atomic import atomic_write
from hear2act_env.bootstrap import LEVEL, N_RESAMPLES, Estimate, draws, estimate
from hear2act_env.errors import ConfigError
from hear2act_env.listen.clips import MAX_CLIP_BYTES, open_file_under, read_file_under
from hear2act_env.protocol.delivery import DELIVERY_LABELS, State
from hear2act_env.speech.utterance import Utterance

__all__ = [
    "LABELS",
    "Audit",
    "AuditClip",
    "AuditScore",
    "LabelConflict",
    "LabelStore",
    "check_annotator",
    "cohen_kappa",
    "create_audit",
    "make_renderer",
    "open_or_create",
    "read_labels",
    "score_audit",
    "select_pairs",
    "serving_lock",
]

FORMAT = "hear2act-audit-v1"
SCORE_FORMAT = "hear2act-audit-score-v1"
#: The two answers, also the values of a label line's ``label``.
LABELS = ("resolved", "unresolved")
DEFAULT_CLIPS = 40
DEFAULT_SEED = 0
DEFAULT_RENDERER = "espeak"
DEFAULT_PERCEIVER = "auto"
CLIPS_FILE = "clips.json"
AUDIO_DIR = "audio"
LABELS_DIR = "labels"
#: The most bytes read of ``clips.json`` and of one label file.
MAX_CLIPS_FILE = 64 * 1024 * 1024
MAX_LABELS_FILE = 16 * 1024 * 1024
SPLIT = "test"
REALIZATION = "prosody"
#: Paper, Table 11 (Qwen3-TTS clips), printed beside the scores.
PAPER = {"humans": 0.92, "Qwen2.5-Omni": 0.85, "kappa_annotators": 0.96}
SHIPPED_PERCEIVER = (
    Path(__file__).resolve().parents[1] / "speech" / "data" / "reference_perceiver.json"
)

_RESOLVED_LABELS = DELIVERY_LABELS[State.RESOLVED]
_UNRESOLVED_LABELS = DELIVERY_LABELS[State.RELUCTANT] + DELIVERY_LABELS[State.CONCERN]
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_ORDER_TRIES = 200


# --- clip set -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ClipSpec:
    """One clip to render: the utterance, its true class and its pair."""

    utterance: Utterance
    resolved: bool
    pair: int


def select_pairs(
    scenarios: Sequence[Any], n_clips: int, seed: int, prosody_strength: float = 1.0
) -> list[ClipSpec]:
    """``n_clips / 2`` pairs from the test split's reactions (see the module docstring)."""
    if isinstance(n_clips, bool) or not isinstance(n_clips, int) or n_clips < 2 or n_clips % 2:
        raise ConfigError(
            f"--clips: expected an even number >= 2 (half resolved, half unresolved), got {n_clips!r}"
        )
    test = [s for s in scenarios if s.split == SPLIT]
    if not test:
        raise ConfigError("the scenarios have no test-split scenario to draw reaction clips from")
    n_pairs = n_clips // 2
    for per_scenario in (6, 24):
        lines = _reaction_lines(test, prosody_strength, per_scenario, seed)
        if len(lines) >= n_pairs:
            break
    else:
        raise ConfigError(
            f"--clips: the test split yields {len(lines)} distinct reaction lines, so at most "
            f"{2 * len(lines)} clips; got {n_clips}"
        )
    rng = np.random.default_rng([seed, 0xA0D1])
    keys = list(lines)
    specs: list[ClipSpec] = []
    for pair, i in enumerate(sorted(rng.choice(len(keys), n_pairs, replace=False))):
        text, persona, variation = keys[i]
        seen = lines[keys[i]]
        for resolved, pool in ((True, _RESOLVED_LABELS), (False, _UNRESOLVED_LABELS)):
            choices = sorted(seen[resolved]) or list(pool)
            delivery = choices[int(rng.integers(len(choices)))]
            utt = Utterance(text, delivery, persona, variation, prosody_strength)
            specs.append(ClipSpec(utt, resolved, pair))
    return specs


def _reaction_lines(
    test: Sequence[Any], strength: float, per_scenario: int, seed: int
) -> dict[tuple[str, str, int], dict[bool, set[str]]]:
    from hear2act_env.speech.bank_perception import collect_clips

    lines: dict[tuple[str, str, int], dict[bool, set[str]]] = {}
    for utt, resolved in collect_clips(test, REALIZATION, strength, per_scenario, seed):  # type: ignore[arg-type]
        key = (utt.text, utt.persona, utt.variation)
        lines.setdefault(key, {True: set(), False: set()})[bool(resolved)].add(utt.delivery)
    return lines


def clip_id(salt: str, utt: Utterance) -> str:
    """The opaque id of ``utt`` in a folder with secret ``salt``."""
    payload = [salt, utt.text, utt.delivery, utt.persona, utt.variation, repr(utt.prosody_strength)]
    return hashlib.sha256(json.dumps(payload).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class AuditClip:
    """One clip of an audit folder (never sent to the page as such: see ``Audit.public``)."""

    id: str
    utterance: Utterance
    resolved: bool
    pair: int
    audio: str  # path inside the folder: audio/<id>.<ext>
    reference: bool  # the reference perceiver hears it as resolved

    @property
    def label(self) -> str:
        """The true class as an answer: ``resolved`` or ``unresolved``."""
        return LABELS[0] if self.resolved else LABELS[1]

    def to_dict(self) -> dict[str, Any]:
        u = self.utterance
        return {
            "id": self.id,
            "audio": self.audio,
            "text": u.text,
            "delivery": u.delivery,
            "persona": u.persona,
            "variation": u.variation,
            "prosody_strength": u.prosody_strength,
            "resolved": self.resolved,
            "pair": self.pair,
            "reference": self.reference,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AuditClip:
        utt = Utterance(
            d["text"],
            d["delivery"],
            d["persona"],
            int(d["variation"]),
            float(d["prosody_strength"]),
        )
        if not re.fullmatch(r"[0-9a-f]{16}", d["id"]) or d["audio"] not in (
            f"{AUDIO_DIR}/{d['id']}.ogg",
            f"{AUDIO_DIR}/{d['id']}.wav",
        ):
            raise ValueError(f"bad clip id or audio path: {d['id']!r}, {d['audio']!r}")
        return cls(
            d["id"], utt, bool(d["resolved"]), int(d["pair"]), d["audio"], bool(d["reference"])
        )


def check_annotator(name: object) -> str:
    """``name`` if it is a valid annotator name (letters, digits, ``-_.``; 1-64; not leading
    with ``-_.``), else a ``ConfigError``."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"--annotator: expected 1-64 letters, digits, '-', '_' or '.', starting with a "
            f"letter or digit; got {name!r}"
        )
    return name


@dataclass
class Audit:
    """An audit folder: its settings, clips and labels."""

    folder: Path
    settings: dict[str, Any]  # clips, seed, renderer, prosody_strength, perceiver
    renderer: dict[str, str]  # name, version
    perceiver: dict[str, Any]  # source, model
    salt: str
    clips: tuple[AuditClip, ...]
    created: str = ""
    by_id: dict[str, AuditClip] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.by_id = {c.id: c for c in self.clips}

    @property
    def labels_dir(self) -> Path:
        return self.folder / LABELS_DIR

    @classmethod
    def load(cls, folder: Path | str) -> Audit:
        """Read ``folder/clips.json`` (a ``ConfigError`` naming what is wrong)."""
        folder = Path(folder)
        path = folder / CLIPS_FILE
        if not path.is_file():
            raise ConfigError(
                f"{folder}: not an audit folder (no {CLIPS_FILE}); make one with "
                f"hear2act audit --out {folder}"
            )
        raw = read_file_under(path, folder, MAX_CLIPS_FILE)
        try:
            data = jsonsafe.loads(raw)
            if data.get("format") != FORMAT:
                raise ValueError(f"format {data.get('format')!r}, expected {FORMAT!r}")
            clips = tuple(AuditClip.from_dict(c) for c in data["clips"])
            audit = cls(
                folder,
                dict(data["settings"]),
                dict(data["renderer"]),
                dict(data["perceiver"]),
                str(data["salt"]),
                clips,
                str(data.get("created", "")),
            )
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
            raise ConfigError(f"{path}: not a readable audit clip set ({exc})") from None
        if len(audit.by_id) != len(clips) or len(clips) != audit.settings.get("clips"):
            raise ConfigError(f"{path}: clip ids repeat or do not match settings.clips")
        for c in clips:
            try:
                os.close(open_file_under(folder / c.audio, folder, max_bytes=MAX_CLIP_BYTES))
            except ConfigError as exc:
                raise ConfigError(f"{path}: the audio of clip {c.id} is unusable ({exc})") from None
        return audit

    def audio(self, clip: str) -> bytes:
        """The audio file of ``clip`` (a ``ConfigError`` unless it is a regular file of the
        folder of at most ``MAX_CLIP_BYTES``)."""
        return read_file_under(self.folder / self.by_id[clip].audio, self.folder, MAX_CLIP_BYTES)

    def order(self, annotator: str) -> list[str]:
        """The clip ids in ``annotator``'s listening order (stable; see the module docstring)."""
        check_annotator(annotator)
        text = f"{self.salt}|{self.settings['seed']}|order|{annotator}"
        rng = np.random.default_rng(
            int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        )
        ids = [c.id for c in self.clips]
        perm = ids
        for _ in range(_ORDER_TRIES):
            perm = [ids[i] for i in rng.permutation(len(ids))]
            pairs = [self.by_id[i].pair for i in perm]
            if all(a != b for a, b in zip(pairs, pairs[1:])):
                break
        return perm

    def labels_path(self, annotator: str) -> Path:
        return self.labels_dir / f"{check_annotator(annotator)}.jsonl"

    def store(self, annotator: str) -> LabelStore:
        """The label store of ``annotator`` (a torn last line is cut off)."""
        return LabelStore(self.labels_path(annotator), self.order(annotator), self.folder)

    def annotators(self) -> list[str]:
        """Names with a label file, sorted."""
        if not self.labels_dir.is_dir():
            return []
        return sorted(p.stem for p in self.labels_dir.glob("*.jsonl") if _NAME.fullmatch(p.stem))

    def public(self, clip: str) -> dict[str, str]:
        """What the page may know of a clip: its id, audio address and words."""
        c = self.by_id[clip]
        return {"id": c.id, "audio": "/" + c.audio, "text": c.utterance.text}


# --- making and reopening a folder --------------------------------------------------------


def make_renderer(spec: str) -> Any:
    """The renderer named by ``spec`` (``speech.renderers.make_renderer``)."""
    from hear2act_env.speech.renderers import make_renderer as by_spec

    return by_spec(spec)


def _reference_model(
    spec: str,
    renderer_spec: str,
    renderer: Any,
    strength: float,
    cache: Any,
    scenarios: Sequence[Any],
) -> tuple[Any, str]:
    from hear2act_env.speech.features import FEATURE_NAMES
    from hear2act_env.speech.perception import LogisticModel

    if spec == "auto":
        spec = "shipped" if renderer_spec == "espeak" else "train"
    if spec == "shipped":
        model = LogisticModel.load(SHIPPED_PERCEIVER)
        source = "shipped (speech/data/reference_perceiver.json, the InferredState reader)"
    elif spec == "train":
        from hear2act_env.speech.bank_perception import train_reference

        train = [s for s in scenarios if s.split == "train"][::2]
        if not train:
            raise ConfigError("--perceiver train: the scenarios have no train-split scenario")
        model = train_reference(train, strength, renderer, cache)
        source = f"trained on {renderer.name} clips of every second train-split scenario"
    else:
        path = Path(spec)
        if not path.is_file():
            raise ConfigError(
                f"--perceiver: expected auto, shipped, train or a model file; {spec!r} is none"
            )
        try:
            model = LogisticModel.load(path)
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"--perceiver: {path} is not a saved reference perceiver ({exc})"
            ) from None
        source = f"loaded from {path}"
    if tuple(model.feature_names) != tuple(FEATURE_NAMES):
        raise ConfigError("--perceiver: the model's features are not the prosodic features")
    return model, source


@interrupts.cooperative()  # a signal stops it between clips, never inside the renderer
def create_audit(
    folder: Path | str,
    *,
    clips: int = DEFAULT_CLIPS,
    seed: int = DEFAULT_SEED,
    renderer: str = DEFAULT_RENDERER,
    prosody_strength: float = 1.0,
    perceiver: str = DEFAULT_PERCEIVER,
    cache_dir: Path | str | None = None,
    scenarios: Sequence[Any] | None = None,
    compress: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Audit:
    """Render a new clip set into ``folder`` (``clips.json`` is written last). SIGINT or
    SIGTERM stops it between clips (``Interrupted``); a rerun makes the folder again."""
    from hear2act_env.listen.clips import encode_clip
    from hear2act_env.speech.cache import AudioCache
    from hear2act_env.speech.features import prosodic_features

    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out: {folder} exists and is not a folder")
    if (folder / LABELS_DIR).is_dir() and any((folder / LABELS_DIR).glob("*.jsonl")):
        raise ConfigError(f"--out: {folder} has labels but no {CLIPS_FILE}; use another folder")
    if scenarios is None:
        from hear2act_env.scenarios.bank import load_bank

        scenarios = load_bank()
    specs = select_pairs(scenarios, clips, seed, prosody_strength)
    tts = make_renderer(renderer)
    cache = AudioCache(cache_dir)
    model, source = _reference_model(perceiver, renderer, tts, prosody_strength, cache, scenarios)
    salt = secrets.token_hex(16)
    if progress:
        progress(f"rendering {len(specs)} clips with {tts.name} into {folder / AUDIO_DIR}")
    made = []
    for spec in specs:
        interrupts.raise_if_requested()  # a signal stops between clips (see create_audit)
        cid = clip_id(salt, spec.utterance)
        wave = cache.render(tts, spec.utterance)
        heard = bool(model.predict(prosodic_features(wave, tts.sample_rate)[None, :])[0])
        enc = encode_clip(wave, tts.sample_rate, compress=compress)
        audio = f"{AUDIO_DIR}/{cid}.{enc.extension}"
        atomic_write(folder / audio, enc.data)
        made.append(AuditClip(cid, spec.utterance, spec.resolved, spec.pair, audio, heard))
    if len({c.id for c in made}) != len(made):  # 64-bit ids: practically never
        raise ConfigError("clip ids collide; run again")
    made.sort(key=lambda c: c.id)
    settings = {
        "clips": clips,
        "seed": seed,
        "renderer": renderer,
        "prosody_strength": float(prosody_strength),
        "perceiver": perceiver,
        "split": SPLIT,
        "realization": REALIZATION,
    }
    audit = Audit(
        folder,
        settings,
        {"name": str(tts.name), "version": str(tts.version)},
        {"source": source, "model": model.to_dict()},
        salt,
        tuple(made),
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    data = {
        "format": FORMAT,
        "created": audit.created,
        "settings": settings,
        "renderer": audit.renderer,
        "perceiver": audit.perceiver,
        "salt": salt,
        "clips": [c.to_dict() for c in made],
    }
    interrupts.raise_if_requested()
    (folder / LABELS_DIR).mkdir(parents=True, exist_ok=True)
    atomic_write(folder / CLIPS_FILE, (json.dumps(data, indent=1) + "\n").encode("utf-8"))
    return audit


def open_or_create(
    folder: Path | str,
    *,
    clips: int | None = None,
    seed: int | None = None,
    renderer: str | None = None,
    prosody_strength: float | None = None,
    perceiver: str | None = None,
    **create: Any,
) -> tuple[Audit, bool]:
    """Reopen ``folder`` (``None`` settings: as recorded; a different one: ``ConfigError``
    naming it) or create it (``None``: the defaults). Returns the audit and whether it is new."""
    folder = Path(folder)
    asked = {
        "clips": clips,
        "seed": seed,
        "renderer": renderer,
        "prosody_strength": None if prosody_strength is None else float(prosody_strength),
        "perceiver": perceiver,
    }
    if (folder / CLIPS_FILE).exists():
        audit = Audit.load(folder)
        for key, value in asked.items():
            if value is not None and audit.settings.get(key) != value:
                flag = "--" + key.replace("_", "-")
                raise ConfigError(
                    f"{flag}: {folder} was made with {flag} {audit.settings.get(key)}, not "
                    f"{value}; leave {flag} out to reopen it, or use a new --out folder"
                )
        return audit, False
    defaults = {
        "clips": DEFAULT_CLIPS,
        "seed": DEFAULT_SEED,
        "renderer": DEFAULT_RENDERER,
        "prosody_strength": 1.0,
        "perceiver": DEFAULT_PERCEIVER,
    }
    settings = {k: (defaults[k] if v is None else v) for k, v in asked.items()}
    return create_audit(folder, **settings, **create), True


@contextlib.contextmanager
def serving_lock(folder: Path | str) -> Iterator[None]:
    """Hold the folder's lock (``labels.lock`` in it, the runner's ``output_lock``) while one
    ``hear2act audit`` makes or serves it; a second one is a ``ConfigError`` naming the pid
    that holds it."""
    from hear2act_env.evaluation.runner import output_lock

    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out: {folder} exists and is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out: cannot make {folder} ({exc.strerror})") from None
    lock = folder / f"{LABELS_DIR}.lock"
    if os.path.lexists(lock) and not stat.S_ISREG(os.lstat(lock).st_mode):
        raise ConfigError(f"--out: {lock} is not a regular file; remove it")
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(output_lock(folder / LABELS_DIR, wait=False))
        except ConfigError as exc:
            holder = re.search(r"\(pid ([^)]*)\)", str(exc))
            raise ConfigError(
                f"--out: {folder} is served by another hear2act audit (pid "
                f"{holder[1] if holder else '?'}); label there, or stop it first"
            ) from None
        yield


# --- labels -------------------------------------------------------------------------------


class LabelConflict(ConfigError):
    """A label for a clip that is not the annotator's next one (labelled already, or ahead)."""


def read_labels(
    path: Path, known: set[str] | dict[str, Any], folder: Path | None = None
) -> tuple[dict[str, str], int]:
    """The labels of one file in order, and the byte length of its complete lines.

    A last line without a newline (a torn write) is left out; any other bad line is a
    ``ConfigError`` naming ``path:line``, and so is a file that is not a regular file inside
    ``folder`` (default: its own folder) of at most ``MAX_LABELS_FILE`` bytes."""
    path = Path(path)
    data = read_file_under(path, path.parent if folder is None else folder, MAX_LABELS_FILE)
    end = data.rfind(b"\n") + 1
    labels: dict[str, str] = {}
    for lineno, raw in enumerate(data[:end].split(b"\n")[:-1], 1):
        if not raw.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec = jsonsafe.loads(raw)
        except ValueError as exc:  # also UnicodeDecodeError and a nesting too deep
            raise ConfigError(f"{where}: not a JSON label line ({exc})") from None
        if (
            not isinstance(rec, dict)
            or not isinstance(rec.get("clip"), str)
            or rec.get("label") not in LABELS
        ):
            raise ConfigError(
                f'{where}: expected {{"clip": ID, "label": "resolved" or "unresolved"}}'
            )
        if rec["clip"] not in known:
            raise ConfigError(f"{where}: clip {rec['clip']!r} is not in this audit's clip set")
        if rec["clip"] in labels:
            raise ConfigError(f"{where}: clip {rec['clip']!r} is labelled a second time")
        labels[rec["clip"]] = rec["label"]
    return labels, end


class LabelStore:
    """One annotator's labels: read on open (cutting off a torn last line), appended as given.
    The file must be a regular file inside ``folder`` (default: its own folder), not a link."""

    def __init__(self, path: Path, order: Sequence[str], folder: Path | None = None) -> None:
        self.path = Path(path)
        self.folder = self.path.parent if folder is None else Path(folder)
        self.order = list(order)
        self._known = set(self.order)
        self._lock = threading.Lock()
        self.labels: dict[str, str] = {}
        self.repaired = False
        if os.path.lexists(self.path):
            self.labels, end = read_labels(self.path, self._known, self.folder)
            if end < self.path.lstat().st_size:
                with self._open(os.O_WRONLY) as fd:
                    os.ftruncate(fd, end)
                self.repaired = True

    @contextlib.contextmanager
    def _open(self, flags: int) -> Iterator[int]:
        fd = open_file_under(self.path, self.folder, flags)
        try:
            yield fd
        finally:
            os.close(fd)

    @property
    def total(self) -> int:
        return len(self.order)

    @property
    def next_clip(self) -> str | None:
        """The first clip in the annotator's order without a label (``None``: all done)."""
        return next((c for c in self.order if c not in self.labels), None)

    def add(self, clip: str, label: str) -> None:
        """Record ``label`` for ``clip`` (which must be the next clip) and flush it to disk."""
        if label not in LABELS:
            raise ConfigError(f"label: expected resolved or unresolved, got {label!r}")
        if clip not in self._known:
            raise ConfigError(f"clip: {clip!r} is not in this audit's clip set")
        with self._lock:
            if clip in self.labels:
                raise LabelConflict(f"clip {clip} is labelled already")
            if clip != self.next_clip:
                raise LabelConflict(f"clip {clip} is not the current clip")
            record = {
                "clip": clip,
                "label": label,
                "n": len(self.labels) + 1,
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            self.path.parent.mkdir(parents=True, exist_ok=True)
            line = (json.dumps(record) + "\n").encode("utf-8")
            with self._open(os.O_WRONLY | os.O_APPEND | os.O_CREAT) as fd:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            self.labels[clip] = label


# --- scores -------------------------------------------------------------------------------


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Cohen's kappa of two raters' labels of the same items (any label values).

    ``(p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement and ``p_e`` the agreement
    expected from each rater's label frequencies; NaN when ``p_e`` is 1 (undefined)."""
    a, b = list(a), list(b)
    if len(a) != len(b) or not a:
        raise ConfigError(
            f"cohen_kappa needs two equally long, non-empty label lists ({len(a)}, {len(b)})"
        )
    cats = sorted(set(a) | set(b), key=repr)
    index = {c: i for i, c in enumerate(cats)}
    table = np.zeros((len(cats), len(cats)))
    np.add.at(table, ([index[x] for x in a], [index[y] for y in b]), 1.0)
    table /= table.sum()
    p_o = float(np.trace(table))
    p_e = float(table.sum(axis=1) @ table.sum(axis=0))
    if p_e >= 1.0 - 1e-12:
        return float("nan")
    return (p_o - p_e) / (1.0 - p_e)


def _rate(w: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """Weighted share of ``hit`` per row of weights ``w`` (NaN for an empty row)."""
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (w @ hit.astype(np.float64)) / total, np.nan)


def _kappa_rows(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Cohen's kappa of binary ``x`` and ``y`` per row of weights ``w`` (NaN where undefined)."""
    p_o, p_x, p_y = _rate(w, x == y), _rate(w, x), _rate(w, y)
    p_e = p_x * p_y + (1.0 - p_x) * (1.0 - p_y)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(p_e < 1.0 - 1e-12, (p_o - p_e) / (1.0 - p_e), np.nan)


def _mean_rows(rows: list[np.ndarray]) -> np.ndarray | None:
    if not rows:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.vstack(rows), axis=0)


@dataclass(frozen=True)
class AnnotatorScore:
    """One annotator against the truth and the reference perceiver."""

    name: str
    n: int
    resolved: Estimate
    unresolved: Estimate
    overall: Estimate
    agreement_model: Estimate
    kappa_model: Estimate


@dataclass(frozen=True)
class PairScore:
    """Two annotators on the clips both labelled."""

    a: str
    b: str
    n: int
    agreement: Estimate
    kappa: Estimate


@dataclass
class AuditScore:
    """The scores of an audit folder (``markdown()``: the Table-11 layout; ``to_dict()``)."""

    folder: str
    renderer: dict[str, str]
    settings: dict[str, Any]
    perceiver: str
    clips: int
    labelled: int
    annotators: list[AnnotatorScore]
    pairs: list[PairScore]
    human: dict[str, Estimate | None]
    model: dict[str, Estimate]
    resamples: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": SCORE_FORMAT,
            "folder": self.folder,
            "renderer": self.renderer,
            "settings": self.settings,
            "perceiver": self.perceiver,
            "clips": self.clips,
            "labelled_clips": self.labelled,
            "interval": {"level": LEVEL, "resamples": self.resamples, "over": "clips"},
            "human": {k: _est(v) for k, v in self.human.items()},
            "model": {k: _est(v) for k, v in self.model.items()},
            "annotators": {
                a.name: {
                    "clips": a.n,
                    "resolved": _est(a.resolved),
                    "unresolved": _est(a.unresolved),
                    "overall": _est(a.overall),
                    "agreement_model": _est(a.agreement_model),
                    "kappa_model": _est(a.kappa_model),
                }
                for a in self.annotators
            },
            "pairs": [
                {
                    "a": p.a,
                    "b": p.b,
                    "clips": p.n,
                    "agreement": _est(p.agreement),
                    "kappa": _est(p.kappa),
                }
                for p in self.pairs
            ],
            "paper": dict(PAPER),
        }

    def markdown(self) -> str:
        h, m = self.human, self.model
        name = self.renderer.get("name", "renderer")
        lines = [
            f"Perception audit {self.folder}: {name} ({self.renderer.get('version', '?')}), "
            f"prosody strength {self.settings.get('prosody_strength')}; {self.clips} clips of the "
            f"{self.settings.get('split', SPLIT)} split ({self.clips // 2} resolved, "
            f"{self.clips // 2} unresolved, in pairs), {self.labelled} labelled by "
            f"{len(self.annotators)} annotator(s)",
            "",
            f"|  | {name} |  |",
            "| --- | --- | --- |",
            "|  | Human | Model |",
            f"| Resolved (O+) | {_fmt(h['resolved'])} | {_fmt(m['resolved'])} |",
            f"| Unresolved (O-) | {_fmt(h['unresolved'])} | {_fmt(m['unresolved'])} |",
            f"| Overall | {_fmt(h['overall'])} | {_fmt(m['overall'])} |",
            f"| κ, annotators | {_fmt(h['kappa_annotators'])} |  |",
            f"| Agreement, model | {_fmt(h['agreement_model'])} |  |",
            f"| κ, model | {_fmt(h['kappa_model'])} |  |",
            "",
            f"Human: the mean over annotators, each on the clips they labelled. Model: the "
            f"reference perceiver, {self.perceiver}, on the {self.labelled} clips someone "
            f"labelled. κ, annotators: Cohen's κ per annotator pair on the clips both labelled, "
            f"averaged over pairs. Agreement and κ, model: each annotator against the reference "
            f"perceiver, averaged over annotators. Brackets: {LEVEL:.0%} bootstrap intervals over "
            f"clips ({self.resamples} resamples); n/a: undefined.",
            f"Paper, Table 11 (Qwen3-TTS clips): humans {PAPER['humans']:.2f}, Qwen2.5-Omni "
            f"{PAPER['Qwen2.5-Omni']:.2f}, κ between annotators {PAPER['kappa_annotators']:.2f}.",
            "",
            "| annotator | clips | resolved | unresolved | overall | agreement, model | κ, model |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for a in self.annotators:
            lines.append(
                f"| {a.name} | {a.n} | {_fmt(a.resolved)} | {_fmt(a.unresolved)} | "
                f"{_fmt(a.overall)} | {_fmt(a.agreement_model)} | {_fmt(a.kappa_model)} |"
            )
        lines.append(
            f"| (reference perceiver) | {self.labelled} | {_fmt(m['resolved'])} | "
            f"{_fmt(m['unresolved'])} | {_fmt(m['overall'])} |  |  |"
        )
        if self.pairs:
            lines += [
                "",
                "| annotator | annotator | shared clips | agreement | κ |",
                "| --- | --- | --- | --- | --- |",
            ]
            lines += [
                f"| {p.a} | {p.b} | {p.n} | {_fmt(p.agreement)} | {_fmt(p.kappa)} |"
                for p in self.pairs
            ]
        return "\n".join(lines) + "\n"


def _fmt(e: Estimate | None) -> str:
    if e is None or not math.isfinite(e.value):
        return "n/a"
    if not (math.isfinite(e.low) and math.isfinite(e.high)):
        return f"{e.value:.2f}"
    return f"{e.value:.2f} [{e.low:.2f}, {e.high:.2f}]"


def _est(e: Estimate | None) -> dict[str, Any] | None:
    if e is None:
        return None
    clean = lambda v: v if math.isfinite(v) else None  # noqa: E731
    return {"value": clean(e.value), "low": clean(e.low), "high": clean(e.high), "n": e.n}


def score_audit(folder: Path | str, resamples: int = N_RESAMPLES, seed: int = 0) -> AuditScore:
    """Score every annotator's labels in ``folder`` (a ``ConfigError`` when there are none)."""
    audit = Audit.load(folder)
    labels = {}
    for name in audit.annotators():
        got, _ = read_labels(audit.labels_path(name), audit.by_id, audit.folder)
        if got:
            labels[name] = got
    if not labels:
        raise ConfigError(
            f"{audit.labels_dir}: no labels yet; an annotator gives them with "
            f"hear2act audit --out {audit.folder} --annotator NAME"
        )
    names = sorted(labels)
    union = [c for c in audit.clips if any(c.id in labels[a] for a in names)]
    n = len(union)
    truth = np.array([c.resolved for c in union])
    ref = np.array([c.reference for c in union])
    has = np.array([[c.id in labels[a] for c in union] for a in names])
    said = np.array([[labels[a].get(c.id) == LABELS[0] for c in union] for a in names])
    counts = np.zeros((resamples, n))
    np.add.at(counts, (np.repeat(np.arange(resamples), n), draws(n, resamples, seed).ravel()), 1.0)
    weights = np.vstack([np.ones((1, n)), counts])  # row 0: the point estimate

    def est(row: np.ndarray | None, mask: np.ndarray) -> Estimate | None:
        return None if row is None else estimate(float(row[0]), row[1:], int(mask.sum()))

    def accuracy(mask: np.ndarray, hit: np.ndarray) -> np.ndarray:
        return _rate(weights * mask, hit)

    classes = {"resolved": truth, "unresolved": ~truth, "overall": np.ones(n, bool)}
    rows: dict[str, list[np.ndarray]] = {
        k: [] for k in (*classes, "agreement_model", "kappa_model")
    }
    scores = []
    for i, name in enumerate(names):
        got: dict[str, Estimate] = {}
        for k, in_class in classes.items():
            mask = has[i] & in_class
            rows[k].append(accuracy(mask, said[i] == truth))
            got[k] = est(rows[k][-1], mask)  # type: ignore[assignment]
        rows["agreement_model"].append(accuracy(has[i], said[i] == ref))
        rows["kappa_model"].append(_kappa_rows(weights * has[i], said[i], ref))
        scores.append(
            AnnotatorScore(
                name,
                int(has[i].sum()),
                got["resolved"],
                got["unresolved"],
                got["overall"],
                est(rows["agreement_model"][-1], has[i]),  # type: ignore[arg-type]
                est(rows["kappa_model"][-1], has[i]),  # type: ignore[arg-type]
            )
        )
    pairs, pair_kappas = [], []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            both = has[i] & has[j]
            if not both.any():
                continue
            kappa = _kappa_rows(weights * both, said[i], said[j])
            pair_kappas.append(kappa)
            pairs.append(
                PairScore(
                    names[i],
                    names[j],
                    int(both.sum()),
                    est(accuracy(both, said[i] == said[j]), both),  # type: ignore[arg-type]
                    est(kappa, both),  # type: ignore[arg-type]
                )
            )
    everyone = np.ones(n, bool)
    human = {k: est(_mean_rows(v), everyone) for k, v in rows.items()}
    human["kappa_annotators"] = est(_mean_rows(pair_kappas), everyone)
    model = {k: est(accuracy(c, ref == truth), c) for k, c in classes.items()}
    return AuditScore(
        str(audit.folder),
        audit.renderer,
        audit.settings,
        audit.perceiver.get("source", "?"),
        len(audit.clips),
        n,
        scores,
        pairs,
        human,
        model,  # type: ignore[arg-type]
        resamples,
    )
