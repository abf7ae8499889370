"""``load_session`` / ``list_sessions``: one entry point for every source a user may have.

A source is a file path, optionally followed by ``#<session id>`` for sources that hold
several sessions (Hermes ``state.db``, export JSONL, trajectory files).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from inspector.sessions.detect import FORMATS, detect_source, open_detected, resolve_format
from inspector.sessions.model import ReaderError, Session
from inspector.sessions.source import Source, open_source
from inspector.sessions.summary import SessionSummary, summarize

OPENAI_FAMILY = ("openai-array", "openai-jsonl", "openai-object", "openai-conversations", "openai-request-log")


def split_spec(path_or_spec: str | os.PathLike[str]) -> tuple[str, str | None]:
    """``"state.db#abc"`` → ``("state.db", "abc")``; a real file whose name has ``#`` wins."""
    spec = os.fspath(path_or_spec)
    if "#" in spec and not Path(spec).exists():
        path, _, sid = spec.rpartition("#")
        if path and Path(path).exists():
            return path, sid or None
    return spec, None


def _not_a_saved_trace(path: str) -> None:
    """A trace or comparison the inspector saved is not a transcript: say so, rather than that it
    lacks a 'messages' list (it has one, of another kind)."""
    from inspector.trace.io import BUNDLE_FORMAT, saved_kind

    kind = saved_kind(path) if os.path.isfile(path) else None
    if kind is not None:
        what = "comparison" if kind == BUNDLE_FORMAT else "trace"
        raise ReaderError(f"is a saved {what}, not a transcript: open it in the window or show it with "
                          "`context-inspector replay FILE`; to replay with engines, give the session it was made from",
                          path=path)


def _format_for(path: str, fmt: str | None) -> tuple[str, Source | None]:
    """The format (given, or detected) and, when detection read the file, the Source it read."""
    if fmt is None:
        return open_detected(path)
    return resolve_format(fmt), None


def load_session(path_or_spec: str | os.PathLike[str], *, format: str | None = None, session_id: str | None = None) -> Session:
    """Load one session from a transcript file or ``state.db[#id]``.

    ``format`` overrides detection (see :data:`FORMATS`). A source with several sessions and no
    id loads its only/first session (JSONL files, noted in the warnings) or, for a database,
    raises a :class:`ReaderError` listing the ids to choose from.
    """
    path, spec_id = split_spec(path_or_spec)
    session_id = session_id if session_id is not None else spec_id
    _not_a_saved_trace(path)
    fmt, source = _format_for(path, format)
    return _read(path, fmt, source, format, session_id)


def _read(path: str, fmt: str, source: Source | None, format: str | None, session_id: str | None) -> Session:
    """:func:`load_session` once the format is known (``source``: the file as detection read it)."""
    if fmt == "hermes-db":
        from inspector.sessions.readers import hermes_db

        return hermes_db.load(path, session_id)
    from inspector.sessions.readers import READERS

    if source is None:
        source = open_source(path)
    if fmt == "openai":
        fmt = detect_source(source)
        if fmt not in OPENAI_FAMILY:
            raise ReaderError(f"--format openai, but the content looks like {fmt}", path=path)
    try:
        reader = READERS[fmt]
    except KeyError:
        raise ReaderError(f"no reader for format {fmt!r}", path=path) from None
    try:
        session = reader(source, session_id)
    except ReaderError:
        raise
    except MemoryError:
        raise ReaderError("not enough memory to read this file", path=path) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError, OverflowError) as exc:
        # The content does not have the shape this format promises (wrong --format, or damage).
        raise ReaderError(f"not a valid {fmt} file ({type(exc).__name__}: {exc})", path=path) from None
    if format is not None and not session.messages:
        # A forced format that reads nothing is a wrong --format, not an empty session.
        detected = _detected_or_none(source)
        hint = f"; the content looks like {detected}" if detected and detected != fmt else ""
        raise ReaderError(f"no {fmt} messages found with --format {format}{hint}", path=path)
    if session_id is not None and fmt not in ("hermes-export", "trajectory", "openai-conversations") and session_id != session.id:
        raise ReaderError(f"this {fmt} file holds one session ({session.id!r}), not {session_id!r}", path=path)
    session.meta.setdefault("format", fmt)
    return session


def require_conversation(session: Session) -> Session:
    """``session``, or a ReaderError when there is nothing to replay.

    Kept out of :func:`load_session` because ``follow`` reads files that are still empty.
    """
    if not session.turns:
        what = "no messages" if not session.messages else "only a system prompt"
        raise ReaderError(f"nothing to replay: the session holds {what}", path=session.source_path)
    return session


def _detected_or_none(source: Any) -> str | None:
    try:
        return detect_source(source)
    except ReaderError:
        return None


def list_sessions(
    path: str | os.PathLike[str], *, format: str | None = None, warnings: list[str] | None = None
) -> list[SessionSummary]:
    """One :class:`SessionSummary` per session in the source (a single-session file gives one).

    What had to be skipped (damaged lines, unusable entries) is appended to ``warnings``.
    """
    path, _ = split_spec(path)
    _not_a_saved_trace(path)
    fmt, source = _format_for(path, format)
    if fmt == "hermes-db":
        from inspector.sessions.readers import hermes_db

        return hermes_db.list_sessions(path)
    from inspector.sessions.readers import LISTERS

    if fmt in LISTERS:
        source = source or open_source(path)
        try:
            rows = LISTERS[fmt](source)
            if warnings is not None:
                warnings.extend(source.warnings)
            return rows
        except ReaderError:
            raise
        except MemoryError:
            raise ReaderError("not enough memory to read this file", path=path) from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError, OverflowError) as exc:
            raise ReaderError(f"not a valid {fmt} file ({type(exc).__name__}: {exc})", path=path) from None
    session = _read(path, fmt, source, fmt, None)
    if warnings is not None:
        warnings.extend(session.warnings)
    return [summarize(session)]


__all__ = ["FORMATS", "list_sessions", "load_session", "split_spec"]
