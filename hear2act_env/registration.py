"""Registration of the Hear2Act environment ids (variants differ only in kwargs)."""

from __future__ import annotations

from typing import Any

from gymnasium.envs.registration import register, registry

ENTRY_POINT = "hear2act_env.env:Hear2ActEnv"

#: env id -> constructor kwargs. The plain ids hear the user (audio + transcript, access A+T);
#: "Text" ids read the transcript only (T); "TextState" adds the state tag (T+S).
ENV_IDS: dict[str, dict[str, Any]] = {
    "Hear2Act-Prosody-v0": {"realization": "prosody", "access": "A+T"},
    "Hear2Act-Explicit-v0": {"realization": "explicit", "access": "A+T"},
    "Hear2Act-Prosody-Text-v0": {"realization": "prosody", "access": "T"},
    "Hear2Act-Explicit-Text-v0": {"realization": "explicit", "access": "T"},
    "Hear2Act-Prosody-TextState-v0": {"realization": "prosody", "access": "T+S"},
    "Hear2Act-Explicit-TextState-v0": {"realization": "explicit", "access": "T+S"},
}


def register_envs() -> None:
    """Register every id in ``ENV_IDS`` (idempotent)."""
    for env_id, kwargs in ENV_IDS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=ENTRY_POINT, kwargs=kwargs)
