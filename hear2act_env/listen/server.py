"""Serving the local web apps of ``hear2act play`` and ``hear2act audit``: uvicorn on
127.0.0.1 by default, a free port with ``port=0``, and a background server for tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hear2act_env.errors import ConfigError, MissingExtraError

__all__ = ["LOCAL_HOST", "background_server", "free_port", "serve", "templates"]

LOCAL_HOST = "127.0.0.1"


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtraError("listen", exc.name or "uvicorn") from None
    return uvicorn


def templates() -> Any:
    """The package's Jinja2 environment (``hear2act_env/listen/templates``, autoescaped)."""
    try:
        import jinja2
    except ImportError as exc:
        raise MissingExtraError("listen", exc.name or "jinja2") from None
    return jinja2.Environment(
        loader=jinja2.PackageLoader("hear2act_env.listen", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def free_port(host: str = LOCAL_HOST) -> int:
    """A port nothing listens on now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _check_port(port: int) -> None:
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"port: got {port!r}, expected 0 (any free port) to 65535")


def serve(app: Any, host: str = LOCAL_HOST, port: int = 0, label: str = "app") -> None:
    """Run ``app`` until interrupted, printing its address first (``port=0``: a free one)."""
    uvicorn = _uvicorn()
    _check_port(port)
    port = port or free_port(host)
    try:
        with socket.socket() as s:
            s.bind((host, port))
    except OSError as exc:
        raise ConfigError(f"port: cannot listen on {host}:{port} ({exc.strerror})") from None
    print(f"{label}: open http://{host}:{port}/ in a browser (Ctrl-C stops)", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


@contextmanager
def background_server(app: Any, host: str = LOCAL_HOST, timeout: float = 20.0) -> Iterator[str]:
    """Serve ``app`` from a thread on a free port; yields its base URL, stops on exit."""
    uvicorn = _uvicorn()
    port = free_port(host)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the test server did not start on {host}:{port}")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
