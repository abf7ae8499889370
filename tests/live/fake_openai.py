"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1 for the live-mode tests.

Only what the real ``openai`` SDK needs from ``POST /v1/chat/completions``: SSE streaming with
``data:`` chunks, tool-call deltas, a final usage chunk (``prompt_tokens_details.cached_tokens``)
and ``[DONE]``; plus failures on demand (HTTP 429 with Retry-After, 500, a slow first byte, a
stream that drops mid-way). Each request consumes the next scripted step, so a test states
exactly what the "provider" does and then checks what the client did about it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """A streamed completion: text in ``chunk_size`` pieces, optional tool calls, usage at the end."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"id", "name", "arguments"}]
    prompt_tokens: int = 100
    completion_tokens: int = 10
    cached_tokens: int = 0
    chunk_size: int = 4
    chunk_delay: float = 0.0
    first_byte_delay: float = 0.0  # sleep before sending the headers (a slow provider)
    drop_after: int | None = None  # close the connection after this many content chunks
    drop_clean: bool = False  # drop by ending a close-delimited body (no chunked-encoding error)
    send_usage: bool = True
    torn_after: int | None = None  # send a malformed event after this many content chunks, then stop


@dataclass
class Fail:
    """An HTTP error response."""

    status: int
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Plain:
    """A 200 with a whole (non-streamed) chat.completion body, as some proxies answer a streamed request."""

    text: str = "not streamed"


@dataclass
class Seen:
    body: dict[str, Any]
    headers: dict[str, str]
    at: float


class FakeOpenAI:
    """``with FakeOpenAI([Reply("hi")]) as srv: srv.base_url`` — a bounded, loopback-only server."""

    def __init__(self, script: list[Reply | Fail | Plain] | None = None, *, max_seconds: float = 60.0) -> None:
        self.script: list[Reply | Fail | Plain] = list(script or [])
        self.requests: list[Seen] = []
        self.disconnects: list[float] = []  # times the client went away mid-stream
        self.completed: list[float] = []  # times a stream was written to the end
        self._lock = threading.Lock()
        self._max_seconds = max_seconds
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                owner._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._timer: threading.Timer | None = None

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        self._thread.start()
        # Never outlive a hung test: the server shuts itself down after max_seconds.
        self._timer = threading.Timer(self._max_seconds, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def add(self, *steps: Reply | Fail | Plain) -> None:
        with self._lock:
            self.script.extend(steps)

    # -- serving ----------------------------------------------------------------------------
    def _next(self) -> Reply | Fail | Plain | None:
        with self._lock:
            return self.script.pop(0) if self.script else None

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        h.connection.settimeout(10)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        if h.path.rstrip("/") != "/v1/chat/completions":
            self._json(h, 404, {"error": {"message": f"no route {h.path}"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(h, 400, {"error": {"message": "invalid JSON"}})
            return
        with self._lock:
            self.requests.append(Seen(body=body, headers={k.lower(): v for k, v in h.headers.items()}, at=time.time()))
        step = self._next()
        if step is None:
            self._json(h, 400, {"error": {"message": "fake server: no scripted reply left"}})
            return
        if isinstance(step, Fail):
            if step.delay:
                time.sleep(step.delay)
            self._json(h, step.status, {"error": {"message": step.message, "type": "scripted"}}, step.headers)
            return
        if isinstance(step, Plain):
            self._json(h, 200, {"id": "chatcmpl-plain", "object": "chat.completion", "created": int(time.time()),
                                "model": body.get("model", "fake-model"), "choices": [
                                    {"index": 0, "message": {"role": "assistant", "content": step.text},
                                     "finish_reason": "stop"}]})
            return
        try:
            self._stream(h, body, step)
        except OSError:  # broken pipe, reset, timeout: the client went away
            with self._lock:
                self.disconnects.append(time.time())

    def _json(self, h: BaseHTTPRequestHandler, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except OSError:
            pass

    def _stream(self, h: BaseHTTPRequestHandler, body: dict[str, Any], r: Reply) -> None:
        if r.first_byte_delay:
            time.sleep(r.first_byte_delay)
        chunked = not r.drop_clean
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        if chunked:
            h.send_header("Transfer-Encoding", "chunked")
        else:
            h.send_header("Connection", "close")
        h.end_headers()
        model = body.get("model", "fake-model")
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

        def send(obj: Any) -> None:
            payload = b"data: " + (obj if isinstance(obj, bytes) else json.dumps({**base, **obj}).encode()) + b"\n\n"
            if chunked:
                h.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            else:
                h.wfile.write(payload)
            h.wfile.flush()

        def drop() -> None:
            # Abrupt close: no terminating chunk, no [DONE].
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        send({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
        pieces = [r.text[i:i + r.chunk_size] for i in range(0, len(r.text), r.chunk_size)] if r.text else []
        for n, piece in enumerate(pieces):
            if r.torn_after is not None and n >= r.torn_after:
                send(b'{"choices": [{"index": 0, "delta": {"content": "tor')  # a torn event, then the end
                send(b"[DONE]")
                return
            if r.drop_after is not None and n >= r.drop_after:
                drop()
                return
            if r.chunk_delay:
                time.sleep(r.chunk_delay)
            send({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        if r.drop_after is not None and r.drop_after >= len(pieces):
            drop()
            return
        for i, call in enumerate(r.tool_calls):
            args = call.get("arguments", "{}")
            send({"choices": [{"index": 0, "delta": {"tool_calls": [{
                "index": i, "id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": ""}}]},
                "finish_reason": None}]})
            for j in range(0, len(args), 5):
                send({"choices": [{"index": 0, "delta": {"tool_calls": [{
                    "index": i, "function": {"arguments": args[j:j + 5]}}]}, "finish_reason": None}]})
        send({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if r.tool_calls else "stop"}]})
        stream_usage = (body.get("stream_options") or {}).get("include_usage")
        if r.send_usage and stream_usage:
            send({"choices": [], "usage": {
                "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
                "total_tokens": r.prompt_tokens + r.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": r.cached_tokens},
            }})
        send(b"[DONE]")
        if chunked:
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
        with self._lock:
            self.completed.append(time.time())
