"""Running a replay from the window: on a worker thread, with progress and cancel.

A long session can take minutes to replay; doing it on the GUI thread would freeze the window
(and an engine that hangs would hang the app). :class:`ReplayRunner` runs one replay at a time
on the window's job runner (:mod:`inspector.ui.jobs`), reports progress through queued signals,
and turns every failure (engine did not load, reader error, an exception from the host) into a
message for the window instead of a crash. A hook blocked for good in a call nothing can interrupt is detected (past its timeout plus a
grace period, or at once on Cancel) and its job abandoned: the thread is left behind (a daemon,
so it never keeps the app from quitting) and the partial trace is shown with the timeout fault.
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QWidget,
)

from inspector.host.guard import ABANDON_GRACE
from inspector.trace.model import Trace
from inspector.ui.jobs import Job, JobRunner

if TYPE_CHECKING:
    from inspector.host.replay import StuckWatch


@dataclass
class ReplayRequest:
    """Everything a replay needs; built by the window, consumed on the worker thread."""

    session: Any
    engine: str
    config_path: str | None = None
    plugin_dirs: list[str] = field(default_factory=list)


class ReplayCancelledError(Exception):
    """Raised by :func:`run_replay` when cancelled; carries the partial trace when the host gave one."""

    def __init__(self, trace: Trace | None) -> None:
        super().__init__("replay cancelled")
        self.trace = trace


class ReplayFaultedError(Exception):
    """The replay's worker froze, died or outgrew its memory: the partial trace ends with that fault."""

    def __init__(self, trace: Trace | None, message: str, stack: str) -> None:
        super().__init__(message)
        self.trace, self.message, self.stack = trace, message, stack


def run_replay(req: ReplayRequest, progress: Any = None, cancel: threading.Event | None = None,
               watch: StuckWatch | None = None) -> Trace:
    """Load the config, replay the session in a worker process, return the trace (any thread).

    The engine never runs in the window's process (:mod:`inspector.worker`); ``watch`` is unused
    (the worker's supervisor kills a frozen run) and kept for callers that pass one.
    """
    from inspector.config import load_config
    from inspector.worker import supervisor
    from inspector.worker.replays import RunRequest, replay_in_workers

    config = load_config(req.config_path)
    plugin_dirs = list(req.plugin_dirs) + list((config.get("inspector") or {}).get("plugin_dirs") or [])
    report = (lambda _label, done, total: progress(done, total)) if progress is not None else None
    outcome = replay_in_workers(req.session, [RunRequest(req.engine or None, config, req.engine or "engine")],
                                plugin_dirs, progress=report, cancel=cancel, analyse=True)[0]
    error = outcome.error
    if error is not None:
        raise RuntimeError(f"{error.get('exception')}: {error.get('message')}")
    if outcome.fault is not None:  # killed (past a deadline, or a cancel it could not hear) or dead
        raise ReplayFaultedError(outcome.trace, outcome.describe(), outcome.fault.traceback or "")
    if outcome.status == supervisor.STATUS_CANCELLED:
        raise ReplayCancelledError(outcome.trace)
    if outcome.trace is None:
        raise RuntimeError(outcome.describe())
    return outcome.trace


class _Worker(QObject):
    progress = Signal(int, int)
    done = Signal(object)
    failed = Signal(str, str)
    cancelled = Signal(object)
    faulted = Signal(object, str, str)

    def __init__(self, req: ReplayRequest, cancel: threading.Event) -> None:
        super().__init__()
        self.req = req
        self.cancel = cancel
        from inspector.host.replay import StuckWatch

        self.watch = StuckWatch()

    @Slot()
    def run(self) -> None:
        from inspector.host.guard import HookAbandoned

        self.watch.attach()  # loading the engine calls hooks too
        try:
            trace = run_replay(self.req, progress=lambda d, t: self.progress.emit(int(d), int(t)), cancel=self.cancel,
                               watch=self.watch)
        except HookAbandoned:
            return  # the window gave up on this job and already shows what it had
        except ReplayCancelledError as exc:
            self.cancelled.emit(exc.trace)
        except ReplayFaultedError as exc:
            self.faulted.emit(exc.trace, exc.message, exc.stack)
        except BaseException as exc:  # noqa: BLE001 - an engine may raise anything; the window reports it
            self.failed.emit(f"{type(exc).__name__}: {exc}", traceback.format_exc())
        else:
            if self.cancel.is_set():
                self.cancelled.emit(trace)
            else:
                from inspector.quality.analysis import analyse_quietly

                analyse_quietly(trace)  # lifetimes and retention, here rather than on the GUI thread
                self.done.emit(trace)


class ThreadedRunner(QObject):
    """One background job at a time on the window's :class:`~inspector.ui.jobs.JobRunner`.

    Subclasses build the worker (a QObject with ``run``, ``done`` and ``failed``) and wire any
    extra signals; the job runner owns the thread, and cancelling and clean-up live here once.
    The worker object stays on the GUI thread; its signals, emitted from the job's thread,
    arrive queued. A job stuck in engine code can be abandoned (its daemon thread is left behind).
    """

    finished = Signal(object)
    failed = Signal(str, str)  # message, details
    running_changed = Signal(bool)
    thread_name = "inspector-worker"

    def __init__(self, parent: QObject | None = None, jobs: JobRunner | None = None) -> None:
        super().__init__(parent)
        self._jobs = jobs if jobs is not None else JobRunner(self)
        self._job: Job | None = None
        self._worker: QObject | None = None
        self._cancel = threading.Event()

    @property
    def running(self) -> bool:
        return self._job is not None

    def _new_cancel_event(self) -> threading.Event:
        if self.running:
            raise RuntimeError(f"{self.thread_name}: a job is already running")
        self._cancel = threading.Event()
        return self._cancel

    def _launch(self, worker: QObject) -> None:
        worker.done.connect(self._on_done)
        worker.failed.connect(self._on_failed)
        self._worker = worker
        self._job = self._jobs.submit(lambda _job: worker.run(), on_error=self._on_job_error, key=self.thread_name,
                                      name=self.thread_name, cancel=self._cancel)
        self.running_changed.emit(True)

    def _current(self) -> bool:
        """The signal being handled comes from the job in progress (not one abandoned by wait())."""
        return self._worker is not None and self.sender() is self._worker

    def cancel(self) -> None:
        self._cancel.set()

    def wait(self, ms: int = 10_000) -> bool:
        """Cancel and wait for the worker (window close); True when it stopped in time."""
        job = self._job
        if job is None:
            return True
        self._cancel.set()
        stopped = self._jobs.wait(job, ms, deliver=False)
        if stopped:
            self._cleanup()
        return stopped

    def abandon(self) -> None:
        """Give up on a job that does not stop (an engine stuck inside a hook): it finishes on its
        own thread, its result is ignored, and a new job can start."""
        if self._job is not None:
            self._jobs.abandon(self._job)
            self._job, self._worker = None, None
            self.running_changed.emit(False)

    def _cleanup(self) -> None:
        worker = self._worker
        self._job, self._worker = None, None
        if worker is not None:
            worker.deleteLater()
        self.running_changed.emit(False)

    def _on_job_error(self, message: str, details: str) -> None:
        """The worker's ``run`` itself raised (it reports its own failures, so this is a bug)."""
        if self._job is not None:
            self._cleanup()
            self.failed.emit(message, details)

    def _on_done(self, result: Any) -> None:
        if not self._current():
            return
        self._cleanup()
        self.finished.emit(result)

    def _on_failed(self, message: str, details: str) -> None:
        if not self._current():
            return
        self._cleanup()
        self.failed.emit(message, details)


class ReplayRunner(ThreadedRunner):
    """Starts replays on a worker thread; at most one at a time. ``finished`` carries the Trace."""

    progress = Signal(int, int)
    cancelled = Signal(object)  # partial Trace or None
    abandoned = Signal(object, str, str)  # partial Trace or None, message, the hook's stack at the deadline
    thread_name = "inspector-replay"
    abandon_grace = ABANDON_GRACE  # seconds past a hook's timeout before a stuck job is given up
    cancel_grace = 0.5  # after Cancel: only long enough for an interrupt that can land to land
    poll_ms = 250

    def __init__(self, parent: QObject | None = None, jobs: JobRunner | None = None) -> None:
        super().__init__(parent, jobs)
        self._poll = QTimer(self)
        self._poll.timeout.connect(self._check_stuck)

    def start(self, req: ReplayRequest) -> None:
        worker = _Worker(req, self._new_cancel_event())
        worker.progress.connect(self._on_progress)
        worker.cancelled.connect(self._on_cancelled)
        worker.faulted.connect(self._on_faulted)
        self._launch(worker)
        self._poll.start(self.poll_ms)

    def cancel(self) -> None:
        super().cancel()
        self._check_stuck()

    def _check_stuck(self) -> None:
        """Give up on the job if its hook is blocked where no interrupt reaches it."""
        worker = self._worker
        if not isinstance(worker, _Worker):
            self._poll.stop()
            return
        grace = self.cancel_grace if self._cancel.is_set() else self.abandon_grace
        if not worker.watch.abandon_if_stuck(grace):
            return
        self._poll.stop()
        self.abandon()
        stuck = worker.watch.stuck
        self.abandoned.emit(worker.watch.trace, stuck.message() if stuck else "", (stuck.stack or "") if stuck else "")

    def _on_progress(self, done: int, total: int) -> None:
        if self._current():
            self.progress.emit(done, total)

    def _on_faulted(self, trace: Trace | None, message: str, stack: str) -> None:
        """The worker was killed past a hook's deadline (or died): shown as an abandoned replay."""
        if not self._current():
            return
        self._cleanup()
        self.abandoned.emit(trace, message, stack)

    def _on_cancelled(self, trace: Trace | None) -> None:
        if not self._current():
            return
        self._cleanup()
        self.cancelled.emit(trace)


class _LoadWorker(QObject):
    done = Signal(object)
    failed = Signal(str, str)

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    @Slot()
    def run(self) -> None:
        from inspector.ui import loaders

        try:
            self.done.emit(loaders.load_trace_file(self.path))
        except loaders.OpenError as exc:
            self.failed.emit(str(exc), "")
        except Exception as exc:  # noqa: BLE001 - reported in the window, never raised into Qt
            self.failed.emit(f"{type(exc).__name__}: {exc}", traceback.format_exc())


class LoadRunner(ThreadedRunner):
    """Reads a large saved trace on a worker thread (tens of thousands of events take seconds)."""

    thread_name = "inspector-load"

    def start(self, path: str) -> None:
        self._new_cancel_event()
        self._launch(_LoadWorker(path))


def available_engines(config_path: str | None, plugin_dirs: list[str], extra: list[str]) -> list[str]:
    """Engine names for the picker, without loading any engine (discovery imports plugins)."""
    names: list[str] = []
    for name in [*extra, "compressor"]:
        if name and name not in names:
            names.append(name)
    try:
        from inspector.config import cfg_get, load_config
        from inspector.engines.discovery import plugin_search_dirs

        config = load_config(config_path)
        configured = str(cfg_get(config, "context.engine", "") or "")
        if configured and configured not in names:
            names.insert(len(extra), configured)
        for directory in plugin_search_dirs(config, plugin_dirs):
            root = Path(directory)
            # directory engines live in <dir>/context_engine/<name>/ (or <dir> is that folder)
            engine_root = root if root.name == "context_engine" else root / "context_engine"
            if not engine_root.is_dir():
                continue
            for child in sorted(engine_root.iterdir()):
                if child.is_dir() and (child / "__init__.py").is_file() and child.name not in names:
                    names.append(child.name)
    except Exception:  # noqa: BLE001 - a broken config must not stop the window from opening
        pass
    return names


class ReplayBar(QWidget):
    """Engine + config pickers, Replay button, progress bar and Cancel, in one row."""

    replay_requested = Signal()
    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.engine_combo = QComboBox()
        self.engine_combo.setEditable(True)
        # Not the first focus when the window opens: the arrow keys must step the cursor at once.
        self.engine_combo.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.engine_combo.setMinimumWidth(150)
        self.engine_combo.setToolTip("Engine to replay the session with (built-in or plugin name)")
        self.config_label = QLabel("config: defaults")
        self.config_label.setTextFormat(Qt.TextFormat.PlainText)
        self.config_button = QPushButton("Config…")
        self.config_button.clicked.connect(self._pick_config)
        self.run_button = QPushButton("Replay")
        self.run_button.setToolTip("Replay the open session with this engine and config")
        self.run_button.clicked.connect(self.replay_requested)
        self.progress = QProgressBar()
        self.progress.setMinimumWidth(160)
        self.progress.setMaximumWidth(320)
        self.progress.setFormat("idle")
        self.progress.setValue(0)
        self.progress.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.engine_combo.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.engine_combo.setMinimumWidth(180)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel_requested)
        for button in (self.config_button, self.run_button, self.cancel_button):
            button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 0, 4, 0)
        row.addWidget(QLabel("Engine:"))
        row.addWidget(self.engine_combo)
        row.addWidget(self.config_button)
        row.addWidget(self.config_label)
        row.addWidget(self.run_button)
        row.addWidget(self.progress, 1)
        row.addWidget(self.cancel_button)
        row.addStretch(1)
        self.config_path: str | None = None

    def set_engines(self, names: list[str], current: str | None = None) -> None:
        self.engine_combo.clear()
        self.engine_combo.addItems(names)
        if current:
            self.engine_combo.setCurrentText(current)

    def engine(self) -> str:
        return self.engine_combo.currentText().strip()

    def set_config(self, path: str | None) -> None:
        self.config_path = path
        self.config_label.setText(f"config: {Path(path).name}" if path else "config: defaults")
        self.config_label.setToolTip(path or "Hermes defaults (no config.yaml)")

    def _pick_config(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose config.yaml", "", "YAML (*.yaml *.yml);;All files (*)")
        if path:
            self.set_config(path)

    def set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.engine_combo.setEnabled(not running)
        self.config_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        if running:
            self.progress.setRange(0, 0)
            self.progress.setFormat("loading engine…")
        else:
            self.progress.setRange(0, 100)

    def set_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(done)
        self.progress.setFormat(f"turn {done:,} / {total:,}")

    def set_idle_text(self, text: str) -> None:
        self.progress.setRange(0, 100)
        self.progress.setValue(100 if text.startswith("done") else 0)
        self.progress.setFormat(text)
