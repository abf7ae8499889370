"""A state.db read is one consistent snapshot, even while Hermes writes and checkpoints it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from inspector.sessions import ReaderError, load_session
from inspector.sessions.sqlite_ro import readonly_uri
from tests.sessions import hermes_db_fixtures as fx

REPO = Path(__file__).resolve().parents[2]

# Hermes' own pattern, sped up: each turn is one transaction holding the question and its answer;
# the connection checkpoints the log into the database now and then, and is closed and reopened
# (the last connection to close deletes the -wal, the state in which reads used to go lock-free).
WRITER = textwrap.dedent("""
    import sqlite3, sys, time
    path, turns = sys.argv[1], int(sys.argv[2])
    conn = None
    deadline = time.monotonic() + 20
    for i in range(turns):
        if time.monotonic() > deadline:
            break
        if conn is None:
            conn = sqlite3.connect(path, timeout=10, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'user', ?, ?)",
                     (f"question {i}", 1_760_000_200.0 + i))
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'assistant', ?, ?)",
                     (f"answer {i} " + "x" * 3000, 1_760_000_200.5 + i))
        conn.execute("COMMIT")
        if i % 7 == 3:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if i % 11 == 5:
            conn.close()
            conn = None
    if conn is not None:
        conn.close()
""")


def test_the_uri_is_read_only_and_never_immutable(tmp_path: Path):
    conn = fx.create(tmp_path / "state.db")
    conn.close()
    uri = readonly_uri(tmp_path / "state.db")
    assert uri.endswith("?mode=ro") and "immutable" not in uri


def test_no_load_sees_a_question_without_its_answer_while_a_writer_checkpoints(tmp_path: Path):
    path = tmp_path / "state.db"
    conn = fx.create(path)
    fx.add_session(conn, "s1", system_prompt="sys")
    fx.add_message(conn, "s1", "user", "question start", timestamp=1_760_000_100.0)
    fx.add_message(conn, "s1", "assistant", "answer start", timestamp=1_760_000_100.5)
    conn.commit()
    conn.close()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "3000"], cwd=REPO)
    loads, torn, errors, sizes = 0, [], [], set()
    try:
        started = time.monotonic()
        while writer.poll() is None and loads < 150 and time.monotonic() - started < 15:
            try:
                session = load_session(str(path))
            except ReaderError as exc:
                errors.append(str(exc))
                continue
            loads += 1
            rows = [m for m in session.messages if m["role"] in ("user", "assistant")]
            sizes.add(len(rows))
            for k in range(0, len(rows), 2):
                pair = rows[k:k + 2]
                if len(pair) != 2 or pair[0]["role"] != "user" or pair[1]["role"] != "assistant" \
                        or pair[0]["content"].split()[1] != pair[1]["content"].split()[1]:
                    torn.append((loads, k, [m["content"][:20] for m in pair]))
                    break
    finally:
        writer.kill() if writer.poll() is None else None
        writer.wait(timeout=10)
    assert loads >= 20, f"only {loads} loads ran while the writer wrote"
    assert len(sizes) > 3, "the loads saw the session grow (the writer really ran meanwhile)"
    assert errors == [] and torn == []
