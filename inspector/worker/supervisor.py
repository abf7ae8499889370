"""Starting workers, watching them, and turning whatever happens to them into results.

The process that owns the terminal or the window never runs engine code: it starts one worker
per run (``python -m inspector.worker``, inside bubblewrap where the machine has it), sends the
job, and watches. A worker that finishes sends ``done``. One that freezes — a hook blocked in a
C call that holds the interpreter lock, where the in-process watchdog of
:mod:`inspector.host.guard` cannot reach — is killed once its hook is past its soft timeout by
more than ``GRACE`` seconds; its stack at that moment (dumped by ``faulthandler`` on SIGUSR1,
which needs no interpreter lock, else the last one its heartbeat sent) goes into the timeout
fault. One that dies (``os._exit``, a segfault, a ``BaseException`` escaping the host) is a
fault with its exit status, located at the hook the activity tracker says was running. One
whose resident memory passes the limit is killed too. Whatever trace the worker streamed
before is kept, ending with that fault. Ctrl+C or SIGTERM in this process kills every worker
and removes their folders before the command exits.
"""

from __future__ import annotations

import atexit
import codecs
import os
import queue
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

try:
    import fcntl
except ImportError:  # not on Windows
    fcntl = None  # type: ignore[assignment]

import inspector
from inspector.trace.model import EV_FAULT, Event, Fault, Trace, _not_engine_code
from inspector.worker import sandbox, tracker
from inspector.worker.bytecode import ensure_compiled
from inspector.worker.codec import TraceAssembler
from inspector.worker.protocol import FrameReader, ProtocolError, encode_parts
from inspector.worker.runtime import STACK_FILE, TRACKER_FILE

GRACE = 2.0  # seconds past a soft timeout before a worker still inside that hook is killed
CANCEL_GRACE = 1.0  # after a cancel, seconds the worker has to send its partial trace
ECHO_LIMIT = 256 * 1024  # characters of a worker's stdout/stderr shown on the terminal
POLL = 0.05
STARTUP_LIMIT = 120.0  # seconds a worker may take to start (imports on a loaded machine)
COUNTING_JOBS = ("replay", "follow", "chat")  # the jobs that hand back new token counts (``done``; a chat's ``update``)

STATUS_OK = "ok"
STATUS_CANCELLED = "cancelled"
STATUS_CRASHED = "crashed"  # an exception escaped the job (said in ``error``)
STATUS_ERROR = "error"  # the job reported an error before running engine hooks (load, session)
STATUS_TIMEOUT = "timeout"  # killed: a hook blocked past its deadline
STATUS_DIED = "died"  # the worker ended without finishing its job
STATUS_MEMORY = "memory"  # killed: over the memory limit

# Workers alive in this process, for the exit handler (a window closing, an interpreter exiting).
_LIVE: set[Worker] = set()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _kill_leftovers() -> None:
    with _LIVE_LOCK:
        workers = list(_LIVE)
    for w in workers:
        w.kill_now()
        w.cleanup()


def _default_memory_mb() -> float:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    except (ValueError, OSError, AttributeError):
        total = 16384.0
    return float(min(8192.0, max(1024.0, total / 2)))


def _number(value: Any, default: float) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return default
    return out if out == out and out >= 0 else default  # NaN or negative: the default


@dataclass(frozen=True)
class Limits:
    """What the supervisor enforces, from the config (``inspector.*`` and ``compression.*``)."""

    hook_timeout: float = 30.0
    compress_timeout: float = 120.0
    load_timeout: float = 60.0
    memory_mb: float = 8192.0
    grace: float = GRACE

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Limits:
        insp = config.get("inspector") or {}
        comp = config.get("compression") or {}
        insp = insp if isinstance(insp, dict) else {}
        comp = comp if isinstance(comp, dict) else {}
        return cls(hook_timeout=_number(insp.get("hook_timeout_seconds", 30), 30.0),
                   compress_timeout=_number(comp.get("context_timeout_seconds", 120), 120.0),
                   load_timeout=_number(insp.get("load_timeout_seconds", 60), 60.0),
                   memory_mb=_number(insp.get("worker_memory_mb"), 0.0) or _default_memory_mb())

    @property
    def silence(self) -> float:
        """Seconds without a heartbeat, outside any tracked hook, before a worker counts as frozen."""
        return 2 * max(self.hook_timeout, self.load_timeout, 1.0) + self.grace


@dataclass
class Outcome:
    """How one worker's job ended."""

    status: str
    done: dict[str, Any] | None = None  # the job's ``done`` frame
    error: dict[str, Any] | None = None  # an ``error`` frame (kind: load | session | crash | user)
    fault: Fault | None = None  # what the supervisor saw happen to the worker
    trace: Trace | None = None  # as streamed; ends with ``fault`` when there is one
    exit_status: int | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what loading the engine warned about
    isolation: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    # The persistent token cache as the worker used it: hits, misses, new (counts written), refused
    token_cache: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK

    def describe(self) -> str:
        """One line for the terminal: what went wrong."""
        if self.fault is not None:
            where = self.fault.where
            return self.fault.message + (f" (at {where})" if where else "")
        if self.error is not None:
            return str(self.error.get("message") or self.error.get("exception") or "error")
        return self.status


def exit_description(code: int | None, *, wrapped: bool = False) -> str:
    """``killed by SIGSEGV`` or ``exit status 3``; ``wrapped``: bubblewrap reports a signal as 128 + its number."""
    if code is None:
        return "still running"
    number = -code if code < 0 else (code - 128 if wrapped and code > 128 else 0)
    if number:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed by {name}" + (f" (exit status {code})" if code > 0 else "")
    return f"exit status {code}"


def traceback_at(where: str) -> str | None:
    """A one-frame traceback naming ``path:line in function`` (what :attr:`Fault.where` reads)."""
    m = re.match(r"^(.*):(\d+) in (.+)$", where or "")
    if not m:
        return None
    return f'Traceback (most recent call last):\n  File "{m[1]}", line {m[2]}, in {m[3]}\n'


_FH_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+) in (.+)$')


def faulthandler_traceback(text: str, hint: str = "") -> str | None:
    """faulthandler's dump (newest frame first, per thread) as a traceback of the thread that
    holds ``hint`` (a file of the stuck hook), else of the thread that took the signal."""
    blocks: list[tuple[str, list[tuple[str, str, str]]]] = []
    for line in text.splitlines():
        if line.startswith(("Thread 0x", "Current thread 0x")):
            blocks.append((line, []))
        elif blocks and (m := _FH_FRAME.match(line)):
            blocks[-1][1].append((m[1], m[2], m[3]))
    if not blocks:
        return None
    chosen = next((b for b in blocks if hint and any(f[0].startswith(hint) for f in b[1])), None)
    chosen = chosen or next((b for b in blocks if any(not _ours(f[0]) for f in b[1])), None)
    chosen = chosen or next((b for b in blocks if b[0].startswith("Current")), blocks[0])
    frames = [f for f in reversed(chosen[1])]
    return "Stack when the worker was stopped (most recent call last):\n" + "".join(
        f'  File "{f}", line {n}, in {fn}\n' for f, n, fn in frames)


def _ours(path: str) -> bool:
    """The inspector's own code or the standard library: never the engine's frame."""
    return "/inspector/" in path.replace("\\", "/") or _not_engine_code(path)


def _stack_traceback(stack: str | None) -> str | None:
    return "Stack at the last heartbeat (most recent call last):\n" + stack if stack else None


def worker_environment(config: dict[str, Any], work: str) -> dict[str, str]:
    """The worker's environment: ours, without key-like variables unless the config uses an endpoint."""
    from inspector.llm.secrets import is_secret_name, key_env_names

    keep_secrets = bool(sandbox.endpoints(config))
    named = set(key_env_names(config))  # a key whose variable's name does not look like one
    env = {k: v for k, v in os.environ.items() if keep_secrets or not (is_secret_name(k) or k in named)}
    root = str(Path(inspector.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["TMPDIR"] = os.path.join(work, "tmp")
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYTHONSTARTUP", None)
    return env


PIPE_BYTES = (8 << 20, 1 << 20)  # frame pipe sizes tried in turn (Linux's default is 64 KB; 1 MB needs no privilege)


def _widen(fd: int) -> None:
    """A wide frame pipe: a worker's batch (up to megabytes) is written at once, and the replay goes on
    while the supervisor reads it, instead of waiting on a 64 KB pipe."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if setsize is None:
        return
    for size in PIPE_BYTES:
        try:
            fcntl.fcntl(fd, setsize, size)
            return
        except OSError:
            continue


class Worker:
    """One worker process running one job, driven by :func:`run_workers`."""

    def __init__(self, job: dict[str, Any], config: dict[str, Any], *, label: str = "",
                 on_frame: Callable[[Worker, dict[str, Any]], None] | None = None,
                 echo: TextIO | None = None, echo_prefix: str = "") -> None:
        from inspector.tokens.persistent import open_cache

        self.limits = Limits.from_config(config)
        # Opened here, before the worker starts, and kept open: the worker reads it read-only and
        # hands its new counts back for this process to write (inspector.tokens.persistent).
        self.token_cache = open_cache(config) if job.get("job") in COUNTING_JOBS else None
        cache_path = str(self.token_cache.path) if self.token_cache is not None and self.token_cache.enabled else None
        self.job = {**job, "memory_mb": self.limits.memory_mb + 1024, "load_timeout": self.limits.load_timeout,
                    "token_cache": cache_path}
        self.config = config
        self.label = label
        self.on_frame = on_frame
        self.echo = echo if echo is not None else sys.stderr
        self.echo_prefix = echo_prefix
        self.isolation = sandbox.choose(config)
        self.assembler: TraceAssembler | None = None
        self.session_messages: list[dict[str, Any]] | None = None  # the replayed session's, for content refs
        self.frames = FrameReader()
        self.done: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.raised: dict[str, Any] | None = None
        self.notes: list[str] = []
        self.warnings: list[str] = []
        self.pid: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.work = ""
        self.started = 0.0
        self.last_beat = 0.0
        self.last_stack: str | None = None
        self.killed: tuple[str, Fault] | None = None
        self._hook = ""  # the hook the worker was killed in
        self.cancel_sent: float | None = None
        self.exit_status: int | None = None
        self.protocol_error: str | None = None
        self._fds: dict[int, str] = {}
        self._decoders: dict[str, Any] = {}
        self._echoed = 0
        self._echo_cut = False
        self._mem_checked = 0.0
        self._secrets: list[str] = []
        self._outbox: queue.SimpleQueue[tuple[bytes, bytes] | None] = queue.SimpleQueue()
        self.egress: Any = None  # the EgressProxy of a sandboxed worker with an endpoint

    # -- starting ------------------------------------------------------------------------------
    def start(self) -> None:
        from inspector.llm.secrets import config_secrets

        self._secrets = config_secrets(self.config)
        self.work = tempfile.mkdtemp(prefix="context-inspector-worker-")
        with _LIVE_LOCK:
            _LIVE.add(self)
        os.mkdir(os.path.join(self.work, "tmp"), 0o700)
        tracker.create(os.path.join(self.work, TRACKER_FILE))
        if self.isolation.hosts:  # the sandbox's one way out: only to the configured endpoints
            from inspector.worker.egress import EgressProxy

            self.egress = EgressProxy(self.work, self.isolation.hosts).start()
            self.job["egress"] = self.egress.path
        ensure_compiled()
        read_fd, write_fd = os.pipe()
        _widen(write_fd)
        argv = [sys.executable, "-m", "inspector.worker", str(write_fd), self.work]
        try:
            self.proc = subprocess.Popen(
                sandbox.command(self.isolation, argv, self.work), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, pass_fds=(write_fd,), env=worker_environment(self.config, self.work),
                start_new_session=True, close_fds=True)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        self.started = self.last_beat = time.monotonic()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._fds = {read_fd: "frames", self.proc.stdout.fileno(): "stdout", self.proc.stderr.fileno(): "stderr"}
        for fd in self._fds:
            os.set_blocking(fd, False)
        self._outbox.put(encode_parts(self.job))
        threading.Thread(target=self._send_frames, name="inspector-worker-input", daemon=True).start()

    def _send_frames(self) -> None:
        """Frames to the worker's stdin, in order, on their own thread: the job (with a whole session it is
        megabytes) must not hold up the supervisor; the pipe then stays open so the worker knows we live."""
        stdin = self.proc.stdin if self.proc is not None else None
        while stdin is not None:
            parts = self._outbox.get()
            if parts is None:
                return
            try:
                for part in parts:
                    stdin.write(part)
                stdin.flush()
            except (OSError, ValueError):
                return
            # not held while waiting for the next frame: the session's is tens of MB, and the next
            # frame may not come before the run ends
            parts = part = None

    def post(self, message: dict[str, Any]) -> None:
        """Send the worker a frame after its job (the session of a job started before it was read)."""
        self._outbox.put(encode_parts(message))

    def send_cancel(self) -> None:
        if self.cancel_sent is not None or self.proc is None or self.proc.poll() is not None:
            return
        self.cancel_sent = time.monotonic()
        self.post({"type": "cancel"})

    # -- reading -------------------------------------------------------------------------------
    def fds(self) -> list[int]:
        return list(self._fds)

    def readable(self, fd: int) -> None:
        what = self._fds.get(fd)
        if what is None:
            return
        try:
            data = os.read(fd, 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._close_fd(fd)
            return
        if what == "frames":
            try:
                frames = self.frames.feed(data)
            except ProtocolError as exc:
                self.protocol_error = str(exc)
                self._kill("protocol", Fault("host_error", f"the worker's stream broke: {exc}; the worker was killed"))
                self._close_fd(fd)
                return
            self._frames(frames)
        else:
            self._echo(what, data)

    def _frames(self, frames: list[dict[str, Any]]) -> None:
        """Handle frames; one whose fields are not what we sent (engine code can write anything to the
        pipe) breaks the stream like a malformed frame: the worker is killed, this process goes on."""
        for frame in frames:
            try:
                self._frame(frame)
            except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
                self.protocol_error = f"a {str(frame.get('type'))[:40]!r} frame it sent is malformed ({exc})"
                self._kill("protocol", Fault("host_error", f"the worker's stream broke: {self.protocol_error}; "
                                             "the worker was killed"))
                return

    def _close_fd(self, fd: int) -> None:
        """Stop reading ``fd``; the frame pipe is ours to close, stdout and stderr close with ``proc``."""
        if self._fds.pop(fd, None) == "frames":
            try:
                os.close(fd)
            except OSError:
                pass

    def _echo(self, stream: str, data: bytes) -> None:
        """What the engine printed, on our stderr (keys masked), up to ``ECHO_LIMIT``."""
        from inspector.llm.secrets import scrub_text

        decoder = self._decoders.setdefault(stream, codecs.getincrementaldecoder("utf-8")("replace"))
        text = decoder.decode(data)
        if not text or self._echo_cut:
            return
        if self._echoed + len(text) > ECHO_LIMIT:
            text = text[:max(0, ECHO_LIMIT - self._echoed)]
            self._echo_cut = True
        self._echoed += len(text)
        text = scrub_text(text, *self._secrets)
        if self.echo_prefix:
            text = "".join(self.echo_prefix + line for line in text.splitlines(keepends=True))
        try:
            self.echo.write(text)
            if self._echo_cut:
                self.echo.write(f"\n{self.echo_prefix}… more engine output not shown (over {ECHO_LIMIT:,} characters)\n")
            self.echo.flush()
        except (OSError, ValueError):
            pass

    def _frame(self, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        if kind == "beat":
            self.last_beat = time.monotonic()
            self.last_stack = frame.get("stack")
            return
        self.last_beat = time.monotonic()
        if kind == "hello":
            self.pid = frame.get("pid") if isinstance(frame.get("pid"), int) else None
        elif kind == "meta":
            self.assembler = TraceAssembler(frame.get("meta") or {}, self.session_messages)
        elif kind in ("batch", "update", "done"):
            batch = frame.get("batch")
            if isinstance(batch, dict) and self.assembler is None and isinstance(batch.get("meta"), dict):
                self.assembler = TraceAssembler(batch["meta"], self.session_messages)
            if isinstance(batch, dict) and self.assembler is not None:
                self.assembler.add(batch)
            if kind == "done":
                self.done = frame
            elif kind == "update" and frame.get("token_counts") is not None:
                # A chat hands its new counts back after each turn: a worker that dies later keeps them.
                from inspector.tokens.persistent import store_worker_counts

                store_worker_counts(self.token_cache, frame["token_counts"])
        elif kind == "loaded":
            self.warnings = [str(w) for w in frame.get("warnings") or []]
        elif kind == "note":
            self.notes.append(str(frame.get("text") or ""))
        elif kind == "error":
            self.error = frame
        elif kind == "raised":
            self.raised = frame
        if self.on_frame is not None:
            self.on_frame(self, frame)

    # -- watching ------------------------------------------------------------------------------
    def check(self, now: float) -> None:
        """Deadlines, memory, a cancel that was not answered."""
        if self.proc is None or self.killed is not None or self.proc.poll() is not None:
            return
        limits = self.limits
        wall = time.time()
        silent = now - self.last_beat if self.pid is not None else 0.0  # starting up: no beats yet
        if self.pid is None and now - self.started > STARTUP_LIMIT:
            self._timeout("the worker's start", "", STARTUP_LIMIT, now - self.started, frozen=True)
            return
        for act in tracker.read(os.path.join(self.work, TRACKER_FILE)):
            allowed = act.allowed
            if act.slot == tracker.POOL:
                allowed = limits.compress_timeout
                if silent <= limits.grace:
                    continue  # the host gave up on the pooled call and goes on; the worker is alive
            if allowed > 0 and wall - act.started > allowed + limits.grace:
                self._timeout(act.label, act.where, allowed, wall - act.started)
                return
        if silent > limits.silence:
            self._timeout("the worker", "", limits.silence, silent, frozen=True)
            return
        if self.cancel_sent is not None and now - self.cancel_sent > CANCEL_GRACE:
            running = [a for a in tracker.read(os.path.join(self.work, TRACKER_FILE)) if a.slot != tracker.PHASE]
            hook = running[0] if running else None
            stack = self._dump_stack(hook.where.rsplit(":", 2)[0] if hook else "") or _stack_traceback(self.last_stack)
            inside = f" inside {hook.label}" if hook else ""
            self._kill(STATUS_CANCELLED, Fault("timeout", f"cancelled by the user; the worker was still{inside} "
                                               f"{CANCEL_GRACE:g} s later and was killed", stack),
                       hook=hook.label if hook else "")
            return
        if now - self._mem_checked >= 0.1:
            self._mem_checked = now
            rss = self._rss_mb()
            if rss is not None and rss > limits.memory_mb:
                running = [a for a in tracker.read(os.path.join(self.work, TRACKER_FILE)) if a.slot != tracker.PHASE]
                during = f" during {running[0].label}" if running else ""
                stack = self._dump_stack(running[0].where.split(":")[0] if running else "")
                self._kill("memory", Fault("memory", f"the worker used {rss:,.0f} MB{during}, over the limit of "
                                           f"{limits.memory_mb:,.0f} MB (inspector.worker_memory_mb); it was killed",
                                           stack or (traceback_at(running[0].where) if running else None)))

    def _rss_mb(self) -> float | None:
        pid = self.pid
        if pid is None:
            return None
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                pages = int(fh.read().split()[1])
        except (OSError, ValueError, IndexError):
            return None
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20

    def _dump_stack(self, hint: str) -> str | None:
        """Ask faulthandler in the worker for every thread's stack (works while a C call holds the GIL)."""
        if self.pid is None or not hasattr(signal, "SIGUSR1"):
            return None
        path = os.path.join(self.work, STACK_FILE)
        try:
            before = os.path.getsize(path)
            os.kill(self.pid, signal.SIGUSR1)
        except OSError:
            return None
        deadline = time.monotonic() + 0.5
        size = before
        while time.monotonic() < deadline:
            time.sleep(0.02)
            try:
                now_size = os.path.getsize(path)
            except OSError:
                return None
            if now_size > before and now_size == size:
                break  # written, and no longer growing
            size = now_size
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                fh.seek(before)
                text = fh.read(1 << 20)
        except OSError:
            return None
        return faulthandler_traceback(text, hint) if text.strip() else None

    def _timeout(self, label: str, where: str, allowed: float, elapsed: float, *, frozen: bool = False) -> None:
        hint = where.rsplit(":", 2)[0] if where else ""
        stack = self._dump_stack(hint) or _stack_traceback(self.last_stack) or traceback_at(where)
        if frozen:
            message = (f"the worker sent nothing for {elapsed:.1f} s (limit {allowed:g} s): it is frozen outside "
                       "any hook the host tracks; the worker was killed")
        else:
            message = (f"{label} ran past its {allowed:g} s timeout and was still running {elapsed - allowed:.1f} s "
                       "later, blocked where the host cannot interrupt it (a C call holding the interpreter lock, "
                       "or signals blocked); the worker was killed")
        self._kill(STATUS_TIMEOUT, Fault("timeout", message, stack), hook=label)

    def _kill(self, status: str, fault: Fault, hook: str = "") -> None:
        if self.killed is None:
            self.killed = (status, fault)
            self._hook = hook
        self.kill_now()

    def kill_now(self) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the worker and anything it forked
        except (OSError, ProcessLookupError):
            try:
                proc.kill()
            except OSError:
                pass

    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    # -- ending -------------------------------------------------------------------------------
    def finish(self) -> Outcome:
        """After the worker exited: read what is left, kill what it forked, build the outcome."""
        assert self.proc is not None
        for _ in range(64):  # what is already in the pipes; a forked child may hold them open, so no EOF wait
            progressed = False
            for fd in list(self._fds):
                try:
                    data = os.read(fd, 1 << 20)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self._close_fd(fd)
                    continue
                progressed = True
                if self._fds.get(fd) == "frames":
                    try:
                        self._frames(self.frames.feed(data))
                    except ProtocolError as exc:
                        self.protocol_error = str(exc)
                        self._close_fd(fd)
                else:
                    self._echo(self._fds[fd], data)
            if not progressed:
                break
        activities = tracker.read(os.path.join(self.work, TRACKER_FILE))
        self.kill_now()
        code = self.proc.wait()
        self.exit_status = code
        outcome = self._outcome(code, activities)
        outcome.seconds = time.monotonic() - self.started
        if self.done is not None:
            from inspector.tokens.persistent import store_worker_counts

            outcome.token_cache = store_worker_counts(self.token_cache, self.done.get("token_counts"))
        self.cleanup()
        return outcome

    def _outcome(self, code: int, activities: list[tracker.Activity]) -> Outcome:
        trace = self.assembler.trace if self.assembler is not None else None
        out = Outcome(status=STATUS_OK, done=self.done, error=self.error, exit_status=code, notes=list(self.notes),
                      warnings=list(self.warnings), isolation=self.isolation.to_json(), trace=trace)
        if self.egress is not None and self.egress.refused:  # what the engine tried to reach besides the endpoint
            out.isolation["refused"] = list(self.egress.refused)
            out.notes.append(f"the sandbox refused connections to {', '.join(self.egress.refused)[:300]} "
                             "(only the configured endpoint is reachable)")
        if self.killed is not None:
            out.status, out.fault = self.killed
        elif self.done is not None and code == 0:
            out.status = str(self.done.get("status") or STATUS_OK)
            if self.error is not None and out.status == STATUS_OK:
                out.status = STATUS_ERROR
        elif self.error is not None and code == 0:
            out.status = STATUS_ERROR
        else:
            out.status = STATUS_DIED
            out.fault = self._death_fault(code, activities)
        if out.fault is not None:
            self._end_trace(out)
        if out.trace is not None:
            out.trace.meta["worker"] = out.isolation
            if out.status != STATUS_OK:
                out.trace.meta["worker_status"] = out.status
            out.trace.finish()
        return out

    def _death_fault(self, code: int, activities: list[tracker.Activity]) -> Fault:
        running = [a for a in activities if a.slot != tracker.PHASE] or activities
        how = exit_description(code, wrapped=self.isolation.kind == "bubblewrap")
        if self.raised is not None:
            name = self.raised.get("exception") or "an exception"
            detail = str(self.raised.get("message") or "")
            return Fault("worker_died", f"{name}{': ' + detail[:300] if detail else ''} escaped the host and ended "
                         f"the worker ({how})", self.raised.get("traceback"))
        if self.protocol_error is not None:
            return Fault("worker_died", f"the worker's stream broke ({self.protocol_error}); {how}")
        if not running:
            return Fault("worker_died", f"the worker died outside any engine hook ({how})",
                         _stack_traceback(self.last_stack))
        act = running[0]
        located = traceback_at(act.where)
        folder = f" ({act.where})" if act.where and not located else ""
        # a phase (a plugin's import) has no line to name: its folder, never a heartbeat's older stack
        return Fault("worker_died", f"the worker died during {act.label}{folder} ({how})", located)

    def _end_trace(self, out: Outcome) -> None:
        """The partial trace ends with the supervisor's fault, as a fault event."""
        if out.trace is None or out.fault is None:
            return
        trace = out.trace
        last = trace.events[-1] if trace.events else None
        hook = self._hook.split(" ", 1)[0]  # "compress (pool)" is a compress event
        kind = hook if hook.isidentifier() else EV_FAULT
        trace.add_event(Event(index=0, kind=kind,
                              turn=last.turn if last else None, t=last.t if last else 0.0,
                              state=last.state if last else None, fault=out.fault,
                              note="the run ended here: the worker " + ("was killed" if self.killed else "died")))
        trace.meta["stopped_by_worker"] = out.fault.message

    def cleanup(self) -> None:
        for fd in list(self._fds):
            self._close_fd(fd)
        proc = self.proc
        self._outbox.put(None)
        if proc is not None:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                try:
                    if stream is not None:
                        stream.close()
                except (OSError, ValueError):
                    pass
        if self.egress is not None:
            self.egress.stop()
        if self.work:
            shutil.rmtree(self.work, ignore_errors=True)
        with _LIVE_LOCK:
            _LIVE.discard(self)


def run_workers(workers: Sequence[Worker], *, parallel: int | None = None, cancel: threading.Event | None = None,
                on_finished: Callable[[int, Outcome], None] | None = None) -> list[Outcome]:
    """Run every worker (at most ``parallel`` at once, default: one per core) and return their outcomes.

    Any exception here (Ctrl+C, SIGTERM made one by the CLI) kills every worker and removes its
    folder before it propagates.
    """
    parallel = max(1, parallel or os.cpu_count() or 1)
    started = [i for i, w in enumerate(workers) if w.proc is not None]  # started ahead (see ``post``)
    pending = started + [i for i in range(len(workers)) if i not in started]
    running: list[int] = []
    outcomes: list[Outcome | None] = [None] * len(workers)
    selector = selectors.DefaultSelector()
    registered: dict[int, int] = {}
    try:
        while pending or running:
            while pending and len(running) < parallel:
                if cancel is not None and cancel.is_set():
                    i = pending.pop(0)
                    outcomes[i] = Outcome(status=STATUS_CANCELLED, notes=["cancelled before it started"])
                    continue
                i = pending.pop(0)
                if workers[i].proc is None:
                    workers[i].start()
                running.append(i)
            for i in running:
                for fd in workers[i].fds():
                    if fd not in registered:
                        selector.register(fd, selectors.EVENT_READ, i)
                        registered[fd] = i
            if not running:
                continue
            for key, _ in selector.select(POLL):
                workers[key.data].readable(key.fd)
            for fd, i in list(registered.items()):
                if fd not in workers[i].fds():
                    selector.unregister(fd)
                    del registered[fd]
            now = time.monotonic()
            for i in list(running):
                w = workers[i]
                if cancel is not None and cancel.is_set():
                    w.send_cancel()
                w.check(now)
                if w.exited():
                    for fd in w.fds():
                        if fd in registered:
                            selector.unregister(fd)
                            del registered[fd]
                    outcomes[i] = w.finish()
                    running.remove(i)
                    if on_finished is not None:
                        on_finished(i, outcomes[i])
    finally:
        selector.close()
        for i in running:
            workers[i].kill_now()
        for i in running:
            proc = workers[i].proc
            if proc is not None:
                try:
                    proc.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    pass
            workers[i].cleanup()
    return [o for o in outcomes if o is not None] if all(o is not None for o in outcomes) else \
        [o or Outcome(status=STATUS_CANCELLED) for o in outcomes]


def run_worker(job: dict[str, Any], config: dict[str, Any], *, cancel: threading.Event | None = None,
               **kwargs: Any) -> Outcome:
    return run_workers([Worker(job, config, **kwargs)], cancel=cancel)[0]
