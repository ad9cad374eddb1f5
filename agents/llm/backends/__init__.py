"""Backends: ``ChatBackend`` implementations. Each module imports its heavy dependencies
lazily; import the module you need (``openai_http``, ``hf_chat``, ``audio``)."""

from hear2act_agents.llm.backends.base import (
    BackendError,
    BackendTimeout,
    ChatBackend,
    MicroBatcher,
)

__all__ = ["BackendError", "BackendTimeout", "ChatBackend", "MicroBatcher"]
