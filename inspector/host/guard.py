"""Calling engine code without letting it take the inspector down.

Hermes runs ``compress`` on a pooled daemon thread with a timeout and discards a late result;
every other hook runs inline. The inspector does the same, and adds a watchdog for inline hooks
so an engine stuck in a Python loop is interrupted (recorded as a timeout fault) instead of
freezing a replay. A hook blocked inside a system call (a sleep, a socket read, a lock) only
sees the interrupt when the call returns; on the main thread (the headless commands) the
watchdog also sends it a signal, which ends the wait. On a worker thread (``compare``, the
window) nothing in Python can end it: the thread waiting for the worker asks
:func:`stuck_hooks` which hooks are still blocked well past their deadline and gives up on the
run with :func:`abandon_hook`; should the hook ever return, :class:`HookAbandoned` unwinds that
thread before anything more is recorded.
"""

from __future__ import annotations

import contextvars
import ctypes
import functools
import itertools
import os
import queue
import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from inspector.trace.model import Fault, traceback_frames


class HookTimeout(BaseException):
    """Raised asynchronously inside a hook that ran past its deadline.

    A BaseException so an engine's ``except Exception`` cannot swallow it.
    """


class HookAbandoned(BaseException):
    """Raised on a worker thread when a hook its run was abandoned in finally returns.

    The run's trace already belongs to whoever abandoned it; unwinding (past the host's own
    ``except Exception``) is what keeps the late hook's effects out of it.
    """


@dataclass(frozen=True, slots=True)
class StuckHook:
    """A hook that ran past its deadline and has not returned since the watchdog fired."""

    thread: int
    hook: str  # the hook's name (``update_from_response``)
    timeout: float
    overdue: float  # seconds since the deadline
    stack: str | None  # where it was at the deadline
    token: int

    def message(self) -> str:
        return (f"{self.hook} ran past {self.timeout:g} s and was still blocked {self.overdue:.1f} s later, in a call "
                "the watchdog cannot interrupt; the run was abandoned there")


@dataclass(slots=True)
class CallOutcome:
    value: Any = None
    fault: Fault | None = None
    duration: float = 0.0
    thread: str = ""
    abandoned: Future | None = None  # a pooled job that timed out and may still be running

    @property
    def ok(self) -> bool:
        return self.fault is None


def exception_fault(exc: BaseException, kind: str = "exception") -> Fault:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return Fault(kind=kind, message=f"{type(exc).__name__}: {exc}", traceback=tb)


class Watchdog:
    """One long-lived thread that interrupts inline hook calls past their deadline.

    Arming and disarming happen around every inline hook (tens of thousands per replay), so
    they take no lock: each thread writes its own slot, ``(deadline, token)``, with one dict
    store, and clears it with one dict pop. Only firing takes the lock, and a disarming thread
    takes it only when something has fired, so the common path costs two dict operations.

    Ordering that keeps an interrupt out of host code: the watchdog records ``fired[tid] =
    token`` *before* it re-checks that the slot still holds that token, and fires only if it
    does; a disarming thread pops its slot *before* it looks at ``fired``. Whichever runs
    first, either the watchdog sees the slot gone and stands down, or the disarming thread sees
    the record, waits on the lock for the shot to land and clears any pending exception.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # thread id -> (deadline (monotonic), token, hook, timeout)
        self._active: dict[int, tuple[float, int, Callable[..., Any], float]] = {}
        self._fired: dict[int, int] = {}  # thread id -> token of the arming that was interrupted
        self._stacks: dict[int, str] = {}  # thread id -> where its hook was when the watchdog fired
        self._abandoned: set[int] = set()  # threads whose run was given up on inside a hook
        self._tokens = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None:
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="inspector-watchdog", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.wait(0.05):
                now = time.monotonic()
                late = [(tid, entry) for tid, entry in self._active.copy().items() if now >= entry[0]]
                for tid, entry in late:
                    with self._lock:
                        if self._fired.get(tid) == entry[1]:
                            continue
                        self._fired[tid] = entry[1]
                        if self._active.get(tid) is not entry:
                            del self._fired[tid]  # disarmed meanwhile: stand down
                            continue
                        self._stacks[tid] = stack_of_thread(tid)
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(HookTimeout))
                        if tid == _WAKE["thread"]:
                            signal.pthread_kill(tid, _WAKE_SIGNAL)  # ends a blocking system call
        finally:
            with self._lock:
                self._thread = None

    def arm(self, timeout: float, hook: Callable[..., Any]) -> None:
        self._active[threading.get_ident()] = (time.monotonic() + timeout, next(self._tokens), hook, timeout)
        if self._thread is None:
            self._ensure_thread()

    def disarm(self) -> bool:
        """Stop watching this thread; True if the watchdog fired for this arming.

        Raises :class:`HookAbandoned` when the thread's run was abandoned inside this hook.
        """
        tid = threading.get_ident()
        entry = self._active.pop(tid, None)
        if not self._fired:
            return False
        with self._lock:
            token = self._fired.pop(tid, None)
            abandoned = tid in self._abandoned
            self._abandoned.discard(tid)  # thread ids are reused once a thread ends
        if token is None:
            return False
        # The async exception may still be pending if it fired just as the hook returned;
        # clear it so it cannot surface in host code.
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), None)
        if abandoned:
            self._stacks.pop(tid, None)
            raise HookAbandoned(f"{getattr(entry and entry[2], '__name__', 'hook')} returned after its run was abandoned")
        return entry is None or entry[1] == token

    def stuck(self, grace: float, threads: Iterable[int] | None = None) -> list[StuckHook]:
        """Hooks the watchdog fired for that are still running ``grace`` seconds after their deadline.

        An interrupt that can land does so within the watchdog's poll; a hook still inside its
        call well after that is blocked where nothing in Python reaches it.
        """
        now = time.monotonic()
        wanted = None if threads is None else set(threads)
        with self._lock:
            late = [(tid, entry, self._stacks.get(tid)) for tid, entry in self._active.copy().items()
                    if (wanted is None or tid in wanted) and self._fired.get(tid) == entry[1]
                    and now - entry[0] > grace and tid not in self._abandoned]
        return [StuckHook(tid, getattr(hook, "__name__", None) or "hook", timeout, now - deadline, stack, token)
                for tid, (deadline, token, hook, timeout), stack in late]

    def abandon(self, stuck: StuckHook) -> bool:
        """Give up on the run of ``stuck``'s thread; False if that hook returned meanwhile.

        Checked under the lock against the thread's live arming, and ``disarm`` pops the arming
        before it looks at the abandoned set: either the hook returned first (and its run goes
        on) or the flag is seen when it returns (and it unwinds).
        """
        with self._lock:
            entry = self._active.get(stuck.thread)
            if entry is None or entry[1] != stuck.token or self._fired.get(stuck.thread) != stuck.token:
                return False
            self._abandoned.add(stuck.thread)
        from inspector.gc_pause import release_thread

        release_thread(stuck.thread)  # the blocked run must not keep collection paused for good
        return True

    def stack_at_deadline(self) -> str | None:
        """Where this thread's hook was when the watchdog fired (once; None if it never fired)."""
        if not self._stacks:
            return None
        with self._lock:
            return self._stacks.pop(threading.get_ident(), None)


def stack_of_thread(tid: int | None) -> str | None:
    """The current stack of another thread, formatted like a traceback.

    A hook that overran is still running (or blocked) somewhere in the engine; its stack at
    the deadline is what tells the author which line never finished, so a timeout fault
    carries it as its traceback and names the engine's file and line like any other fault.
    """
    frame = sys._current_frames().get(tid) if tid is not None else None
    if frame is None:
        return None
    return "Stack at the deadline (most recent call last):\n" + "".join(traceback.format_stack(frame))


_WATCHDOG = Watchdog()

ABANDON_GRACE = 5.0  # seconds past a hook's timeout before a worker-thread run stuck in it is given up


def stuck_hooks(grace: float = ABANDON_GRACE, threads: Iterable[int] | None = None) -> list[StuckHook]:
    """Inline hooks (on ``threads``, or any) still blocked ``grace`` seconds past their timeout."""
    return _WATCHDOG.stuck(grace, threads)


def abandon_hook(stuck: StuckHook) -> bool:
    """Give up on the run blocked in ``stuck``; True unless the hook returned meanwhile."""
    return _WATCHDOG.abandon(stuck)

# The signal that wakes the main thread from a blocking call; its handler does nothing: once
# Python code runs again, the pending HookTimeout is raised.
_WAKE_SIGNAL = getattr(signal, "SIGUSR2", None)
_WAKE: dict[str, int | None] = {"thread": None}


def wake_main_thread_on_timeout() -> bool:
    """Let the watchdog end a main-thread hook stuck in a system call (call from the main thread).

    Only where the platform has ``pthread_kill`` and nobody else handles the signal. True when on.
    """
    if _WAKE_SIGNAL is None or not hasattr(signal, "pthread_kill"):
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(_WAKE_SIGNAL) not in (signal.SIG_DFL, _ignore_wake):
        return False
    signal.signal(_WAKE_SIGNAL, _ignore_wake)
    _WAKE["thread"] = threading.get_ident()
    return True


def _ignore_wake(signum: int, frame: Any) -> None:
    """Interrupting the system call was the point; the watchdog's HookTimeout follows."""


def call_inline(fn: Callable[..., Any], *args: Any, timeout: float | None = None, **kwargs: Any) -> CallOutcome:
    """Call a hook on this thread; exceptions and overruns become faults, never propagate."""
    start = time.perf_counter()
    armed = bool(timeout and timeout > 0)
    try:
        if armed:
            _WATCHDOG.arm(timeout, fn)  # type: ignore[arg-type]
        try:
            value = fn(*args, **kwargs)
        finally:
            fired = _WATCHDOG.disarm() if armed else False
        if fired:
            took = time.perf_counter() - start
            return CallOutcome(fault=Fault("timeout", _overrun(timeout, took) + "; result discarded",
                                           _WATCHDOG.stack_at_deadline()),
                               duration=took, thread=threading.current_thread().name)
        return CallOutcome(value=value, duration=time.perf_counter() - start)  # inline: the caller's thread
    except HookTimeout as exc:
        if armed:
            _WATCHDOG.disarm()  # the interrupt landed before the finally clause could disarm
        took = time.perf_counter() - start
        where = _WATCHDOG.stack_at_deadline() or exception_fault(exc).traceback
        return CallOutcome(fault=Fault("timeout", _overrun(timeout, took), where), duration=took,
                           thread=threading.current_thread().name)
    except (Exception, SystemExit) as exc:  # engine code: anything can happen, sys.exit() included
        fault = locate_in_engine(exception_fault(exc), fn)
        return CallOutcome(fault=fault, duration=time.perf_counter() - start, thread=threading.current_thread().name)


def locate_in_engine(fault: Fault, fn: Callable[..., Any]) -> Fault:
    """Make :attr:`Fault.where` name the engine's own line where the traceback alone would not.

    The innermost frame of a traceback may be a library the engine called, the stand-in base
    class, or (for a call the hook's signature refuses) the host itself. The author's line is
    the innermost frame in the engine's own package, or else the hook's definition; either is
    added to the traceback as the last frame, which is what ``where`` names.
    """
    frames = traceback_frames(fault.traceback)
    package = _engine_dir(fn)
    own = [f for f in frames if package and f[0].startswith(package)] if frames else []
    if own and frames[-1] != own[-1]:
        path, line, name = own[-1]
        fault.traceback += f"The engine's own innermost line:\n  File \"{path}\", line {line}, in {name}\n"
    elif not own and fault.where_is_engine_code() is not True:
        fault.traceback = (fault.traceback or "") + _defined_at(fn)
    elif not own and package:
        fault.traceback += _refusing_override(fault.message, fn, package)
    return fault


_REFUSED_CALL = re.compile(r"^TypeError: (?:[\w.<>]+\.)?(\w+)\(\) (?:got an unexpected|missing \d|takes )")


def _refusing_override(message: str, fn: Any, package: str) -> str:
    """The engine's definition of a method the base class called with arguments it refuses.

    Code inherited from the stand-in compressor calls the engine's overrides with Hermes'
    arguments; an override with an older signature fails at that call, in the base class, so
    the line the author must change is the override's ``def``.
    """
    found = _REFUSED_CALL.match(message or "")
    owner = getattr(fn, "__self__", None)
    method = getattr(type(owner), found.group(1), None) if found and owner is not None else None
    code = _hook_code(method) if method is not None else None
    if code is None or not code.co_filename.startswith(package):
        return ""
    return (f"The engine's method the call refused:\n  File \"{code.co_filename}\", line {code.co_firstlineno}, "
            f"in {code.co_name}\n")


def _hook_code(fn: Any) -> Any:
    """The code object a hook runs: methods, functions, ``functools.partial``, callable objects."""
    for _ in range(4):
        if isinstance(fn, functools.partial):
            fn = fn.func
            continue
        code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        if code is not None:
            return code
        if not callable(fn) or isinstance(fn, type):
            return None
        fn = type(fn).__call__  # a callable object: its class's __call__
    return None


def _engine_dir(fn: Any) -> str | None:
    """The folder of the engine's own code: its class's module (a subclass may run inherited code)."""
    owner = getattr(fn, "__self__", None)
    module = sys.modules.get(type(owner).__module__) if owner is not None else None
    path = getattr(module, "__file__", None)
    if path is None:
        code = _hook_code(fn)
        path = code.co_filename if code is not None else None
    if not path or "/inspector/" in path.replace("\\", "/"):
        return None  # the inspector's own engines are located by the traceback as it is
    return os.path.dirname(os.path.abspath(path)) + os.sep


def _defined_at(fn: Callable[..., Any]) -> str:
    """Where a hook is defined, in traceback form, for a call that failed before entering it.

    A call the hook's signature refuses (a missing keyword, say) raises in the caller, so the
    traceback holds no engine frame; the hook's own definition is the line the author must change.
    """
    code = _hook_code(fn)
    if code is None:
        return ""
    return (f"The hook is defined here:\n  File \"{code.co_filename}\", line {code.co_firstlineno}, "
            f"in {code.co_name}\n")


def _overrun(timeout: float | None, took: float) -> str:
    """The timeout fault's message, honest about a hook that could not be stopped in time."""
    if timeout and took > timeout + _LATE_GRACE:
        return (f"hook ran past {timeout:g} s; it was blocked in a call the watchdog cannot interrupt "
                f"and only returned after {took:.1f} s")
    return f"hook ran past {timeout:g} s and was interrupted"


_LATE_GRACE = 1.0  # the watchdog polls every 50 ms; well past that, the interrupt did not land


class DaemonPool:
    """A small pool of daemon threads with bounded admission, like Hermes' compress pool.

    ``concurrent.futures.ThreadPoolExecutor`` joins its (non-daemon) workers at exit, so one
    hung engine would keep the process alive; Hermes uses daemon workers for that reason.
    """

    def __init__(self, max_workers: int = 4, name: str = "compress-ctx-timeout") -> None:
        self.max_workers = max_workers
        self.name = name
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], Future] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._busy = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], Any]) -> Future | None:
        """Queue ``fn``; None when all workers are busy (the caller skips, as Hermes does)."""
        with self._lock:
            if self._busy >= self.max_workers:
                return None
            self._busy += 1
            if len(self._threads) < self._busy:
                t = threading.Thread(target=self._work, name=f"{self.name}_{len(self._threads)}", daemon=True)
                self._threads.append(t)
                t.start()
        fut: Future = Future()
        self._queue.put((fn, fut))
        return fut

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, fut = item
            try:
                if fut.set_running_or_notify_cancel():
                    try:
                        fut.set_result(fn())
                    except BaseException as exc:  # noqa: BLE001 - handed to the waiting host
                        fut.set_exception(exc)
            finally:
                with self._lock:
                    self._busy -= 1


COMPRESS_POOL = DaemonPool()


def call_on_pool(fn: Callable[[], Any], timeout: float | None) -> CallOutcome:
    """Run ``fn`` on a pooled daemon thread and wait at most ``timeout`` seconds."""
    start = time.perf_counter()
    holder: dict[str, Any] = {}
    context = contextvars.copy_context()  # Hermes propagates ContextVars to the worker

    def job() -> Any:
        holder["thread"] = threading.current_thread().name
        holder["ident"] = threading.get_ident()
        return context.run(fn)

    fut = COMPRESS_POOL.submit(job)
    if fut is None:
        return CallOutcome(fault=Fault("refused", "all 4 compression workers are busy; no compression this cycle"))
    try:
        value = fut.result(timeout=timeout if timeout and timeout > 0 else None)
    except FutureTimeout:
        return CallOutcome(
            fault=Fault("timeout", f"compress did not finish within {timeout:g} s; the result will be discarded",
                        stack_of_thread(holder.get("ident"))),
            duration=time.perf_counter() - start,
            thread=holder.get("thread", ""),
            abandoned=fut,
        )
    except (Exception, SystemExit) as exc:  # an engine calling sys.exit() on the pool
        return CallOutcome(fault=exception_fault(exc), duration=time.perf_counter() - start, thread=holder.get("thread", ""))
    return CallOutcome(value=value, duration=time.perf_counter() - start, thread=holder.get("thread", ""))
