"""Calling untrusted engine code without letting it take the doctor down.

Every call runs on a daemon thread and is abandoned after a timeout: a hung hook becomes a
finding, never a hung command. Hermes calls most hooks from the agent thread and ``compress``
from a pooled worker; :class:`AgentThread` and :func:`call_on_new_thread` reproduce that split,
so thread-affinity bugs show up where Hermes would hit them.
"""

from __future__ import annotations

import contextvars
import itertools
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_counter = itertools.count(1)


@dataclass
class CallOutcome:
    value: Any = None
    error: str | None = None  # formatted traceback
    error_type: str | None = None
    error_message: str | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    thread_name: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out

    def describe(self) -> str:
        if self.timed_out:
            return f"did not return within the timeout (still running on thread {self.thread_name})"
        if self.error is not None:
            return f"raised {self.error_type}: {self.error_message}"
        return "ok"


def _run_into(outcome: CallOutcome, fn: Callable[..., Any], args: tuple, kwargs: dict, ctx: contextvars.Context) -> None:
    outcome.thread_name = threading.current_thread().name
    start = time.perf_counter()
    try:
        outcome.value = ctx.run(fn, *args, **kwargs)
    except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us - engines may raise anything, even SystemExit
        outcome.error = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        outcome.error_type = type(exc).__name__
        outcome.error_message = str(exc)
    finally:
        outcome.duration_s = time.perf_counter() - start


def call_on_new_thread(fn: Callable[..., Any], *args: Any, timeout: float, name: str = "compress-ctx-timeout", **kwargs: Any) -> CallOutcome:
    """Run ``fn`` on a fresh daemon thread (a stand-in for Hermes' compression pool)."""
    outcome = CallOutcome()
    ctx = contextvars.copy_context()
    thread = threading.Thread(
        target=_run_into, args=(outcome, fn, args, kwargs, ctx), name=f"{name}_{next(_counter)}", daemon=True
    )
    outcome.thread_name = thread.name
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        outcome.timed_out = True
    return outcome


class AgentThread:
    """One long-lived daemon thread playing Hermes' agent thread; replaced if a call hangs."""

    def __init__(self, name: str = "doctor-agent") -> None:
        self._name = name
        self._queue: queue.Queue[Any] | None = None
        self.thread: threading.Thread | None = None
        self.replaced = 0
        self._start()

    def _start(self) -> None:
        q: queue.Queue[Any] = queue.Queue()
        self._queue = q
        self.thread = threading.Thread(target=self._loop, args=(q,), name=f"{self._name}-{next(_counter)}", daemon=True)
        self.thread.start()

    @staticmethod
    def _loop(q: queue.Queue[Any]) -> None:
        while True:
            item = q.get()
            if item is None:
                return
            outcome, fn, args, kwargs, ctx, done = item
            _run_into(outcome, fn, args, kwargs, ctx)
            done.set()

    def call(self, fn: Callable[..., Any], *args: Any, timeout: float, **kwargs: Any) -> CallOutcome:
        outcome = CallOutcome()
        done = threading.Event()
        assert self._queue is not None and self.thread is not None
        outcome.thread_name = self.thread.name
        self._queue.put((outcome, fn, args, kwargs, contextvars.copy_context(), done))
        if not done.wait(timeout):
            outcome.timed_out = True
            self.replaced += 1
            self._start()  # the old thread is stuck inside the engine; abandon it
        return outcome

    def close(self) -> None:
        if self._queue is not None:
            self._queue.put(None)
