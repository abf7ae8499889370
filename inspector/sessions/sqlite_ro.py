"""Opening SQLite files the user owns for reading: one consistent snapshot, the database never written.

Hermes keeps writing its ``state.db`` while the inspector reads it (``follow``, the window's
reload), and checkpoints move pages from the ``-wal`` file into the database meanwhile. So a
read is always an ordinary read-only connection (``mode=ro``: SQLite takes its shared locks and
follows the write-ahead log) and every query of one load runs inside one read transaction
(``BEGIN`` … ``COMMIT``, see ``inspector/sessions/readers/hermes_db.py``): a writer committing
or checkpointing during the load cannot tear a question from its answer. ``immutable=1`` (no
locks at all) is never used on a file another process may write: with it, a checkpointing
writer made loads see half a transaction, and even "database disk image is malformed".

What a read does beside the database (README, "Reading a Hermes state.db"): SQLite needs the
``-shm`` index of a WAL database to read it consistently, so reading a WAL database that no
process has open creates an empty ``-wal`` and a 32 KB ``-shm`` beside it, and leaves them (a
read-only connection may not delete them; Hermes reuses them on its next start). The database
file itself is never written.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

# What SQLite says when reading would first need a write: a hot rollback journal left by a
# writer that died mid-transaction, or a WAL whose index must be rebuilt; or, in a folder we
# may not write, that the -shm index cannot be made.
_NEEDS_WRITE = ("readonly database", "readonly_rollback", "readonly_recovery", "unable to open database file")


def readonly_uri(path: str | Path) -> str:
    """The SQLite URI that reads ``path`` and never writes it: ``mode=ro``, never ``immutable``."""
    return Path(path).resolve().as_uri() + "?mode=ro"


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
