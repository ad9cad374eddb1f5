"""Observation adapters for Hear2Act environments (audio ones import their extras lazily)."""

from hear2act_env.wrappers.metrics import MONITOR_KEYS, RecordHear2ActMetrics
from hear2act_env.wrappers.perceived import PerceivedState
from hear2act_env.wrappers.state_onehot import StateOneHot
from hear2act_env.wrappers.structured import StructuredObservation

__all__ = [
    "MONITOR_KEYS",
    "PerceivedState",
    "RecordHear2ActMetrics",
    "StateOneHot",
    "StructuredObservation",
]
