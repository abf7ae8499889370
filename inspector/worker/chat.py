"""Live chat inside a worker: the engine, its host and the ``openai`` client run here, never in the window.

The job loads the engine and opens a :class:`~inspector.live.session.LiveSession` (whose
responder calls the configured endpoint through the real SDK), then serves what the parent
sends, one at a time: ``send`` (a user message), ``compress`` (a manual ``/compress``), ``close``.
While a turn runs, ``stop_turn`` cancels it. What comes back:

- ``delta`` — reply text as it streams (already masked by the responder's stream scrubber);
- ``notice`` — a retry or a redaction, for the chat's status line;
- ``update`` — the trace's new part (``batch``) with ``what`` = ``started`` | ``calling`` (a provider
  call is about to be made) | ``hook`` (a hook is about to run, after events the last update did not
  carry) | ``request`` (a provider call is fully recorded mid-turn) | ``turn``
  (the turn ended: ``reply`` or ``error``) | ``compressed``;
  ``rows`` are the conversation's new rows as they happened (assistant with usage, tool results);
- ``done`` — after ``close`` (or the supervisor's ``cancel``): ``on_session_end`` ran, the final trace.

A turn's and a compress's ``update`` and ``done`` carry the token counts the worker had to make
(``token_counts``), which the supervisor writes to the persistent cache at once.

A hook that freezes or a worker that dies is the supervisor's to see: the parent then has the
trace streamed so far, ending with that fault (:mod:`inspector.live.worker_chat`).
"""

from __future__ import annotations

import queue
import threading
import traceback
from typing import Any

from inspector.tokens.persistent import worker_counts
from inspector.worker.codec import TraceStreamer
from inspector.worker.runtime import Runtime


def _dispatch(rt: Runtime, commands: queue.SimpleQueue[dict[str, Any] | None], turn: dict[str, Any]) -> None:
    """The supervisor's frames: ``stop_turn`` and ``cancel`` act at once (a turn is running on the
    main thread); the rest wait in ``commands`` for the main thread."""
    while True:
        frame = rt.inbox.get()
        kind = frame.get("type")
        if kind in ("stop_turn", "cancel"):
            current = turn.get("cancel")
            if current is not None:
                current.set()
            if kind == "cancel":
                commands.put(None)
                return
        else:
            commands.put(frame)


def _failure(exc: BaseException) -> dict[str, Any]:
    from inspector.live.responder import LiveError

    if isinstance(exc, LiveError):
        return {"kind": exc.kind, "message": str(exc), "attempts": exc.attempts, "status": exc.status}
    return {"kind": "unexpected", "message": f"{type(exc).__name__}: {exc}",
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=4))}


def chat_job(rt: Runtime, job: dict[str, Any]) -> None:
    from inspector.engines.discovery import EngineLoadError
    from inspector.live.session import LiveSession
    from inspector.worker.jobs import _error, _load

    try:
        loaded = _load(rt, job, job.get("engine") or None)
    except EngineLoadError as exc:
        _error(rt, "load", exc)
        return
    rt.send("loaded", warnings=[str(w) for w in getattr(loaded, "warnings", None) or []])
    try:
        session = LiveSession(loaded, job["config"], system_prompt=job.get("system_prompt"),
                              session_id=job.get("session_id"), label=job.get("label"), history=job.get("history"))
    except Exception as exc:  # no endpoint configured, an engine whose start raised past the host
        loaded.close()
        _error(rt, "user" if type(exc).__name__ == "LiveError" else "crash", exc)
        return
    streamer = TraceStreamer(session.trace)
    rt.send("meta", meta=session.trace.meta)
    rt.send("update", what="started", started=session.started, batch=streamer.batch())
    commands: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
    turn: dict[str, Any] = {}
    threading.Thread(target=_dispatch, args=(rt, commands, turn), name="inspector-chat-inbox", daemon=True).start()
    try:
        while True:
            frame = commands.get()
            if frame is None or frame.get("type") == "close":
                break
            if frame.get("type") == "send":
                _turn(rt, session, streamer, turn, str(frame.get("text") or ""))
            elif frame.get("type") == "compress":
                _compress(rt, session, streamer, frame.get("topic"))
    finally:
        try:
            session.close()
        finally:
            loaded.close()
    rt.send("done", status="ok", batch=streamer.batch(final=True), token_counts=worker_counts())


def _turn(rt: Runtime, session: Any, streamer: TraceStreamer, turn: dict[str, Any], text: str) -> None:
    cancel = threading.Event()
    turn["cancel"] = cancel
    mark = len(session.transcript)
    sent = {"rows": 0}

    def on_request() -> None:
        rows = session.responder.log[sent["rows"]:]
        sent["rows"] += len(rows)
        rt.send("update", what="request", batch=streamer.batch(), rows=rows)

    def calling(request: Any, tools: Any) -> Any:
        # The turn so far (its hooks have all returned) before the provider call: a hook that then
        # freezes or kills the worker leaves a trace that shows this turn up to it.
        rt.send("update", what="calling", batch=streamer.batch())
        return respond(request, tools)

    streamed = {"events": len(session.trace.events)}

    def before_hook() -> None:
        # What the turn recorded since the last update, before the next hook runs: a hook that
        # freezes or kills the worker after the provider call then leaves the trace up to it.
        if len(session.trace.events) != streamed["events"]:
            streamed["events"] = len(session.trace.events)
            rt.send("update", what="hook", batch=streamer.batch())

    respond = session.responder.respond
    session.responder.respond = calling
    rt.before_hook = before_hook
    reply, error = "", None
    try:
        reply = session.send(text, on_delta=lambda piece: rt.send("delta", text=piece), cancel=cancel,
                             on_notice=lambda kind, note: rt.send("notice", kind=kind, text=note),
                             on_request=on_request)
    except Exception as exc:  # a LiveError ends the turn; anything else is reported the same way
        error = _failure(exc)
    finally:
        turn.pop("cancel", None)
        rt.before_hook = None
        session.responder.respond = respond
    produced = session.transcript[mark:]
    recorded_user = bool(produced) and produced[0].get("role") == "user"
    rows = produced[1 + sent["rows"]:] if recorded_user else []
    rt.send("update", what="turn", batch=streamer.batch(), rows=rows, reply=reply, error=error,
            recorded_user=recorded_user, token_counts=worker_counts())


def _compress(rt: Runtime, session: Any, streamer: TraceStreamer, topic: Any) -> None:
    committed, error = False, None
    try:
        committed = session.compress(str(topic) if topic else None)
    except Exception as exc:
        error = _failure(exc)
    rt.send("update", what="compressed", batch=streamer.batch(), committed=committed, error=error,
            token_counts=worker_counts())
