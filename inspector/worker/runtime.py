"""Inside a worker: the channel to the supervisor, heartbeats, hook tracking and limits.

The worker's stdout and stderr are pipes its supervisor reads; only the supervisor writes the
terminal and output files. Frames go out on their own descriptor (``protocol``). The worker
starts in its own session, so the terminal's Ctrl+C reaches the supervisor only, which ends
the worker; when the supervisor goes away (its end of the control pipe closes), so does it.
"""

from __future__ import annotations

import faulthandler
import os
import queue
import resource
import signal
import sys
import threading
import time
import traceback
from typing import Any

from inspector.worker import tracker as tracking
from inspector.worker.protocol import FrameWriter

BEAT_SECONDS = 0.25
STACK_FILE = "stack.txt"
TRACKER_FILE = "activity"


class Runtime:
    """One per worker process: everything a job needs to talk to its supervisor."""

    def __init__(self, writer: FrameWriter, work: str) -> None:
        self.writer = writer
        self.work = work
        self.tracker = tracking.Tracker(os.path.join(work, TRACKER_FILE))
        self.cancel = threading.Event()
        self.inbox: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()  # frames after the job (a session)
        #: called before every inline hook (a live chat streams what it recorded: see inspector.worker.chat)
        self.before_hook: Any = None
        self._stack_file: Any = None

    def send(self, type_: str, **fields: Any) -> None:
        self.writer.send({"type": type_, **fields})

    # -- set-up ----------------------------------------------------------------------------
    def start(self, memory_mb: float | None) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor ends us; Ctrl+C is its to handle
        if memory_mb:
            limit = int(memory_mb * 1024 * 1024)
            try:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            except (ValueError, OSError):
                pass
        self._stack_file = open(os.path.join(self.work, STACK_FILE), "w")  # noqa: SIM115 - for the process's life
        if hasattr(signal, "SIGUSR1"):
            faulthandler.register(signal.SIGUSR1, file=self._stack_file, all_threads=True)
        from inspector.host.guard import wake_main_thread_on_timeout

        wake_main_thread_on_timeout()  # main-thread hooks blocked in a system call are woken at their deadline
        self._track_hooks()
        threading.Thread(target=self._beat, name="inspector-worker-beat", daemon=True).start()
        threading.Thread(target=self._control, name="inspector-worker-control", daemon=True).start()

    def _track_hooks(self) -> None:
        """Report every hook's start and end through the tracker (the host is not changed for it)."""
        from inspector.host import guard

        watchdog, pool, tracker = guard._WATCHDOG, guard.COMPRESS_POOL, self.tracker
        arm, disarm, submit = watchdog.arm, watchdog.disarm, pool.submit
        labels: dict[Any, tuple[str, str]] = {}

        def label(fn: Any) -> tuple[str, str]:
            code = getattr(getattr(fn, "__func__", fn), "__code__", fn)
            found = labels.get(code)
            if found is None:
                found = labels[code] = tracking.hook_label(fn)
            return found

        def tracked_arm(timeout: float, hook: Any) -> None:
            if self.before_hook is not None:
                self.before_hook()
            name, where = label(hook)
            tracker.begin(tracking.INLINE, name, where, timeout)
            arm(timeout, hook)

        def tracked_disarm() -> bool:
            tracker.end(tracking.INLINE)
            return disarm()

        def tracked_submit(fn: Any) -> Any:
            def job() -> Any:
                tracker.begin(tracking.POOL, "compress (pool)", "", 0.0)
                try:
                    return fn()
                finally:
                    tracker.end(tracking.POOL)
            return submit(job)

        watchdog.arm, watchdog.disarm, pool.submit = tracked_arm, tracked_disarm, tracked_submit

    def _beat(self) -> None:
        """Alive, and where the main thread is: the stack a timeout fault shows if the worker then freezes."""
        main = threading.main_thread().ident
        while True:
            time.sleep(BEAT_SECONDS)
            frame = sys._current_frames().get(main)
            stack = "".join(traceback.format_stack(frame)) if frame is not None else None
            if not self.writer.send({"type": "beat", "stack": stack}):
                if self.writer.broken:
                    os._exit(75)
                return

    def _control(self) -> None:
        """Frames from the supervisor on stdin: ``cancel``, a ``session`` sent after the job; end of input
        means it is gone."""
        from inspector.worker.protocol import FrameReader

        reader = FrameReader()
        fd = sys.stdin.fileno()
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                os._exit(75)  # the supervisor died: nobody wants our results
            for frame in reader.feed(data):
                if frame.get("type") == "cancel":
                    self.cancel.set()
                    self.inbox.put(frame)  # one waiting for its session stops waiting
                else:
                    self.inbox.put(frame)

    # -- phases ------------------------------------------------------------------------------
    def phase(self, label: str, allowed: float = 0.0) -> None:
        self.tracker.begin(tracking.PHASE, label, "", allowed)

    def idle(self) -> None:
        self.tracker.end(tracking.PHASE)


def read_job(fd: int) -> dict[str, Any]:
    """The job: one frame on stdin, read before anything else."""
    from inspector.worker.protocol import HEADER, STDLIB_BODY, parse_body

    def exactly(n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = os.read(fd, n - len(out))
            if not chunk:
                raise EOFError("the supervisor closed the pipe before sending the job")
            out += chunk
        return bytes(out)

    (header,) = HEADER.unpack(exactly(HEADER.size))
    return parse_body(header, exactly(header & ~STDLIB_BODY))
