"""Follow: replay a session another program is writing (a growing JSONL, a Hermes state.db) as it grows.

The panel is a source of traces, like the chat panel: a :class:`~inspector.live.follow.Follower`
polls in a worker process, watched from a job on the window's job runner (engine loading and
replaying turns take time; the window must stay responsive), and after each poll that replayed
new turns (or each new request of a turn still being written) it emits a trace snapshot through
:attr:`FollowPanel.trace_updated`, which the window shows in every panel. Stop ends the
engine's session (``on_session_end``) and emits the final trace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from inspector.live import DEFAULT_SETTLE_SECONDS
from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.jobs import Job, JobError, JobRunner

#: () -> (config, plugin_dirs); asked at Start so the panel always uses the window's current config
ConfigProvider = Callable[[], tuple[dict[str, Any], list[str]]]


def _follow(job: Job, source: str, engine: str, config: dict[str, Any], plugin_dirs: list[str], interval: float,
            settle: float, max_seconds: float | None) -> Trace | None:
    """The job (on its thread): the follower runs in a worker process
    (:func:`inspector.worker.commands.follow_in_worker`) until the job is cancelled (Stop).

    Reports ``("status", text)`` and ``("update", snapshot, turns added, turns played)``; returns
    the final trace.
    """
    from inspector.live.session import snapshot_trace
    from inspector.worker.commands import follow_in_worker

    job.report("status", f"Loading {engine or 'the configured engine'}…")
    played = {"turns": 0}

    def on_frame(worker: Any, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "following":
            job.report("status", f"Following {source} (polling every {interval:g}s)…")
        elif kind == "update" and worker.assembler is not None:
            added = int(frame.get("added") or 0)
            played["turns"] += added
            job.report("update", snapshot_trace(worker.assembler.trace), added, played["turns"])
        elif kind == "source_error":
            message = frame.get("message")
            job.report("status", f"Cannot read the source: {message} (still polling)" if message
                       else f"Following {source} (the source is readable again)…")

    spec = {"source": source, "engine": engine or None, "plugin_dirs": plugin_dirs, "interval": interval,
            "settle": settle, "max_seconds": max_seconds}
    outcome = follow_in_worker(spec, config, stop=job.cancelled, on_frame=on_frame)
    if outcome.error is not None:
        raise JobError(f"{outcome.error.get('exception')}: {outcome.error.get('message')}",
                       str(outcome.error.get("traceback") or ""))
    if outcome.fault is not None:
        job.report("status", f"The follow's worker ended: {outcome.describe()}")
    elif (outcome.done or {}).get("last_error"):
        job.report("status", f"Last read error: {outcome.done['last_error']}")
    return snapshot_trace(outcome.trace) if outcome.trace is not None else None


class FollowPanel(QWidget):
    """Source, engine and poll interval; Start / Stop; what was replayed so far."""

    panel_id = "follow"
    title = "Follow"

    #: a snapshot of the follow trace after each poll that replayed new turns (and the final one)
    trace_updated = Signal(object)
    running_changed = Signal(bool)

    def __init__(self, config_provider: ConfigProvider | None = None, engines: list[str] | None = None,
                 parent: QWidget | None = None, *, jobs: JobRunner | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("panel_follow")
        self.jobs = jobs if jobs is not None else JobRunner(self)
        self.config_provider = config_provider or (lambda: ({}, []))
        self.source_edit = QLineEdit()
        self.source_edit.setPlaceholderText("growing .jsonl transcript, or state.db / state.db#session_id")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        source_row = QHBoxLayout()
        source_row.setContentsMargins(0, 0, 0, 0)
        source_row.addWidget(self.source_edit, 1)
        source_row.addWidget(browse)
        self.engine_combo = QComboBox()
        self.engine_combo.setEditable(True)
        self.set_engines(engines or ["compressor"])
        self.interval = QDoubleSpinBox()
        self.interval.setRange(0.05, 60.0)
        self.interval.setValue(1.0)
        self.interval.setSuffix(" s")
        self.interval.setSingleStep(0.5)
        self.settle = QDoubleSpinBox()
        self.settle.setRange(0.0, 600.0)
        self.settle.setValue(DEFAULT_SETTLE_SECONDS)
        self.settle.setSuffix(" s")
        self.settle.setToolTip("A last turn the source marks no end for (no next prompt, turn_duration, final stop "
                               "reason or task_complete) is replayed once the source has not changed for this long.\n"
                               "Writers pause between the pieces of one reply, so keep it well above the poll interval.")
        self.start_button = QPushButton("Start following")
        self.stop_button = QPushButton("Stop")
        self.start_button.clicked.connect(lambda: self.start())
        self.stop_button.clicked.connect(self.stop)
        self.status_label = QLabel("Not following. Pick a source another program is writing, then Start.")
        self.status_label.setTextFormat(Qt.TextFormat.PlainText)
        self.status_label.setWordWrap(True)
        self.status_label.setObjectName("follow_status")
        form = QFormLayout()
        form.addRow("Source", source_row)
        form.addRow("Engine", self.engine_combo)
        self._auto_settle = self.settle.value()
        self.interval.valueChanged.connect(self._interval_changed)
        form.addRow("Poll every", self.interval)
        form.addRow("Settle after", self.settle)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.status_label)
        layout.addStretch(1)
        self._job: Job | None = None
        self.played = 0
        self.updates = 0
        self._set_running(False)

    @property
    def running(self) -> bool:
        return self._job is not None

    def set_engines(self, names: list[str], current: str | None = None) -> None:
        keep = current or self.engine_combo.currentText()
        self.engine_combo.clear()
        self.engine_combo.addItems(names)
        if keep:
            self.engine_combo.setCurrentText(keep)

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Follow which session?", "",
                                              "Sessions (*.jsonl *.json *.db *.sqlite *.sqlite3);;All files (*)")
        if path:
            self.source_edit.setText(path)

    def start(self, source: str | None = None, engine: str | None = None, *, max_seconds: float | None = None) -> bool:
        """Start following (arguments default to the form); False when already running or no source."""
        if self.running:
            self._status("Already following; Stop first.")
            return False
        if source is not None:
            self.source_edit.setText(source)
        if engine is not None:
            self.engine_combo.setCurrentText(engine)
        src = self.source_edit.text().strip()
        if not src:
            self._status("Choose a source first: a growing .jsonl transcript or a Hermes state.db.")
            return False
        try:
            config, plugin_dirs = self.config_provider()
        except Exception as exc:  # noqa: BLE001 - a broken config.yaml is a message, not a crash
            self._status(f"Could not read the config: {exc}")
            return False
        self.played = 0
        self.updates = 0
        engine_name = self.engine_combo.currentText().strip()
        interval, settle = float(self.interval.value()), float(self.settle.value())
        self._job = self.jobs.submit(
            lambda job: _follow(job, src, engine_name, config, list(plugin_dirs), interval, settle, max_seconds),
            self._on_done, self._on_failed, key="follow", on_progress=self._on_progress, name="follow")
        self._set_running(True)
        return True

    def stop(self) -> None:
        """Stop polling; the worker ends the engine's session and emits the final trace."""
        if self._job is not None:
            self._job.cancel()
            self._status("Stopping…")

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Stop and wait for the worker (window close); True when it ended in time."""
        job = self._job
        if job is None:
            return True
        job.cancel()
        stopped = self.jobs.wait(job, timeout_ms, deliver=False)
        if stopped:
            self._cleanup()
        return stopped

    # -- the job's reports (GUI thread) -----------------------------------------------------------
    def _on_progress(self, kind: str, *args: Any) -> None:
        if kind == "status":
            self._status(args[0])
        elif kind == "update":
            self._on_update(*args)

    def _on_update(self, snapshot: Trace, added: int, played: int) -> None:
        self.played = played
        self.updates += 1
        turns = f"{played} turn{'s' if played != 1 else ''} replayed ({len(snapshot.requests)} requests)"
        if added:
            self._status(f"Following: {turns}; +{added} just now.")
        else:  # the follower shows a turn still being written, request by request
            self._status(f"Following: {turns}; a turn is being written, shown as it grows.")
        self.trace_updated.emit(snapshot)

    def _on_done(self, trace: Trace | None) -> None:
        self._cleanup()
        self._status(f"Stopped after {self.played} turn{'s' if self.played != 1 else ''}.")
        if trace is not None:
            self.trace_updated.emit(trace)

    def _on_failed(self, message: str, details: str) -> None:
        self._cleanup()
        self._status(f"Follow failed: {message}")
        self.status_label.setToolTip(theme.plain_tooltip(details[-3000:]))

    def _cleanup(self) -> None:
        self._job = None
        self._set_running(False)

    def _set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.stop_button.setEnabled(running)
        self.source_edit.setEnabled(not running)
        self.engine_combo.setEnabled(not running)
        self.interval.setEnabled(not running)  # a running follow keeps the values it started with
        self.settle.setEnabled(not running)
        self.running_changed.emit(running)

    def _interval_changed(self, value: float) -> None:
        """Keep the settle period at its default for the new interval, unless the user set one."""
        if abs(self.settle.value() - self._auto_settle) < 1e-9:
            self._auto_settle = max(DEFAULT_SETTLE_SECONDS, 2 * value)
            self.settle.setValue(self._auto_settle)

    def _status(self, text: str) -> None:
        self.status_label.setText(text)
