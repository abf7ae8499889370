"""Live chat: type to a real model through the engine under test and watch every panel follow.

The panel owns no host logic. The window gives it a :class:`~inspector.live.worker_chat.WorkerChat`
(the engine, its host and the ``openai`` client in a worker process; tests may give a
:class:`~inspector.live.session.LiveSession`), driven by a job on the window's job runner (one per
message, like a replay), so a slow endpoint, a hanging engine or a dying worker never freezes the
window: a worker that froze or died ends the turn as a fault, and the next message starts a new
worker with the conversation so far. Streamed text arrives through queued signals; after each
provider request is fully recorded the panel emits :attr:`ChatPanel.trace_updated` with a
snapshot of the trace, which the window shows in every other panel.

Everything the model or the user wrote is shown as plain text (``insertText``, never HTML):
a reply containing markup is displayed, not interpreted.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from inspector.live.responder import LiveCancelled, LiveError, LiveSettings
from inspector.trace.model import Trace
from inspector.ui.cursor import Cursor
from inspector.ui.jobs import Job, JobRunner
from inspector.ui.panels.base import Panel

SessionFactory = Callable[[], Any]  # () -> WorkerChat or LiveSession, called on the message's job thread


def _snapshot(session: Any) -> Trace | None:
    try:
        return session.snapshot() if session is not None else None
    except Exception:
        return None


def _chat(job: Job, session: Any, factory: SessionFactory | None, text: str, made: dict[str, Any]) -> tuple[Any, ...]:
    """The job (on its thread): one message, or one /compress, against the session.

    A session the factory makes is also left in ``made``, so the panel can close it even if the
    report of it never arrives (the window closed mid-message).

    Reports ``("session_ready", session)``, ``("delta", text)``, ``("notice", kind, text)`` and
    ``("request_done", snapshot)``; returns ``("finished", reply, snapshot)`` or
    ``("failed", kind, message, snapshot)`` (a cancel, an endpoint error, an engine that raised).
    """
    try:
        if session is None:
            if factory is None:
                raise LiveError("no live session: configure an endpoint and an engine first", kind="config")
            session = made["session"] = factory()
            job.report("session_ready", session)
        stripped = text.strip()
        if stripped == "/compress" or stripped.startswith("/compress "):
            topic = stripped[len("/compress"):].strip() or None
            committed = session.compress(topic)
            message = "compression committed" if committed else "compression made no change"
            return "finished", f"[/compress: {message}]", _snapshot(session)
        reply = session.send(
            text,
            on_delta=lambda piece: job.report("delta", piece),
            cancel=job.cancelled,
            on_notice=lambda kind, note: job.report("notice", kind, note),
            on_request=lambda: job.report("request_done", _snapshot(session)),
        )
        return "finished", reply, _snapshot(session)
    except LiveCancelled as exc:
        return "failed", "cancelled", str(exc), _snapshot(session)
    except LiveError as exc:
        return "failed", exc.kind, str(exc), _snapshot(session)
    except BaseException as exc:  # noqa: BLE001 - an engine may raise anything; the panel reports it
        detail = traceback.format_exc(limit=3)
        return "failed", "unexpected", f"{type(exc).__name__}: {exc}\n{detail}", _snapshot(session)


class ChatPanel(Panel):
    """Transcript, input, Send / Cancel / Save transcript, endpoint line and status line."""

    panel_id = "chat"
    title = "Live chat"
    area = Qt.DockWidgetArea.RightDockWidgetArea

    #: a finished snapshot of the live trace after each provider request (and at the end of a turn)
    trace_updated = Signal(object)
    #: True while a message is in flight
    busy_changed = Signal(bool)
    #: each piece of streamed reply text, as it is shown (GUI thread)
    reply_delta = Signal(str)
    #: a session's worker ended with a fault while no message was in flight (from the watching thread)
    _idle_end = Signal(str, object)

    def __init__(
        self,
        cursor: Cursor,
        parent: QWidget | None = None,
        *,
        session: Any = None,
        session_factory: SessionFactory | None = None,
        settings: LiveSettings | None = None,
        jobs: JobRunner | None = None,
    ) -> None:
        super().__init__(cursor, parent)
        self.jobs = jobs if jobs is not None else JobRunner(self)
        self._session = session
        self._factory = session_factory
        self._settings = settings
        self._job: Job | None = None
        self._made: dict[str, Any] = {}
        self._reply_anchor = 0
        self._owns_session = False
        #: the conversation has turns that were never saved (the window asks before discarding them)
        self.unsaved = False

        self.endpoint_label = QLabel()
        self.endpoint_label.setTextFormat(Qt.TextFormat.PlainText)
        self.endpoint_label.setWordWrap(True)
        self.view = QPlainTextEdit()
        self.view.setReadOnly(True)
        self.view.setObjectName("chat_transcript")
        self.view.setUndoRedoEnabled(False)
        self.input = QPlainTextEdit()
        self.input.setObjectName("chat_input")
        self.input.setPlaceholderText("Message… (Ctrl+Enter sends; /compress [topic] compacts now)")
        self.input.setMaximumHeight(90)
        self.send_button = QPushButton("Send")
        self.cancel_button = QPushButton("Cancel")
        self.save_button = QPushButton("Save transcript…")
        self.status_label = QLabel("Ready.")
        self.status_label.setTextFormat(Qt.TextFormat.PlainText)
        self.status_label.setWordWrap(True)
        self.status_label.setObjectName("chat_status")

        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.cancel_button)
        buttons.addStretch(1)
        buttons.addWidget(self.save_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.endpoint_label)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.input)
        layout.addLayout(buttons)
        layout.addWidget(self.status_label)

        self._idle_end.connect(self._on_idle_end)
        self._watch(session)
        self.send_button.clicked.connect(lambda: self.send_text())
        self.cancel_button.clicked.connect(self.cancel)
        self.save_button.clicked.connect(lambda: self.save_transcript())
        shortcut = QShortcut(QKeySequence("Ctrl+Return"), self.input)
        shortcut.activated.connect(lambda: self.send_text())
        self._update_endpoint()
        self._set_busy(False)

    # -- configuration --------------------------------------------------------------------
    @property
    def session(self) -> Any:
        return self._session

    @property
    def busy(self) -> bool:
        return self._job is not None

    def set_session(self, session: Any) -> None:
        """Chat with this ``LiveSession`` from now on (the caller owns and closes it)."""
        if self.busy:
            raise RuntimeError("a message is in flight; cancel it first")
        self._session = session
        self._owns_session = False
        self._update_endpoint()
        self._set_busy(False)

    def set_session_factory(self, factory: SessionFactory | None, settings: LiveSettings | None = None) -> None:
        """Create the session lazily, on the worker thread, at the first Send (engine loading can be slow)."""
        self._factory = factory
        if settings is not None:
            self._settings = settings
        self._update_endpoint()
        self._set_busy(False)

    def _update_endpoint(self) -> None:
        settings = getattr(self._session, "settings", None) or self._settings
        if settings is None:
            self.endpoint_label.setText("No live endpoint configured (inspector.live.base_url / model in config.yaml).")
        else:
            self.endpoint_label.setText(f"Endpoint: {settings.describe()}")

    # -- Panel interface: the chat is a source of traces, not a view of the cursor --------------
    def render_trace(self, trace: Trace | None) -> None:
        pass

    def render_cursor(self, k: int) -> None:
        pass

    # -- actions -------------------------------------------------------------------------------
    def send_text(self, text: str | None = None) -> bool:
        """Send ``text`` (default: the input box). False when there is nothing to send or one is in flight."""
        if self.busy:
            self._status("A message is already in flight; wait or cancel it.")
            return False
        if text is None:
            text = self.input.toPlainText()
        if not text.strip():
            return False
        if self._session is None and self._factory is None:
            self._status("No live session: configure an endpoint and an engine first.")
            return False
        self.input.clear()
        self._append(("\n" if self.view.document().characterCount() > 1 else "") + "You: " + text.rstrip() + "\n")
        self._append("Assistant: ")
        self._reply_anchor = self._end()
        session, factory = self._session, self._factory
        self._made = made = {}
        self._job = self.jobs.submit(lambda job: _chat(job, session, factory, text, made), self._on_outcome,
                                     self._on_job_error, key="live-chat", on_progress=self._on_progress,
                                     name="live-chat")
        self._set_busy(True)
        self._status("Sending…")
        self.unsaved = True  # a message of the user's is part of the conversation from now on
        return True

    def cancel(self) -> None:
        """Stop the request in flight (the stream is closed; the conversation so far is kept)."""
        if self._job is not None:
            self._job.cancel()
            self._status("Cancelling…")

    def save_transcript(self, path: str | Path | None = None) -> Path | None:
        """Save the conversation as OpenAI JSONL (asks for a file when ``path`` is None)."""
        if self._session is None:
            self._status("Nothing to save yet.")
            return None
        if self.busy:
            self._status("Wait for the reply (or cancel) before saving.")
            return None
        if path is None:
            chosen, _ = QFileDialog.getSaveFileName(self, "Save live transcript", "live-session.jsonl",
                                                    "OpenAI JSONL (*.jsonl);;All files (*)")
            if not chosen:
                return None
            path = chosen
        try:
            saved = self._session.save_transcript(path)
        except OSError as exc:
            self._status(f"Could not save the transcript: {exc.strerror or exc}")
            return None
        self._status(f"Transcript saved to {saved}")
        self.unsaved = False
        return Path(saved)

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Cancel and wait for the worker (window close); closes a session the factory made here.

        True when the worker stopped in time. A session given with ``set_session`` is the
        caller's to close.
        """
        stopped = True
        job = self._job
        if job is not None:
            job.cancel()
            stopped = self.jobs.wait(job, timeout_ms, deliver=False)
            if stopped:
                self._cleanup()
                made = self._made.get("session")
                if made is not None and self._session is None:  # made, but its report was dropped
                    self._session, self._owns_session = made, True
        if stopped and self._owns_session and self._session is not None:
            try:
                self._session.close()
            except Exception:  # noqa: BLE001 - an engine's on_session_end must not block closing the window
                pass
            self._owns_session = False
        return stopped

    def reset(self, timeout_ms: int = 10_000) -> bool:
        """Forget the current conversation (closing a session made here) so a new chat can start.

        False when a message in flight did not stop in time (nothing is reset then).
        """
        if not self.shutdown(timeout_ms):
            return False
        self._session = None
        self._factory = None
        self._owns_session = False
        self.unsaved = False
        self.view.clear()
        self.input.clear()
        self._update_endpoint()
        self._set_busy(False)
        self._status("Ready.")
        return True

    # -- the job's reports (GUI thread) ---------------------------------------------------------
    def _on_progress(self, kind: str, *args: Any) -> None:
        {"session_ready": self._on_session_ready, "delta": self._on_delta, "notice": self._on_notice,
         "request_done": self._on_request_done}[kind](*args)

    def _on_outcome(self, outcome: tuple[Any, ...]) -> None:
        if outcome[0] == "finished":
            self._on_finished(*outcome[1:])
        else:
            self._on_failed(*outcome[1:])

    def _on_job_error(self, message: str, details: str) -> None:
        self._on_failed("unexpected", f"{message}\n{details}", None)

    def _on_session_ready(self, session: Any) -> None:
        self._session = session
        self._owns_session = True
        self._watch(session)
        self._update_endpoint()

    def _watch(self, session: Any) -> None:
        """Hear of a worker that ends while the chat is idle (a WorkerChat; an in-process session has none)."""
        if session is None or not hasattr(session, "on_idle_end"):
            return

        def tell(text: str, trace: Trace | None) -> None:
            try:
                self._idle_end.emit(text, trace)
            except RuntimeError:  # the panel is gone (the window closed): nobody to tell
                pass

        session.on_idle_end = tell

    def _on_idle_end(self, text: str, trace: Trace | None) -> None:
        self._append(f"\n[the engine's worker ended while idle: {text}]\n")
        self._status("The engine's worker ended; the conversation is kept, and the next message starts a new one.")
        if trace is not None:
            self.trace_updated.emit(trace)

    def _on_delta(self, text: str) -> None:
        self._append(text)
        self.reply_delta.emit(text)

    def _on_notice(self, kind: str, text: str) -> None:
        if kind == "retry":
            # Whatever streamed for the failed attempt is void; the retry streams it again.
            self._truncate(self._reply_anchor)
        self._status(text)

    def _on_request_done(self, trace: Trace | None) -> None:
        if trace is not None:
            calls = _last_tool_calls(trace)
            if calls:
                self._append(f"[tool call{'s' if len(calls) > 1 else ''}: {', '.join(calls)}]\n")
            self.trace_updated.emit(trace)
        self._reply_anchor = self._end()
        self._status("Waiting for the model after the tool results…")

    def _on_finished(self, reply: str, trace: Trace | None) -> None:
        if reply.startswith("[/compress"):
            self._truncate(self._reply_anchor)
            self._append(reply)
        self._append("\n")
        self._cleanup()
        self._status("Ready.")
        if trace is not None:
            self.trace_updated.emit(trace)

    def _on_failed(self, kind: str, message: str, trace: Trace | None) -> None:
        if kind == "cancelled":
            self._append("[cancelled]\n")
            self._status("Cancelled. The conversation so far is kept; send again to continue.")
        elif kind == "fault":
            self._append("[engine fault: its worker was ended; the next message starts a new one]\n")
            self._status(f"Engine fault: {message}")
        else:
            self._append(f"[error: {kind}]\n")
            self._status(f"Error ({kind}): {message}")
        self._cleanup()
        if trace is not None:
            self.trace_updated.emit(trace)

    # -- helpers -------------------------------------------------------------------------------------
    def _cleanup(self) -> None:
        self._job = None
        self._set_busy(False)

    def _set_busy(self, busy: bool) -> None:
        ready = self._session is not None or self._factory is not None
        self.send_button.setEnabled(not busy and ready)
        self.cancel_button.setEnabled(busy)
        self.save_button.setEnabled(not busy and self._session is not None)
        self.busy_changed.emit(busy)

    def _status(self, text: str) -> None:
        self.status_label.setText(text)

    def _end(self) -> int:
        return self.view.document().characterCount() - 1

    def _append(self, text: str) -> None:
        cur = QTextCursor(self.view.document())
        cur.movePosition(QTextCursor.MoveOperation.End)
        cur.insertText(text)
        self.view.ensureCursorVisible()

    def _truncate(self, position: int) -> None:
        cur = QTextCursor(self.view.document())
        cur.setPosition(max(0, min(position, self._end())))
        cur.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cur.removeSelectedText()


def _last_tool_calls(trace: Trace) -> list[str]:
    """Names of the tools the latest response called (for a one-line mention in the transcript)."""
    if not trace.requests:
        return []
    key = trace.requests[-1].response_key
    if not key or key not in trace.store.messages:
        return []
    out = []
    for call in trace.store.messages[key].get("tool_calls") or ():
        if isinstance(call, dict):
            out.append(str((call.get("function") or {}).get("name") or "?"))
    return out
