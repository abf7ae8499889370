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
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import sqlite3
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ENV_VAR = "CONTEXT_INSPECTOR_TOKEN_CACHE"  # a file path, or "off"
FILE_NAME = "token-counts.sqlite"
FLUSH_EVERY = 2048  # pending counts written in one transaction
BUSY_TIMEOUT_MS = 30_000
_OFF = frozenset({"off", "0", "false", "no", "none", ""})


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
    batches, at :meth:`flush` and when the process exits.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.problem: str | None = None
        self._pending: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0
        try:
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

    def put(self, namespace: str, key: str, n: int) -> None:
        if self._conn is None:
            return
        with self._lock:  # replays on several threads may share a counter (compare)
            self._pending[(namespace, key)] = n
            full = len(self._pending) >= FLUSH_EVERY
        if full:
            self.flush()

    def put_many(self, namespace: str, items: Iterable[tuple[str, int]]) -> None:
        for key, n in items:
            self.put(namespace, key, n)

    def flush(self) -> None:
        """Write the pending counts in one transaction (a row another process wrote first is kept)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending or self._conn is None:
            return
        rows = [(ns, key, n) for (ns, key), n in pending.items()]
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


def open_cache(config: dict[str, Any] | None = None) -> TokenCache | None:
    """The process's cache for ``config`` (see :func:`default_path`); None when it is turned off."""
    path = default_path(config)
    if path is None:
        return None
    key = str(path.resolve()) if path.parent.exists() else str(path)
    with _OPEN_LOCK:
        cache = _OPEN.get(key)
        if cache is None:
            cache = _OPEN[key] = TokenCache(path)
            _ALL.add(cache)
    return cache


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
