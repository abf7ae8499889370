"""Which sessions a batch replays: files, folders (recursively) and whole ``state.db`` files.

Every file goes through the same format detection as ``replay`` (:func:`inspector.sessions.list_sessions`),
so a folder may mix every format we read; a source holding several sessions (a ``state.db``, an
export or trajectory JSONL) gives one entry per session, named ``path#id`` as ``replay`` takes it.
Inside a folder, files that are no transcript (notes, saved traces, other databases) are skipped
and counted; a file named on the command line that cannot be read is an error the user sees.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from inspector.sessions.model import ReaderError

# Never transcripts: skipped inside folders without opening them.
_SKIPPED_SUFFIXES = (".txt", ".md", ".py", ".yaml", ".yml", ".html", ".png", ".svg", ".csv", ".db-wal", ".db-shm")


@dataclass(frozen=True)
class SessionRef:
    """One session to replay: the spec ``load_session`` takes, and where it was found."""

    spec: str
    path: str
    session_id: str | None = None
    format: str = ""


@dataclass
class Discovery:
    sessions: list[SessionRef] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why) inside folders
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, why) of named files


def discover(sources: list[str]) -> Discovery:
    """Every session in ``sources``, in a stable order (folders walked sorted), each once."""
    found = Discovery()
    seen: set[str] = set()
    for source in sources:
        path = Path(source).expanduser()
        if path.is_dir():
            for file in _walk(path):
                _add_file(str(file), found, seen, named=False)
        else:
            _add_file(str(path) if path.exists() else source, found, seen, named=True)
    return found


def _walk(folder: Path) -> list[Path]:
    out: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or name.lower().endswith(_SKIPPED_SUFFIXES):
                continue
            out.append(Path(root) / name)
    return out


def _add_file(path: str, found: Discovery, seen: set[str], *, named: bool) -> None:
    from inspector.sessions import list_sessions
    from inspector.sessions.api import split_spec
    from inspector.sessions.detect import detect_format

    file, sid = split_spec(path)
    try:
        fmt = detect_format(file)
        rows = list_sessions(file, format=fmt) if sid is None else None
    except ReaderError as exc:
        (found.errors if named else found.skipped).append((path, str(exc)))
        return
    except OSError as exc:
        (found.errors if named else found.skipped).append((path, exc.strerror or str(exc)))
        return
    if sid is not None:
        refs = [SessionRef(spec=path, path=file, session_id=sid, format=fmt)]
    elif len(rows or []) > 1 or fmt == "hermes-db":
        refs = [SessionRef(spec=f"{file}#{row.id}", path=file, session_id=row.id, format=fmt) for row in rows or []]
    else:
        refs = [SessionRef(spec=file, path=file, format=fmt)]
    for ref in refs:
        ident = os.path.abspath(ref.path) + "#" + (ref.session_id or "")
        if ident not in seen:
            seen.add(ident)
            found.sessions.append(ref)
