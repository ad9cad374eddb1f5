"""The exception hierarchy: every error this package raises on purpose is a ``Hear2ActError``."""

from __future__ import annotations


class Hear2ActError(Exception):
    """Root of all errors raised by hear2act-env."""


class ScenarioError(Hear2ActError, ValueError):
    """A scenario (or a scenario file) breaks the protocol's structural rules."""


class DomainError(Hear2ActError, ValueError):
    """A domain definition is malformed or cannot yield a valid scenario."""


class ConfigError(Hear2ActError, ValueError):
    """An argument passed by the user has a value outside what is accepted."""


class InfrastructureError(Hear2ActError, RuntimeError):
    """An agent could not get an answer from its model (refused, timed out, HTTP error or
    unreadable reply, after the backend's retries): the episode is recorded as an error of kind
    ``infrastructure``, never as the agent's failure."""


class MissingExtraError(Hear2ActError, ImportError):
    """An optional dependency group (an extra) is needed but not installed."""

    def __init__(self, extra: str, module: str) -> None:
        super().__init__(
            f"this feature needs the optional module {module!r}: "
            f'install it with: pip install "hear2act-env[{extra}]"'
        )
        self.extra = extra
        self.module = module
