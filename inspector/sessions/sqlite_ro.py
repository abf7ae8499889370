"""Opening SQLite files the user owns for reading, leaving no trace on disk."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

# What SQLite says when reading would first need a write: a hot rollback journal left by a
# writer that died mid-transaction, or a WAL whose index must be rebuilt.
_NEEDS_WRITE = ("readonly database", "readonly_rollback", "readonly_recovery")


def readonly_uri(path: str | Path) -> str:
    """The SQLite URI that reads ``path`` without writing anything next to it either.

    ``mode=ro`` never writes the database, but on a WAL database SQLite still creates the
    ``-wal`` and ``-shm`` files beside it and leaves them. When the database is in WAL mode
    and has no ``-wal`` file, no writer has anything pending, so it is opened ``immutable``
    (no locks, no side files); with a ``-wal`` present a writer is (or was) active and
    ``mode=ro`` reads its committed pages through the files it already made.
    """
    p = Path(path).resolve()
    uri = p.as_uri() + "?mode=ro"
    try:
        with open(p, "rb") as fh:
            header = fh.read(20)
    except OSError:
        return uri
    wal_mode = len(header) == 20 and header[18] == 2 and header[19] == 2
    if wal_mode and not Path(str(p) + "-wal").exists():
        uri += "&immutable=1"
    return uri


class ReadConnection(sqlite3.Connection):
    """A connection that may read a private copy; ``note`` says why, and closing removes the copy."""

    note: str | None = None
    _copy_dir: str | None = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._copy_dir is not None:
                shutil.rmtree(self._copy_dir, ignore_errors=True)
                self._copy_dir = None


def connect_readonly(path: str | Path, timeout: float = 5.0) -> ReadConnection:
    """A connection that reads ``path`` and never writes it or anything beside it.

    Two states need a write before their committed data can be read: a hot rollback journal (a
    writer died mid-transaction; SQLite rolls it back on first read) and a ``-wal`` without its
    ``-shm`` (a copied or crashed database; SQLite rebuilds the index beside it). Both are read
    from a private copy of the files, where SQLite recovers as it would in place.
    """
    p = Path(path).resolve()
    if Path(f"{p}-wal").exists() and not Path(f"{p}-shm").exists():
        return _private_copy(p, timeout, "its write-ahead log has no index beside it (a copied or crashed database)")
    conn = sqlite3.connect(readonly_uri(p), uri=True, timeout=timeout, factory=ReadConnection)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if not any(word in str(exc).lower() for word in _NEEDS_WRITE):
            conn.close()
            raise
        conn.close()
        return _private_copy(p, timeout, "a writer stopped mid-transaction and left a rollback journal")
    except BaseException:
        conn.close()
        raise
    return conn


def _private_copy(p: Path, timeout: float, why: str) -> ReadConnection:
    copy_dir = tempfile.mkdtemp(prefix="inspector-db-")
    try:
        target = Path(copy_dir) / p.name
        shutil.copyfile(p, target)
        for suffix in ("-journal", "-wal"):
            side = Path(f"{p}{suffix}")
            if side.exists():
                shutil.copyfile(side, f"{target}{suffix}")
        conn = sqlite3.connect(str(target), timeout=timeout, factory=ReadConnection)
    except BaseException:
        shutil.rmtree(copy_dir, ignore_errors=True)
        raise
    conn._copy_dir = copy_dir
    conn.note = (f"read from a private copy because {why}; the copy shows what was committed, "
                 "and your files were not changed")
    return conn
