"""Stand-in for Hermes' ``plugins.plugin_storage``: per-plugin data under the run's HERMES_HOME.

``plugin_data_dir(name)`` is ``<home>/plugin-data/<name>/`` with ``home`` from
``get_hermes_home()``, resolved on every call: during a replay that is the replay's sandbox,
so what a plugin keeps there is listed with the sandbox's files and never reaches the user's
real ``~/.hermes``.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

# The plugin-name shape Hermes accepts: no path separators, no traversal.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _checked_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise ValueError(f"invalid plugin name for storage: {name!r}")
    return name


def plugin_data_dir(name: str) -> Path:
    """``<home>/plugin-data/<name>/``, created if missing."""
    from inspector.engines.compat.state import active_home

    root = active_home() / "plugin-data" / _checked_name(name)
    root.mkdir(parents=True, exist_ok=True)
    return root


def plugin_db(name: str, filename: str = "data.db") -> sqlite3.Connection:
    """A SQLite connection to ``<data dir>/<filename>`` (foreign keys on, WAL where the disk allows it,
    usable from any thread); the caller owns transactions and closing."""
    if not isinstance(filename, str) or not filename or Path(filename).name != filename:
        raise ValueError(f"invalid plugin db filename: {filename!r}")
    conn = sqlite3.connect(str(plugin_data_dir(name) / filename), check_same_thread=False)
    conn.execute("PRAGMA foreign_keys = ON")
    try:
        conn.execute("PRAGMA journal_mode = WAL")
    except sqlite3.DatabaseError:
        pass  # some filesystems refuse WAL; SQLite keeps its default journal, as Hermes' helper falls back
    return conn


__all__ = ["plugin_data_dir", "plugin_db"]
