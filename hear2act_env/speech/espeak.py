"""``EspeakRenderer``: espeak-ng (from the ``espeakng-loader`` wheel) through ctypes.

espeak-ng keeps global state, so one engine per process synthesizes under a process-wide
lock; it is initialized lazily on first use and again in a forked child (the pid is
recorded), so renderers work in threads, forked and spawned workers alike. The engine runs on
an overlay of the wheel's data folder (symlinks) that adds one voice variant per persona (see
``voices``); those variants switch off espeak-ng's stateful effects, which makes each
waveform a function of its utterance alone, bit for bit.

Rendering: the delivery's prosody (``prosody.prosody_for``) sets the rate, pitch, range and
word gap; an SSML string adds pauses (``<break>``) and the last word's rate and pitch
(``<prosody>``); espeak-ng synthesizes at 22,050 Hz; the result is resampled to 16 kHz, the
end is faded for trailing off, the level set, and lead and tail silence added (the pause
placement and this finishing are shared with ``PiperRenderer``: see ``shaping``).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

from hear2act_env.constants import SAMPLE_RATE
from hear2act_env.errors import Hear2ActError, MissingExtraError
from hear2act_env.speech.prosody import Prosody, prosody_for, table_digest
from hear2act_env.speech.resample import resample
from hear2act_env.speech.shaping import WORD, finish, finishing_settings, pause_breaks
from hear2act_env.speech.utterance import Utterance
from hear2act_env.speech.voices import VOICES, voice_for, voices_digest

__all__ = ["EspeakRenderer", "EspeakError", "build_ssml", "espeak_settings"]

# espeak-ng API constants (speak_lib.h)
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000
_CHARS_UTF8 = 1
_SSML = 0x10
_POS_CHARACTER = 1
_RATE, _VOLUME, _PITCH, _RANGE, _WORDGAP = 1, 2, 3, 4, 7
_NATIVE_RATE = 22050
#: espeak-ng's own volume (0-200); kept low enough that its overflow gain control never acts
#: (that control keeps state across utterances). The label's level is applied afterwards.
_ENGINE_VOLUME = 60
#: Output gain applied after synthesis (before the label's ``gain_db``).
_BASE_GAIN = 1.0
_RENDERER_REVISION = "1"

_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


class EspeakError(Hear2ActError, RuntimeError):
    """espeak-ng failed to initialize or to synthesize."""


# --------------------------------------------------------------------------- text building


def build_ssml(text: str, prosody: Prosody, base_pitch: int) -> str:
    """The SSML sent to espeak-ng: the text's own words (escaped) plus markup only.

    Markup: ``<break>`` for ``pause_early_ms`` and ``pause_late_ms`` (placed by
    ``shaping.pause_breaks``) and a ``<prosody>`` around
    the last word for ``final_rate_pct``/``final_pitch_st`` (relative to the utterance's rate,
    and to its espeak-ng pitch number ``base_pitch``). Whitespace is normalized to single
    spaces; nothing else of the text changes.
    """
    words = WORD.findall(text)
    parts = [escape(w) for w in words]
    n = len(words)
    breaks = pause_breaks(words, prosody)  # break after word index i
    final_rate = int(round(100 + prosody.final_rate_pct))
    final_pitch = _pitch_percent(base_pitch, prosody.final_pitch_st)
    if n >= 2 and (final_rate != 100 or final_pitch != 100):
        attrs = []
        if final_rate != 100:
            attrs.append(f'rate="{max(final_rate, 30)}%"')
        if final_pitch != 100:
            attrs.append(f'pitch="{final_pitch}%"')
        parts[-1] = f"<prosody {' '.join(attrs)}>{parts[-1]}</prosody>"
    out = []
    for i, p in enumerate(parts):
        out.append(p)
        if i in breaks:
            out.append(f'<break time="{breaks[i]}ms"/>')
    return "<speak>" + " ".join(out) + "</speak>"


def _pitch_number(semitones: float) -> float:
    """espeak-ng's 0-100 pitch number for a shift from 50 (its scale is 2**((p-50)/50))."""
    return 50.0 + 50.0 * semitones / 12.0


def _pitch_percent(base: int, semitones: float) -> int:
    """The SSML pitch percentage (of the pitch number) for a shift of ``semitones``."""
    target = base + 50.0 * semitones / 12.0
    return int(round(100.0 * max(0.0, min(100.0, target)) / max(base, 1)))


@dataclass(frozen=True)
class EspeakSettings:
    """Everything an utterance is synthesized and post-processed with."""

    voice: str
    rate: int
    pitch: int
    range: int
    word_gap: int
    ssml: str
    gain: float
    fade_db: float
    lead_s: float
    tail_s: float


def espeak_settings(utt: Utterance) -> EspeakSettings:
    """Map an utterance to espeak-ng parameters, SSML and post-processing."""
    p = prosody_for(utt)
    voice = voice_for(utt.persona)
    pitch = int(round(min(100.0, max(0.0, _pitch_number(p.pitch_st)))))
    rng = int(round(min(100.0, max(0.0, 50.0 * (1.0 + p.range_pct / 100.0)))))
    rate = int(round(min(450.0, max(80.0, voice.rate_wpm * (1.0 + p.rate_pct / 100.0)))))
    return EspeakSettings(
        voice=voice.espeak_name,
        rate=rate,
        pitch=pitch,
        range=rng,
        word_gap=int(round(max(0.0, p.word_gap_ms) / 10.0)),
        ssml=build_ssml(utt.text, p, pitch),
        **finishing_settings(p, _BASE_GAIN),
    )


# --------------------------------------------------------------------------- the engine

_lock = threading.Lock()
_engine: _Engine | None = None


def _reset_after_fork() -> None:
    global _lock, _engine
    _lock = threading.Lock()
    _engine = None  # the child initializes its own


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


class _Engine:
    """The process's espeak-ng instance (use only while holding ``_lock``)."""

    def __init__(self) -> None:
        try:
            import espeakng_loader
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise MissingExtraError("audio", "espeakng_loader") from exc
        self.pid = os.getpid()
        self.data_path = _overlay_data_dir(Path(espeakng_loader.get_data_path()))
        lib = ctypes.CDLL(espeakng_loader.get_library_path())
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetSynthCallback.argtypes = [_CALLBACK]
        lib.espeak_SetSynthCallback.restype = None
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_SetParameter.restype = ctypes.c_int
        lib.espeak_Synth.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        lib.espeak_Synth.restype = ctypes.c_int
        lib.espeak_Info.argtypes = [ctypes.c_void_p]
        lib.espeak_Info.restype = ctypes.c_char_p
        rate = lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS, 200, str(self.data_path).encode(), _INITIALIZE_DONT_EXIT
        )
        if rate != _NATIVE_RATE:
            raise EspeakError(f"espeak_Initialize failed (returned {rate}) on {self.data_path}")
        self.lib = lib
        self.version = lib.espeak_Info(None).decode(errors="replace").split()[0]
        self._chunks: list[bytes] = []
        self._callback = _CALLBACK(self._on_audio)  # keep a reference: espeak holds it
        lib.espeak_SetSynthCallback(self._callback)

    def _on_audio(self, wav: ctypes.c_void_p, n: int, _events: ctypes.c_void_p) -> int:
        if n > 0 and wav:
            self._chunks.append(ctypes.string_at(wav, 2 * n))
        return 0

    def synth(
        self, text: str, voice: str, params: tuple[tuple[int, int], ...], ssml: bool
    ) -> np.ndarray:
        """Synthesize ``text``: int16 samples at 22,050 Hz."""
        lib = self.lib
        if lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise EspeakError(f"espeak-ng has no voice {voice!r}")
        for key, value in params:
            if lib.espeak_SetParameter(key, value, 0) != 0:
                raise EspeakError(f"espeak_SetParameter({key}, {value}) failed")
        data = text.encode("utf-8") + b"\0"
        flags = _CHARS_UTF8 | (_SSML if ssml else 0)
        self._chunks = []
        try:
            status = lib.espeak_Synth(data, len(data), 0, _POS_CHARACTER, 0, flags, None, None)
            if status != 0:
                raise EspeakError(f"espeak_Synth failed with status {status}")
            raw = b"".join(self._chunks)
        finally:
            self._chunks = []
        return np.frombuffer(raw, dtype="<i2").copy()


def _engine_locked() -> _Engine:
    """The process's engine, created on first use (call with ``_lock`` held)."""
    global _engine
    if _engine is None or _engine.pid != os.getpid():
        _engine = _Engine()
    return _engine


def _overlay_data_dir(source: Path) -> Path:
    """A folder that mirrors espeak-ng's data (symlinks) plus the persona variants.

    It lives in ``<tmp>/hear2act-espeak-<uid>/<digest>`` (shared by this user's processes),
    is built in a staging folder and moved into place atomically.
    """
    import hashlib

    digest = hashlib.sha256(f"{source}\n{voices_digest()}".encode()).hexdigest()[:16]
    uid = os.getuid() if hasattr(os, "getuid") else 0
    parent = Path(tempfile.gettempdir()) / f"hear2act-espeak-{uid}"
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if hasattr(os, "getuid") and parent.stat().st_uid != uid:  # not ours: use a private one
        parent = Path(tempfile.mkdtemp(prefix="hear2act-espeak-"))
    target = parent / digest
    if (target / ".complete").exists():
        return target
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=parent))
    try:
        for entry in source.iterdir():
            if entry.name != "voices":
                _link(entry, staging / entry.name)
        voices = staging / "voices"
        voices.mkdir()
        for entry in (source / "voices").iterdir():
            if entry.name != "!v":
                _link(entry, voices / entry.name)
        variants = voices / "!v"
        variants.mkdir()
        for voice in VOICES.values():
            (variants / voice.variant_name).write_text(voice.variant_file(), encoding="ascii")
        (staging / ".complete").write_text("ok\n")
        try:
            os.replace(staging, target)
        except OSError:  # another process finished first: use theirs
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if not (target / ".complete").exists():
        raise EspeakError(f"could not prepare espeak-ng data in {target}")
    return target


def _link(src: Path, dst: Path) -> None:
    try:
        os.symlink(src, dst, target_is_directory=src.is_dir())
    except OSError:  # pragma: no cover - platforms without symlinks
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)


def engine_version() -> str:
    """The espeak-ng library's version (initializes the engine)."""
    with _lock:
        return _engine_locked().version


# --------------------------------------------------------------------------- the renderer


class EspeakRenderer:
    """The default renderer: espeak-ng voices with label-driven prosody (see module doc)."""

    name = "espeak-ng"
    sample_rate = SAMPLE_RATE

    def __init__(self) -> None:
        self._version: str | None = None

    @property
    def version(self) -> str:
        """Renderer revision, espeak-ng version and the prosody/voice table digests."""
        if self._version is None:
            self._version = (
                f"{_RENDERER_REVISION}+espeak-ng-{engine_version()}"
                f"+prosody-{table_digest()}+voices-{voices_digest()}"
            )
        return self._version

    def render(self, utt: Utterance) -> np.ndarray:
        """Speak ``utt``: float32, mono, 16 kHz, in [-1, 1]; deterministic."""
        s = espeak_settings(utt)
        params = (
            (_RATE, s.rate),
            (_VOLUME, _ENGINE_VOLUME),
            (_PITCH, s.pitch),
            (_RANGE, s.range),
            (_WORDGAP, s.word_gap),
        )
        with _lock:
            raw = _engine_locked().synth(s.ssml, s.voice, params, ssml=True)
        x = resample(raw * (1.0 / 32768.0), _NATIVE_RATE, SAMPLE_RATE)
        return finish(x, s, SAMPLE_RATE)

    def synthesize_plain(self, text: str, voice: str = "en-us") -> np.ndarray:
        """Bare espeak-ng at default settings: int16 at 22,050 Hz (no prosody, no resampling).

        The baseline of ``benchmarks/speech_throughput.py``.
        """
        params = ((_RATE, 175), (_VOLUME, 100), (_PITCH, 50), (_RANGE, 50), (_WORDGAP, 0))
        with _lock:
            return _engine_locked().synth(text, voice, params, ssml=False)
