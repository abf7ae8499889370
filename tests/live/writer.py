"""A separate process that writes a session while the inspector follows it.

    python writer.py jsonl OUT.jsonl TURNS PAUSE RESULT.json
    python writer.py db    STATE.db  TURNS PAUSE RESULT.json

Each turn is a user message, an assistant tool call, its tool result and a final answer,
written one message at a time (JSONL lines in two halves, flushed in between, like a writer
caught mid-line; database rows one per transaction, as Hermes flushes them). The database uses
a Hermes-like subset of the state.db schema (docs/formats.md §2.1) in WAL mode, and the writer uses
no busy timeout at all: if a reader ever held a lock that blocks it, a write fails and the
failure is recorded in RESULT.json for the test to see.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time

STEP = 0.03  # between messages of one turn

SCHEMA = [
    "PRAGMA journal_mode=WAL",
    """CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT, model_config TEXT,
        system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
        message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0,
        output_tokens INTEGER DEFAULT 0, cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
        reasoning_tokens INTEGER DEFAULT 0, title TEXT, api_call_count INTEGER DEFAULT 0)""",
    """CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
        role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
        token_count INTEGER, finish_reason TEXT, reasoning TEXT, observed INTEGER DEFAULT 0,
        active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0, api_content TEXT)""",
    "CREATE INDEX idx_messages_session_active ON messages(session_id, active, timestamp)",
    "CREATE TABLE schema_version (version INTEGER)",
    "INSERT INTO schema_version VALUES (22)",
]
SESSION_ID = "20260101_120000_a1b2c3"


def turn_messages(k: int) -> list[dict]:
    call_id = f"call_{k}"
    return [
        {"role": "user", "content": f"Question {k}: what is in file_{k}.txt?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"file_{k}.txt"})}}]},
        {"role": "tool", "tool_call_id": call_id, "name": "read_file", "content": f"contents of file {k}\n" * 20},
        {"role": "assistant", "content": f"Answer {k}: file_{k}.txt holds twenty lines."},
    ]


def write_jsonl(path: str, turns: int, pause: float) -> dict:
    lines = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"role": "system", "content": "You are a file assistant."}) + "\n")
        fh.flush()
        for k in range(turns):
            for msg in turn_messages(k):
                line = json.dumps(dict(msg, timestamp=time.time())) + "\n"
                half = len(line) // 2
                fh.write(line[:half])
                fh.flush()
                time.sleep(STEP / 2)
                fh.write(line[half:])
                fh.flush()
                lines += 1
                time.sleep(STEP / 2)
            time.sleep(pause)
    return {"commits": lines, "errors": []}


def write_db(path: str, turns: int, pause: float) -> dict:
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)  # no busy wait: a blocked write fails
    for stmt in SCHEMA:
        conn.execute(stmt)
    conn.execute("INSERT INTO sessions (id, source, model, system_prompt, started_at) VALUES (?, 'cli', ?, ?, ?)",
                 (SESSION_ID, "test/model", "You are a file assistant.", time.time()))
    commits, errors = 0, []
    for k in range(turns):
        for msg in turn_messages(k):
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(
                    "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp,"
                    " finish_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (SESSION_ID, msg["role"], msg.get("content"), msg.get("tool_call_id"),
                     json.dumps(msg["tool_calls"]) if msg.get("tool_calls") else None, msg.get("name"), time.time(),
                     ("tool_calls" if msg.get("tool_calls") else "stop") if msg["role"] == "assistant" else None),
                )
                conn.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (SESSION_ID,))
                conn.execute("COMMIT")
                commits += 1
            except sqlite3.Error as exc:
                errors.append(f"turn {k} {msg['role']}: {exc}")
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            time.sleep(STEP)
        time.sleep(pause)
    conn.close()
    return {"commits": commits, "errors": errors}


def main() -> int:
    mode, path, turns, pause, result = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    out = write_jsonl(path, turns, pause) if mode == "jsonl" else write_db(path, turns, pause)
    with open(result, "w", encoding="utf-8") as fh:
        json.dump(out, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
