"""``hear2act play`` and ``hear2act audit`` against hostile clients: raw HTTP requests that
must get a 4xx JSON or plain error (never a 500, never a state change) from a real uvicorn on
127.0.0.1, bodies capped while read, JSON nesting bounded, one audit server per folder, only
regular files of the folder read, and SIGINT/SIGTERM ending the command with status 130."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from starlette.testclient import TestClient  # noqa: E402

from hear2act_env import interrupts  # noqa: E402
from hear2act_env.errors import ConfigError  # noqa: E402
from hear2act_env.listen import server  # noqa: E402
from hear2act_env.listen.audit import folder as pa  # noqa: E402
from hear2act_env.listen.audit.app import build_app  # noqa: E402
from hear2act_env.listen.audit.scores import score_audit  # noqa: E402
from hear2act_env.listen.clips import read_file_under  # noqa: E402
from hear2act_env.listen.play.app import PLAY_ENV, PlaySession, play_app, play_config  # noqa: E402
from hear2act_env.listen.server import (  # noqa: E402
    LOCAL_HOSTS,
    MAX_BODY,
    allowed_hosts_for,
    background_server,
    free_port,
)

ROOT = Path(__file__).resolve().parents[2]
QUIET = PLAY_ENV.replace(audio_cache=False)
ANNOTATOR = "ann"
#: The "status" of a connection closed without an answer (a body that cannot end any more).
NO_ANSWER = 0


# -- the servers under attack ----------------------------------------------------------------
@dataclass
class Target:
    """A served app: its port, where it takes a POST, a body it would accept there, and how
    to read the state that no hostile request may change."""

    name: str
    port: int
    post: str
    valid: bytes
    snapshot: Any


@pytest.fixture(scope="module", autouse=True)
def short_body_wait():
    """A body that does not arrive is a 408 after 1 s here (10 s in use)."""
    saved, server.BODY_SECONDS = server.BODY_SECONDS, 1.0
    yield
    server.BODY_SECONDS = saved


@pytest.fixture(scope="module")
def audit_folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile-audit")
    pa.create_audit(root / "audit", clips=2, seed=0, cache_dir=root / "cache", compress=False)
    return root / "audit"


@pytest.fixture(scope="module")
def play_target(tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile-play") / "results.jsonl"
    config = play_config("eve", access="T", episodes=1, env=QUIET)
    session = PlaySession(config, out)
    session.start(timeout=60)
    try:
        with background_server(play_app(session, allowed_hosts=LOCAL_HOSTS)) as url:
            port = int(url.rsplit(":", 1)[1])

            def snapshot() -> Any:
                state = get_json(port, "/api/state")
                assert session.running and state["phase"] == "waiting", state
                assert not out.exists() or not out.read_text()  # nothing recorded
                return state["version"], state["episode"]["turn"]

            yield Target("play", port, "/api/act", b'{"act": 0, "topic": 1}', snapshot)
    finally:
        session.stop()


@pytest.fixture(scope="module")
def audit_target(audit_folder):
    audit = pa.Audit.load(audit_folder)
    first = audit.order(ANNOTATOR)[0]
    with background_server(build_app(audit, ANNOTATOR, allowed_hosts=LOCAL_HOSTS)) as url:
        port = int(url.rsplit(":", 1)[1])

        def snapshot() -> Any:
            state = get_json(port, "/api/state")
            assert state["labelled"] == 0 and state["clip"]["id"] == first, state
            assert not (audit_folder / "labels" / f"{ANNOTATOR}.jsonl").exists()
            return state

        valid = json.dumps({"clip": first, "label": "resolved"}).encode()
        yield Target("audit", port, "/api/label", valid, snapshot)


# -- raw HTTP --------------------------------------------------------------------------------
def exchange(port: int, data: bytes, half_close: bool = False, timeout: float = 10.0):
    """Send ``data`` as is; the status, headers and body of the answer (read to the end)."""
    chunks = []
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
            if half_close:
                s.shutdown(socket.SHUT_WR)
        except OSError:  # the server may answer and close before it has read everything
            pass
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except ConnectionResetError:
            pass
    raw = b"".join(chunks)
    if not raw and half_close:
        return NO_ANSWER, {}, b""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 "), raw[:200]
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def get_json(port: int, path: str) -> Any:
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    status, _, body = exchange(port, request.encode())
    assert status == 200, body
    return json.loads(body)


@dataclass(frozen=True)
class Hostile:
    """One hostile request. In ``target``, header values and ``body``: ``{post}`` is the app's
    POST route, ``{host}`` its own ``Host``, ``{valid}`` a body it would accept. A header
    given as ``None`` is left out; ``Content-Length`` is added unless given."""

    id: str
    status: tuple[int, ...]
    target: str = "{post}"
    method: str = "POST"
    body: bytes = b"{valid}"
    headers: dict[str, str | None] = field(default_factory=dict)
    raw: bytes | None = None
    half_close: bool = False

    def encode(self, t: Target) -> bytes:
        def fill(text: str) -> str:
            return text.replace("{post}", t.post).replace("{host}", f"127.0.0.1:{t.port}")

        body = self.body.replace(b"{valid}", t.valid)
        if self.raw is not None:
            return fill(self.raw.decode("latin-1")).encode("latin-1")
        headers: dict[str, str | None] = {
            "Host": "{host}",
            "Content-Type": "application/json",
            "Connection": "close",
        }
        headers.update(self.headers)
        if "Content-Length" not in headers and "Transfer-Encoding" not in headers:
            headers["Content-Length"] = str(len(body))
        head = f"{self.method} {fill(self.target)} HTTP/1.1\r\n" + "".join(
            f"{k}: {fill(v)}\r\n" for k, v in headers.items() if v is not None
        )
        return head.encode("latin-1") + b"\r\n" + body


def chunked(body: bytes, size: int = 1024) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


# Requests both apps refuse in the same way (the body would be accepted but for the flaw).
COMMON = [
    Hostile("wrong-host", (400,), headers={"Host": "evil.example"}),
    Hostile("rebinding-host-with-port", (400,), headers={"Host": "evil.example:80"}),
    Hostile("host-as-suffix", (400,), headers={"Host": "127.0.0.1.evil.example"}),
    Hostile("no-host-http10", (400,), raw=b"GET /api/state HTTP/1.0\r\n\r\n"),
    Hostile("two-hosts", (400,), raw=b"GET / HTTP/1.1\r\nHost: {host}\r\nHost: evil\r\n\r\n"),
    Hostile("foreign-origin", (403,), headers={"Origin": "http://evil.example"}),
    Hostile("origin-other-port", (403,), headers={"Origin": "http://127.0.0.1:1"}),
    Hostile("origin-https", (403,), headers={"Origin": "https://{host}"}),
    Hostile("origin-null", (403,), headers={"Origin": "null"}),
    Hostile("foreign-origin-get", (403,), "/api/state", "GET", b"", {"Origin": "http://e.x"}),
    Hostile("no-content-type", (415,), headers={"Content-Type": None}),
    Hostile("text-plain", (415,), headers={"Content-Type": "text/plain"}),
    Hostile("form-post", (415,), headers={"Content-Type": "application/x-www-form-urlencoded"}),
    Hostile("multipart", (415,), headers={"Content-Type": "multipart/form-data; boundary=x"}),
    Hostile("json-lookalike-type", (415,), headers={"Content-Type": "application/jsonx"}),
    Hostile("huge-content-length", (413,), headers={"Content-Length": "99999999999999999999"}),
    Hostile("content-length-over-cap", (413,), headers={"Content-Length": str(MAX_BODY + 1)}),
    Hostile("bad-content-length", (400,), headers={"Content-Length": "-1"}),
    Hostile(
        "chunked-oversize",
        (413,),
        body=chunked(b" " * 16000 + b'{"act": 3}'),
        headers={"Transfer-Encoding": "chunked"},
    ),
    Hostile("lying-length-short", (400,), body=b"{valid}", headers={"Content-Length": "3"}),
    Hostile(
        "bad-chunk-framing",
        (400,),
        body=b"3e8\r\n" + b" " * 1000 + b"\r\nzz\r\n",
        headers={"Transfer-Encoding": "chunked"},
    ),
    Hostile("lying-length-long", (408,), body=b"{}", headers={"Content-Length": "100"}),
    Hostile(
        "lying-length-long-then-eof",
        (NO_ANSWER, 400),
        body=b"{}",
        headers={"Content-Length": "100"},
        half_close=True,
    ),
    Hostile("deep-nesting", (400,), body=b"[" * 2000 + b"]" * 2000),
    Hostile("deep-nesting-over-cap", (413,), body=b"[" * 50000),
    Hostile("deep-objects", (400,), body=b'{"a":' * 600 + b"1" + b"}" * 600),
    Hostile("non-utf8", (400,), body=b'{"clip": "\xff\xfe", "act": 3}'),
    Hostile("utf16", (400,), body='{"act": 3}'.encode("utf-16")),
    Hostile("utf8-bom", (400,), body=b"\xef\xbb\xbf{valid}"),
    Hostile("not-json", (400,), body=b"act=3"),
    Hostile("empty-body", (400,), body=b""),
    Hostile("json-null", (400,), body=b"null"),
    Hostile("json-array", (400,), body=b"[{valid}]"),
    Hostile("json-string", (400,), body=b'"{}"'),
    Hostile("json-number", (400,), body=b"3"),
    Hostile("json-nan", (400,), body=b"NaN"),
    Hostile("extra-key", (400,), body=b'{"act": 3, "clip": "x", "label": "resolved", "x": 1}'),
    Hostile("traversal-raw", (404,), "/audio/../../etc/passwd", "GET", b""),
    Hostile("traversal-encoded", (404,), "/audio/%2e%2e/%2e%2e/etc/passwd", "GET", b""),
    Hostile("traversal-slash", (404,), "/audio/..%2f..%2fetc%2fpasswd", "GET", b""),
    Hostile("traversal-static", (404,), "/static/../server.py", "GET", b""),
    Hostile("traversal-static-encoded", (404,), "/static/%2e%2e/server.py", "GET", b""),
    Hostile("static-absolute", (404,), "/static//etc/passwd", "GET", b""),
    Hostile("unknown-route", (404,), "/admin", "GET", b""),
    Hostile("unknown-api", (404,), "/api/labels/../state", "POST"),
    Hostile("get-on-post", (405,), "{post}", "GET", b""),
    Hostile("put", (405,), "{post}", "PUT"),
    Hostile("delete-state", (405,), "/api/state", "DELETE", b""),
    Hostile("head-on-post", (405,), "{post}", "HEAD", b""),
    Hostile(
        "options-preflight",
        (405,),
        "{post}",
        "OPTIONS",
        b"",
        {"Access-Control-Request-Method": "POST"},
    ),
    Hostile("long-url", (404,), "/" + "a" * 8000, "GET", b""),
    Hostile("very-long-url", (400, 404, 414, 431), "/" + "a" * 70000, "GET", b""),
    Hostile("garbage", (400,), raw=b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"),
    Hostile("bad-request-line", (400,), raw=b"GET\r\n\r\n"),
]

PLAY = [
    Hostile("act-missing", (400,), body=b'{"option": 1}'),
    Hostile("act-null", (400,), body=b'{"act": null}'),
    Hostile("act-string", (400,), body=b'{"act": "3"}'),
    Hostile("act-bool", (400,), body=b'{"act": true}'),
    Hostile("act-float", (400,), body=b'{"act": 3.0}'),
    Hostile("act-nan", (400,), body=b'{"act": NaN}'),
    Hostile("act-infinity", (400,), body=b'{"act": Infinity}'),
    Hostile("act-huge", (400,), body=b'{"act": 1' + b"0" * 4000 + b"}"),
    Hostile("act-huge-exponent", (400,), body=b'{"act": 1e999}'),
    Hostile("act-negative", (400,), body=b'{"act": -1}'),
    Hostile("topic-negative", (400,), body=b'{"act": 0, "topic": -1}'),
    Hostile("option-out-of-range", (400,), body=b'{"act": 2, "option": 11}'),
    Hostile("act-list", (400,), body=b'{"act": [3]}'),
    Hostile("stale-episode", (400,), body=b'{"act": 3, "episode": 99999999999999999999}'),
    Hostile("negative-turn", (400,), body=b'{"act": 3, "turn": -1}'),
    Hostile("next-while-waiting", (400,), "/api/next", body=b"{}"),
    Hostile("next-extra-key", (400,), "/api/next", body=b'{"x": 1}'),
    Hostile(
        "next-text-plain", (415,), "/api/next", body=b"{}", headers={"Content-Type": "text/plain"}
    ),
    Hostile(
        "next-foreign-origin",
        (403,),
        "/api/next",
        body=b"{}",
        headers={"Origin": "http://evil.example"},
    ),
    Hostile("audio-negative", (404,), "/audio/-1/0.ogg", "GET", b""),
    Hostile("audio-huge-number", (404,), "/audio/" + "9" * 5000 + "/0.ogg", "GET", b""),
    Hostile("audio-huge-turn", (404,), "/audio/1/" + "9" * 30 + ".ogg", "GET", b""),
    Hostile("audio-other-extension", (404,), "/audio/1/0.exe", "GET", b""),
    Hostile("audio-no-clip", (404,), "/audio/1/0.wav", "GET", b""),
]

AUDIT = [
    Hostile("clip-missing", (400,), body=b'{"label": "resolved"}'),
    Hostile("clip-null", (400,), body=b'{"clip": null, "label": "resolved"}'),
    Hostile("clip-number", (400,), body=b'{"clip": 1e999, "label": "resolved"}'),
    Hostile("clip-huge-int", (400,), body=b'{"clip": 1' + b"0" * 4000 + b', "label": "x"}'),
    Hostile("clip-negative", (400,), body=b'{"clip": -1, "label": "resolved"}'),
    Hostile("clip-list", (400,), body=b'{"clip": ["a"], "label": "resolved"}'),
    Hostile("clip-unknown", (400,), body=b'{"clip": "0000000000000000", "label": "resolved"}'),
    Hostile("clip-traversal", (400,), body=b'{"clip": "../clips.json", "label": "resolved"}'),
    Hostile("label-missing", (400,), body=b'{"clip": "0000000000000000"}'),
    Hostile("label-wrong-case", (400,), body=b'{"clip": "CLIP", "label": "RESOLVED"}'),
    Hostile("label-nan", (400,), body=b'{"clip": "x", "label": NaN}'),
    Hostile("label-list", (400,), body=b'{"clip": "x", "label": ["resolved"]}'),
    Hostile(
        "other-annotator", (400,), body=b'{"annotator": "bob", "clip": "x", "label": "resolved"}'
    ),
    Hostile(
        "annotator-traversal",
        (400,),
        body=b'{"annotator": "../../etc", "clip": "x", "label": "resolved"}',
    ),
    Hostile("state-other-annotator", (400,), "/api/state?annotator=bob", "GET", b""),
    Hostile("state-traversal", (400,), "/api/state?annotator=..%2F..%2Fetc", "GET", b""),
    Hostile("state-non-utf8", (400,), "/api/state?annotator=%ff%fe", "GET", b""),
    Hostile("page-long-name", (400,), "/?annotator=" + "a" * 8000, "GET", b""),
    Hostile("audio-clips-json", (404,), "/audio/clips.json", "GET", b""),
    Hostile("audio-encoded-clips-json", (404,), "/audio/..%2Fclips.json", "GET", b""),
    Hostile("audio-unknown-id", (404,), "/audio/" + "0" * 16 + ".wav", "GET", b""),
    Hostile("audio-other-extension", (404,), "/audio/" + "0" * 16 + ".exe", "GET", b""),
    Hostile("audio-labels", (404,), "/audio/../labels/ann.jsonl", "GET", b""),
]


def _check(target: Target, case: Hostile) -> None:
    before = target.snapshot()
    status, headers, body = exchange(target.port, case.encode(target), case.half_close)
    assert status in case.status, (status, body[:300])
    kind = headers.get("content-type", "")
    page = case.target == "/" or case.target.startswith("/?")  # the page: an HTML error page
    if kind.startswith("application/json") and body:
        assert isinstance(json.loads(body)["error"], str)
    else:
        assert kind.startswith(("text/plain", *(("text/html",) if page else ()))) or not body, (
            kind,
            body[:300],
        )
    assert b"Traceback" not in body
    assert target.snapshot() == before  # still answering, nothing changed


@pytest.mark.parametrize("case", COMMON + PLAY, ids=lambda c: c.id)
def test_play_refuses_a_hostile_request_with_a_4xx(play_target, case):
    _check(play_target, case)


@pytest.mark.parametrize("case", COMMON + AUDIT, ids=lambda c: c.id)
def test_audit_refuses_a_hostile_request_with_a_4xx(audit_target, case):
    _check(audit_target, case)


def test_the_same_requests_are_served_when_they_are_fine(play_target, audit_target):
    """The checks refuse no honest page: its own Origin, a JSON content type with a charset."""
    for t in (play_target, audit_target):
        ok = Hostile("own-origin", (200,), "/", "GET", b"", {"Origin": "http://{host}"})
        status, _, body = exchange(t.port, ok.encode(t))
        assert status == 200, body
        page = Hostile("localhost", (200,), "/api/state", "GET", b"", {"Host": "localhost"})
        assert exchange(t.port, page.encode(t))[0] == 200


# -- bodies are capped while they are read ---------------------------------------------------
def _endless_post(app: Any, path: str) -> tuple[int, int]:
    """POST an endless chunked JSON body straight to the ASGI app: the status and how many
    body bytes the app pulled (the test gives up at 1 MB)."""
    pulled, sent = 0, {}

    async def receive() -> dict:
        nonlocal pulled
        if pulled > 1 << 20:
            raise RuntimeError("the app read over 1 MB of the body")
        pulled += 1000
        return {"type": "http.request", "body": b" " * 1000, "more_body": True}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            sent["status"] = message["status"]

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"transfer-encoding", b"chunked"),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    asyncio.run(app(scope, receive, send))
    return sent.get("status", 0), pulled


def test_a_chunked_body_is_capped_while_it_is_read(audit_folder, tmp_path):
    session_app = play_app(_idle_session(tmp_path / "cap.jsonl"))
    for app, path in (
        (session_app, "/api/act"),
        (build_app(pa.Audit.load(audit_folder), ANNOTATOR), "/api/label"),
    ):
        status, pulled = _endless_post(app, path)
        assert status == 413 and pulled <= MAX_BODY + 1000, (path, status, pulled)


def _idle_session(out: Path) -> PlaySession:
    """A session that is not started: its app answers, nothing plays."""
    return PlaySession(play_config("ida", access="T", episodes=1, env=QUIET), out)


def test_deep_json_is_a_400_in_both_apps(audit_folder, tmp_path):
    play = TestClient(play_app(_idle_session(tmp_path / "r.jsonl")))
    audit = TestClient(build_app(pa.Audit.load(audit_folder), ANNOTATOR))
    for client, path in ((play, "/api/act"), (play, "/api/next"), (audit, "/api/label")):
        for body in (b"[" * 2000 + b"]" * 2000, b'{"a":' * 600 + b"0" + b"}" * 600):
            r = client.post(path, content=body, headers={"Content-Type": "application/json"})
            assert r.status_code == 400 and "not valid JSON" in r.json()["error"], path


# -- Host, Origin and Content-Type in the audit app too --------------------------------------
def test_the_audit_app_checks_host_origin_and_content_type(audit_folder):
    audit = pa.Audit.load(audit_folder)
    app = build_app(audit, ANNOTATOR, allowed_hosts=LOCAL_HOSTS)
    first = audit.order(ANNOTATOR)[0]
    local = TestClient(app, base_url="http://127.0.0.1")
    assert local.get("/api/state").status_code == 200
    assert TestClient(app, base_url="http://evil.example").get("/api/state").status_code == 400
    body = {"clip": first, "label": "resolved"}
    foreign = local.post("/api/label", json=body, headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403 and "another site" in foreign.json()["error"]
    plain = local.post(
        "/api/label", content=json.dumps(body), headers={"Content-Type": "text/plain"}
    )
    assert plain.status_code == 415
    assert not (audit_folder / "labels" / f"{ANNOTATOR}.jsonl").exists()


def test_play_refuses_a_foreign_origin(tmp_path):
    out = tmp_path / "r.jsonl"
    session = PlaySession(play_config("ora", access="T", episodes=1, env=QUIET), out)
    session.start(timeout=60)
    try:
        client = TestClient(play_app(session))
        before = client.get("/api/state").json()["version"]
        r = client.post("/api/act", json={"act": 3}, headers={"Origin": "http://evil.example"})
        assert r.status_code == 403
        r = client.post("/api/act", json={"act": 0, "topic": 1}, headers={"Origin": "null"})
        assert r.status_code == 403
        assert client.get("/api/state").json()["version"] == before
    finally:
        session.stop()


def test_allowed_hosts_for_an_address():
    assert allowed_hosts_for("127.0.0.1") == LOCAL_HOSTS
    assert allowed_hosts_for("localhost") == LOCAL_HOSTS
    assert allowed_hosts_for("::1") == (*LOCAL_HOSTS, "[::1]")
    assert allowed_hosts_for("127.0.0.2") == (*LOCAL_HOSTS, "127.0.0.2")
    assert allowed_hosts_for("0.0.0.0") is None and allowed_hosts_for("example.org") is None


# -- only regular files of the folder are read -----------------------------------------------
def _in_thread(fn: Any, timeout: float = 10.0) -> Any:
    """``fn()`` with a deadline: a FIFO that blocks fails the test instead of hanging it."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "blocked reading a file"
    if "error" in result:
        raise result["error"]
    return result["value"]


@pytest.fixture
def audit_copy(audit_folder, tmp_path) -> Path:
    import shutil

    folder = tmp_path / "audit"
    shutil.copytree(audit_folder, folder)
    return folder


@pytest.mark.parametrize("kind", ["dev-zero-link", "fifo", "outside-link", "inside-link"])
def test_clip_audio_is_served_only_from_a_regular_file_of_the_folder(audit_copy, kind):
    audit = pa.Audit.load(audit_copy)
    clip = audit.clips[0]
    path = audit_copy / clip.audio
    original = path.read_bytes()
    path.unlink()
    if kind == "dev-zero-link":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "outside-link":
        (audit_copy.parent / "elsewhere.wav").write_bytes(original)
        path.symlink_to(audit_copy.parent / "elsewhere.wav")
    else:
        (audit_copy / "audio" / "copy.wav").write_bytes(original)
        path.symlink_to(audit_copy / "audio" / "copy.wav")
    with background_server(build_app(audit, ANNOTATOR)) as url:
        port = int(url.rsplit(":", 1)[1])
        status, _, body = _in_thread(
            lambda: exchange(
                port,
                f"GET /{clip.audio} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(),
                timeout=5,
            )
        )
        assert status == 404 and json.loads(body)["error"] == "no such clip audio"
    with pytest.raises(ConfigError, match="unusable"):
        _in_thread(lambda: pa.Audit.load(audit_copy))


@pytest.mark.parametrize("kind", ["fifo", "outside-link", "dev-zero-link", "labels-dir-link"])
def test_label_files_are_read_only_as_regular_files_of_the_folder(audit_copy, tmp_path, kind):
    audit = pa.Audit.load(audit_copy)
    first = audit.order(ANNOTATOR)[0]
    labels = audit_copy / "labels" / f"{ANNOTATOR}.jsonl"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    line = json.dumps({"clip": first, "label": "resolved", "n": 1, "at": ""}) + "\n"
    (elsewhere / labels.name).write_text(line)
    if kind == "fifo":
        os.mkfifo(labels)
    elif kind == "outside-link":
        labels.symlink_to(elsewhere / labels.name)
    elif kind == "dev-zero-link":
        labels.symlink_to("/dev/zero")
    else:
        (audit_copy / "labels").rmdir()
        (audit_copy / "labels").symlink_to(elsewhere)
    with pytest.raises(ConfigError, match=str(labels.name)):
        _in_thread(lambda: audit.store(ANNOTATOR))
    with pytest.raises(ConfigError):
        _in_thread(lambda: score_audit(audit_copy))
    client = TestClient(build_app(audit, ANNOTATOR))
    r = _in_thread(lambda: client.post("/api/label", json={"clip": first, "label": "resolved"}))
    assert r.status_code == 500 and ANNOTATOR in r.json()["error"]
    assert (elsewhere / labels.name).read_text() == line  # nothing written through a link


def test_deep_json_in_folder_files_is_a_named_error(audit_copy):
    audit = pa.Audit.load(audit_copy)
    labels = audit_copy / "labels" / "deep.jsonl"
    labels.write_bytes(b"[" * 5000 + b"]" * 5000 + b"\n")
    with pytest.raises(ConfigError, match=r"deep\.jsonl:1: not a JSON label line"):
        audit.store("deep")
    (audit_copy / "clips.json").write_bytes(b'{"format": ' + b"[" * 5000 + b"]" * 5000 + b"}")
    with pytest.raises(ConfigError, match="not a readable audit clip set"):
        pa.Audit.load(audit_copy)


def test_read_file_under_caps_the_size_and_stays_in_the_folder(tmp_path):
    (tmp_path / "a").write_bytes(b"x" * 100)
    assert read_file_under(tmp_path / "a", tmp_path, 100) == b"x" * 100
    with pytest.raises(ConfigError, match="over 99 bytes"):
        read_file_under(tmp_path / "a", tmp_path, 99)
    with pytest.raises(ConfigError, match="not inside"):
        read_file_under(tmp_path / "a", tmp_path / "sub", 100)
    with pytest.raises(ConfigError, match="not inside"):
        read_file_under(tmp_path / ".." / tmp_path.name / ".." / "x", tmp_path, 100)
    with pytest.raises(ConfigError, match="not a regular file"):
        read_file_under(tmp_path, tmp_path, 100)


# -- one audit server per folder -------------------------------------------------------------
def test_a_second_audit_server_on_a_folder_is_refused(audit_copy, monkeypatch):
    import argparse

    from hear2act_cli import audit as audit_cli
    from hear2act_env.listen import server

    parser = argparse.ArgumentParser(prog="hear2act")
    audit_cli.add(parser.add_subparsers(dest="command", required=True))
    args = lambda *a: parser.parse_args(["audit", "--out", str(audit_copy), *a])  # noqa: E731
    refused: list[str] = []

    def serve(app, host, port, **kw):  # while this one serves, a second one starts
        if refused:
            pytest.fail("a second server on the folder was started")
        refused.append(kw["resume"])
        with pytest.raises(
            ConfigError, match=rf"served by another hear2act audit \(pid {os.getpid()}\)"
        ):
            audit_cli.run(args("--annotator", "bob"))

    monkeypatch.setattr(server, "serve", serve)
    assert audit_cli.run(args("--annotator", ANNOTATOR)) == 0
    assert refused and "run the same command again" in refused[0]
    monkeypatch.setattr(server, "serve", lambda *a, **kw: None)
    assert audit_cli.run(args()) == 0  # the lock is released at the end


# -- SIGINT and SIGTERM ----------------------------------------------------------------------
class StopRenderer:
    """A tone renderer that asks for a stop (what a signal does) while rendering clip 2."""

    name = "stop"
    version = "1"
    sample_rate = 16000
    calls = 0

    def render(self, utt: Any) -> Any:
        import numpy as np

        StopRenderer.calls += 1
        if StopRenderer.calls == 2:
            interrupts.request()
        t = np.arange(8000) / 16000
        return (0.3 * np.sin(2 * np.pi * (180.0 + 10 * len(utt.delivery)) * t)).astype("f4")


def test_a_signal_while_clips_are_made_stops_between_clips(tmp_path):
    StopRenderer.calls = 0
    interrupts.reset()
    try:
        with pytest.raises(interrupts.Interrupted):
            pa.create_audit(
                tmp_path / "a",
                clips=4,
                renderer=f"{__name__}:StopRenderer",
                perceiver="shipped",
                cache_dir=tmp_path / "cache",
                compress=False,
            )
    finally:
        interrupts.reset()
    assert StopRenderer.calls == 2  # clip 2 finished, clip 3 never started
    assert len(list((tmp_path / "a" / "audio").iterdir())) == 2
    assert not (tmp_path / "a" / "clips.json").exists()  # the next run makes it again


def _command(kind: str, tmp_path: Path, folder: Path, port: int) -> list[str]:
    base = [sys.executable, "-m", "hear2act_cli"]
    if kind == "audit":
        return [*base, "audit", "--out", str(folder), "--annotator", ANNOTATOR, "--port", str(port)]
    return [
        *base,
        "play",
        "--name",
        "sig",
        "--access",
        "T",
        "--episodes",
        "1",
        "--out",
        str(tmp_path / "play.jsonl"),
        "--port",
        str(port),
    ]


def _start(argv: list[str], port: int, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HEAR2ACT_CACHE_DIR": str(cwd / "cache")}
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the server ended with {proc.returncode}: {out}\n{err}")
        try:
            get_json(port, "/api/state")
            return proc
        except (OSError, AssertionError):
            time.sleep(0.1)
    proc.kill()
    pytest.fail("the server did not answer within 60 s")


@pytest.mark.parametrize(
    ("kind", "signum"),
    [
        ("audit", signal.SIGINT),
        ("audit", signal.SIGTERM),
        ("play", signal.SIGINT),
        ("play", signal.SIGTERM),
    ],
    ids=["audit-SIGINT", "audit-SIGTERM", "play-SIGINT", "play-SIGTERM"],
)
def test_a_signal_stops_the_server_with_130_and_a_resume_line(audit_copy, tmp_path, kind, signum):
    port = free_port()
    proc = _start(_command(kind, tmp_path, audit_copy, port), port, tmp_path)
    try:
        if kind == "audit":  # a second server on the folder: one line, status 2, never serves
            second = subprocess.run(
                _command(kind, tmp_path, audit_copy, free_port()),
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            assert second.returncode == 2, second.stderr
            assert second.stderr.strip().splitlines() == [
                f"hear2act: error: --out: {audit_copy} is served by another hear2act audit "
                f"(pid {proc.pid}); label there, or stop it first"
            ]
            assert "open http" not in second.stdout
        sent = time.monotonic()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert time.monotonic() - sent < 5
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "Traceback" not in out
    saved = audit_copy / "labels" if kind == "audit" else tmp_path / "play.jsonl"
    assert f"saved in {saved}; run the same command again to continue" in err, err
    with pytest.raises(OSError):  # the port is closed
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


@pytest.mark.parametrize("kind", ["fifo", "outside-link", "dev-zero-link", "folder-link"])
@pytest.mark.parametrize("part", ["json", "jsonl"])
def test_model_label_files_are_read_and_written_only_inside_the_folder(
    audit_copy, tmp_path, kind, part
):
    """A model's record or label file (``models/``, ``hear2act audit --model``) replaced by a
    FIFO or a link, or ``models/`` itself a link: scoring and labelling stop with a named
    error, and nothing is written through the link."""
    from hear2act_env.listen.audit.model_labels import model_slug, open_model_store

    audit = pa.Audit.load(audit_copy)
    open_model_store(audit, "openai:m", {}, "instructions")  # a real record and store
    slug = model_slug("openai:m", {})
    models = audit_copy / "models"
    (models / f"{slug}.jsonl").write_text(
        json.dumps({"clip": audit.clips[0].id, "label": None}) + "\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = models / f"{slug}.{part}"
    (elsewhere / target.name).write_bytes(target.read_bytes())
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    if kind == "folder-link":
        for f in models.iterdir():
            (elsewhere / f.name).write_bytes(f.read_bytes())
        before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
        shutil.rmtree(models)
        models.symlink_to(elsewhere)
    else:
        target.unlink()
        if kind == "fifo":
            os.mkfifo(target)
        elif kind == "outside-link":
            target.symlink_to(elsewhere / target.name)
        else:
            target.symlink_to("/dev/zero")
    with pytest.raises(ConfigError):
        _in_thread(lambda: score_audit(audit_copy))
    with pytest.raises(ConfigError):
        _in_thread(
            lambda: open_model_store(audit, "openai:m", {}, "instructions")[1].add(
                audit.clips[1].id, "resolved"
            )
        )
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before
