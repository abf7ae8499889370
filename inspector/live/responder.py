"""A responder that asks a real model: an OpenAI-compatible endpoint through the ``openai`` SDK.

The host's agent loop is the same as in a replay; only the answer comes from the network. The
responder streams each reply (text deltas go to a callback so the chat panel can show them as
they arrive), assembles tool calls from the stream, and hands the host the provider's real
usage, cached tokens included, so ``update_from_response`` sees what Hermes would see.

Retries are ours, not the SDK's (``max_retries=0``): Hermes' retry loop reuses the request it
already assembled and selected (agent/conversation_loop.py:1216-1260 of hermes-agent 0.19.0, docs/host-contract.md §3), so a transient
failure is retried *inside* :meth:`LiveResponder.respond` with the same list, and
``select_context`` is not re-run for it. When the retries are used up a :class:`LiveError`
leaves ``respond``; the host's history keeps everything up to the failed call.

The API key is read from the environment variable the config names, at client construction
only; it is never stored on this object, logged, or put into a message, note or error text.
"""

from __future__ import annotations

import email.utils
import json
import os
import queue
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inspector.config import cfg_get
from inspector.host.responders import ProviderResponse
from inspector.llm.secrets import StreamScrubber, scrub_strings
from inspector.usage import normalize_usage

NO_KEY_PLACEHOLDER = "not-needed"
DeltaFn = Callable[[str], None]
NoticeFn = Callable[[str, str], None]
NoteFn = Callable[..., Any]

# Status codes worth another attempt besides 429 and 5xx: request timeout, conflict, too early.
_RETRY_STATUSES = frozenset({408, 409, 425})
_OVERFLOW_HINTS = ("context length", "context_length", "maximum context", "too many tokens", "prompt is too long",
                   "context window", "reduce the length")


class LiveError(Exception):
    """A live provider call failed for good; ``kind`` says why, in words a user can act on.

    kinds: ``timeout``, ``connection``, ``rate_limit``, ``server``, ``stream``, ``auth``,
    ``bad_request``, ``context_overflow``, ``config``, ``busy``, ``unexpected``, ``cancelled``.
    """

    def __init__(self, message: str, *, kind: str = "unexpected", attempts: int = 0, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts
        self.status = status


class LiveCancelled(LiveError):
    """The user cancelled the request in flight."""

    def __init__(self, message: str = "cancelled by the user", *, attempts: int = 0) -> None:
        super().__init__(message, kind="cancelled", attempts=attempts)


@dataclass
class RetryPolicy:
    """How often and how long to retry a transient failure.

    ``max_attempts`` counts the first try. Backoff doubles from ``base_delay`` up to
    ``max_delay``; a 429's Retry-After is honoured up to ``max_retry_after`` seconds (a longer
    wait is reported instead of silently shortened, since retrying early would only be refused).
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0
    jitter: float = 0.1

    def backoff(self, attempt: int) -> float:
        delay = min(self.max_delay, self.base_delay * (2 ** max(0, attempt - 1)))
        return delay * (1.0 + self.jitter * random.random())


@dataclass
class LiveSettings:
    """Endpoint, model and limits for live chat, from ``inspector.live.*`` (key name only, never the key)."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_tool_rounds: int = 8
    max_tokens: int | None = None
    temperature: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LiveSettings:
        live = cfg_get(config, "inspector.live", {}) or {}
        base_url = str(live.get("base_url") or cfg_get(config, "model.base_url", "") or "").strip()
        model = str(live.get("model") or cfg_get(config, "model.default", "") or "").strip()
        retry = RetryPolicy(
            max_attempts=max(1, int(live.get("max_attempts") or 4)),
            base_delay=float(live.get("retry_base_delay") or 0.5),
            max_delay=float(live.get("retry_max_delay") or 8.0),
            max_retry_after=float(live.get("max_retry_after") or 60.0),
        )
        max_tokens = live.get("max_tokens")
        temperature = live.get("temperature")
        return cls(
            base_url=base_url,
            model=model,
            api_key_env=str(live.get("api_key_env") or "OPENAI_API_KEY"),
            timeout=float(live.get("timeout") or 60.0),
            max_tool_rounds=max(0, int(live.get("max_tool_rounds") if live.get("max_tool_rounds") is not None else 8)),
            max_tokens=int(max_tokens) if max_tokens else None,
            temperature=float(temperature) if temperature is not None else None,
            retry=retry,
        )

    def key_present(self) -> bool:
        return bool(os.environ.get(self.api_key_env, "").strip())

    def describe(self) -> str:
        """One line for the panel and the trace: endpoint, model, and whether a key is set (never its value)."""
        key = f"${self.api_key_env} {'set' if self.key_present() else 'not set'}"
        return f"{self.base_url or '(no endpoint)'} · model {self.model or '(none)'} · key {key}"


def make_openai_client(settings: LiveSettings) -> Any:
    """An ``openai.OpenAI`` with SDK retries off (ours honour Retry-After and cancel)."""
    import openai

    if not settings.base_url:
        raise LiveError("no live endpoint configured: set inspector.live.base_url in config.yaml", kind="config")
    if not settings.model:
        raise LiveError("no model configured: set inspector.live.model in config.yaml", kind="config")
    key = os.environ.get(settings.api_key_env, "").strip() or NO_KEY_PLACEHOLDER
    return openai.OpenAI(base_url=settings.base_url, api_key=key, timeout=settings.timeout, max_retries=0)


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds a 429 asks us to wait: ``retry-after-ms``, ``retry-after`` seconds or an HTTP date."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
    except (TypeError, ValueError):
        pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(raw))
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


class _IncompleteStream(Exception):
    """The stream ended without a finish reason: the connection dropped between events."""


class _NotAStream(Exception):
    """The endpoint answered, but with no server-sent events at all (a plain JSON or HTML body)."""


class _StalledStream(Exception):
    """Our own watchdog: the SDK's timeout should have fired but the call is still silent."""


@dataclass
class _Failure:
    kind: str
    retryable: bool
    message: str
    status: int | None = None
    retry_after: float | None = None


def classify(exc: BaseException) -> _Failure:
    """Map an SDK exception onto what a user expects: retry transient faults, report the rest."""
    import openai

    if isinstance(exc, _IncompleteStream):
        return _Failure("stream", True, f"the reply stream broke off ({exc})")
    if isinstance(exc, _NotAStream):
        return _Failure("stream", False, "the endpoint answered without streaming (no server-sent events came "
                        "back); live chat asks for stream: true, so use an endpoint or proxy that streams")
    if isinstance(exc, json.JSONDecodeError):  # one torn event; Hermes retries these as transient
        return _Failure("stream", True, f"the reply stream carried a malformed event ({exc.msg} at column {exc.colno})")
    if isinstance(exc, (openai.APITimeoutError, _StalledStream)):
        return _Failure("timeout", True, "the endpoint did not answer within the timeout")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        detail = f": {type(cause).__name__}" if cause is not None else ""
        return _Failure("connection", True, f"connection to the endpoint failed or dropped{detail}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        text = _error_text(exc)
        if status == 429:
            return _Failure("rate_limit", True, f"rate limited (HTTP 429): {text}", status,
                            retry_after_seconds(exc.response.headers))
        if status >= 500:
            return _Failure("server", True, f"server error (HTTP {status}): {text}", status)
        if status in _RETRY_STATUSES:
            return _Failure("server", True, f"HTTP {status}: {text}", status)
        if status == 413 or (status == 400 and any(h in text.lower() for h in _OVERFLOW_HINTS)):
            return _Failure("context_overflow", False, f"the request is larger than the model accepts (HTTP {status}): {text}", status)
        if status in (401, 403):
            return _Failure("auth", False, f"the endpoint refused the credentials (HTTP {status}): {text}", status)
        return _Failure("bad_request", False, f"the endpoint rejected the request (HTTP {status}): {text}", status)
    if isinstance(exc, openai.APIError):
        # An error event inside an otherwise healthy stream (providers overloaded mid-reply).
        return _Failure("stream", True, f"the endpoint reported an error mid-stream: {exc.message}")
    return _Failure("unexpected", False, f"{type(exc).__name__}: {exc}")


def _error_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:500]
        if isinstance(err, str):
            return err[:500]
    return str(getattr(exc, "message", "") or exc)[:500]


class _StreamCall:
    """One streaming HTTP call on a helper thread, so a cancel never waits for the network.

    The caller drains :attr:`items`; on cancel it calls :meth:`close`, which closes the response
    (releasing the connection, so the server sees the client go away) and tells the helper to
    stop at its next chunk. The helper is a daemon bounded by the SDK timeout.
    """

    def __init__(self, client: Any, params: dict[str, Any]) -> None:
        self.items: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._client = client
        self._params = params
        self._lock = threading.Lock()
        self._stream: Any = None
        self._closed = False
        self.thread = threading.Thread(target=self._run, name="live-stream", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            stream = self._client.chat.completions.create(**self._params)
            with self._lock:
                if self._closed:
                    stream.close()
                    return
                self._stream = stream
            for chunk in stream:
                if self._closed:
                    break
                self.items.put(("chunk", chunk))
            self.items.put(("end", None))
        except BaseException as exc:  # handed to the caller, which classifies it
            self.items.put(("error", exc))
        finally:
            with self._lock:
                stream, self._stream = self._stream, None
            if stream is not None:
                try:
                    stream.close()
                except Exception:
                    pass

    def close(self) -> None:
        with self._lock:
            self._closed = True
            stream = self._stream
        if stream is not None:
            try:
                stream.close()
            except Exception:
                pass


@dataclass
class _Reply:
    """What one stream assembled into."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Any = None
    model: str | None = None
    shown: StreamScrubber | None = None  # masks a key split over deltas before it is shown

    def message(self) -> dict[str, Any]:
        text = "".join(self.text)
        calls = []
        for n, idx in enumerate(sorted(self.calls)):
            slot = self.calls[idx]
            calls.append({
                "id": slot["id"] or f"call_{uuid.uuid4().hex[:12]}_{n}",
                "type": "function",
                "function": {"name": slot["name"], "arguments": "".join(slot["arguments"])},
            })
        msg: dict[str, Any] = {"role": "assistant", "content": text if (text or not calls) else None}
        if calls:
            msg["tool_calls"] = calls
        reasoning = "".join(self.reasoning)
        if reasoning.strip():
            # Dropped by the host's shaping (never re-sent), kept for display and transcripts.
            msg["reasoning"] = reasoning
        return msg


class LiveResponder:
    """The Responder protocol (``inspector.host.responders``) answered by a live endpoint.

    One instance serves a whole chat (it owns the client's connection pool); call
    :meth:`begin_turn` before each ``Host.play_turn``. Within a turn the loop continues while
    the model keeps calling tools, up to ``settings.max_tool_rounds`` rounds.
    """

    def __init__(
        self,
        settings: LiveSettings,
        *,
        client: Any = None,
        on_note: NoteFn | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.settings = settings
        self.client = client if client is not None else make_openai_client(settings)
        self._on_note = on_note
        self._sleep = sleep
        self._on_delta: DeltaFn | None = None
        self._on_notice: NoticeFn | None = None
        self._on_request: Callable[[], None] | None = None
        self._cancel = threading.Event()
        self._calls = 0
        self._done = False
        self.hit_round_limit = False
        #: messages produced since the last :meth:`take_log` (assistant rows carry ``usage``/``timestamp``)
        self.log: list[dict[str, Any]] = []
        self.last_error: LiveError | None = None

    # -- per turn -----------------------------------------------------------------------
    def begin_turn(
        self,
        *,
        on_delta: DeltaFn | None = None,
        on_notice: NoticeFn | None = None,
        on_request: Callable[[], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        """Reset the per-turn loop state and set this turn's callbacks."""
        self._on_delta = on_delta
        self._on_notice = on_notice
        self._on_request = on_request
        self._cancel = cancel if cancel is not None else threading.Event()
        self._calls = 0
        self._done = False
        self.hit_round_limit = False
        self.last_error = None

    def take_log(self) -> list[dict[str, Any]]:
        out, self.log = self.log, []
        return out

    # -- Responder protocol ------------------------------------------------------------------
    def pending_inputs(self) -> list[dict[str, Any]]:
        """Nothing arrives mid-turn in a chat; the call marks "previous request fully recorded"."""
        if self._calls and not self._done and self._on_request is not None:
            # The previous call's usage, engine tools and tool results are in the trace now.
            self._on_request()
        return []

    def wants_request(self) -> bool:
        """Another call is due while the model's last reply asked for tools, up to the round limit."""
        if self._done:
            return False
        if self._calls > self.settings.max_tool_rounds:
            if not self.hit_round_limit:
                self.hit_round_limit = True
                self._note(f"live turn stopped after {self.settings.max_tool_rounds} tool-call rounds "
                           "(inspector.live.max_tool_rounds); the last tool results were not shown to the model")
            return False
        return True

    def respond(self, request: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ProviderResponse | None:
        if not self.wants_request():
            return None
        if self._cancel.is_set():
            raise LiveCancelled()
        sent = time.time()
        reply, attempts = self._call_with_retries(request, tools)
        self._calls += 1
        # An endpoint echoing its key (in text, tool-call arguments or reasoning) must not put it in the trace.
        message = scrub_strings(reply.message(), os.environ.get(self.settings.api_key_env or ""))
        self._done = not message.get("tool_calls")
        raw = _usage_dict(reply.usage)
        usage = normalize_usage(raw) if raw else None
        stamp = time.time()
        entry = dict(message)
        entry["timestamp"] = stamp
        if raw:
            entry["usage"] = raw
        if reply.model or self.settings.model:
            entry["model"] = reply.model or self.settings.model
        self.log.append(entry)
        if attempts > 1:
            self._note(f"provider call succeeded on attempt {attempts}", attempts=attempts)
        if usage is None:
            self._note("the endpoint sent no usage for this call; the host synthesised it from token counts")
        return ProviderResponse(message=message, usage=usage, recorded=None, timestamp=stamp, raw_usage=raw,
                                sent_at=sent)

    def tool_results(self, assistant: dict[str, Any], engine_results: dict[str, str]) -> list[dict[str, Any]]:
        """One tool message per call: the engine's result, or a JSON error for tools nobody serves."""
        return [self.tool_result(assistant, call, engine_results.get(str(call.get("id"))))
                for call in assistant.get("tool_calls") or () if isinstance(call, dict)]

    def tool_result(self, assistant: dict[str, Any], call: dict[str, Any], engine_result: str | None) -> dict[str, Any]:
        """The tool message answering one call: the engine's result, or a JSON error for tools nobody serves."""
        cid = str(call.get("id"))
        name = (call.get("function") or {}).get("name")
        if engine_result is not None:
            content = engine_result
        else:
            content = json.dumps({"error": f"Unknown tool: {name!r}. Only the context engine's tools are "
                                           "available in this live session."})
        msg = {"role": "tool", "tool_call_id": cid, "content": content}
        self.log.append(dict(msg, timestamp=time.time()))
        return msg

    # -- the call ------------------------------------------------------------------------------
    def _note(self, text: str, **args: Any) -> None:
        if self._on_note is not None:
            try:
                self._on_note(text, **args)
            except Exception:
                pass

    def _notice(self, kind: str, text: str) -> None:
        if self._on_notice is not None:
            try:
                self._on_notice(kind, text)
            except Exception:
                pass

    def _wait(self, seconds: float) -> None:
        """Sleep for a backoff, waking at once on cancel."""
        if self._sleep is not None:
            self._sleep(seconds)
            if self._cancel.is_set():
                raise LiveCancelled()
            return
        if self._cancel.wait(max(0.0, seconds)):
            raise LiveCancelled()

    def _params(self, request: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.settings.model,
            "messages": request,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            params["tools"] = tools
        if self.settings.max_tokens:
            params["max_tokens"] = self.settings.max_tokens
        if self.settings.temperature is not None:
            params["temperature"] = self.settings.temperature
        return params

    def _call_with_retries(self, request: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[_Reply, int]:
        """The same request until it succeeds or the policy gives up (Hermes reuses the selected list)."""
        policy = self.settings.retry
        params = self._params(request, tools)
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._stream_once(params), attempt
            except LiveCancelled as exc:
                exc.attempts = attempt
                raise
            except Exception as exc:
                failure = classify(exc)
            message = self._scrub(failure.message)
            if failure.kind == "bad_request" and "stream_options" in message and "stream_options" in params:
                # Older local servers reject the usage option; ask again without it (usage is then synthesised).
                params.pop("stream_options")
                self._note("the endpoint rejected stream_options.include_usage; retrying without it", status=failure.status)
                attempt -= 1
                continue
            if not failure.retryable or attempt >= policy.max_attempts:
                suffix = f" (gave up after {attempt} attempts)" if failure.retryable else ""
                err = LiveError(message + suffix, kind=failure.kind, attempts=attempt, status=failure.status)
                self.last_error = err
                raise err from None
            if failure.kind == "rate_limit" and failure.retry_after is not None:
                if failure.retry_after > policy.max_retry_after:
                    err = LiveError(
                        f"{message}; the server asks to wait {failure.retry_after:.0f} s, longer than "
                        f"inspector.live.max_retry_after ({policy.max_retry_after:.0f} s)",
                        kind="rate_limit", attempts=attempt, status=failure.status,
                    )
                    self.last_error = err
                    raise err from None
                delay = failure.retry_after
            else:
                delay = policy.backoff(attempt)
            text = f"{message}; retrying in {delay:.1f} s (attempt {attempt + 1} of {policy.max_attempts})"
            self._note(f"provider call failed: {text}", kind=failure.kind, attempt=attempt, delay=round(delay, 3),
                       status=failure.status)
            self._notice("retry", text)
            self._wait(delay)

    def _stream_once(self, params: dict[str, Any]) -> _Reply:
        """One streamed call; deltas go to the callback as they arrive."""
        call = _StreamCall(self.client, params)
        reply = _Reply()
        guard = self.settings.timeout * 1.5 + 5.0  # the SDK's timeout should fire long before this
        last = time.monotonic()
        chunks = 0
        try:
            while True:
                if self._cancel.is_set():
                    raise LiveCancelled()
                try:
                    kind, item = call.items.get(timeout=0.05)
                except queue.Empty:
                    if time.monotonic() - last > guard:
                        raise _StalledStream(f"no data for {guard:.0f} s") from None
                    continue
                last = time.monotonic()
                if kind == "error":
                    raise item
                if kind == "end":
                    self._show(reply, None)
                    break
                chunks += 1
                self._absorb(reply, item)
        except BaseException:
            call.close()
            raise
        if not chunks:
            raise _NotAStream()
        if reply.finish_reason is None and reply.usage is None:
            raise _IncompleteStream("no finish reason before the stream ended")
        return reply

    def _show(self, reply: _Reply, text: str | None) -> None:
        """Hand a delta to the view as it streams, masked; a key split over deltas is held back
        until it is whole (and masked); ``None`` ends the stream and shows what was held."""
        if self._on_delta is None:
            return
        if reply.shown is None:
            reply.shown = StreamScrubber(os.environ.get(self.settings.api_key_env or ""))
        try:
            shown = reply.shown.flush() if text is None else reply.shown.feed(text)
            if shown:
                self._on_delta(shown)
        except Exception:
            pass

    def _absorb(self, reply: _Reply, chunk: Any) -> None:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            reply.usage = usage
        model = getattr(chunk, "model", None)
        if isinstance(model, str) and model:
            reply.model = model
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0) not in (0, None):
                continue
            delta = getattr(choice, "delta", None)
            if delta is not None:
                text = getattr(delta, "content", None)
                if isinstance(text, str) and text:
                    reply.text.append(text)
                    self._show(reply, text)
                thought = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
                if isinstance(thought, str) and thought:
                    reply.reasoning.append(thought)
                for tc in getattr(delta, "tool_calls", None) or ():
                    idx = tc.index if getattr(tc, "index", None) is not None else len(reply.calls)
                    slot = reply.calls.setdefault(idx, {"id": None, "name": "", "arguments": []})
                    if getattr(tc, "id", None):
                        slot["id"] = tc.id
                    fn = getattr(tc, "function", None)
                    if fn is not None:
                        name = getattr(fn, "name", None)
                        if name and name != slot["name"]:
                            slot["name"] = slot["name"] + name if slot["name"] else name
                        args = getattr(fn, "arguments", None)
                        if args:
                            slot["arguments"].append(args)
            if getattr(choice, "finish_reason", None):
                reply.finish_reason = choice.finish_reason

    def _scrub(self, text: str) -> str:
        """Error bodies echo requests on some servers; the key never leaves through a message."""
        key = os.environ.get(self.settings.api_key_env, "").strip()
        if key and len(key) >= 4 and key in text:
            text = text.replace(key, "***")
        return text

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:
            pass


def _usage_dict(usage: Any) -> dict[str, Any] | None:
    """The provider's usage object as a plain dict (what a transcript stores and readers re-normalise)."""
    if usage is None:
        return None
    if isinstance(usage, dict):
        return usage
    dump = getattr(usage, "model_dump", None)
    if callable(dump):
        try:
            return dump(exclude_none=True)
        except Exception:
            pass
    return {k: getattr(usage, k) for k in ("prompt_tokens", "completion_tokens", "total_tokens") if hasattr(usage, k)}
