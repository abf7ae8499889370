"""Opening SQLite files the user owns for reading, leaving no trace on disk."""

from __future__ import annotations

from pathlib import Path


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
