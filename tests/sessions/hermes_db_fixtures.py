"""Build Hermes ``state.db`` files from the documented schema (docs/formats.md §2.1).

No real state.db can be shipped (they hold personal data), so tests write their own with the
same DDL Hermes 0.19.0 uses for the columns the reader touches, in WAL mode like Hermes.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

SESSIONS_DDL = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, session_key TEXT, chat_id TEXT,
    chat_type TEXT, thread_id TEXT, display_name TEXT, origin_json TEXT, expiry_finalized INTEGER,
    model TEXT, model_config TEXT, system_prompt TEXT, parent_session_id TEXT,
    started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0, cwd TEXT, git_branch TEXT, git_repo_root TEXT,
    billing_provider TEXT, billing_base_url TEXT, billing_mode TEXT, estimated_cost_usd REAL,
    actual_cost_usd REAL, cost_status TEXT, cost_source TEXT, pricing_version TEXT, title TEXT,
    api_call_count INTEGER DEFAULT 0, handoff_state TEXT, handoff_platform TEXT, handoff_error TEXT,
    compression_failure_cooldown_until REAL, compression_failure_error TEXT,
    compression_fallback_streak INTEGER DEFAULT 0, profile_name TEXT, rewind_count INTEGER DEFAULT 0,
    archived INTEGER DEFAULT 0
)"""

MESSAGES_DDL = """
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    effect_disposition TEXT, timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT,
    reasoning TEXT, reasoning_content TEXT, reasoning_details TEXT, codex_reasoning_items TEXT,
    codex_message_items TEXT, platform_message_id TEXT, observed INTEGER DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0, api_content TEXT
)"""

# An old schema: before active/compacted/api_content and the reasoning/codex columns existed.
LEGACY_SESSIONS_DDL = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT, system_prompt TEXT,
    parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
    message_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0
)"""
LEGACY_MESSAGES_DDL = """
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
    content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
    token_count INTEGER, finish_reason TEXT
)"""

SUMMARY_PREFIX = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below."


def create(path: Path, *, legacy: bool = False, wal: bool = True) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(LEGACY_SESSIONS_DDL if legacy else SESSIONS_DDL)
    conn.execute(LEGACY_MESSAGES_DDL if legacy else MESSAGES_DDL)
    conn.execute("CREATE TABLE schema_version (version INTEGER)")
    conn.execute("INSERT INTO schema_version VALUES (?)", (5 if legacy else 22,))
    conn.commit()
    return conn


def add_session(conn: sqlite3.Connection, sid: str, **cols: Any) -> None:
    row = {"id": sid, "source": "cli", "started_at": 1_760_000_000.0, **cols}
    names = ", ".join(row)
    conn.execute(f"INSERT INTO sessions ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values()))


def add_message(conn: sqlite3.Connection, sid: str, role: str, content: Any = None, **cols: Any) -> int:
    if isinstance(cols.get("tool_calls"), list):
        cols["tool_calls"] = json.dumps(cols["tool_calls"])
    if isinstance(content, (list, dict)):
        content = "\x00json:" + json.dumps(content)
    row = {"session_id": sid, "role": role, "content": content, "timestamp": cols.pop("timestamp", 1_760_000_100.0), **cols}
    names = ", ".join(row)
    cur = conn.execute(f"INSERT INTO messages ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    return int(cur.lastrowid)


def tool_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "call_id": call_id,
        "response_item_id": f"fc_{call_id}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def plain_exchange(conn: sqlite3.Connection, sid: str, t0: float, prompt: str, n: int = 0) -> None:
    """user → assistant(tool call) → tool → assistant, the shape of one Hermes turn."""
    add_message(conn, sid, "user", prompt, timestamp=t0)
    add_message(
        conn, sid, "assistant", None, timestamp=t0 + 1, finish_reason="tool_calls",
        tool_calls=[tool_call(f"call_{sid}_{n}", "read_file", {"path": f"f{n}.py"})],
    )
    add_message(conn, sid, "tool", f"contents of f{n}.py", tool_call_id=f"call_{sid}_{n}", tool_name="read_file", timestamp=t0 + 2)
    add_message(conn, sid, "assistant", f"Done with {prompt}", timestamp=t0 + 3, finish_reason="stop", reasoning="thinking about it")
