"""Serving the local web apps of ``hear2act play`` and ``hear2act audit``: uvicorn on
127.0.0.1 by default, a free port with ``port=0``, and a background server for tests.

What both apps share against a hostile page or client (``guard``, ``read_json``,
``error_handlers``): with a local address, a ``Host`` header naming another host is refused
(no DNS rebinding); an ``Origin`` header other than the server's own is refused (another site's
page cannot act); a JSON body needs ``Content-Type: application/json`` (which a foreign page
cannot send without a CORS preflight, never answered), is read at most ``MAX_BODY + 1`` bytes
far and nests at most ``jsonsafe.MAX_DEPTH`` deep; every refusal is a 4xx JSON
``{"error": message}``. ``serve`` stops on SIGINT or SIGTERM (``hear2act_env.interrupts``)
and raises ``Interrupted`` with the caller's resume line.
"""

from __future__ import annotations

import contextlib
import ipaddress
import signal
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hear2act_env import interrupts, jsonsafe
from hear2act_env.errors import ConfigError, MissingExtraError

__all__ = [
    "LOCAL_HOST",
    "STATIC",
    "LOCAL_HOSTS",
    "MAX_BODY",
    "Refused",
    "allowed_hosts_for",
    "background_server",
    "error_handlers",
    "error_response",
    "free_port",
    "guard",
    "read_json",
    "serve",
    "templates",
]

#: The apps' scripts and style sheet, shared by the three (served by play and audit, copied
#: into a view site); the page templates are ``templates()``.
STATIC = Path(__file__).resolve().parent / "static"
LOCAL_HOST = "127.0.0.1"
#: ``Host`` names accepted when an app serves a loopback address.
LOCAL_HOSTS = ("127.0.0.1", "localhost")
#: The largest JSON body the apps read (their bodies are well under 200 bytes).
MAX_BODY = 4096
#: Seconds a body may take to arrive (a Content-Length longer than the body sent: 408).
BODY_SECONDS = 10.0
#: Seconds requests in flight get to finish once the server is asked to stop.
GRACE = 2
NO_STORE = {"Cache-Control": "no-store"}


class Refused(Exception):
    """A request turned away before its content is looked at: an HTTP status and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


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


# -- what both apps refuse -------------------------------------------------------------------
def allowed_hosts_for(host: str) -> tuple[str, ...] | None:
    """The ``Host`` names a server on ``host`` accepts: for a loopback address ``LOCAL_HOSTS``
    and the address itself; ``None`` (any) for another address, which anyone may reach."""
    if host == "localhost":
        return LOCAL_HOSTS
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if not address.is_loopback:
        return None
    own = f"[{address.compressed}]" if address.version == 6 else address.compressed
    return tuple(dict.fromkeys((*LOCAL_HOSTS, own)))


def _host_name(host: str) -> str:
    """``"127.0.0.1:8000"`` -> ``"127.0.0.1"``, ``"[::1]:80"`` -> ``"[::1]"`` (lower case)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.partition(":")[0]


def _origin_of(scheme: str, host: str) -> str:
    """The origin a page served under ``Host: host`` sends (default ports left out)."""
    host = host.strip().lower()
    default = {"http": ":80", "https": ":443"}.get(scheme)
    if default and host.endswith(default):
        host = host[: -len(default)]
    return f"{scheme}://{host}"


def error_response(status: int, message: str, **extra: Any) -> Any:
    """``{"error": message, ...}`` with ``status``, never cached."""
    from starlette.responses import JSONResponse

    return JSONResponse({"error": message, **extra}, status_code=status, headers=NO_STORE)


class _Guard:
    """ASGI middleware: refuses a ``Host`` not in ``allowed_hosts`` (when any) with a 400
    and an ``Origin`` other than the server's own with a 403, before the app sees them."""

    def __init__(self, app: Any, allowed_hosts: Sequence[str] | None = None) -> None:
        self.app = app
        self.allowed = {h.lower() for h in allowed_hosts} if allowed_hosts else None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for key, value in scope.get("headers", ()):
            name = key.decode("latin-1").lower()
            if name in ("host", "origin") and name in headers:  # two of them: refuse
                headers[name] = "\0"
            else:
                headers.setdefault(name, value.decode("latin-1"))
        host = headers.get("host", "")
        refusal = None
        if self.allowed is not None and _host_name(host) not in self.allowed:
            refusal = (400, f"Host {host!r} is not served here; open http://{LOCAL_HOST}:PORT/")
        elif "origin" in headers and headers["origin"].lower() != _origin_of(
            scope.get("scheme", "http"), host
        ):
            refusal = (403, "a request from another site's page is refused")
        if refusal is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await error_response(*refusal)(scope, receive, send)


def guard(allowed_hosts: Sequence[str] | None = None) -> list[Any]:
    """The Starlette middleware list of an app: ``Host`` (when ``allowed_hosts``) and
    ``Origin`` checks."""
    from starlette.middleware import Middleware

    return [Middleware(_Guard, allowed_hosts=allowed_hosts)]


async def read_json(request: Any, max_bytes: int = MAX_BODY) -> Any:
    """The JSON value of ``request``'s body, read at most ``max_bytes + 1`` bytes far:
    ``Refused`` with 415 (not ``application/json``), 413 (too large), 408 (not all there
    after ``BODY_SECONDS``) or 400 (not UTF-8 JSON, nested deeper than ``jsonsafe.MAX_DEPTH``,
    or the client went away)."""
    import anyio
    from starlette.requests import ClientDisconnect

    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise Refused(415, "expected a JSON body (Content-Type: application/json)")
    too_large = Refused(413, f"the body is too large (at most {max_bytes} bytes)")
    size = request.headers.get("content-length")
    if size is not None and not (size.isascii() and size.isdigit()):
        raise Refused(400, "the Content-Length header is not a number")
    if size is not None and (len(size) > 12 or int(size) > max_bytes):
        raise too_large
    data = bytearray()
    try:
        with anyio.fail_after(BODY_SECONDS):
            async for chunk in request.stream():
                data += chunk
                if len(data) > max_bytes:
                    raise too_large
    except ClientDisconnect:
        raise Refused(400, "the client went away before the body ended") from None
    except TimeoutError:
        raise Refused(408, f"the body did not arrive within {BODY_SECONDS:g} s") from None
    try:  # UTF-8 only (RFC 8259): json.loads would also take UTF-16 and UTF-32 bytes
        return jsonsafe.loads(bytes(data).decode("utf-8"))
    except ValueError:  # also UnicodeDecodeError and jsonsafe.JSONDepthError
        raise Refused(400, "the body is not valid JSON") from None


def error_handlers() -> dict[Any, Any]:
    """Exception handlers for Starlette: HTTP errors (404, 405, ...) as JSON, anything
    unexpected as a JSON 500 without a traceback (the terminal has it)."""
    from starlette.exceptions import HTTPException

    async def http_error(request: Any, exc: Exception) -> Any:
        assert isinstance(exc, HTTPException)
        response = error_response(exc.status_code, str(exc.detail))
        response.headers.update(exc.headers or {})
        return response

    async def refused(request: Any, exc: Exception) -> Any:
        assert isinstance(exc, Refused)
        return error_response(exc.status, exc.message)

    async def server_error(request: Any, exc: Exception) -> Any:
        return error_response(500, f"internal error ({type(exc).__name__}); see the terminal")

    return {HTTPException: http_error, Refused: refused, Exception: server_error}


# -- serving ---------------------------------------------------------------------------------
def free_port(host: str = LOCAL_HOST) -> int:
    """A port nothing listens on now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _check_port(port: int) -> None:
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"port: got {port!r}, expected 0 (any free port) to 65535")


def _server_class(uvicorn: Any) -> Any:
    class Server(uvicorn.Server):  # type: ignore[misc, name-defined]
        """uvicorn without its own signal handlers: it stops when a stop is requested."""

        def capture_signals(self) -> Any:
            return contextlib.nullcontext()

        async def on_tick(self, counter: int) -> bool:
            if interrupts.requested():
                self.should_exit = True
            return bool(await super().on_tick(counter))

    return Server


@contextmanager
def _signals_handled() -> Iterator[None]:
    """``interrupts.handling_signals()`` unless the command has installed handlers already."""
    own = threading.current_thread() is threading.main_thread() and signal.getsignal(
        signal.SIGINT
    ) in (signal.default_int_handler, signal.SIG_DFL)
    with interrupts.handling_signals() if own else contextlib.nullcontext():
        yield


def serve(
    app: Any,
    host: str = LOCAL_HOST,
    port: int = 0,
    label: str = "app",
    resume: str | None = None,
) -> None:
    """Run ``app``, printing its address first (``port=0``: a free one), until SIGINT or
    SIGTERM: then requests in flight get ``GRACE`` seconds, the app shuts down and
    ``Interrupted`` is raised with ``resume`` (the line telling how to carry on)."""
    uvicorn = _uvicorn()
    _check_port(port)
    port = port or free_port(host)
    try:
        with socket.socket() as s:
            s.bind((host, port))
    except OSError as exc:
        raise ConfigError(f"port: cannot listen on {host}:{port} ({exc.strerror})") from None
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=GRACE
    )
    server = _server_class(uvicorn)(config)
    with _signals_handled(), interrupts.cooperative():
        if not interrupts.requested():
            print(f"{label}: open http://{host}:{port}/ in a browser (Ctrl-C stops)", flush=True)
            server.run()
    if interrupts.requested():
        raise interrupts.Interrupted(f"{label} stopped", resume=resume)


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
