"""An OpenAI-compatible chat-completions server on 127.0.0.1 that answers from a script.

The real agent of the differential tests talks to it; each request takes the next scripted reply
(content, tool calls, usage), streamed as server-sent events when the request asks for a stream.
Every request body is kept so a test can see what the agent sent.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedServer:
    """``with ScriptedServer(replies) as server:`` serves ``server.base_url`` until the block ends."""

    def __init__(self, replies: list[dict[str, Any]], *, context_length: int = 128_000,
                 summary: str | None = None) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        # With ``summary``, requests that are not the agent's conversation (no agent system prompt:
        # the compressor's summary call) get it as their answer without taking a scripted reply.
        self.summary = summary
        self.aux_requests: list[dict[str, Any]] = []
        self.context_length = context_length
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def next_reply(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self.summary is not None and not self._from_agent(body):
                self.aux_requests.append(body)
                return {"content": self.summary, "usage": {"prompt_tokens": 100, "completion_tokens": 50}}
            self.requests.append(body)
            if not self.replies:
                return {"content": "(script exhausted)", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
            return self.replies.pop(0)

    @staticmethod
    def _from_agent(body: dict[str, Any]) -> bool:
        first = (body.get("messages") or [{}])[0]
        return first.get("role") == "system" and str(first.get("content") or "").startswith("You are Hermes")

    def __enter__(self) -> ScriptedServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, payload: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.rstrip("/").endswith("/models"):
                    self._json({"object": "list", "data": [
                        {"id": "probe-model", "object": "model", "context_length": server.context_length}]})
                else:
                    self._json({"error": "not found"}, 404)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json({"error": {"message": "not found"}}, 404)
                    return
                reply = server.next_reply(body)
                if reply.get("status"):
                    self._json({"error": {"message": reply.get("content", "error")}}, int(reply["status"]))
                    return
                message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
                calls = [{"id": c["id"], "type": "function",
                          "function": {"name": c["name"], "arguments": json.dumps(c.get("args") or {})}}
                         for c in reply.get("tool_calls") or []]
                if calls:
                    message["tool_calls"] = calls
                usage = dict(reply.get("usage") or {"prompt_tokens": 10, "completion_tokens": 5})
                usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
                finish = "tool_calls" if calls else "stop"
                created = int(time.time())
                if body.get("stream"):
                    self._stream(message, calls, usage, finish, created)
                    return
                self._json({"id": "cmpl-1", "object": "chat.completion", "created": created,
                            "model": body.get("model"), "usage": usage,
                            "choices": [{"index": 0, "message": message, "finish_reason": finish}]})

            def _stream(self, message: dict[str, Any], calls: list, usage: dict, finish: str, created: int) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {"id": "cmpl-1", "object": "chat.completion.chunk", "created": created, "model": "probe-model"}
                delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
                if calls:
                    delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(calls)]
                chunks = [
                    {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                    {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                    {**base, "choices": [], "usage": usage},
                ]
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True, name="scripted-server").start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
