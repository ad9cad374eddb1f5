"""Access and experimental conditions as values, parsed once.

``Access`` says which channels an agent gets: the transcript (T), the audio (A) and the state
tag (S). ``Condition`` adds what the state tag shows (``fidelity``, the paper's interventions)
and whether the state is read from the voice by a perceiver instead (``perception``). Every part
of the package (env, runner, report, RL encoders, CLI) works with these values; only the text
forms (``"A+T"``, ``"T+S/shuffled"``, ``"A+T/inferred"``) are written to files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from hear2act_env.errors import ConfigError

__all__ = [
    "ACCESS",
    "Access",
    "AccessName",
    "Condition",
    "PERCEPTIONS",
    "Perception",
    "SPLIT_CHOICES",
    "STATE_FIDELITY",
    "SplitChoice",
    "StateFidelity",
]

AccessName = Literal["T", "A", "A+T", "T+S", "A+T+S"]
StateFidelity = Literal["correct", "none", "always_resolved", "always_unresolved", "shuffled"]
#: How a state is obtained when it is not shown: ``reference`` = read from the latest user
#: audio by the shipped reference prosody classifier (the paper's T+S-hat).
Perception = Literal["reference"]
SplitChoice = Literal["train", "test", "all"]
ACCESS: tuple[str, ...] = get_args(AccessName)
STATE_FIDELITY: tuple[str, ...] = get_args(StateFidelity)
PERCEPTIONS: tuple[str, ...] = get_args(Perception)
SPLIT_CHOICES: tuple[str, ...] = get_args(SplitChoice)
#: The word that stands for ``perception="reference"`` in condition labels and result files.
INFERRED = "inferred"


@dataclass(frozen=True)
class Access:
    """Which channels the agent gets: transcript, audio, state tag."""

    text: bool
    audio: bool
    state: bool

    def __post_init__(self) -> None:
        if str(self) not in ACCESS:
            raise ConfigError(
                f"access: text={self.text}, audio={self.audio}, state={self.state} is not a "
                f"condition of the protocol; expected one of {list(ACCESS)}"
            )

    @classmethod
    def parse(cls, value: str | Access, field: str = "access") -> Access:
        """``"A+T"`` -> ``Access(text=True, audio=True, state=False)``; an ``Access`` as is."""
        if isinstance(value, Access):
            return value
        if not isinstance(value, str) or value not in ACCESS:
            raise ConfigError(f"{field}: got {value!r}, expected one of {list(ACCESS)}")
        parts = value.split("+")
        return cls(text="T" in parts, audio="A" in parts, state="S" in parts)

    def __str__(self) -> str:
        return "+".join(
            c for c, on in (("A", self.audio), ("T", self.text), ("S", self.state)) if on
        )


@dataclass(frozen=True)
class Condition:
    """An access condition with what its state tag shows.

    - ``fidelity``: the state intervention (``correct`` unless the paper's fidelity study).
    - ``perception``: ``"reference"`` when the state is inferred from the audio by the reference
      perceiver (then access must include A and the fidelity is ``correct``).
    """

    access: Access
    fidelity: StateFidelity = "correct"
    perception: Perception | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.access, Access):
            object.__setattr__(self, "access", Access.parse(self.access))
        if self.fidelity not in STATE_FIDELITY:
            raise ConfigError(
                f"fidelity: got {self.fidelity!r}, expected one of {list(STATE_FIDELITY)}"
            )
        if self.perception is not None:
            if self.perception not in PERCEPTIONS:
                raise ConfigError(
                    f"perception: got {self.perception!r}, expected None or one of {list(PERCEPTIONS)}"
                )
            if not self.access.audio:
                raise ConfigError(
                    f"perception: {self.perception!r} reads the state from the audio, so access "
                    f"must include A; got {str(self.access)!r}"
                )
            if self.fidelity != "correct":
                raise ConfigError("perception: combine it with fidelity 'correct' only")

    @classmethod
    def of(cls, access: str | Access, fidelity: str = "correct") -> Condition:
        """From the pair stored in records and grid configs (``fidelity`` may be ``inferred``)."""
        if fidelity == INFERRED:
            return cls(Access.parse(access), "correct", "reference")
        return cls(Access.parse(access), fidelity)  # type: ignore[arg-type]

    @classmethod
    def parse(cls, value: str | Condition | tuple[str, str]) -> Condition:
        """From a label (``"T+S"``, ``"T+S/shuffled"``, ``"A+T/inferred"``) or a stored pair."""
        if isinstance(value, Condition):
            return value
        if isinstance(value, tuple | list) and len(value) == 2:
            return cls.of(value[0], value[1])
        if not isinstance(value, str):
            raise ConfigError(
                f"condition: got {value!r}, expected a label such as 'T+S/shuffled' or a pair"
            )
        access, _, fidelity = value.partition("/")
        return cls.of(access, fidelity or "correct")

    def with_perception(self, perception: Perception = "reference") -> Condition:
        """The same access with the state read from the audio by ``perception``."""
        return Condition(self.access, "correct", perception)

    @property
    def stored_fidelity(self) -> str:
        """The fidelity as written in records and manifests (``inferred`` with a perception)."""
        return INFERRED if self.perception is not None else self.fidelity

    def pair(self) -> tuple[str, str]:
        """``(access, fidelity)`` as stored in records and grid configs."""
        return (str(self.access), self.stored_fidelity)

    @property
    def is_intervention(self) -> bool:
        """Whether the state tag is manipulated (the fidelity study), not shown as it is."""
        return self.fidelity != "correct"

    def __str__(self) -> str:
        stored = self.stored_fidelity
        return str(self.access) if stored == "correct" else f"{self.access}/{stored}"
