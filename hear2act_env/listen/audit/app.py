"""The web app of ``hear2act audit``: one annotator, one clip at a time (Starlette).

Routes:

- ``GET /``: the audit page of the annotator the server was started for; without one, a form
  asks for a name and ``GET /?annotator=NAME`` is that annotator's page.
- ``GET /api/state?annotator=NAME``: ``{annotator, labelled, total, clip}``; ``clip`` is the
  next clip (``{id, audio, text}``, and ``context``, the dialogue lines before it, in a folder
  made with ``--context``) or ``null`` when all are labelled. The page's instructions and
  answer buttons come from ``audit_instructions``, as a model's prompt does.
- ``POST /api/label`` with ``{"clip": ID, "label": "resolved" | "unresolved"}`` (and
  ``"annotator"`` when the server has no fixed one): saves the label, answers the next state.
  Bad input is a 400 with ``{"error": ...}`` (415 without ``Content-Type: application/json``,
  413 for a body over 4 KB, read no further); a clip that is not the annotator's current one
  (a second tab, a double click) is a 409 with the error and the current ``state``.
- ``GET /audio/<id>.<ext>``: a clip's audio; ``/static/...``: the shared CSS and ``audit.js``.

Like ``hear2act play`` (the shared ``server.guard`` and ``server.read_json``): with a local
address a ``Host`` naming another host is refused (400), so is any request whose ``Origin`` is
another site (403); audio is read only from regular files of the folder (``Audit.audio``).

Nothing served depends on a clip's class: the page and the API only know ``Audit.public``
(id, audio address, words, and the context both clips of a pair share), and answers never say
whether a label was right.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

from hear2act_env.errors import ConfigError, MissingExtraError
from hear2act_env.listen import server
from hear2act_env.listen.audit.folder import (
    LABELS,
    Audit,
    LabelConflict,
    LabelStore,
    check_annotator,
)
from hear2act_env.listen.audit.instructions import ANSWERS, PAGE, instructions

__all__ = ["build_app"]

STATIC = server.STATIC
_NO_STORE = server.NO_STORE
_AUDIO_FILE = re.compile(r"([0-9a-f]{16})\.(ogg|wav)")
_SHAPE = 'expected a JSON object {"clip": ID, "label": "resolved" or "unresolved"}'


def build_app(
    audit: Audit, annotator: str | None = None, allowed_hosts: Sequence[str] | None = None
) -> Any:
    """The Starlette app serving ``audit`` (to ``annotator`` only, when given). With
    ``allowed_hosts``, requests naming another ``Host`` are refused; a request from another
    site's page (its ``Origin``) always is."""
    try:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import HTMLResponse, JSONResponse, Response
        from starlette.routing import Mount, Route
        from starlette.staticfiles import StaticFiles
    except ImportError as exc:
        raise MissingExtraError("listen", exc.name or "starlette") from None

    if annotator is not None:
        check_annotator(annotator)
    env = server.templates()
    stores: dict[str, LabelStore] = {}
    lock = threading.Lock()

    def store_for(name: str) -> LabelStore:
        with lock:
            if name not in stores:
                stores[name] = audit.store(name)
            return stores[name]

    def state(store: LabelStore, name: str) -> dict[str, Any]:
        nxt = store.next_clip
        return {
            "annotator": name,
            "labelled": len(store.labels),
            "total": store.total,
            "clip": audit.public(nxt) if nxt is not None else None,
        }

    def error(message: str, status: int = 400, **extra: Any) -> Response:
        return server.error_response(status, message, **extra)  # type: ignore[no-any-return]

    def who(asked: object) -> str:
        """The annotator of a request (``ConfigError`` for a bad or foreign name)."""
        if annotator is not None:
            if asked not in (None, annotator):
                raise ConfigError(f"annotator: this server collects {annotator}'s labels only")
            return annotator
        if asked is None:
            raise ConfigError("annotator: missing (give your annotator name)")
        return check_annotator(asked)

    def start(status: int = 200, message: str | None = None, name: str = "") -> Response:
        html = env.get_template("audit_start.html").render(
            error=message, name=name, total=len(audit.clips)
        )
        return HTMLResponse(html, status_code=status, headers=_NO_STORE)

    async def index(request: Request) -> Response:
        asked = request.query_params.get("annotator")
        if annotator is None and asked is None:
            return start()
        try:
            name = who(asked)
        except ConfigError as exc:
            return start(400, str(exc), str(asked or "")[:64])
        try:
            current = state(store_for(name), name)
        except ConfigError as exc:  # a damaged label file
            return start(500, str(exc), name)
        html = env.get_template("audit.html").render(
            state=current,
            instructions=instructions(audit.context),
            page_note=PAGE,
            answers=ANSWERS,
        )
        return HTMLResponse(html, headers=_NO_STORE)

    async def api_state(request: Request) -> Response:
        try:
            name = who(request.query_params.get("annotator"))
        except ConfigError as exc:
            return error(str(exc))
        try:
            return JSONResponse(state(store_for(name), name), headers=_NO_STORE)
        except ConfigError as exc:
            return error(str(exc), 500)

    async def api_label(request: Request) -> Response:
        try:
            data = await server.read_json(request)
        except server.Refused as exc:
            return error(
                exc.message if exc.status != 400 else f"{exc.message}; {_SHAPE}", exc.status
            )
        if not isinstance(data, dict):
            return error(_SHAPE)
        unknown = sorted(set(data) - {"annotator", "clip", "label"})
        if unknown:
            return error(f"unknown fields {unknown}; {_SHAPE}")
        try:
            name = who(data.get("annotator"))
        except ConfigError as exc:
            return error(str(exc))
        clip, label = data.get("clip"), data.get("label")
        if not isinstance(clip, str) or clip not in audit.by_id:
            return error(f"clip: {clip!r} is not a clip of this audit"[:300])
        if not isinstance(label, str) or label not in LABELS:
            return error(f"label: expected resolved or unresolved, got {label!r}"[:300])
        try:
            store = store_for(name)
        except ConfigError as exc:
            return error(str(exc), 500)
        try:
            store.add(clip, label)
        except LabelConflict as exc:
            return error(str(exc), 409, state=state(store, name))
        except ConfigError as exc:  # the label file is no longer a regular file of the folder
            return error(f"could not save the label ({exc})", 500)
        except OSError as exc:
            return error(f"could not save the label ({exc.strerror})", 500)
        return JSONResponse(state(store, name), headers=_NO_STORE)

    async def audio(request: Request) -> Response:
        file = request.path_params["file"]
        match = _AUDIO_FILE.fullmatch(file)
        clip = audit.by_id.get(match[1]) if match else None
        if clip is None or clip.audio != f"audio/{file}":
            return error("no such clip audio", 404)
        try:
            data = audit.audio(clip.id)
        except ConfigError:  # replaced by a link, a FIFO, a device or a huge file
            return error("no such clip audio", 404)
        media = "audio/ogg" if file.endswith(".ogg") else "audio/wav"
        return Response(data, media_type=media, headers=_NO_STORE)

    return Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            Route("/api/state", api_state, methods=["GET"]),
            Route("/api/label", api_label, methods=["POST"]),
            Route("/audio/{file}", audio, methods=["GET"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=server.guard(allowed_hosts),
        exception_handlers=server.error_handlers(),
    )
