"""Replays in workers, for every command and the window: one worker per run, all in parallel."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from inspector.worker.codec import session_to_json
from inspector.worker.supervisor import Outcome, Worker, run_workers

# progress(label, turns done, turns total)
ProgressFn = Callable[[str, int, int], None]


@dataclass(frozen=True)
class RunRequest:
    """One replay: an engine (None: ``context.engine``), its config, the label the run goes by."""

    engine: str | None
    config: dict[str, Any]
    label: str


def _absolute(dirs: Sequence[Any]) -> list[str]:
    """Plugin folders as absolute paths: the worker's view must not depend on where it starts."""
    return [os.path.abspath(os.path.expanduser(str(d))) for d in dirs]


def replay_job(session_data: dict[str, Any] | None, run: RunRequest, plugin_dirs: Sequence[Any]) -> dict[str, Any]:
    """The job of one run; without ``session_data`` the session follows in a frame of its own."""
    session = {"data": session_data} if session_data is not None else {"later": True}
    return {"job": "replay", "session": session, "engine": run.engine, "config": run.config,
            "plugin_dirs": _absolute(plugin_dirs), "label": run.label}


def _on_frame(progress: ProgressFn | None, label: str, analyse: bool) -> Callable[[Worker, dict[str, Any]], None] | None:
    """Progress from each batch; with ``analyse``, the trace's quality analysis follows the batches
    on a thread of this process (:mod:`inspector.quality.ahead`)."""
    if progress is None and not analyse:
        return None
    if analyse:
        from inspector.quality.ahead import follow

    def on_frame(worker: Worker, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if progress is not None and kind == "batch" and isinstance(frame.get("done"), int):
            progress(label, frame["done"], int(frame.get("total") or 0))
        if analyse and kind in ("batch", "update", "done") and worker.assembler is not None:
            trace = worker.assembler.trace
            follow(trace).arrived(len(trace.events))
    return on_frame


def _ended(workers: Sequence[Worker]) -> None:
    """The runs are over: their followers stop once they have caught up."""
    from inspector.quality.ahead import end

    for w in workers:
        if w.assembler is not None:
            end(w.assembler.trace)


class StartedReplays:
    """Workers started before the session is read: they start Python and load their engines while
    this process reads the transcript, then get it with :meth:`send` (``replay`` does this)."""

    def __init__(self, runs: Sequence[RunRequest], plugin_dirs: Sequence[Any] = (), *,
                 progress: ProgressFn | None = None, echo: TextIO | None = None, analyse: bool = False) -> None:
        several = len(runs) > 1
        self.analyse = analyse
        self.workers = [Worker(replay_job(None, run, plugin_dirs), run.config, label=run.label,
                               on_frame=_on_frame(progress, run.label, analyse), echo=echo,
                               echo_prefix=f"[{run.label}] " if several else "") for run in runs]
        try:
            for w in self.workers:
                w.start()
        except BaseException:
            self.abort()
            raise

    def send(self, session: Any, *, cancel: threading.Event | None = None) -> list[Outcome]:
        """Hand every worker the session and wait for the outcomes (in the order of the runs)."""
        frame = {"type": "session", "data": session_to_json(session)}
        for w in self.workers:
            w.session_messages = session.messages
            w.post(frame)
        try:
            return run_workers(self.workers, parallel=len(self.workers), cancel=cancel)
        finally:
            if self.analyse:
                _ended(self.workers)

    def abort(self) -> None:
        """The session could not be read: end the workers and remove their folders."""
        for w in self.workers:
            w.kill_now()
        for w in self.workers:
            if w.proc is not None:
                w.proc.wait()
            w.cleanup()


def replay_in_workers(session: Any, runs: Sequence[RunRequest], plugin_dirs: Sequence[Any] = (), *,
                      progress: ProgressFn | None = None, cancel: threading.Event | None = None,
                      parallel: int | None = None, echo: TextIO | None = None,
                      on_finished: Callable[[int, Outcome], None] | None = None,
                      analyse: bool = False) -> list[Outcome]:
    """Replay ``session`` once per run, each in its own worker; outcomes in the order of ``runs``.

    ``analyse``: the caller will analyse the traces (:mod:`inspector.quality.analysis`), which
    is then done as they stream in."""
    data = session_to_json(session)
    several = len(runs) > 1
    workers = [Worker(replay_job(data, run, plugin_dirs), run.config, label=run.label,
                      on_frame=_on_frame(progress, run.label, analyse),
                      echo=echo, echo_prefix=f"[{run.label}] " if several else "") for run in runs]
    for w in workers:
        w.session_messages = session.messages
    try:
        return run_workers(workers, parallel=parallel, cancel=cancel, on_finished=on_finished)
    finally:
        if analyse:
            _ended(workers)
