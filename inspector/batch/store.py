"""Batch results on disk, by task key: a rerun reuses them and an interrupted batch resumes.

One SQLite file (``results.sqlite``, WAL mode): each result is committed the moment it arrives,
in its own transaction, so a batch stopped at any point — Ctrl+C, a crash, a power cut — keeps
every result it had and never a half-written one. Results are JSON text (never pickle). A task
that failed with an error is run again next time (the cause may be fixed: a missing file, a
plugin); one that ran, even if the engine stopped it, is reused.

The store also remembers each session file's content hash by (path, session, size, mtime), so a
rerun does not read every transcript again to find out that nothing changed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

FILE_NAME = "results.sqlite"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, result TEXT NOT NULL, written REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS session_hashes (ident TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
    "hash TEXT NOT NULL)",
)


class StoreError(Exception):
    """The result store cannot be opened (said to the user with the path)."""


class ResultStore:
    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.path = self.folder / FILE_NAME
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
            self._conn.execute("PRAGMA busy_timeout=30000")
            self._conn.execute("PRAGMA journal_mode=WAL")
            for statement in _SCHEMA:
                self._conn.execute(statement)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self.path}: cannot open the batch result store: {exc}") from None

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """The stored, reusable results among ``keys``."""
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for key, text in self._conn.execute(f"SELECT key, result FROM results WHERE key IN ({marks})", chunk):
                try:
                    result = json.loads(text)
                except ValueError:
                    continue  # unreadable: run the task again
                if isinstance(result, dict) and result.get("error") is None:
                    out[key] = result
        return out

    def put(self, result: dict[str, Any]) -> None:
        self._conn.execute("INSERT OR REPLACE INTO results(key, result, written) VALUES (?, ?, ?)",
                           (result["key"], json.dumps(result, sort_keys=True, default=str), time.time()))

    def count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM results").fetchone()[0])

    # -- session content hashes, by file identity -------------------------------------------
    @staticmethod
    def _file_ident(path: str, session_id: str | None) -> tuple[str, int, int] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return os.path.abspath(path) + "#" + (session_id or ""), st.st_size, st.st_mtime_ns

    def session_hash(self, path: str, session_id: str | None) -> str | None:
        ident = self._file_ident(path, session_id)
        if ident is None:
            return None
        row = self._conn.execute("SELECT size, mtime_ns, hash FROM session_hashes WHERE ident=?", (ident[0],)).fetchone()
        if row is None or (row[0], row[1]) != (ident[1], ident[2]):
            return None
        return str(row[2])

    def remember_session_hash(self, path: str, session_id: str | None, digest: str) -> None:
        ident = self._file_ident(path, session_id)
        if ident is not None:
            self._conn.execute("INSERT OR REPLACE INTO session_hashes(ident, size, mtime_ns, hash) VALUES (?, ?, ?, ?)",
                               (*ident, digest))

    def close(self) -> None:
        self._conn.close()


def read_results(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every result in a batch folder, read-only: the newest per (session, engine, setting).

    For the window's Corpus view: a folder used by several batches holds their results side by
    side, and an edited session's old results stay in the store under their old key.
    """
    path = Path(folder) / FILE_NAME
    if not path.is_file():
        raise StoreError(f"{folder}: no batch results here (run `context-inspector batch … --out {folder}`)")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            rows = conn.execute("SELECT result FROM results ORDER BY written, rowid").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot read the batch results: {exc}") from None
    newest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for (text,) in rows:
        try:
            result = json.loads(text)
        except ValueError:
            continue
        if isinstance(result, dict) and {"session", "engine", "setting"} <= result.keys():
            newest.pop((result["session"], result["engine"], result["setting"]), None)
            newest[(result["session"], result["engine"], result["setting"])] = result
    return sorted(newest.values(), key=lambda r: (r["session"], r["engine"], r["setting"]))
