"""In-place compactions by plugin engines, whose summaries need not carry Hermes' summary prefix.

The shapes are those the real Hermes 0.19.0 agent writes (``tests/differential/test_agent_state_db.py``
checks them against it): the summarised rows archived (``active=0, compacted=1``), then the
engine's list inserted in one write — a summary, copies of the last rows kept, and for a
turn-start compaction the turn's user row — then the rows of later calls.
"""

from __future__ import annotations

from pathlib import Path

from inspector.sessions import load_session
from inspector.sessions.model import is_replayable

from .hermes_db_fixtures import add_message, add_session, create

T0 = 1_760_000_000.0


def _archived(conn, sid, rows):
    for i, (role, content) in enumerate(rows):
        add_message(conn, sid, role, content, timestamp=T0 + i, active=0, compacted=1,
                    finish_reason="stop" if role == "assistant" else None)


def _replayed(session):
    return [(m["role"], m["content"]) for m in session.messages[1:] if is_replayable(m)]


def test_a_summary_followed_by_copies_is_not_a_new_turn(tmp_path: Path):
    path = tmp_path / "state.db"
    conn = create(path)
    add_session(conn, "s1", system_prompt="sys")
    _archived(conn, "s1", [("user", "hello"), ("assistant", "first"), ("user", "go on"), ("assistant", "second"),
                           ("user", "and now?")])
    burst = T0 + 10
    add_message(conn, "s1", "user", "Summary of the earlier turns (compaction 1).", timestamp=burst)
    add_message(conn, "s1", "assistant", "second", timestamp=burst + 1e-6, finish_reason="stop")
    add_message(conn, "s1", "user", "and now?", timestamp=burst + 2e-6)
    add_message(conn, "s1", "assistant", "fine", timestamp=burst + 5, finish_reason="stop")
    conn.commit()
    session = load_session(str(path))
    assert len(session.turns) == 3 and len(session.compactions) == 1
    assert _replayed(session) == [("user", "hello"), ("assistant", "first"), ("user", "go on"),
                                  ("assistant", "second"), ("user", "and now?"), ("assistant", "fine")]


def test_a_turn_start_summary_written_with_the_turns_user_row_is_not_a_reply(tmp_path: Path):
    path = tmp_path / "state.db"
    conn = create(path)
    add_session(conn, "s1", system_prompt="sys")
    _archived(conn, "s1", [("user", "look things up"), ("assistant", "found it")])
    burst = T0 + 10
    add_message(conn, "s1", "assistant", "Summary of the earlier turns (compaction 1).", timestamp=burst)
    add_message(conn, "s1", "user", "thanks", timestamp=burst + 1e-6)
    add_message(conn, "s1", "assistant", "ok", timestamp=burst + 3, finish_reason="stop")
    conn.commit()
    session = load_session(str(path))
    assert len(session.turns) == 2
    assert _replayed(session) == [("user", "look things up"), ("assistant", "found it"), ("user", "thanks"),
                                  ("assistant", "ok")]


def test_a_truncating_engines_new_user_row_is_kept(tmp_path: Path):
    """No summary at all: the first new row is the turn's user message, written alone, and stays conversation."""
    path = tmp_path / "state.db"
    conn = create(path)
    add_session(conn, "s1", system_prompt="sys")
    _archived(conn, "s1", [("user", "one"), ("assistant", "a"), ("user", "two"), ("assistant", "b")])
    add_message(conn, "s1", "assistant", "b", timestamp=T0 + 10, finish_reason="stop")  # the kept tail, copied
    add_message(conn, "s1", "user", "three", timestamp=T0 + 10 + 1e-6)
    add_message(conn, "s1", "assistant", "c", timestamp=T0 + 14, finish_reason="stop")
    conn.commit()
    session = load_session(str(path))
    assert ("user", "three") in _replayed(session) and len(session.turns) == 3
