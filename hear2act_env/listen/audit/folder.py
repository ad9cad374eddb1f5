"""The perception audit of a renderer (paper, appendix E; ``hear2act audit``).

People (and audio LLMs) listen to reaction clips and say whether the user's need sounds met
(resolved) or not (unresolved). Their answers are compared with the intended state, with each
other and with the reference perceiver, in the layout of the paper's Table 11. This module
has the audit folder: the clip set and the label store (no web: the app is ``audit_app``;
the scores are ``audit_scores``; a model's labels, ``model_labels``).

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

**Context** (``--context``, recorded as ``settings.context``): each clip also carries the
dialogue before it, from the first test-split dialogue in which its line was said (the user's
request, the assistant's suggestions and the user's replies, ending with the suggestion the
clip answers). Both clips of a pair carry the same lines, so the context tells nothing about
the class: a rater who judged by it alone would be right on exactly half the clips. People
see it above the clip and models get it in the prompt; the instructions both get are in
``audit_instructions``.

**Models** label a folder's clips with ``hear2act audit --model`` (``model_labels``); the
scores, people's and models' side by side, are in ``audit_scores``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env import interrupts, jsonsafe
from hear2act_env.errors import ConfigError
from hear2act_env.listen.clips import MAX_CLIP_BYTES, open_file_under, read_file_under
from hear2act_env.protocol.delivery import DELIVERY_LABELS, State
from hear2act_env.safewrite import write_atomic
from hear2act_env.speech.utterance import Utterance

__all__ = [
    "LABELS",
    "Audit",
    "AuditClip",
    "LabelConflict",
    "LabelStore",
    "check_annotator",
    "create_audit",
    "make_renderer",
    "open_or_create",
    "read_labels",
    "select_pairs",
    "serving_lock",
]

FORMAT = "hear2act-audit-v1"
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
    Path(__file__).resolve().parents[2] / "speech" / "data" / "reference_perceiver.json"
)

_RESOLVED_LABELS = DELIVERY_LABELS[State.RESOLVED]
_UNRESOLVED_LABELS = DELIVERY_LABELS[State.RELUCTANT] + DELIVERY_LABELS[State.CONCERN]
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_ORDER_TRIES = 200


# --- clip set -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ClipSpec:
    """One clip to render: the utterance, its true class, its pair and the dialogue lines
    before it (the same for both members of a pair)."""

    utterance: Utterance
    resolved: bool
    pair: int
    context: tuple[str, ...] = ()


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
            choices = sorted(seen.deliveries[resolved]) or list(pool)
            delivery = choices[int(rng.integers(len(choices)))]
            utt = Utterance(text, delivery, persona, variation, prosody_strength)
            specs.append(ClipSpec(utt, resolved, pair, seen.context))
    return specs


@dataclass
class _Line:
    """A (line, voice, variation) of the test split: the deliveries it was heard with per
    class, and the dialogue before its first occurrence."""

    context: tuple[str, ...]
    deliveries: dict[bool, set[str]] = field(default_factory=lambda: {True: set(), False: set()})


def _reaction_lines(
    test: Sequence[Any], strength: float, per_scenario: int, seed: int
) -> dict[tuple[str, str, int], _Line]:
    from hear2act_env.speech.bank_perception import collect_dialogue_clips

    lines: dict[tuple[str, str, int], _Line] = {}
    for clip in collect_dialogue_clips(test, REALIZATION, strength, per_scenario, seed):  # type: ignore[arg-type]
        utt = clip.utterance
        line = lines.setdefault((utt.text, utt.persona, utt.variation), _Line(clip.context))
        line.deliveries[bool(clip.resolved)].add(utt.delivery)
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
    context: tuple[str, ...] = ()  # the dialogue before it, in a folder made with --context

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
            **({"context": list(self.context)} if self.context else {}),
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
        context = d.get("context", [])
        if not isinstance(context, list) or not all(
            isinstance(line, str) and line.startswith(("User: ", "Assistant: ")) for line in context
        ):
            raise ValueError(f"clip {d['id']}: context must be a list of 'Speaker: words' lines")
        return cls(
            d["id"],
            utt,
            bool(d["resolved"]),
            int(d["pair"]),
            d["audio"],
            bool(d["reference"]),
            tuple(context),
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

    @property
    def context(self) -> bool:
        """Whether annotators get the dialogue before each clip (made with ``--context``)."""
        return bool(self.settings.get("context", False))

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
        if not isinstance(audit.settings.get("context", False), bool):
            raise ConfigError(f"{path}: settings.context must be true or false")
        if audit.context and not all(c.context for c in clips):
            raise ConfigError(f"{path}: settings.context is true but a clip has no context")
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

    def public(self, clip: str) -> dict[str, Any]:
        """What the page may know of a clip: its id, audio address and words, and with
        ``--context`` the dialogue before it (the same for both clips of a pair)."""
        c = self.by_id[clip]
        shown: dict[str, Any] = {"id": c.id, "audio": "/" + c.audio, "text": c.utterance.text}
        if self.context:
            shown["context"] = list(c.context)
        return shown


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
    context: bool = False,
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
        write_atomic(folder / audio, enc.data, root=folder)
        shown = spec.context if context else ()
        made.append(AuditClip(cid, spec.utterance, spec.resolved, spec.pair, audio, heard, shown))
    if len({c.id for c in made}) != len(made):  # 64-bit ids: practically never
        raise ConfigError("clip ids collide; run again")
    made.sort(key=lambda c: c.id)
    settings = {
        "clips": clips,
        "seed": seed,
        "renderer": renderer,
        "prosody_strength": float(prosody_strength),
        "perceiver": perceiver,
        "context": bool(context),
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
    write_atomic(folder / CLIPS_FILE, (json.dumps(data, indent=1) + "\n").encode("utf-8"))
    return audit


def open_or_create(
    folder: Path | str,
    *,
    clips: int | None = None,
    seed: int | None = None,
    renderer: str | None = None,
    prosody_strength: float | None = None,
    perceiver: str | None = None,
    context: bool | None = None,
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
        "context": context,
    }
    if (folder / CLIPS_FILE).exists():
        audit = Audit.load(folder)
        recorded = {**audit.settings, "context": audit.context}
        for key, value in asked.items():
            if value is not None and recorded.get(key) != value:
                flag = "--" + key.replace("_", "-")
                raise ConfigError(
                    f"{flag}: {folder} was made with {flag} {recorded.get(key)}, not "
                    f"{value}; leave {flag} out to reopen it, or use a new --out folder"
                )
        return audit, False
    defaults = {
        "clips": DEFAULT_CLIPS,
        "seed": DEFAULT_SEED,
        "renderer": DEFAULT_RENDERER,
        "prosody_strength": 1.0,
        "perceiver": DEFAULT_PERCEIVER,
        "context": False,
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
    path: Path,
    known: set[str] | dict[str, Any],
    folder: Path | None = None,
    answers: tuple[str | None, ...] = LABELS,
) -> tuple[dict[str, Any], int]:
    """The labels of one file in order, and the byte length of its complete lines.

    A last line without a newline (a torn write) is left out; any other bad line (a label not
    in ``answers``) is a ``ConfigError`` naming ``path:line``, and so is a file that is not a
    regular file inside ``folder`` (default: its own folder) of at most ``MAX_LABELS_FILE``
    bytes."""
    path = Path(path)
    data = read_file_under(path, path.parent if folder is None else folder, MAX_LABELS_FILE)
    end = data.rfind(b"\n") + 1
    labels: dict[str, Any] = {}
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
            or "label" not in rec
            or rec["label"] not in answers
        ):
            shown = " or ".join(json.dumps(a) for a in answers)
            raise ConfigError(f'{where}: expected {{"clip": ID, "label": {shown}}}')
        if rec["clip"] not in known:
            raise ConfigError(f"{where}: clip {rec['clip']!r} is not in this audit's clip set")
        if rec["clip"] in labels:
            raise ConfigError(f"{where}: clip {rec['clip']!r} is labelled a second time")
        labels[rec["clip"]] = rec["label"]
    return labels, end


class LabelStore:
    """One annotator's labels: read on open (cutting off a torn last line), appended as given.
    The file must be a regular file inside ``folder`` (default: its own folder), not a link.
    ``answers``: the labels it takes (a model's store also takes ``None``, no usable answer)."""

    def __init__(
        self,
        path: Path,
        order: Sequence[str],
        folder: Path | None = None,
        answers: tuple[str | None, ...] = LABELS,
    ) -> None:
        self.path = Path(path)
        self.folder = self.path.parent if folder is None else Path(folder)
        self.order = list(order)
        self.answers = answers
        self._known = set(self.order)
        self._lock = threading.Lock()
        self.labels: dict[str, Any] = {}
        self.repaired = False
        if os.path.lexists(self.path):
            self.labels, end = read_labels(self.path, self._known, self.folder, answers)
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

    def add(self, clip: str, label: str | None, **extra: Any) -> None:
        """Record ``label`` for ``clip`` (which must be the next clip) and flush it to disk;
        ``extra`` fields (JSON values) go on the same line."""
        if label not in self.answers:
            shown = " or ".join(str(a) for a in self.answers)
            raise ConfigError(f"label: expected {shown}, got {label!r}")
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
                **{k: v for k, v in extra.items() if k not in ("clip", "label", "n", "at")},
            }
            self.path.parent.mkdir(parents=True, exist_ok=True)
            line = (json.dumps(record) + "\n").encode("utf-8")
            with self._open(os.O_WRONLY | os.O_APPEND | os.O_CREAT) as fd:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            self.labels[clip] = label
