"""The error of the figure check."""

from __future__ import annotations

from hear2act_env.errors import Hear2ActError


class FigureError(Hear2ActError, ValueError):
    """A marker, key or manifest entry that cannot be read, or a figure that does not hold."""
