"""User states and delivery labels (docs/protocol.md#user-engine): how a reply is voiced."""

from __future__ import annotations

from enum import IntEnum
from typing import Literal, get_args


class State(IntEnum):
    """The state of the current recommendation after a user turn.

    The integer values are the ``state`` observation codes (0 is "withheld").
    """

    RESOLVED = 1
    RELUCTANT = 2
    CONCERN = 3
    REJECTION = 4

    @property
    def label(self) -> str:
        """Lower-case name used in ``info["truth"]["state"]`` and records."""
        return self.name.lower()

    @property
    def resolved(self) -> bool:
        """Whether the recommendation is resolved (only ``RESOLVED`` is)."""
        return self is State.RESOLVED


STATE_WITHHELD = 0

Delivery = Literal[
    "satisfied", "warm", "enthusiastic", "relieved",
    "underwhelmed", "lukewarm", "hesitant", "flat",
    "concerned",
    "frustrated", "disappointed", "impatient", "firm",
]  # fmt: skip
DELIVERIES: tuple[str, ...] = get_args(Delivery)

#: Delivery labels each state draws from (uniformly, with the env's generator).
DELIVERY_LABELS: dict[State, tuple[str, ...]] = {
    State.RESOLVED: ("satisfied", "warm", "enthusiastic", "relieved"),
    State.RELUCTANT: ("underwhelmed", "lukewarm", "hesitant", "flat"),
    State.CONCERN: ("concerned",),
    State.REJECTION: ("frustrated", "disappointed", "impatient", "firm"),
}

#: The state each delivery label belongs to.
STATE_OF_DELIVERY: dict[str, State] = {
    label: state for state, labels in DELIVERY_LABELS.items() for label in labels
}
