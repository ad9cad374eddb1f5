"""What a data file claims about the code that measured it, and recomputing each claim from
the code now."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from .errors import FigureError


def _bank_sha256() -> str:
    from hear2act_env.scenarios.bank import BANK_PATH

    return hashlib.sha256(BANK_PATH.read_bytes()).hexdigest()


def _bank_version() -> int:
    from hear2act_env.scenarios.bank import BANK_VERSION

    return BANK_VERSION


def _prosody_table() -> str:
    from hear2act_env.speech.prosody import table_digest

    return table_digest()


def _voices() -> str:
    from hear2act_env.speech.voices import voices_digest

    return voices_digest()


def _package_version() -> str:
    import hear2act_env

    return hear2act_env.__version__


def renderer_revision(name: str) -> str:
    from hear2act_env.speech.renderers import RENDERERS, make_renderer

    if name not in RENDERERS:
        raise FigureError(f"no shipped renderer {name!r} (expected one of {', '.join(RENDERERS)})")
    return str(make_renderer(name).version).split("+", 1)[0]


_HEX_RE = re.compile(r"[0-9a-f]{8,64}")


@dataclass(frozen=True)
class _Claim:
    """A claim of the manifest: what it may hold, how the code computes it now, and whether
    the manifest may give a prefix of it."""

    valid: Callable[[object], bool]
    expected: str
    compute: Callable[[], object]
    prefix: bool


def _is_hex(value: object) -> bool:
    return isinstance(value, str) and _HEX_RE.fullmatch(value) is not None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


CLAIMS: dict[str, _Claim] = {
    "bank_sha256": _Claim(_is_hex, "8-64 hex digits", _bank_sha256, True),
    "bank_version": _Claim(_is_int, "an integer", _bank_version, False),
    "prosody_table": _Claim(_is_hex, "8-64 hex digits", _prosody_table, True),
    "voices": _Claim(_is_hex, "8-64 hex digits", _voices, True),
    "package_version": _Claim(_is_text, "a version string", _package_version, False),
}
