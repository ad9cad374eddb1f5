"""Observation adapters for Hear2Act environments."""

from hear2act_env.wrappers.structured import StructuredObservation

__all__ = ["StructuredObservation"]
