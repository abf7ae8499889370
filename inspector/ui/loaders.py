"""What a file is and how to open it: a saved trace, a comparison bundle, a Hermes state.db,
or a session transcript (which then needs a replay).

Kept apart from the window so the decision is testable without Qt, and so every failure comes
back as an :class:`OpenError` with a sentence a user can act on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspector.outputs import file_head
from inspector.trace.io import BUNDLE_FORMAT, TRACE_FORMAT, saved_kind_of

KIND_TRACE = "trace"
KIND_BUNDLE = "bundle"
KIND_DB = "hermes-db"
KIND_SESSION = "session"

SQLITE_MAGIC = b"SQLite format 3\x00"


class OpenError(Exception):
    """A file could not be opened; the message is shown in the window as is."""


@dataclass
class Opened:
    """The result of opening a path: a trace (ready) or a session (to replay)."""

    kind: str
    path: str
    trace: Any = None
    session: Any = None
    run: int | None = None  # which run of a bundle
    runs: int = 1


def sniff(path: str | os.PathLike[str]) -> str:
    """The kind of file at ``path`` (``state.db#id`` specs count as a database)."""
    spec = os.fspath(path)
    p = Path(spec)
    if not p.exists() and "#" in spec:
        base = spec.rpartition("#")[0]
        if Path(base).exists():
            return KIND_DB if file_head(base, 16).startswith(SQLITE_MAGIC) else KIND_SESSION
    if not p.exists():
        raise OpenError(f"{spec}: no such file")
    if p.is_dir():
        raise OpenError(f"{spec}: is a directory; open a session file, a Hermes state.db or a saved trace")
    try:
        head = file_head(spec)
    except OSError as exc:
        raise OpenError(f"{spec}: cannot read: {exc.strerror or exc}") from None
    if head.startswith(SQLITE_MAGIC):
        return KIND_DB
    kind = saved_kind_of(head)
    if kind == TRACE_FORMAT:
        return KIND_TRACE
    if kind == BUNDLE_FORMAT:
        return KIND_BUNDLE
    return KIND_SESSION


def split_spec(spec: str) -> tuple[str, str | None]:
    """``state.db#id`` → (path, id); a real file whose name contains ``#`` wins."""
    if "#" in spec and not Path(spec).exists():
        path, _, sid = spec.rpartition("#")
        if path and Path(path).exists():
            return path, sid or None
    return spec, None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")
    return str(exc) or type(exc).__name__


def load_trace_file(path: str) -> Any:
    try:
        from inspector.trace.io import load_trace
    except ImportError as exc:  # pragma: no cover - io ships with the package
        raise OpenError(f"cannot read traces: {exc}") from None
    try:
        return load_trace(path)
    except Exception as exc:  # noqa: BLE001 - TraceFormatError, TraceCorruptError, OSError…
        raise OpenError(_describe(exc)) from None


def load_bundle_file(path: str) -> tuple[list[Any], dict[str, Any]]:
    from inspector.trace.io import load_bundle

    try:
        return load_bundle(path)
    except Exception as exc:  # noqa: BLE001
        raise OpenError(_describe(exc)) from None


def load_comparison_file(path: str) -> Any:
    """A saved comparison (or any trace bundle) as an ``inspector.compare.Comparison``."""
    from inspector.compare import load_comparison

    try:
        return load_comparison(path)
    except Exception as exc:  # noqa: BLE001
        raise OpenError(_describe(exc)) from None


def list_db_sessions(path: str) -> list[Any]:
    """Session summaries of a Hermes state.db (opened read-only by the reader)."""
    from inspector.sessions import list_sessions

    try:
        return list(list_sessions(path))
    except Exception as exc:  # noqa: BLE001
        raise OpenError(_describe(exc)) from None


def list_many_sessions(path: str) -> list[Any]:
    """The sessions of a source that can hold several (a state.db, a trajectory or export JSONL);
    [] for a single-session transcript, which is then opened without a question."""
    from inspector.sessions import list_sessions
    from inspector.sessions.detect import detect_format
    from inspector.sessions.readers import LISTERS

    try:
        fmt = detect_format(path)
        if fmt != "hermes-db" and fmt not in LISTERS:
            return []
        found = list(list_sessions(path, format=fmt))
    except Exception as exc:  # noqa: BLE001
        raise OpenError(_describe(exc)) from None
    return found if len(found) > 1 or fmt == "hermes-db" else []


def load_session_file(spec: str) -> Any:
    from inspector.sessions import load_session, require_conversation

    try:
        return require_conversation(load_session(spec))
    except Exception as exc:  # noqa: BLE001 - ReaderError, OSError, anything a reader raises
        raise OpenError(_describe(exc)) from None


def summary_row(summary: Any) -> dict[str, str]:
    """Columns of the session picker for one SessionSummary (or a dict of the same fields)."""
    get = summary.get if isinstance(summary, dict) else (lambda k, d=None: getattr(summary, k, d))
    started = get("started")
    when = ""
    if isinstance(started, int | float) and started > 0:
        import time

        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(started))
    return {
        "id": str(get("id", "")),
        "title": str(get("title") or ""),
        "model": str(get("model") or ""),
        "started": when,
        "messages": str(get("message_count", "") or ""),
        "calls": str(get("api_calls", "") or ""),
    }
