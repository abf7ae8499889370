"""A token-count cache kept on disk and shared by every run and every process.

A batch replays hundreds of sessions that share most of their messages (system prompts, tool
results read twice, every engine × setting of one session), and a user replays the same session
again and again. Tokenising is the largest single cost of a replay (``inspector.bench.host_bench``),
so each distinct message is counted once per tokenizer, ever: the count is stored under the
message's content key.

Storage is one SQLite file in WAL mode under the user's cache folder (``$XDG_CACHE_HOME`` or
``~/.cache``, then ``context-inspector/token-counts.sqlite``): readers never wait for a writer,
and concurrent writers wait their turn (``busy_timeout``). New counts are written in batches in
one transaction each. A count is a pure function of the text, the tokenizer and our counting
rules, so the namespace of every row names the tokenizer and a hash of the counting code: a
change to the rules makes old rows unreachable rather than wrong.

It is only a cache: a folder that cannot be written, a locked or damaged file, or
``CONTEXT_INSPECTOR_TOKEN_CACHE=off`` turn it off for the run (:attr:`TokenCache.problem` says
why) and counting goes on in memory.

Replays run in worker processes (:mod:`inspector.worker`), which may not write it: inside
bubblewrap the cache folder is read-only, and a worker ends with ``os._exit``, before any exit
handler could flush. So the process that starts a worker opens the cache first (its open
connection keeps the WAL's ``-shm`` and ``-wal`` files, which a read-only reader needs) and hands
the worker the path; the worker reads it read-only (:func:`serve_worker`), keeps the counts it
had to make itself, and sends them back with its ``done`` frame (:func:`worker_counts`). The
supervisor writes them in one transaction (:func:`store_worker_counts`), refusing the whole set
unless every entry has the shape our own counting makes: a namespace of one of our tokenizers and
today's rules, a content key of hex digits, a count that is a non-negative integer, and at most
``MAX_WORKER_ENTRIES`` of them. That bounds what a hostile engine, which runs in the worker's
process, can add to the file; it cannot stop one from sending wrong counts for well-formed keys,
which later runs would then read (rows are never overwritten, so a count already stored stays).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import re
import sqlite3
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ENV_VAR = "CONTEXT_INSPECTOR_TOKEN_CACHE"  # a file path, or "off"
FILE_NAME = "token-counts.sqlite"
FLUSH_EVERY = 2048  # pending counts written in one transaction
LOOKUP_CHUNK = 500  # keys per lookup query (SQLite allows 32,766 parameters; 999 before 3.32)
BUSY_TIMEOUT_MS = 30_000
_OFF = frozenset({"off", "0", "false", "no", "none", ""})
MAX_WORKER_ENTRIES = 200_000  # new counts one worker may hand back (a 150 MB session has fewer messages)
MAX_COUNT = 2**31 - 1
# The keys TokenCounter stores: a message's content key (trace.model.message_key, 20 hex digits, or
# counter.content_hash, 24), or a tool list's ("tools:" + 24).
_WORKER_KEY = re.compile(r"(?:tools:)?[0-9a-f]{16,32}")


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/context-inspector``, else ``~/.cache/context-inspector`` (XDG base dirs)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "context-inspector"


def default_path(config: dict[str, Any] | None = None) -> Path | None:
    """Where the cache lives: the environment variable, then ``inspector.token_cache``, then the
    user's cache folder. None when either setting turns it off."""
    env = os.environ.get(ENV_VAR)
    if env is not None:
        return None if env.strip().lower() in _OFF else Path(env).expanduser()
    setting = ((config or {}).get("inspector") or {}).get("token_cache")
    if setting is False or (isinstance(setting, str) and setting.strip().lower() in _OFF):
        return None
    if isinstance(setting, str):
        return Path(setting).expanduser()
    return user_cache_dir() / FILE_NAME


@functools.lru_cache(maxsize=1)
def rules_hash() -> str:
    """A hash of the code that turns a message into a count: rows made by other rules never match."""
    here = Path(__file__).parent
    digest = hashlib.blake2b(digest_size=6)
    for name in ("counter.py", "rough.py", "encodings.py"):
        try:
            digest.update((here / name).read_bytes())
        except OSError:
            digest.update(name.encode())
    return digest.hexdigest()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS counts (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID
"""


class TokenCache:
    """Counts by (namespace, content key) in one SQLite file; one instance per process and path.

    Reads go straight to the file (a primary-key lookup); writes are buffered and flushed in
    batches, at :meth:`flush` and when the process exits. ``read_only`` (a worker's): the file is
    only read, and new counts stay pending (at most ``MAX_WORKER_ENTRIES``) for :meth:`take_new`.
    """

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.problem: str | None = None
        self._pending: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0
        try:
            if read_only:
                conn = sqlite3.connect(self.path.absolute().as_uri() + "?mode=ro", uri=True, isolation_level=None,
                                       timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
                conn.execute("SELECT 1 FROM counts LIMIT 1")  # a file without our table is no cache
                self._conn = conn
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if conn.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
                raise sqlite3.OperationalError("the file system does not support WAL mode")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            self._conn = conn
        except (OSError, sqlite3.Error) as exc:
            self._off(f"token cache {self.path} not used: {exc}")

    @property
    def enabled(self) -> bool:
        return self._conn is not None

    def _off(self, why: str) -> None:
        self.problem = why
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass

    def get(self, namespace: str, key: str) -> int | None:
        pending = self._pending.get((namespace, key))
        if pending is not None:
            return pending
        if self._conn is None:
            return None
        try:
            with self._lock:
                row = self._conn.execute("SELECT n FROM counts WHERE namespace=? AND key=?", (namespace, key)).fetchone()
        except sqlite3.Error as exc:
            self._off(f"token cache {self.path} not used: {exc}")
            return None
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return int(row[0])

    def get_many(self, namespace: str, keys: Iterable[str]) -> dict[str, int]:
        """The stored counts of ``keys`` (those found), in one query per ``LOOKUP_CHUNK`` keys.

        A replay asks for a batch of turns' messages at once (``TokenCounter.recall``): one
        primary-key query per message was a tenth of a cold 1,000-turn replay's time, every one
        of them finding nothing (``inspector.bench.host_bench``).
        """
        found: dict[str, int] = {}
        ask: list[str] = []
        for key in dict.fromkeys(keys):
            pending = self._pending.get((namespace, key))
            if pending is not None:
                found[key] = pending
            else:
                ask.append(key)
        if not ask or self._conn is None:
            return found
        try:
            with self._lock:
                for start in range(0, len(ask), LOOKUP_CHUNK):
                    chunk = ask[start:start + LOOKUP_CHUNK]
                    marks = ",".join("?" * len(chunk))
                    found.update(self._conn.execute(
                        f"SELECT key, n FROM counts WHERE namespace=? AND key IN ({marks})", (namespace, *chunk)))
        except sqlite3.Error as exc:
            self._off(f"token cache {self.path} not used: {exc}")
            return found
        hits = sum(1 for key in ask if key in found)
        self.hits += hits
        self.misses += len(ask) - hits
        return found

    def put(self, namespace: str, key: str, n: int) -> None:
        if self._conn is None:
            return
        with self._lock:  # replays on several threads may share a counter (compare)
            if self.read_only:
                if len(self._pending) < MAX_WORKER_ENTRIES:
                    self._pending[(namespace, key)] = n
                return
            self._pending[(namespace, key)] = n
            full = len(self._pending) >= FLUSH_EVERY
        if full:
            self.flush()

    def put_many(self, namespace: str, items: Iterable[tuple[str, int]]) -> None:
        for key, n in items:
            self.put(namespace, key, n)

    def flush(self) -> None:
        """Write the pending counts in one transaction (a row another process wrote first is kept)."""
        if self.read_only:
            return
        with self._lock:
            pending, self._pending = self._pending, {}
        self.write([(ns, key, n) for (ns, key), n in pending.items()])

    def take_new(self) -> list[tuple[str, str, int]]:
        """A read-only cache's new counts, (namespace, key, count), handed over once."""
        with self._lock:
            pending, self._pending = self._pending, {}
        return [(ns, key, n) for (ns, key), n in pending.items()]

    def write(self, rows: list[tuple[str, str, int]]) -> None:
        """Store ``rows`` in one transaction."""
        if not rows or self._conn is None or self.read_only:
            return
        try:
            with self._lock:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    self._conn.executemany("INSERT OR IGNORE INTO counts(namespace, key, n) VALUES (?, ?, ?)", rows)
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
        except sqlite3.Error as exc:
            self._off(f"token cache {self.path} not used: {exc}")

    def size(self) -> int:
        """Rows on disk (for reports and tests)."""
        if self._conn is None:
            return 0
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM counts").fetchone()[0])

    def close(self) -> None:
        self.flush()
        self._off(self.problem or "closed")


_OPEN: dict[str, TokenCache] = {}
_OPEN_LOCK = threading.Lock()
_ALL: weakref.WeakSet[TokenCache] = weakref.WeakSet()
_IN_WORKER = False  # in a worker process every cache it opens is read-only (serve_worker)


def open_cache(config: dict[str, Any] | None = None) -> TokenCache | None:
    """The process's cache for ``config`` (see :func:`default_path`); None when it is turned off."""
    path = default_path(config)
    if path is None:
        return None
    key = str(path.resolve()) if path.parent.exists() else str(path)
    with _OPEN_LOCK:
        cache = _OPEN.get(key)
        if cache is None:
            cache = _OPEN[key] = TokenCache(path, read_only=_IN_WORKER)
            _ALL.add(cache)
    return cache


def serve_worker(path: str | None) -> None:
    """In a worker: the cache is the file its supervisor opened (None: no cache), read-only."""
    global _IN_WORKER
    os.environ[ENV_VAR] = path if isinstance(path, str) and path else "off"
    _IN_WORKER = True


def worker_counts() -> dict[str, Any]:
    """In a worker: the counts it made that the cache lacked, by namespace, for the ``done`` frame."""
    entries: dict[str, list[list[Any]]] = {}
    hits = misses = 0
    with _OPEN_LOCK:
        caches = list(_OPEN.values())
    for cache in caches:
        hits, misses = hits + cache.hits, misses + cache.misses
        for ns, key, n in cache.take_new():
            entries.setdefault(ns, []).append([key, n])
    return {"entries": entries, "hits": hits, "misses": misses}


def _worker_rows(report: Any) -> list[tuple[str, str, int]]:
    """The rows of a worker's report, or ValueError saying why the whole report is refused."""
    from inspector.tokens.encodings import SPECS

    entries = report.get("entries") if isinstance(report, dict) else None
    if not isinstance(entries, dict):
        raise ValueError("not a report of new counts")
    namespaces = {f"{name}:{rules_hash()}" for name in SPECS}
    rows: list[tuple[str, str, int]] = []
    for ns, items in entries.items():
        if ns not in namespaces:
            raise ValueError(f"unknown namespace {str(ns)[:60]!r}")
        if not isinstance(items, list) or len(rows) + len(items) > MAX_WORKER_ENTRIES:
            raise ValueError(f"more than {MAX_WORKER_ENTRIES:,} entries, or not a list")
        for item in items:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                    and _WORKER_KEY.fullmatch(item[0]) and type(item[1]) is int and 0 <= item[1] <= MAX_COUNT):
                raise ValueError(f"a malformed entry {str(item)[:80]}")
            rows.append((ns, item[0], item[1]))
    return rows


def store_worker_counts(cache: TokenCache | None, report: Any) -> dict[str, Any]:
    """In the supervisor: write a worker's new counts to ``cache``; what happened, for the outcome."""
    out: dict[str, Any] = {}
    if isinstance(report, dict):
        out = {k: report[k] for k in ("hits", "misses") if type(report.get(k)) is int}
    if cache is None or not cache.enabled or report is None:
        return out
    try:
        rows = _worker_rows(report)
    except ValueError as exc:
        out["refused"] = str(exc)
        return out
    cache.write(rows)
    out["new"] = len(rows)
    if cache.problem:
        out["problem"] = cache.problem
    return out


def forget_open_caches() -> None:
    """Flush and close every cache this process opened (tests switch paths between cases)."""
    with _OPEN_LOCK:
        for cache in _OPEN.values():
            cache.close()
        _OPEN.clear()


@atexit.register
def _flush_all() -> None:
    for cache in list(_ALL):
        cache.flush()
