"""Installed versions of distributions, for manifests and run configs."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata

__all__ = ["installed_versions"]


def installed_versions(dists: Iterable[str]) -> dict[str, str]:
    """``{name: version}`` of each installed distribution in ``dists`` (missing ones left out)."""
    out = {}
    for dist in dists:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out
