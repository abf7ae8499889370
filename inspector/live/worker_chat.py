"""A live chat whose engine runs in a supervised worker process (the window's chat uses this).

The window (or a command) never runs engine code: :class:`WorkerChat` starts a worker running
the ``chat`` job (:mod:`inspector.worker.chat`) — the engine, its host and the ``openai`` client
calling the configured endpoint — sends it each user message, and hears back reply text as it
streams, notices and the trace's new part after every provider call. It offers what the chat
panel asks of a :class:`~inspector.live.session.LiveSession` (``send``, ``compress``,
``snapshot``, ``save_transcript``, ``close``).

A worker that freezes in a hook or dies is ended by the supervisor; the turn then fails with a
:class:`~inspector.live.responder.LiveError` of kind ``fault`` naming what happened, the trace
so far (ending with that fault) stays readable, and the conversation is kept here: the next
message starts a new worker, whose engine gets the conversation so far as its history. Everything
the worker sends is masked by the one scrubber (:mod:`inspector.llm.secrets`) before it is used.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from inspector.live.conversation import Conversation
from inspector.live.responder import DeltaFn, LiveCancelled, LiveError, LiveSettings, NoticeFn
from inspector.live.session import (
    new_session_id,
    redact_key,
    snapshot_trace,
)
from inspector.llm.secrets import StreamScrubber, scrub_strings, scrub_text
from inspector.trace.model import Fault, Trace
from inspector.worker.replays import _absolute
from inspector.worker.supervisor import STATUS_CRASHED, Outcome, Worker, run_workers

FAULT = "fault"  # the LiveError kind of a turn whose worker froze or died
STOP_GRACE = 2.0  # seconds a cancelled turn may take to stop before its worker is ended
_MESSAGE_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")
_SCRUBBED = frozenset({"update", "done", "meta", "notice", "error", "raised", "note", "loaded"})


class _ChatWorker(Worker):
    """A worker whose frames are masked before anything here reads them (streamed text aside:
    :class:`WorkerChat` masks it across pieces)."""

    def __init__(self, *args: Any, key: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._key = key

    def _frame(self, frame: dict[str, Any]) -> None:
        if frame.get("type") in _SCRUBBED:
            frame = scrub_strings(frame, self._key)
        super()._frame(frame)


class WorkerChat(Conversation):
    """A chat with a real model through the engine under test, the engine in a worker process.

    ``engine`` is an engine name (``None``: ``context.engine``), loaded in the worker. One
    request at a time (a concurrent :meth:`send` raises a ``LiveError`` of kind ``busy``);
    callbacks run on the thread that watches the worker.
    """

    def __init__(self, engine: str | None, config: dict[str, Any], *, system_prompt: str | None = None,
                 plugin_dirs: Any = (), label: str | None = None, session_id: str | None = None) -> None:
        super().__init__(LiveSettings.from_config(config), system_prompt)
        self.config = config
        self.engine = engine
        self.plugin_dirs = _absolute(list(plugin_dirs))
        self.label = label
        self.session_id = session_id or new_session_id()
        #: what ended each worker that did not close normally
        self.faults: list[str] = []
        self.workers_started = 0
        self._worker: _ChatWorker | None = None
        self._events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._stop = threading.Event()
        self._started: bool | None = None  # the engine's session started (known once the worker says)
        self._latest: Trace | None = None
        self._rows: list[dict[str, Any]] = []  # this turn's rows so far
        self._on_delta: DeltaFn | None = None
        self._on_notice: NoticeFn | None = None
        self._on_request: Callable[[], None] | None = None
        self._shown = StreamScrubber(self._key())
        #: told (on the watching thread) when a worker ends with a fault while no message is in flight:
        #: (what ended it, the trace so far); the next message goes on in a new worker
        self.on_idle_end: Callable[[str, Trace | None], None] | None = None
        self._start_worker()

    # -- state ------------------------------------------------------------------------------------
    @property
    def trace(self) -> Trace | None:
        """The trace so far (of the current worker; after a fault, the ended worker's, with the fault)."""
        return self._latest

    def snapshot(self) -> Trace | None:
        return self._latest

    @property
    def started(self) -> bool | None:
        return self._started

    @property
    def history(self) -> list[dict[str, Any]]:
        """The conversation's messages (what a new worker's engine starts from)."""
        return [{k: row[k] for k in _MESSAGE_FIELDS if k in row} for row in self.transcript]

    def _key(self) -> str:
        return os.environ.get(self.settings.api_key_env, "").strip()

    # -- the worker ---------------------------------------------------------------------------------
    def _start_worker(self) -> None:
        job = {"job": "chat", "engine": self.engine, "config": self.config, "plugin_dirs": self.plugin_dirs,
               "system_prompt": self.system_prompt, "session_id": self.session_id, "label": self.label,
               "history": self.history}
        events: queue.Queue[tuple[str, Any]] = queue.Queue()
        stop = threading.Event()
        worker = _ChatWorker(job, self.config, label=str(self.engine or "engine"), key=self._key(),
                             on_frame=functools.partial(self._on_frame, events))

        def watch() -> None:
            # The worker starts on this thread, which lives as long as it: bubblewrap's --die-with-parent
            # follows the thread that started it (a chat panel's per-message thread would take it along).
            try:
                outcome = run_workers([worker], cancel=stop)[0]
            except BaseException as exc:  # noqa: BLE001 - told to whoever waits, never lost on this thread
                outcome = Outcome(status=STATUS_CRASHED, notes=[f"{type(exc).__name__}: {exc}"],
                                  fault=Fault("worker_died", f"the chat's worker could not run: {type(exc).__name__}: {exc}"))
            events.put(("ended", outcome))
            told = self.on_idle_end
            if told is not None and outcome.fault is not None and not self._closed and not self._lock.locked():
                # No message in flight to report it: say so now, not at the next Send.
                told(scrub_text(outcome.describe(), self._key()),
                     snapshot_trace(outcome.trace) if outcome.trace is not None else None)

        self._worker, self._events, self._stop, self._started = worker, events, stop, None
        self.workers_started += 1
        threading.Thread(target=watch, name="inspector-live-worker", daemon=True).start()

    def _on_frame(self, events: queue.Queue[tuple[str, Any]], worker: Worker, frame: dict[str, Any]) -> None:
        """On the watching thread, as frames arrive (the supervisor has added each batch to the trace)."""
        kind = frame.get("type")
        if kind == "delta":
            self._delta(self._shown.feed(str(frame.get("text") or "")))
        elif kind == "notice":
            if frame.get("kind") == "retry":
                self._shown = StreamScrubber(self._key())  # the failed attempt's text is void
            if self._on_notice is not None:
                self._on_notice(str(frame.get("kind") or ""), scrub_text(str(frame.get("text") or ""), self._key()))
        elif kind == "update":
            if worker.assembler is not None:
                self._latest = snapshot_trace(worker.assembler.trace)
                self._latest.meta["worker"] = worker.isolation.to_json()  # how contained, while it runs too
            self._rows.extend(r for r in frame.get("rows") or () if isinstance(r, dict))
            if frame.get("what") == "request":
                self._delta(self._shown.flush())
                if self._on_request is not None:
                    self._on_request()
            elif frame.get("what") not in ("calling", "hook"):
                events.put(("update", frame))
        elif kind == "error":
            events.put(("error", frame))

    def _delta(self, text: str) -> None:
        if text and self._on_delta is not None:
            self._on_delta(text)

    def _ended(self, outcome: Outcome) -> None:
        self._worker = None
        if outcome.trace is not None:
            self._latest = snapshot_trace(outcome.trace)
        if outcome.fault is not None:
            self.faults.append(scrub_text(outcome.describe(), self._key()))

    def _wait(self, what: str, cancel: threading.Event | None) -> dict[str, Any]:
        """The next ``update`` of kind ``what``; a worker error, or its end, raises a ``LiveError``."""
        stop_sent: float | None = None
        while True:
            try:
                kind, item = self._events.get(timeout=0.05)
            except queue.Empty:
                if cancel is not None and cancel.is_set() and self._worker is not None:
                    if stop_sent is None:
                        stop_sent = time.monotonic()
                        self._worker.post({"type": "stop_turn"})
                    elif time.monotonic() - stop_sent > STOP_GRACE and not self._stop.is_set():
                        self._stop.set()  # deaf to the cancel (inside a hook): the supervisor ends it
                continue
            if kind == "update":
                if item.get("what") == "started":
                    self._started = bool(item.get("started"))
                if item.get("what") == what:
                    return item
            elif kind == "error":  # the job stopped before chatting; its worker exits
                message = scrub_text(str(item.get("message") or item.get("exception") or "error"), self._key())
                if not self._until_ended(5.0):
                    self._stop.set()
                    self._until_ended(5.0)
                if item.get("kind") == "load":
                    raise LiveError(f"the engine did not load: {message}", kind="config")
                raise LiveError(message, kind="config" if item.get("kind") == "user" else "unexpected")
            elif kind == "ended":
                self._ended(item)
                if cancel is not None and cancel.is_set():
                    raise LiveCancelled("cancelled by the user; the engine did not stop, so its worker was ended "
                                        "(the next message starts a new one)")
                if item.fault is None:
                    raise LiveError(f"the chat's worker ended ({item.status})", kind=FAULT)
                raise LiveError(f"the engine's worker ended: {self.faults[-1]}. The conversation so far is kept; "
                                "send again to go on in a new worker", kind=FAULT)

    def _ready(self, cancel: threading.Event | None) -> None:
        """A worker whose engine session started; a new one when the last ended (also while idle)."""
        while self._worker is not None:
            try:
                kind, item = self._events.get_nowait()
            except queue.Empty:
                break
            if kind == "ended":
                self._ended(item)
            elif kind == "update" and item.get("what") == "started":
                self._started = bool(item.get("started"))
        if self._worker is None:
            self._start_worker()
        if self._started is None:
            self._wait("started", cancel)
        if not self._started:
            raise LiveError("the engine refused to start (see the trace's first events); this session cannot chat",
                            kind="config")

    # -- actions ------------------------------------------------------------------------------------
    def send(self, user_text: str, on_delta: DeltaFn | None = None, cancel: threading.Event | None = None, *,
             on_notice: NoticeFn | None = None, on_request: Callable[[], None] | None = None) -> str:
        """One user turn in the worker; returns the final assistant text (see ``LiveSession.send``)."""
        if not isinstance(user_text, str) or not user_text.strip():
            raise LiveError("nothing to send: the message is empty", kind="bad_request")
        with self._exclusive():
            self._ready(cancel)
            text, _ = redact_key(user_text, self.settings.api_key_env)
            user = {"role": "user", "content": text, "timestamp": time.time()}
            self._rows, self._shown = [], StreamScrubber(self._key())
            self._on_delta, self._on_notice, self._on_request = on_delta, on_notice, on_request
            recorded = True  # once sent, a worker that dies has the message in its history
            try:
                assert self._worker is not None
                self._worker.post({"type": "send", "text": user_text})
                done = self._wait("turn", cancel)
                recorded = bool(done.get("recorded_user"))
                self._delta(self._shown.flush())
                error = done.get("error")
                if isinstance(error, dict):
                    message = scrub_text(str(error.get("message") or ""), self._key())
                    if error.get("kind") == "cancelled":
                        raise LiveCancelled(message)
                    raise LiveError(message, kind=str(error.get("kind") or "unexpected"),
                                    attempts=int(error.get("attempts") or 0), status=error.get("status"))
                return str(done.get("reply") or "")
            finally:
                if recorded:
                    self.transcript.append(user)
                    self.transcript.extend(self._rows)
                self._rows = []
                self._on_delta = self._on_notice = self._on_request = None

    def compress(self, focus_topic: str | None = None) -> bool:
        """A manual ``/compress [topic]`` in the worker; True if a boundary committed."""
        with self._exclusive():
            self._ready(None)
            assert self._worker is not None
            self._worker.post({"type": "compress", "topic": focus_topic or None})
            done = self._wait("compressed", None)
            error = done.get("error")
            if isinstance(error, dict):
                raise LiveError(scrub_text(str(error.get("message") or ""), self._key()),
                                kind=str(error.get("kind") or "unexpected"))
            return bool(done.get("committed"))

    # -- lifecycle ----------------------------------------------------------------------------------------
    def close(self, timeout: float = 10.0) -> Trace | None:
        """End the engine's session (``on_session_end`` in the worker) and the worker; the final trace.

        A worker that does not finish within ``timeout`` seconds is ended (its trace so far is kept).
        """
        if self._closed:
            return self._latest
        with self._lock:
            self._closed = True
            worker = self._worker
            if worker is None:
                return self._latest
            worker.post({"type": "close"})
            if not self._until_ended(timeout):
                self._stop.set()  # the supervisor ends it within a second, keeping the trace so far
                self._until_ended(5.0)
        return self._latest

    def _until_ended(self, timeout: float) -> bool:
        """Wait for the current worker's end (True), ignoring its other news; False after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                kind, item = self._events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return False
            if kind == "ended":
                self._ended(item)
                return True

    def __enter__(self) -> WorkerChat:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
