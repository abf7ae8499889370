"""The append-only SQLite store behind one lcm session.

Why SQLite: the store must survive the process (a resumed session can still expand nodes made
yesterday), be searchable without loading everything, and be written from whichever pool thread
the host runs a compression on. Each thread gets its own connection (sqlite3 connections are
not meant to be shared across threads); writes are single transactions so a failed or abandoned
compression leaves nothing half-written.

Messages are immutable: triggers refuse UPDATE and DELETE, so "lossless" is enforced by the
database rather than promised by the code.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .layout import digest, message_text, rough_tokens

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY,
    digest TEXT NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    text TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    stored_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_digest ON messages (digest, seq);
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY,
    level INTEGER NOT NULL,
    summary TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    sources_key TEXT NOT NULL UNIQUE,
    method TEXT NOT NULL,
    focus TEXT,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS node_sources (
    node_id TEXT NOT NULL,
    ord INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('message', 'node')),
    ref TEXT NOT NULL,
    PRIMARY KEY (node_id, ord)
);
CREATE INDEX IF NOT EXISTS node_sources_ref ON node_sources (kind, ref);
CREATE TRIGGER IF NOT EXISTS messages_no_update BEFORE UPDATE ON messages
BEGIN SELECT RAISE(ABORT, 'lcm messages are immutable'); END;
CREATE TRIGGER IF NOT EXISTS messages_no_delete BEFORE DELETE ON messages
BEGIN SELECT RAISE(ABORT, 'lcm messages are immutable'); END;
"""


@dataclass
class Node:
    """A summary node: what it says and exactly what it was made from."""

    node_id: str
    level: int
    summary: str
    first_seq: int
    last_seq: int
    message_count: int
    sources: list[tuple[str, str]]  # (kind, ref) in order; kind is "message" or "node"
    method: str = "fallback"
    focus: str | None = None
    tokens: int = 0

    @property
    def sources_key(self) -> str:
        return f"{self.level}|" + ",".join(f"{k[0]}{r}" for k, r in self.sources)


class LcmStore:
    """One session's messages and summary DAG in ``<home>/lcm/<session>.db``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        # Autocommit connection: executescript runs the idempotent DDL outside any transaction.
        self._conn().executescript(SCHEMA)

    # -- connections ---------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # check_same_thread=False only so close() may run from another thread at session
            # end; during normal use a connection is touched by its own thread alone.
            conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any error: all or nothing."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            try:
                conn.close()
            except sqlite3.Error:
                pass
        self._local = threading.local()

    # -- messages --------------------------------------------------------------------------
    def ingest(self, messages: list[dict[str, Any]], parsed_nodes: list[Any], start: int = 0,
               pointer: int = 0, prior: list[int | None] | None = None) -> tuple[list[int | None], int, int]:
        """Store every raw message not stored yet; return (seq per position, inserted, pointer).

        A transcript's raw messages are a chronological subsequence of the history, so each one
        is matched against stored rows at or after a forward pointer; summary nodes move the
        pointer past the span they cover. That keeps a repeated text ("run the tests again")
        from being mistaken for an older copy. System prompts are matched anywhere and do not
        move the pointer, since the host may rebuild the prompt after a compaction.
        """
        seqs: list[int | None] = list(prior or [])[:start]
        inserted = 0
        now = time.time()
        with self.transaction() as conn:
            for i in range(start, len(messages)):
                msg = messages[i]
                node = parsed_nodes[i]
                if node is not None:
                    pointer = max(pointer, node.last_seq + 1)
                    seqs.append(None)
                    continue
                d = digest(msg)
                if msg.get("role") == "system":
                    row = conn.execute(
                        "SELECT seq FROM messages WHERE digest = ? ORDER BY seq LIMIT 1", (d,)
                    ).fetchone()
                    if row is None:
                        seq = self._insert(conn, msg, d, now)
                        inserted += 1
                    else:
                        seq = row[0]
                    seqs.append(seq)
                    continue
                row = conn.execute(
                    "SELECT seq FROM messages WHERE digest = ? AND seq >= ? ORDER BY seq LIMIT 1", (d, pointer)
                ).fetchone()
                if row is None:
                    seq = self._insert(conn, msg, d, now)
                    inserted += 1
                else:
                    seq = row[0]
                seqs.append(seq)
                pointer = seq + 1
        return seqs, inserted, pointer

    @staticmethod
    def _insert(conn: sqlite3.Connection, msg: dict[str, Any], d: str, now: float) -> int:
        row = conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM messages").fetchone()
        seq = int(row[0])
        body = json.dumps(msg, ensure_ascii=False, default=str)
        conn.execute(
            "INSERT INTO messages (seq, digest, role, body, text, tokens, stored_at) VALUES (?,?,?,?,?,?,?)",
            (seq, d, str(msg.get("role", "")), body, message_text(msg), rough_tokens(msg), now),
        )
        return seq

    def message(self, seq: int) -> dict[str, Any] | None:
        row = self._conn().execute("SELECT body FROM messages WHERE seq = ?", (seq,)).fetchone()
        return json.loads(row[0]) if row else None

    def messages(self, seqs: list[int]) -> list[dict[str, Any]]:
        out = []
        conn = self._conn()
        for seq in seqs:
            row = conn.execute("SELECT body FROM messages WHERE seq = ?", (seq,)).fetchone()
            if row:
                out.append(json.loads(row[0]))
        return out

    def message_count(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM messages").fetchone()[0])

    def message_tokens(self, seqs: list[int]) -> int:
        conn = self._conn()
        total = 0
        for seq in seqs:
            row = conn.execute("SELECT tokens FROM messages WHERE seq = ?", (seq,)).fetchone()
            total += int(row[0]) if row else 0
        return total

    # -- nodes -----------------------------------------------------------------------------
    def find_node_by_sources(self, sources_key: str) -> Node | None:
        row = self._conn().execute("SELECT id FROM nodes WHERE sources_key = ?", (sources_key,)).fetchone()
        return self.node(row[0]) if row else None

    def next_node_number(self) -> int:
        row = self._conn().execute("SELECT COUNT(*) FROM nodes").fetchone()
        return int(row[0]) + 1

    def node(self, node_id: str) -> Node | None:
        conn = self._conn()
        row = conn.execute(
            "SELECT id, level, summary, first_seq, last_seq, message_count, method, focus, tokens"
            " FROM nodes WHERE id = ?",
            (node_id,),
        ).fetchone()
        if row is None:
            return None
        sources = [
            (kind, ref)
            for kind, ref in conn.execute(
                "SELECT kind, ref FROM node_sources WHERE node_id = ? ORDER BY ord", (node_id,)
            ).fetchall()
        ]
        return Node(
            node_id=row[0], level=row[1], summary=row[2], first_seq=row[3], last_seq=row[4],
            message_count=row[5], sources=sources, method=row[6], focus=row[7], tokens=row[8],
        )

    def all_nodes(self) -> list[Node]:
        ids = [r[0] for r in self._conn().execute("SELECT id FROM nodes ORDER BY created_at, id").fetchall()]
        return [n for n in (self.node(i) for i in ids) if n is not None]

    def parents_of(self, kind: str, ref: str) -> list[str]:
        rows = self._conn().execute(
            "SELECT node_id FROM node_sources WHERE kind = ? AND ref = ? ORDER BY node_id", (kind, ref)
        ).fetchall()
        return [r[0] for r in rows]

    def commit_nodes(self, nodes: list[Node]) -> None:
        """Publish new nodes in one transaction; a node whose sources already exist is skipped."""
        if not nodes:
            return
        now = time.time()
        with self.transaction() as conn:
            for offset, node in enumerate(nodes):
                exists = conn.execute("SELECT 1 FROM nodes WHERE id = ? OR sources_key = ?",
                                      (node.node_id, node.sources_key)).fetchone()
                if exists:
                    continue
                conn.execute(
                    "INSERT INTO nodes (id, level, summary, tokens, first_seq, last_seq, message_count,"
                    " sources_key, method, focus, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (node.node_id, node.level, node.summary, node.tokens, node.first_seq, node.last_seq,
                     node.message_count, node.sources_key, node.method, node.focus, now + offset * 1e-6),
                )
                conn.executemany(
                    "INSERT INTO node_sources (node_id, ord, kind, ref) VALUES (?,?,?,?)",
                    [(node.node_id, i, kind, ref) for i, (kind, ref) in enumerate(node.sources)],
                )

    def leaf_seqs(self, node_id: str) -> list[int]:
        """Every message seq under a node, in order (recursing through condensed nodes)."""
        out: list[int] = []
        seen: set[str] = set()

        def walk(nid: str) -> None:
            if nid in seen:  # a DAG, not a tree: never emit a shared child twice
                return
            seen.add(nid)
            node = self.node(nid)
            if node is None:
                return
            for kind, ref in node.sources:
                if kind == "message":
                    out.append(int(ref))
                else:
                    walk(ref)

        walk(node_id)
        return out

    # -- search ----------------------------------------------------------------------------
    def grep_messages(self, pattern: str, regex: bool, limit: int) -> tuple[list[tuple[int, str, str]], int]:
        """(seq, role, text) of matching messages, oldest first, and the total match count."""
        conn = self._conn()
        if regex:
            rx = re.compile(pattern, re.IGNORECASE)
            hits = [(s, r, t) for s, r, t in conn.execute("SELECT seq, role, text FROM messages ORDER BY seq")
                    if rx.search(t)]
        else:
            like = "%" + pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            hits = conn.execute(
                "SELECT seq, role, text FROM messages WHERE text LIKE ? ESCAPE '\\' ORDER BY seq", (like,)
            ).fetchall()
            # LIKE folds ASCII case only; re-check so non-ASCII text behaves the same way.
            low = pattern.lower()
            hits = [h for h in hits if low in h[2].lower()]
        return [tuple(h) for h in hits[:limit]], len(hits)

    def grep_nodes(self, pattern: str, regex: bool, limit: int) -> tuple[list[tuple[str, int, str]], int]:
        conn = self._conn()
        rows = conn.execute("SELECT id, level, summary FROM nodes ORDER BY created_at, id").fetchall()
        if regex:
            rx = re.compile(pattern, re.IGNORECASE)
            hits = [r for r in rows if rx.search(r[2])]
        else:
            low = pattern.lower()
            hits = [r for r in rows if low in r[2].lower()]
        return [tuple(h) for h in hits[:limit]], len(hits)
