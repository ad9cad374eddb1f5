"""One espeak-ng voice per speaker (``protocol.speakers.SPEAKERS``): six personas, six twins.

The six persona voices speak the train split; each persona's held-out twin (same gender,
another pitch, timbre and rate) speaks the test split, so test clips are never heard in
training (``protocol.speakers``).

Each voice is the ``en-us`` language voice with a variant of our own: a base pitch and
pitch range, formant scaling (timbre) and a base speaking rate. The variants switch off the
features of espeak-ng that keep state from one utterance to the next (pitch flutter, the
roughness modulation, echo, breath noise drawn with ``rand()``), so that an utterance's
waveform never depends on what was spoken before it. Natural variation comes instead from the
seeded per-utterance jitter of ``hear2act_env.speech.prosody``.

| persona | gender | pitch (Hz, base-top) | timbre | rate (wpm) |
| --- | --- | --- | --- | --- |
| amber | female | 150-235 | bright, forward | 172 |
| birch | male | 85-125 | neutral | 168 |
| cedar | male | 70-108 | dark, low | 160 |
| dune | female | 135-205 | soft, lower | 165 |
| ember | female | 170-260 | high, light | 178 |
| fern | male | 98-142 | tenor, light | 175 |
| hazel (amber's twin, test) | female | 165-240 | clear, slightly nasal | 166 |
| linden (birch's twin, test) | male | 90-135 | warm, rounded | 174 |
| oak (cedar's twin, test) | male | 64-98 | deep, broad | 167 |
| iris (dune's twin, test) | female | 125-192 | breathy-light, narrow | 181 |
| juniper (ember's twin, test) | female | 185-275 | bright, thin | 169 |
| maple (fern's twin, test) | male | 105-156 | light, forward | 162 |
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from hear2act_env.errors import ConfigError
from hear2act_env.protocol.speakers import SPEAKERS

#: Language voice every persona builds on.
BASE_LANGUAGE = "en-us"
#: Prefix of the variant files written for the personas.
VARIANT_PREFIX = "h2a_"

# Lines every variant shares: no stateful effects (see the module docstring).
_STATELESS = "flutter 0\nroughness 8\necho 0 0\n"


@dataclass(frozen=True)
class Voice:
    """An espeak-ng voice: a variant file's body and the base speaking rate (wpm)."""

    persona: str
    gender: str
    pitch: tuple[int, int]
    formants: tuple[str, ...]
    rate_wpm: int

    @property
    def variant_name(self) -> str:
        """The variant's file name under ``voices/!v``."""
        return f"{VARIANT_PREFIX}{self.persona}"

    @property
    def espeak_name(self) -> str:
        """The name passed to ``espeak_SetVoiceByName``."""
        return f"{BASE_LANGUAGE}+{self.variant_name}"

    def variant_file(self) -> str:
        """The variant file's text."""
        lines = [
            "language variant",
            f"name {self.variant_name}",
            f"gender {self.gender}",
            f"pitch {self.pitch[0]} {self.pitch[1]}",
            *self.formants,
        ]
        return "\n".join(lines) + "\n" + _STATELESS


VOICES: dict[str, Voice] = {
    "amber": Voice(
        "amber",
        "female",
        (150, 235),
        (
            "formant 0 110  80 150",
            "formant 1 118  80 170",
            "formant 2 112  70 150",
            "formant 3 115  70 150",
            "formant 4 115  80 150",
            "formant 5 115  85 150",
            "formant 6 105  80 150",
            "formant 7 110  70 150",
            "formant 8 110  70 150",
        ),
        172,
    ),
    "birch": Voice(
        "birch",
        "male",
        (85, 125),
        (
            "formant 0 100  90 120",
            "formant 1 100  90 140",
            "formant 2 100  70 140",
            "formant 3 100  75 140",
            "formant 4 100  80 140",
            "formant 5 100  80 140",
        ),
        168,
    ),
    "cedar": Voice(
        "cedar",
        "male",
        (70, 108),
        (
            "formant 0  96 100 100",
            "formant 1  94  97 100",
            "formant 2  94  97 100",
            "formant 3  95 103 100",
            "formant 4  95 103 100",
            "formant 5  95 103 100",
        ),
        160,
    ),
    "dune": Voice(
        "dune",
        "female",
        (135, 205),
        (
            "formant 0 105  80 150",
            "formant 1 110  80 160",
            "formant 2 108  70 150",
            "formant 3 110  70 150",
            "formant 4 112  75 150",
            "formant 5 112  75 150",
            "formant 6 105  65 150",
            "formant 7 105  65 150",
            "formant 8 105  65 150",
        ),
        165,
    ),
    "ember": Voice(
        "ember",
        "female",
        (170, 260),
        (
            "formant 0 120  80 150",
            "formant 1 122  80 160",
            "formant 2 128  75 150",
            "formant 3 123  75 150",
            "formant 4 125  80 150",
            "formant 5 125  80 150",
            "formant 6 110  80 150",
            "formant 7 110  75 150",
            "formant 8 110  75 150",
        ),
        178,
    ),
    "fern": Voice(
        "fern",
        "male",
        (98, 142),
        (
            "formant 0 100  80 120",
            "formant 1  92  85 120",
            "formant 2 108  85 120",
            "formant 3 104  90 120",
            "formant 4 100  90 120",
            "formant 5 100  90 120",
        ),
        175,
    ),
    "hazel": Voice(
        "hazel",
        "female",
        (165, 240),
        (
            "formant 0 108  85 140",
            "formant 1 114  90 150",
            "formant 2 116  75 140",
            "formant 3 112  70 160",
            "formant 4 110  75 150",
            "formant 5 112  80 150",
            "formant 6 108  80 150",
            "formant 7 108  70 150",
            "formant 8 108  70 150",
        ),
        166,
    ),
    "linden": Voice(
        "linden",
        "male",
        (90, 135),
        (
            "formant 0  98  95 125",
            "formant 1  97  95 130",
            "formant 2 103  80 130",
            "formant 3  98  80 135",
            "formant 4  98  85 140",
            "formant 5  98  85 140",
        ),
        174,
    ),
    "oak": Voice(
        "oak",
        "male",
        (64, 98),
        (
            "formant 0  93 105 110",
            "formant 1  92 100 110",
            "formant 2  96  95 110",
            "formant 3  93 100 110",
            "formant 4  94 100 110",
            "formant 5  94 100 110",
        ),
        167,
    ),
    "iris": Voice(
        "iris",
        "female",
        (125, 192),
        (
            "formant 0 112  75 160",
            "formant 1 116  75 170",
            "formant 2 110  65 160",
            "formant 3 113  65 155",
            "formant 4 114  70 155",
            "formant 5 114  70 155",
            "formant 6 107  70 150",
            "formant 7 107  65 150",
            "formant 8 107  65 150",
        ),
        181,
    ),
    "juniper": Voice(
        "juniper",
        "female",
        (185, 275),
        (
            "formant 0 118  85 140",
            "formant 1 125  85 150",
            "formant 2 124  80 140",
            "formant 3 120  80 145",
            "formant 4 122  85 145",
            "formant 5 122  85 145",
            "formant 6 112  85 150",
            "formant 7 112  80 150",
            "formant 8 112  80 150",
        ),
        169,
    ),
    "maple": Voice(
        "maple",
        "male",
        (105, 156),
        (
            "formant 0 103  80 115",
            "formant 1 100  85 125",
            "formant 2 106  90 125",
            "formant 3 106  90 125",
            "formant 4 103  90 120",
            "formant 5 103  90 120",
        ),
        162,
    ),
}

if set(VOICES) != set(SPEAKERS):  # pragma: no cover - guards edits of either table
    raise RuntimeError("VOICES must have exactly one voice per speaker")


def voice_for(persona: str) -> Voice:
    """The voice of ``persona`` (any of ``SPEAKERS``)."""
    try:
        return VOICES[persona]
    except KeyError:
        raise ConfigError(
            f"speaker must be one of {', '.join(SPEAKERS)}; got {persona!r}"
        ) from None


def voices_digest() -> str:
    """A short hash of every voice definition (part of the renderer version)."""
    h = hashlib.sha256()
    for persona in sorted(VOICES):
        v = VOICES[persona]
        h.update(f"{v.espeak_name}\n{v.variant_file()}\n{v.rate_wpm}\n".encode())
    return h.hexdigest()[:12]
