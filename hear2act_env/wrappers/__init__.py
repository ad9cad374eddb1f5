"""Observation adapters for Hear2Act environments (audio ones import their extras lazily).

Every wrapper class of the subpackage is importable from here; importing it loads gymnasium
and numpy only (no torch).
"""

from hear2act_env.wrappers.clip_summary import ClipSummaryWrapper
from hear2act_env.wrappers.inferred_state import InferredState
from hear2act_env.wrappers.logmel import LogMelObservation
from hear2act_env.wrappers.metrics import MONITOR_KEYS, RecordHear2ActMetrics
from hear2act_env.wrappers.perceived import PerceivedState
from hear2act_env.wrappers.prosody import ProsodyFeatures
from hear2act_env.wrappers.state_onehot import StateOneHot
from hear2act_env.wrappers.structured import StructuredObservation

__all__ = [
    "MONITOR_KEYS",
    "ClipSummaryWrapper",
    "InferredState",
    "LogMelObservation",
    "PerceivedState",
    "ProsodyFeatures",
    "RecordHear2ActMetrics",
    "StateOneHot",
    "StructuredObservation",
]
