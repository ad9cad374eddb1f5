"""Derived seeds: one rule for turning (seed, index) into another seed."""

from __future__ import annotations

_MULTIPLIER = 1_000_003  # a prime, so distinct (seed, index) pairs rarely collide
_MODULUS = 2**31  # what every consumer (numpy, torch, HTTP servers) accepts


def derive_seed(seed: int, index: int) -> int:
    """A seed for the ``index``-th repetition (run, request, eval episode) under ``seed``."""
    return (int(seed) * _MULTIPLIER + int(index)) % _MODULUS
