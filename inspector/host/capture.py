"""What an engine prints and logs during a hook call, recorded with that call's event.

Engine authors debug with ``print()`` and ``logging``; shown only on the terminal, that output
is not tied to the hook call that wrote it, and a saved trace loses it. So each hook call gets
an :class:`EventOutput` buffer, and what the engine writes meanwhile is copied into it:

- **One stream, one handler, installed once.** ``sys.stdout`` and ``sys.stderr`` are wrapped
  in a :class:`_Tee` that writes through (the terminal shows everything as before) and, when
  the writing thread has a hook call in progress, also appends the text to that call's buffer.
  One :class:`_LogRouter` on the root logger does the same with log records (``LEVEL logger:
  message``). A hook call only points a thread-local slot at its buffer: no handler is
  installed per call, and a call that writes nothing reuses the previous call's buffer.
- **Per thread.** Each thread (comparisons and the window replay on worker threads) has its
  own current buffer. ``compress`` runs on a pooled thread: the host hands that job the
  call's buffer (:meth:`RunOutput.job`). Output from any other thread — a thread the engine
  starts itself, or the inspector's own — is not recorded (it still reaches the terminal). A
  ``compress`` that timed out and keeps running writes into a closed buffer: that text is
  counted per run (:attr:`RunOutput.late`) and the host says so in a note.
- **Bounded.** At most :data:`EVENT_CHARS` per event and :data:`TRACE_CHARS` per run; what is
  cut is said with a ``… N more characters dropped`` line.
- **Safe to show.** Credentials are masked (:func:`inspector.llm.secrets.scrub_text`) and
  terminal control characters shown as escapes (:func:`inspector.terminal.printable`).

Log records: INFO and above (:data:`LOG_LEVEL`) from every logger except the inspector's own
(``inspector.*``), but the built-in compressor's is engine code and recorded. To make INFO
records exist at all, the root logger's level is lowered to INFO when it was higher; records
that reach no other handler are still printed as Python prints them without any handler
(``logging.lastResort``: WARNING and above), so the terminal shows what it showed before.
Not recorded: bytes written to file descriptors directly (C extensions, ``os.write``,
``sys.stdout.buffer``) and streams an engine kept a reference to before its first hook call.
"""

from __future__ import annotations

import logging
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any, TextIO

from inspector.llm.secrets import mask_known, scrub_text
from inspector.terminal import printable

EVENT_CHARS = 4_000
TRACE_CHARS = 200_000
LOG_LEVEL = logging.INFO
# Text kept past an event's limit so a credential cut by the limit is still whole when masked.
_SCRUB_SLACK = 512
_OWN_LOGGERS = "inspector"
_ENGINE_LOGGERS = ("inspector.engines.compressor",)  # the built-in engine: engine code, recorded


class _Current(threading.local):
    """The buffer of the hook call in progress on this thread (None: none)."""

    out: EventOutput | None = None


_CURRENT = _Current()


class RunOutput:
    """One run's engine output: its allowance, what it could not record, and the next call's buffer."""

    __slots__ = ("left", "over", "late", "secrets", "_spare")

    def __init__(self, chars: int | None = None, secrets: tuple[str, ...] = ()) -> None:
        self.left = TRACE_CHARS if chars is None else chars
        self.over = 0  # characters dropped because the run's allowance was used up
        self.late = 0  # characters written after their hook call had returned
        self.secrets = secrets  # credential values to mask besides the environment's (the config's)
        self._spare: EventOutput | None = None  # the last call's buffer, when it wrote nothing

    def begin(self, *, pooled: bool = False) -> EventOutput | None:
        """Record what this thread writes from now on; returns what :meth:`end` restores.

        A ``pooled`` call (see :meth:`job`) gets a buffer of its own, closed at :meth:`end`,
        so a pass that outlives its timeout writes into a closed buffer, never a later event's.
        """
        stdout, stderr = sys.stdout, sys.stderr
        root = logging.root
        if (type(stdout) is not _Tee and stdout is not None) or (type(stderr) is not _Tee and stderr is not None) \
                or root.level > LOG_LEVEL or len(root.handlers) != _TERMINAL["handlers"]:
            install()
        out = self._spare
        if out is None or pooled:
            out = EventOutput(self)
        previous = _CURRENT.out
        _CURRENT.out = out
        return previous

    def end(self, previous: EventOutput | None, *, pooled: bool = False) -> str | None:
        """Stop recording (on the thread that began); the text, as :meth:`EventOutput.close` gives it."""
        out = _CURRENT.out
        _CURRENT.out = previous
        if out is None:
            return None
        if out.parts is None and not pooled:  # most calls write nothing: the buffer is as good as new
            self._spare = out
            return None
        self._spare = None
        return out.close()

    def job(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """``fn`` as a pool job that records into the buffer of this thread's pooled call (after ``begin``)."""
        out = _CURRENT.out

        def run_recorded() -> Any:
            previous = _CURRENT.out
            _CURRENT.out = out
            try:
                return fn()
            finally:
                _CURRENT.out = previous

        return run_recorded


class EventOutput:
    """The text one hook call wrote, in order; closed when the call returns."""

    __slots__ = ("run", "parts", "kept", "dropped", "closed")

    def __init__(self, run: RunOutput) -> None:
        self.run = run
        self.parts: list[str] | None = None  # kept and dropped are set with the first text
        self.closed = False

    def add(self, text: str) -> None:
        if self.closed:
            self.run.late += len(text)
            return
        if self.parts is None:
            self.parts, self.kept, self.dropped = [], 0, 0
        room = EVENT_CHARS + _SCRUB_SLACK - self.kept
        if len(text) > room:
            self.dropped += len(text) - max(0, room)
            text = text[:max(0, room)]
        if text:
            self.parts.append(text)
            self.kept += len(text)

    def close(self) -> str | None:
        """The recorded text (masked, printable, within the limits), or None when nothing was written."""
        self.closed = True
        if self.parts is None or not (self.parts or self.dropped):
            return None
        run = self.run
        text = _safe("".join(self.parts), run.secrets)
        dropped = self.dropped
        limit = min(EVENT_CHARS, run.left)
        run_limited = limit < EVENT_CHARS  # the run's allowance is what stops this event
        if len(text) > limit:
            dropped += len(text) - limit
            text = text[:limit]
        run.left -= len(text)
        if dropped:
            if run_limited:
                run.over += dropped
            why = "this run's" if run_limited else "this event's"
            text += ("" if not text or text.endswith("\n") else "\n") + \
                f"… {dropped:,} more characters dropped ({why} limit of engine output)"
        return text


def _safe(text: str, secrets: tuple[str, ...]) -> str:
    """Credentials masked, control characters shown as escapes; line breaks and tabs kept."""
    text = scrub_text(text, *secrets)
    return "\n".join(printable(line) for line in text.replace("\r\n", "\n").split("\n"))


# -- the stream and the handler -------------------------------------------------------------------

_STREAM_EMIT = logging.StreamHandler.emit.__code__


class _Tee:
    """A text stream that writes through and copies what a hook call writes into its buffer."""

    __slots__ = ("_stream",)

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        out = _CURRENT.out
        if out is not None and type(text) is str and text:
            caller = sys._getframe(1)
            # A logging handler writing a record the router records anyway: not twice.
            if caller.f_code is not _STREAM_EMIT or not _ROUTER.takes(caller.f_locals.get("record")):
                out.add(text)
            self._stream.write(scrub_text(text, *out.run.secrets))  # engine output: masked on the terminal too
            return len(text)
        if type(text) is str and text:
            self._stream.write(mask_known(text))  # any other text: known keys (and their encodings) masked
            return len(text)
        return self._stream.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _loggers_to_root(name: str) -> list[logging.Logger] | None:
    """The loggers a record of logger ``name`` is handed to, up to the root; None if it stops before."""
    chain: list[logging.Logger] = []
    logger: logging.Logger | None = logging.getLogger(name) if name != "root" else logging.getLogger()
    while logger is not None:
        chain.append(logger)
        if logger.parent is None:
            return chain
        if not logger.propagate:
            return None
        logger = logger.parent
    return chain


class _LogRouter(logging.Handler):
    """The root logger's handler that records engine log records into the current hook call's buffer."""

    def takes(self, record: Any) -> bool:
        """Whether this handler records ``record`` (it reaches the root and is the engine's)."""
        if not isinstance(record, logging.LogRecord) or record.levelno < LOG_LEVEL or not _is_engine(record.name):
            return False
        return _loggers_to_root(record.name) is not None

    def emit(self, record: logging.LogRecord) -> None:
        out = _CURRENT.out
        if out is not None and record.levelno >= LOG_LEVEL and _is_engine(record.name):
            out.add(_format(record))
        last = logging.lastResort
        if last is not None and record.levelno >= last.level and not self._others_handle(record):
            # What Python prints for a record no handler takes (we are one, so it would not).
            _CURRENT.out = None  # echoed, not recorded again
            try:
                last.handle(record)
            finally:
                _CURRENT.out = out

    def _others_handle(self, record: logging.LogRecord) -> bool:
        chain = _loggers_to_root(record.name) or []
        return any(h is not self for logger in chain for h in logger.handlers)


def _is_engine(name: str) -> bool:
    """Not one of the inspector's own loggers (the built-in engine's excepted)."""
    if name != _OWN_LOGGERS and not name.startswith(_OWN_LOGGERS + "."):
        return True
    return any(name == e or name.startswith(e + ".") for e in _ENGINE_LOGGERS)


_FORMATTER = logging.Formatter()


def _format(record: logging.LogRecord) -> str:
    try:
        message = record.getMessage()
    except Exception as exc:  # the engine's format string and arguments do not match
        message = f"{record.msg!r} (could not format the arguments: {exc})"
    text = f"{record.levelname} {record.name}: {message}"
    if record.exc_info:
        text += "\n" + _FORMATTER.formatException(record.exc_info)
    if record.stack_info:
        text += "\n" + record.stack_info
    return text + "\n"


class _AsBefore(logging.Filter):
    """On the root's other handlers: only records that would exist had the root not been lowered.

    Lowering the root logger to INFO makes INFO records exist for recording; a handler someone
    else put on the root (an engine's ``logging.basicConfig``) must still print only what it
    printed before, so a record passes if its logger's level without the lowering lets it, or
    the handler itself was given a level that takes it.
    """

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self._handler = weakref.ref(handler)

    def filter(self, record: logging.LogRecord) -> bool:
        handler = self._handler()
        if handler is not None and logging.NOTSET < handler.level <= record.levelno:
            return True
        logger = logging.Logger.manager.loggerDict.get(record.name)
        while isinstance(logger, logging.Logger) and logger is not logging.root:
            if logger.level:
                return record.levelno >= logger.level
            logger = logger.parent
        return record.levelno >= _TERMINAL["level"]


_TERMINAL = {"level": logging.WARNING, "handlers": -1}  # the root's level before lowering; handlers seen
_ROUTER = _LogRouter(logging.NOTSET)
_LOCK = threading.Lock()


def install() -> None:
    """Wrap the standard streams and add the log router (again, if someone replaced them since).

    Called by :meth:`RunOutput.begin` whenever the streams are not wrapped: tests and ``redirect_stdout``
    swap them, and the next hook call wraps whatever is there now.
    """
    with _LOCK:
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if stream is not None and type(stream) is not _Tee:
                setattr(sys, name, _Tee(stream))
        root = logging.root
        if _ROUTER not in root.handlers:
            root.addHandler(_ROUTER)
        if root.level > LOG_LEVEL:  # NOTSET (0) already lets every record through
            _TERMINAL["level"] = root.level  # what the terminal showed: others' handlers keep to it
            root.setLevel(LOG_LEVEL)
        elif LOG_LEVEL > root.level > logging.NOTSET:
            _TERMINAL["level"] = root.level  # someone asked for more than INFO: they get it
        for handler in root.handlers:
            if handler is not _ROUTER and not any(isinstance(f, _AsBefore) for f in handler.filters):
                handler.addFilter(_AsBefore(handler))
        _TERMINAL["handlers"] = len(root.handlers)
