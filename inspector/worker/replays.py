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


def _progress_frames(progress: ProgressFn | None, label: str) -> Callable[[Worker, dict[str, Any]], None] | None:
    if progress is None:
        return None

    def on_frame(_worker: Worker, frame: dict[str, Any]) -> None:
        if frame.get("type") == "batch" and isinstance(frame.get("done"), int):
            progress(label, frame["done"], int(frame.get("total") or 0))
    return on_frame


class StartedReplays:
    """Workers started before the session is read: they start Python and load their engines while
    this process reads the transcript, then get it with :meth:`send` (``replay`` does this)."""

    def __init__(self, runs: Sequence[RunRequest], plugin_dirs: Sequence[Any] = (), *,
                 progress: ProgressFn | None = None, echo: TextIO | None = None) -> None:
        several = len(runs) > 1
        self.workers = [Worker(replay_job(None, run, plugin_dirs), run.config, label=run.label,
                               on_frame=_progress_frames(progress, run.label), echo=echo,
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
        return run_workers(self.workers, parallel=len(self.workers), cancel=cancel)

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
                      on_finished: Callable[[int, Outcome], None] | None = None) -> list[Outcome]:
    """Replay ``session`` once per run, each in its own worker; outcomes in the order of ``runs``."""
    data = session_to_json(session)
    several = len(runs) > 1
    workers = [Worker(replay_job(data, run, plugin_dirs), run.config, label=run.label,
                      on_frame=_progress_frames(progress, run.label),
                      echo=echo, echo_prefix=f"[{run.label}] " if several else "") for run in runs]
    for w in workers:
        w.session_messages = session.messages
    return run_workers(workers, parallel=parallel, cancel=cancel, on_finished=on_finished)
