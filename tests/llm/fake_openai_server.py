"""A small OpenAI-compatible chat-completions server for tests (stdlib only).

Run ``python fake_openai_server.py``: it binds 127.0.0.1 on a free port and prints
``PORT <n>``. The requested *model name* selects the behaviour:

- ``scripted``: a fixed sequence of replies in assorted messy formats (by the number of
  assistant turns in the transcript), ending in CONFIRM.
- ``noaction``: prose without an action first; a proper reply when re-asked.
- ``never-format``: prose without an action, always.
- ``rate-limit``: 429 with ``Retry-After: 0`` twice per distinct request, then scripted;
  ``rate-limit-1``: the same with ``Retry-After: 1`` once.
- ``flaky``: 500 once per distinct request, then scripted; ``down``: always 503.
- ``garbage``: 200 with a body that is not JSON; ``empty``: empty content;
  ``null-content``: ``content: null``; ``invalid-option``: RECOMMEND option 42.
- ``slow``: sleeps 1.5 s, then scripted; ``slowish``: sleeps 0.2 s (concurrency checks).
- ``auth``: 401 unless ``Authorization: Bearer sk-test``.
- ``echo-key``: 200 without ``choices`` whose body echoes the bearer key (``{"echo": KEY}``).
- ``truncated``: prose without an action, ``finish_reason: "length"`` (cut off at max_tokens);
  ``truncated-empty``: empty content, ``finish_reason: "length"`` (a reasoning model that
  spent every token thinking).
- ``deaf``: scripted, its ``usage.prompt_tokens`` counting only the words of text parts (audio
  parts change nothing); ``hearing``: the same plus 1 token per 1000 bytes of each
  ``input_audio`` part; ``hearing-details``: like ``deaf``, but reporting
  ``usage.prompt_tokens_details.audio_tokens`` for the audio parts; ``no-usage``: scripted,
  without ``usage``.
- ``labeller``: an audio model that hears (usage counts the audio). Asked for an audit label
  (``The user says:`` in the request) it answers ``Resolved.`` when the first WAV clip of the
  request has an even number of frames (or there is none), else a sentence naming
  ``unresolved``; an episode's turn gets the scripted replies; ``labeller-mute``: a reply naming neither label;
  ``labeller-down-after-3``: ``labeller`` for its first 3 clips, then 503 for every clip.
- any other name: 404 (model not found).

``GET /stats`` returns request counts, the largest number of requests in flight, and the last
request body, per model; ``POST /reset`` clears them.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import sys
import threading
import time
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT = [
    "[ACTION: ASK] [TOPIC: OPEN] Is there anything else that matters to you?",
    "Sure! **Action:** ask\nHow much are you hoping to spend?",
    "I think a change is needed.\n\n[action: recommend] [option: 3] Option 3 may suit you better.",
    "ACTION: CONFIRM - Great, shall I book it?",
    "```\n[ACTION: RECOMMEND] [OPTION: 7]\n```\nHow about option 7?",
    "[ACTION: CONFIRM] Wonderful, it's booked.",
    "[ACTION: RECOMMEND] [OPTION: 1] Option 1 then.",
    "[ACTION: CONFIRM] Done.",
]
PROSE = "Let me think about what would help this customer most; they seem unsure."

_lock = threading.Lock()
_stats: dict[str, dict] = {"requests": {}, "max_concurrent": {}, "last": {}, "in_flight": {}}
_seen: dict[str, int] = {}


def _prompt_tokens(messages: list[dict], hear: bool) -> tuple[int, int]:
    """(prompt tokens, audio tokens) of a request: words of the text, and with ``hear`` one
    token per 1000 bytes of base64 audio."""
    words = audio = 0
    for m in messages:
        content = m.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for p in parts:
            if not isinstance(p, dict):
                continue
            if p.get("type") == "input_audio":
                audio += max(1, len(str(p.get("input_audio", {}).get("data", ""))) // 1000)
            else:
                words += len(str(p.get("text") or "").split())
    return words + (audio if hear else 0), audio


def _audio_frames(messages: list[dict]) -> int | None:
    """The frame count of the first WAV ``input_audio`` part of a request (None: no audio)."""
    for m in messages:
        content = m.get("content")
        for p in content if isinstance(content, list) else []:
            if isinstance(p, dict) and p.get("type") == "input_audio":
                data = base64.b64decode(str(p.get("input_audio", {}).get("data", "")))
                with wave.open(io.BytesIO(data), "rb") as w:
                    return w.getnframes()
    return None


_label_requests = [0]


def _is_label_request(messages: list[dict]) -> bool:
    """Whether a request asks for an audit label (a user message with ``The user says:``)."""
    return any("The user says:" in json.dumps(m.get("content")) for m in messages)


def _count_label_request(messages: list[dict]) -> int:
    """How many audit-label requests came so far, this one included (0: not one)."""
    if not _is_label_request(messages):
        return 0
    with _lock:
        _label_requests[0] += 1
        return _label_requests[0]


def _scripted(messages: list[dict]) -> str:
    first_user = next((m for m in messages if m.get("role") == "user"), {"content": ""})
    content = first_user["content"]
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    turns = len(re.findall(r"^Assistant:", content, flags=re.M)) - 1  # minus the opening
    return SCRIPT[max(0, turns) % len(SCRIPT)]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall per reply

    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: dict, headers: dict | None = None) -> None:
        self._send(status, json.dumps(data).encode(), headers)

    def do_GET(self):
        if self.path.rstrip("/").endswith("/stats"):
            with _lock:
                data = {k: dict(v) for k, v in _stats.items() if k != "in_flight"}
            self._json(200, data)
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        if self.path.rstrip("/").endswith("/reset"):
            with _lock:
                for v in _stats.values():
                    v.clear()
                _seen.clear()
                _label_requests[0] = 0
            self._json(200, {"ok": True})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        body = json.loads(raw)
        model = body.get("model", "")
        digest = hashlib.sha256(raw).hexdigest()
        with _lock:
            _stats["requests"][model] = _stats["requests"].get(model, 0) + 1
            _stats["last"][model] = body
            n = _stats["in_flight"][model] = _stats["in_flight"].get(model, 0) + 1
            _stats["max_concurrent"][model] = max(_stats["max_concurrent"].get(model, 0), n)
            seen = _seen[f"{model}/{digest}"] = _seen.get(f"{model}/{digest}", 0) + 1
        try:
            self._reply(model, body, seen)
        finally:
            with _lock:
                _stats["in_flight"][model] -= 1

    def _reply(self, model: str, body: dict, seen: int) -> None:
        messages = body.get("messages", [])
        content: str | None
        finish = "stop"
        usage: dict | None = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if model == "scripted":
            content = _scripted(messages)
        elif model == "noaction":
            content = PROSE if len(messages) <= 2 else "[ACTION: ASK] [TOPIC: OPEN] Anything else?"
        elif model == "never-format":
            content = PROSE
        elif model == "rate-limit":
            if seen <= 2:
                self._json(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
                return
            content = _scripted(messages)
        elif model == "rate-limit-1":
            if seen <= 1:
                self._json(429, {"error": {"message": "slow down"}}, {"Retry-After": "1"})
                return
            content = _scripted(messages)
        elif model == "flaky":
            if seen <= 1:
                self._json(500, {"error": {"message": "internal error"}})
                return
            content = _scripted(messages)
        elif model == "down":
            self._json(503, {"error": {"message": "overloaded"}})
            return
        elif model == "garbage":
            self._send(200, b"<html>this is not json{")
            return
        elif model == "empty":
            content = ""
        elif model == "null-content":
            content = None
        elif model == "invalid-option":
            content = "[ACTION: RECOMMEND] [OPTION: 42] Option 42 is perfect."
        elif model == "slow":
            time.sleep(1.5)
            content = _scripted(messages)
        elif model == "slowish":
            time.sleep(0.2)
            content = _scripted(messages)
        elif model == "trickle":  # a valid reply, one byte every 0.1 s
            body = json.dumps({"choices": [{"message": {"content": "x" * 60}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for i in range(len(body)):
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                time.sleep(0.1)
            return
        elif model == "huge":  # 8 MB of content
            content = "[ACTION: CONFIRM] " + "x" * 8_000_000
        elif model == "echo-headers":  # an error body that echoes the request headers
            self._json(
                500, {"error": {"message": f"bad request; headers were {dict(self.headers)}"}}
            )
            return
        elif model == "auth":
            if self.headers.get("Authorization") != "Bearer sk-test":
                self._json(401, {"error": {"message": "invalid api key"}})
                return
            content = _scripted(messages)
        elif model == "echo-key":  # a 200 without choices that echoes the key
            key = str(self.headers.get("Authorization", "")).removeprefix("Bearer ")
            self._json(200, {"echo": key})
            return
        elif model == "truncated":
            content, finish = "Let me think about what this customer needs. First,", "length"
        elif model == "truncated-empty":
            content, finish = "", "length"
        elif model in ("deaf", "hearing", "hearing-details"):
            content = _scripted(messages)
            prompt, audio = _prompt_tokens(messages, hear=model == "hearing")
            usage = {"prompt_tokens": prompt, "completion_tokens": 1}
            if model == "hearing-details":
                usage["prompt_tokens_details"] = {"audio_tokens": audio, "cached_tokens": 0}
        elif model in ("labeller", "labeller-mute", "labeller-down-after-3"):
            frames = _audio_frames(messages)
            if model == "labeller-down-after-3" and _count_label_request(messages) > 3:
                self._json(503, {"error": {"message": "overloaded"}})
                return
            if not _is_label_request(messages):  # an episode's turn: play it
                content = _scripted(messages)
            elif model == "labeller-mute":
                content = "I cannot tell from this recording."
            elif frames is None or frames % 2 == 0:
                content = "Resolved."
            else:
                content = "I'd say **unresolved**: the voice hesitates."
            prompt, _ = _prompt_tokens(messages, hear=True)
            usage = {"prompt_tokens": prompt, "completion_tokens": 4}
        elif model == "no-usage":
            content, usage = _scripted(messages), None
        else:
            self._json(404, {"error": {"message": f"The model `{model}` does not exist."}})
            return
        reply = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish,
                }
            ],
        }
        if usage is not None:
            reply["usage"] = usage
        self._json(200, reply)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
