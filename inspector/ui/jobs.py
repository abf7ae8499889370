"""The window's one background-job runner: every dock hands its slow work here.

Replaying, loading, comparing, following a growing session, running the engine doctor and a
live chat message all take from a second to minutes, and some run engine code that may hang;
none may freeze the window. :class:`JobRunner` runs each job on a daemon thread and brings
everything the job reports (progress, its result, its failure) back to the GUI thread through a
queued signal, so callbacks never run on the job's thread.

Rules it enforces once, for every dock:

- a job submitted with the ``key`` of one still running *supersedes* it: the old job is asked to
  stop (:attr:`Job.cancelled`) and nothing it reports afterwards reaches its callbacks;
- a job that raises is reported: to its ``on_error``, or, without one, through
  :attr:`JobRunner.error`, which the window shows in its message strip;
- :meth:`JobRunner.shutdown` (window close) cancels every job and waits for them. A job stuck in
  code nothing can interrupt can be :meth:`abandoned <JobRunner.abandon>`: it is a daemon thread,
  so it never keeps the app from quitting, and its result is dropped.

Daemon threads rather than QThreads for that last reason: neither Python nor Qt waits for (or
aborts over) a thread left inside an engine hook when the app quits.
"""

from __future__ import annotations

import itertools
import threading
import time
import traceback
from collections.abc import Callable, Hashable
from typing import Any

from PySide6.QtCore import QObject, Signal

JobFn = Callable[["Job"], Any]


class JobError(Exception):
    """Raised by a job to fail with a message for the user (no exception type in front) and details."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.message, self.details = message, details


class Job:
    """One submitted job: its cancel flag, its callbacks and where it stands."""

    _ids = itertools.count(1)

    def __init__(self, fn: JobFn, name: str, key: Hashable | None, on_done: Callable[[Any], None] | None,
                 on_error: Callable[[str, str], None] | None, on_progress: Callable[..., None] | None,
                 cancelled: threading.Event | None = None) -> None:
        self.id = next(self._ids)
        self.fn, self.name, self.key = fn, name, key
        self.on_done, self.on_error, self.on_progress = on_done, on_error, on_progress
        #: set when the job should stop: cancelled, superseded, or the window is closing
        self.cancelled = cancelled if cancelled is not None else threading.Event()
        #: a newer job with the same key replaced it (or it was abandoned): its reports are dropped
        self.superseded = False
        self.finished = False
        self.thread: threading.Thread | None = None
        self._runner: JobRunner | None = None

    def cancel(self) -> None:
        """Ask the job to stop; it still reports what it returns (a partial result, say)."""
        self.cancelled.set()

    def report(self, *args: Any) -> None:
        """From the job's thread: call ``on_progress(*args)`` on the GUI thread (dropped once superseded)."""
        runner = self._runner
        if runner is not None and not self.superseded:
            runner._post(self, "progress", args)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job's thread has ended (True) or ``timeout`` seconds passed (False)."""
        thread = self.thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    @property
    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def __repr__(self) -> str:
        return f"<Job {self.id} {self.name or self.fn!r}{' superseded' if self.superseded else ''}>"


class JobRunner(QObject):
    """Runs jobs on daemon threads and delivers their reports on the GUI thread.

    ``submit(fn, on_done, on_error, key=..., on_progress=...)``: ``fn(job)`` runs on a new thread
    and should look at ``job.cancelled`` where it can stop; its return value goes to
    ``on_done``, an exception to ``on_error(message, details)``, and ``job.report(*args)`` to
    ``on_progress(*args)``, each on the GUI thread.
    """

    #: a job without ``on_error`` failed: (message, details)
    error = Signal(str, str)
    #: how many jobs are running (their result not yet delivered)
    busy_changed = Signal(int)
    _deliver = Signal(object, str, object)  # job, kind, payload: emitted on a job thread, queued here

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._active: list[Job] = []
        self._by_key: dict[Hashable, Job] = {}
        self._closed = False
        self._deliver.connect(self._on_deliver)

    # -- submitting --------------------------------------------------------------------------
    def submit(self, fn: JobFn, on_done: Callable[[Any], None] | None = None,
               on_error: Callable[[str, str], None] | None = None, *, key: Hashable | None = None,
               on_progress: Callable[..., None] | None = None, name: str = "",
               cancel: threading.Event | None = None) -> Job:
        """Start ``fn(job)`` on its own thread; a running job with the same ``key`` is superseded.

        ``cancel``: use this event as the job's :attr:`Job.cancelled` (code that already takes one).
        """
        if self._closed:
            raise RuntimeError("the job runner has been shut down")
        if key is not None and (previous := self._by_key.get(key)) is not None:
            self._supersede(previous)
        job = Job(fn, name, key, on_done, on_error, on_progress, cancel)
        job._runner = self
        job.thread = threading.Thread(target=self._run, args=(job,), name=f"inspector-{name or 'job'}-{job.id}",
                                      daemon=True)
        self._active.append(job)
        if key is not None:
            self._by_key[key] = job
        self.busy_changed.emit(len(self._active))
        job.thread.start()
        return job

    def _run(self, job: Job) -> None:
        """The job's thread: run it and queue its outcome to the GUI thread."""
        try:
            result = job.fn(job)
        except JobError as exc:
            outcome: tuple[str, Any] = ("error", (exc.message, exc.details))
        except BaseException as exc:  # noqa: BLE001 - any failure of a job is reported, never raised into Qt
            outcome = ("error", (f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        else:
            outcome = ("done", result)
        self._post(job, *outcome)

    def _post(self, job: Job, kind: str, payload: Any) -> None:
        """Queue a report to the GUI thread; dropped when the runner is gone (its window was closed)."""
        try:
            self._deliver.emit(job, kind, payload)
        except RuntimeError:  # the runner's C++ object was deleted: nobody is left to tell
            job.superseded = True

    # -- on the GUI thread ---------------------------------------------------------------------
    def _on_deliver(self, job: Job, kind: str, payload: Any) -> None:
        if kind == "progress":
            if not job.superseded and not job.finished and job.on_progress is not None:
                job.on_progress(*payload)
            return
        job.finished = True
        self._forget(job)
        if job.superseded:
            return
        if kind == "done":
            if job.on_done is not None:
                job.on_done(payload)
        elif job.on_error is not None:
            job.on_error(*payload)
        else:
            self.error.emit(f"{job.name or 'a background job'} failed: {payload[0]}", payload[1])

    def _forget(self, job: Job) -> None:
        if job in self._active:
            self._active.remove(job)
            self.busy_changed.emit(len(self._active))
        if job.key is not None and self._by_key.get(job.key) is job:
            del self._by_key[job.key]

    def _supersede(self, job: Job) -> None:
        job.superseded = True
        job.cancel()
        self._forget(job)

    # -- controlling ---------------------------------------------------------------------------
    def current(self, key: Hashable) -> Job | None:
        """The running job submitted with ``key`` (None when there is none)."""
        return self._by_key.get(key)

    def running(self, key: Hashable | None = None) -> bool:
        """Is a job with ``key`` (or any job) still waiting to deliver its result?"""
        return (key in self._by_key) if key is not None else bool(self._active)

    def cancel(self, key: Hashable) -> None:
        """Ask the job with ``key`` to stop (it still delivers what it returns)."""
        job = self._by_key.get(key)
        if job is not None:
            job.cancel()

    def abandon(self, job: Job) -> None:
        """Give up on a job that does not stop: it ends on its own thread and its result is dropped."""
        self._supersede(job)

    def wait(self, job: Job, timeout_ms: int = 10_000, *, deliver: bool = True) -> bool:
        """Block until ``job``'s thread ended and deliver its outcome now (or drop it: ``deliver=False``);
        False past the timeout."""
        if not job.wait(timeout_ms / 1000):
            return False
        if not deliver:
            self._supersede(job)
            return True
        from PySide6.QtCore import QCoreApplication

        # The outcome was queued just before the thread ended: deliver it before returning.
        deadline = time.monotonic() + 1.0
        while not job.finished and not job.superseded and time.monotonic() < deadline:
            QCoreApplication.sendPostedEvents(self)
        return True

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Window close: cancel every job, wait for them (the whole set within ``timeout_ms``).

        True when every job ended in time; later submissions are refused either way.
        """
        self._closed = True
        jobs = list(self._active)
        for job in jobs:
            job.cancel()
        deadline = time.monotonic() + timeout_ms / 1000
        stopped = True
        for job in jobs:
            if not job.wait(max(0.0, deadline - time.monotonic())):
                stopped = False
                self.abandon(job)
        return stopped

    @property
    def closed(self) -> bool:
        return self._closed
