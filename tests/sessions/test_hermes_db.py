"""Hermes state.db: every documented shape, read strictly read-only (docs/formats.md §2.1, §8.3)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from inspector.sessions import ReaderError, list_sessions, load_session
from inspector.sessions.detect import detect_format

from . import hermes_db_fixtures as fx

T0 = 1_760_000_000.0


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _flags(msg):
    return msg.get("x_flags", {})


@pytest.fixture
def plain_db(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    conn = fx.create(path)
    fx.add_session(
        conn, "20250101_120000_abc123", system_prompt="You are Hermes.", model="anthropic/claude-sonnet-4.5",
        title="Fix the parser", input_tokens=1200, output_tokens=300, cache_read_tokens=5000, cache_write_tokens=800,
        api_call_count=4, cwd="/work/project",
    )
    fx.plain_exchange(conn, "20250101_120000_abc123", T0 + 10, "Read f0.py", 0)
    fx.plain_exchange(conn, "20250101_120000_abc123", T0 + 20, "Now f1.py", 1)
    conn.commit()
    conn.close()
    return path


def test_a_plain_session_maps_rows_onto_openai_messages(plain_db: Path):
    s = load_session(str(plain_db))
    assert detect_format(plain_db) == "hermes-db"
    assert s.source_format == "hermes-db"
    assert s.messages[0] == {"role": "system", "content": "You are Hermes.", "x_origin": s.messages[0]["x_origin"]}
    assert [m["role"] for m in s.messages[1:]] == ["user", "assistant", "tool", "assistant"] * 2
    call = s.messages[2]["tool_calls"][0]
    assert set(call) == {"id", "type", "function"}, "tool calls are reduced to the OpenAI keys"
    assert s.messages[2]["x_tool_call_extras"][0]["response_item_id"] == "fc_call_20250101_120000_abc123_0"
    assert s.messages[3]["tool_call_id"] == call["id"] and s.messages[3]["name"] == "read_file"
    assert s.messages[4]["x_reasoning"] == "thinking about it"
    assert s.messages[1]["x_timestamp"] == T0 + 10
    assert s.messages[1]["x_origin"]["rowid"] == 1
    assert [t.user_index for t in s.turns] == [1, 5]
    assert [c.message_index for c in s.api_calls] == [2, 4, 6, 8]
    assert all(c.usage is None for c in s.api_calls), "state.db has no per-call usage"
    agg = s.aggregate_usage
    assert (agg.prompt_tokens, agg.cache_read_tokens, agg.cache_write_tokens) == (1200 + 5000 + 800, 5000, 800)
    assert agg.source == "aggregate-only"
    assert s.title == "Fix the parser" and s.model == "anthropic/claude-sonnet-4.5" and s.cwd == "/work/project"
    assert s.compactions == [] and s.warnings == []


def test_list_sessions_reports_title_source_model_count_and_tokens(plain_db: Path):
    [summary] = list_sessions(str(plain_db))
    assert summary.id == "20250101_120000_abc123"
    assert (summary.title, summary.source, summary.model) == ("Fix the parser", "cli", "anthropic/claude-sonnet-4.5")
    assert summary.message_count == 8
    assert summary.prompt_tokens == 7000 and summary.completion_tokens == 300
    assert summary.usage_source == "aggregate-only"


def test_the_database_bytes_never_change(plain_db: Path):
    before = _digest(plain_db)
    load_session(str(plain_db))
    list_sessions(str(plain_db))
    load_session(f"{plain_db}#20250101_120000_abc123")
    assert _digest(plain_db) == before


def test_reading_a_closed_wal_database_adds_only_sqlites_own_index_beside_it(plain_db: Path):
    # A consistent read of a WAL database goes through its -shm index (never immutable=1, which
    # reads without locks and tears under a checkpointing writer); SQLite makes an empty -wal
    # and the -shm, and a read-only connection leaves them. The database is not written.
    beside = sorted(p.name for p in plain_db.parent.iterdir())
    assert beside == ["state.db"]  # the writer closed cleanly: its -wal and -shm are gone
    before = _digest(plain_db)
    load_session(str(plain_db))
    list_sessions(str(plain_db))
    assert detect_format(str(plain_db)) is not None
    assert sorted(p.name for p in plain_db.parent.iterdir()) == ["state.db", "state.db-shm", "state.db-wal"]
    assert (plain_db.parent / "state.db-wal").stat().st_size == 0
    assert _digest(plain_db) == before
    load_session(str(plain_db))  # and reading again, with them there, works the same
    assert _digest(plain_db) == before


def test_loading_works_while_another_connection_holds_a_write_transaction(plain_db: Path):
    writer = sqlite3.connect(plain_db, timeout=0.1)
    try:
        writer.execute("BEGIN IMMEDIATE")
        fx.add_message(writer, "20250101_120000_abc123", "user", "uncommitted", timestamp=T0 + 99)
        before = _digest(plain_db)
        s = load_session(str(plain_db))
        assert all(m.get("content") != "uncommitted" for m in s.messages), "readers see committed rows only"
        assert len(s.messages) == 9
        assert _digest(plain_db) == before
        writer.commit()
        # Committed but not yet checkpointed: the rows live in the -wal file and must be read.
        s = load_session(str(plain_db))
        assert s.messages[-1]["content"] == "uncommitted"
    finally:
        writer.close()


def test_rollback_journal_database_is_readable_during_a_reserved_lock(tmp_path: Path):
    path = tmp_path / "state.db"
    conn = fx.create(path, wal=False)
    fx.add_session(conn, "s1")
    fx.plain_exchange(conn, "s1", T0, "hello")
    conn.commit()
    conn.execute("BEGIN IMMEDIATE")
    try:
        assert len(load_session(str(path)).messages) == 4
    finally:
        conn.rollback()
        conn.close()


def _in_place_compaction(tmp_path: Path) -> Path:
    """Generation 1 archived by in-place compaction; copies + summary re-inserted; then a new turn."""
    path = tmp_path / "state.db"
    conn = fx.create(path)
    sid = "20250102_090000_def456"
    fx.add_session(conn, sid, system_prompt="sys")
    fx.plain_exchange(conn, sid, T0 + 10, "first task", 0)
    fx.add_message(conn, sid, "user", "second task", timestamp=T0 + 20)
    fx.add_message(conn, sid, "assistant", "second answer", timestamp=T0 + 21)
    fx.add_message(conn, sid, "user", "third task", timestamp=T0 + 30)
    fx.add_message(conn, sid, "assistant", "third answer", timestamp=T0 + 31)
    # archive_and_compact: every live row flips to active=0, compacted=1 ...
    conn.execute("UPDATE messages SET active=0, compacted=1 WHERE session_id=?", (sid,))
    # ... and the compacted list is inserted as new rows (copies keep their old timestamps).
    fx.add_message(conn, sid, "user", "first task", timestamp=T0 + 10)
    fx.add_message(conn, sid, "user", fx.SUMMARY_PREFIX + "\n\nThe user asked for three tasks.", timestamp=T0 + 40)
    fx.add_message(conn, sid, "user", "third task", timestamp=T0 + 30)
    fx.add_message(conn, sid, "assistant", "third answer", timestamp=T0 + 31)
    fx.add_message(conn, sid, "user", "fourth task", timestamp=T0 + 50)
    fx.add_message(conn, sid, "assistant", "fourth answer", timestamp=T0 + 51)
    conn.commit()
    conn.close()
    return path


def test_in_place_compaction_keeps_history_and_marks_the_new_context(tmp_path: Path):
    s = load_session(str(_in_place_compaction(tmp_path)))
    texts = [m.get("content") for m in s.messages]
    assert len(s.messages) == 1 + 8 + 6
    archived = [i for i, m in enumerate(s.messages) if _flags(m).get("archived")]
    assert archived == list(range(1, 9)), "archived rows are the pre-compaction history, kept in order"
    [c] = s.compactions
    assert c.kind == "hermes-summary"
    assert c.message_index == 9, "the new context starts at the first re-inserted row (the head copy)"
    assert c.summary.startswith("[CONTEXT COMPACTION")
    assert _flags(s.messages[10]).get("compaction_summary")
    copies = [i for i, m in enumerate(s.messages) if _flags(m).get("compaction_copy")]
    assert copies == [9, 11, 12] and texts[9] == "first task" and texts[11] == "third task"
    assert all(_flags(s.messages[i]).get("synthetic") for i in copies)
    users = [s.messages[t.user_index]["content"] for t in s.turns]
    assert users == ["first task", "second task", "third task", "fourth task"], "copies never start turns"
    assert [c.message_index for c in s.api_calls] == [2, 4, 6, 8, 14], "copies and summaries are not calls"


def test_two_in_place_compactions_split_into_generations(tmp_path: Path):
    path = _in_place_compaction(tmp_path)
    conn = sqlite3.connect(path)
    sid = "20250102_090000_def456"
    conn.execute("UPDATE messages SET active=0, compacted=1 WHERE session_id=?", (sid,))
    fx.add_message(conn, sid, "user", "first task", timestamp=T0 + 10)
    fx.add_message(conn, sid, "user", fx.SUMMARY_PREFIX + "\n\nFour tasks so far.", timestamp=T0 + 60)
    fx.add_message(conn, sid, "user", "fourth task", timestamp=T0 + 50)
    fx.add_message(conn, sid, "assistant", "fourth answer", timestamp=T0 + 51)
    conn.commit()
    conn.close()
    s = load_session(str(path))
    assert [c.kind for c in s.compactions] == ["hermes-summary", "hermes-summary"]
    assert [c.message_index for c in s.compactions] == [9, 15]
    assert s.compactions[1].summary.endswith("Four tasks so far.")
    assert [s.messages[t.user_index]["content"] for t in s.turns][-1] == "fourth task"
    assert len(s.turns) == 4


def _rotated(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    conn = fx.create(path)
    fx.add_session(conn, "p", system_prompt="sys", end_reason="compression", started_at=T0, input_tokens=100, output_tokens=10)
    fx.plain_exchange(conn, "p", T0 + 10, "build it", 0)
    fx.add_message(conn, "p", "user", "and test it", timestamp=T0 + 20)
    fx.add_message(conn, "p", "assistant", "tested", timestamp=T0 + 21)
    fx.add_session(conn, "c", system_prompt="sys", parent_session_id="p", started_at=T0 + 100, input_tokens=50, output_tokens=5, title="Build")
    fx.add_message(conn, "c", "user", "build it", timestamp=T0 + 10)
    fx.add_message(conn, "c", "assistant", "[CONTEXT SUMMARY]: built and tested", timestamp=T0 + 100)
    fx.add_message(conn, "c", "user", "and test it", timestamp=T0 + 20)
    fx.add_message(conn, "c", "assistant", "tested", timestamp=T0 + 21)
    fx.add_message(conn, "c", "user", "ship it", timestamp=T0 + 110)
    fx.add_message(conn, "c", "assistant", "shipped", timestamp=T0 + 111)
    # A /branch child also points at its parent but is not a continuation.
    fx.add_session(conn, "b", parent_session_id="c", model_config='{"_branched_from": "c"}', started_at=T0 + 200)
    fx.add_message(conn, "b", "user", "what if", timestamp=T0 + 201)
    conn.commit()
    conn.close()
    return path


def test_a_rotated_lineage_is_listed_and_loaded_as_one_chain(tmp_path: Path):
    path = _rotated(tmp_path)
    summaries = {s.id: s for s in list_sessions(str(path))}
    assert set(summaries) == {"c", "b"}, "the parent segment is offered only through its chain"
    assert summaries["c"].segments == ["p", "c"]
    assert summaries["c"].prompt_tokens == 150 and summaries["c"].message_count == 12
    s = load_session(f"{path}#c")
    assert s.meta["segments_ids"] == ["p", "c"]
    [c] = s.compactions
    assert c.kind == "hermes-rotation" and c.message_index == 7
    assert c.summary == "[CONTEXT SUMMARY]: built and tested"
    assert [m["x_origin"]["session_id"] for m in s.messages[1:]] == ["p"] * 6 + ["c"] * 6
    assert [_flags(m).get("compaction_copy", False) for m in s.messages[7:]] == [True, False, True, True, False, False]
    assert [s.messages[t.user_index]["content"] for t in s.turns] == ["build it", "and test it", "ship it"]
    branch = load_session(str(path), session_id="b")
    assert [m["content"] for m in branch.messages] == ["what if"], "branches are not merged into their parent"
    first = load_session(f"{path}#p")
    assert len(first.messages) == 7 and first.compactions == []


def test_a_database_with_several_sessions_needs_an_id(tmp_path: Path):
    path = _rotated(tmp_path)
    with pytest.raises(ReaderError) as err:
        load_session(str(path))
    assert "2 sessions" in str(err.value) and "c" in str(err.value) and "state.db" in str(err.value)
    with pytest.raises(ReaderError, match="no session 'zzz'"):
        load_session(f"{path}#zzz")


def test_rewound_rows_are_kept_but_marked_undone(tmp_path: Path):
    path = tmp_path / "state.db"
    conn = fx.create(path)
    fx.add_session(conn, "s")
    fx.add_message(conn, "s", "user", "do A", timestamp=T0 + 1)
    fx.add_message(conn, "s", "assistant", "did A", timestamp=T0 + 2)
    fx.add_message(conn, "s", "user", "do B", timestamp=T0 + 3, active=0, compacted=0)
    fx.add_message(conn, "s", "assistant", "did B", timestamp=T0 + 4, active=0, compacted=0)
    fx.add_message(conn, "s", "user", "do C instead", timestamp=T0 + 5)
    fx.add_message(conn, "s", "assistant", "did C", timestamp=T0 + 6)
    conn.commit()
    conn.close()
    s = load_session(str(path))
    assert [m["content"] for m in s.messages] == ["do A", "did A", "do B", "did B", "do C instead", "did C"]
    assert [bool(_flags(m).get("rewound")) for m in s.messages] == [False, False, True, True, False, False]
    assert all(_flags(m).get("inactive") for m in s.messages[2:4])
    assert [s.messages[t.user_index]["content"] for t in s.turns] == ["do A", "do C instead"]
    assert [c.message_index for c in s.api_calls] == [1, 5]
    assert s.compactions == []


def test_multimodal_rows_and_api_content_are_decoded(tmp_path: Path):
    path = tmp_path / "state.db"
    conn = fx.create(path)
    fx.add_session(conn, "s")
    parts = [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    fx.add_message(conn, "s", "user", parts, api_content="what is this? [memory: user likes cats]")
    fx.add_message(conn, "s", "assistant", "a cat", reasoning_content=" ", reasoning_details='[{"type": "thinking", "signature": "sig"}]')
    fx.add_message(conn, "s", "user", "\x00json:{broken", timestamp=T0 + 9)
    conn.commit()
    conn.close()
    s = load_session(str(path))
    assert s.messages[0]["content"] == parts, "multimodal parts are kept, never flattened"
    assert s.messages[0]["api_content"] == "what is this? [memory: user likes cats]"
    assert "x_reasoning" not in s.messages[1], "a single-space reasoning_content is padding, not reasoning"
    assert s.messages[1]["x_reasoning_opaque"]["reasoning_details"] == [{"type": "thinking", "signature": "sig"}]
    assert s.messages[2]["content"] == "{broken"
    assert any("row 3" in w and "not valid JSON" in w for w in s.warnings)


def test_a_legacy_schema_without_newer_columns_loads(tmp_path: Path):
    path = tmp_path / "state.db"
    conn = fx.create(path, legacy=True)
    fx.add_session(conn, "old", system_prompt="legacy sys", model="gpt-4o", input_tokens=10, output_tokens=2)
    fx.add_message(conn, "old", "session_meta", '{"platform": "telegram"}')
    fx.add_message(conn, "old", "user", "hi")
    fx.add_message(conn, "old", "assistant", None, tool_calls=[fx.tool_call("c1", "search", {"q": "x"})])
    fx.add_message(conn, "old", "tool", "found", tool_call_id="c1", tool_name="search")
    fx.add_message(conn, "old", "assistant", "bye")
    conn.commit()
    conn.close()
    s = load_session(str(path))
    assert [m["role"] for m in s.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert s.messages[2]["content"] is None
    assert any("session_meta" in w for w in s.warnings), "skipped rows are reported, not dropped silently"
    [summary] = list_sessions(str(path))
    assert summary.message_count == 4 and summary.model == "gpt-4o"


def test_an_sqlite_file_that_is_not_hermes_is_rejected_clearly(tmp_path: Path):
    path = tmp_path / "state.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE threads (id TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(ReaderError, match="not a Hermes state.db"):
        load_session(str(path))
    with pytest.raises(ReaderError, match="sessions"):
        load_session(str(path), format="hermes-db")


def test_a_damaged_database_raises_a_reader_error(plain_db: Path, tmp_path: Path):
    broken = tmp_path / "broken.db"
    data = plain_db.read_bytes()
    broken.write_bytes(data[:100] + b"\xff" * 4000 + data[4100:])
    with pytest.raises(ReaderError) as err:
        load_session(str(broken), format="hermes-db")
    assert "broken.db" in str(err.value)


def test_replayable_messages_exclude_summaries_copies_and_rewound_rows(tmp_path: Path):
    from inspector.sessions.model import is_replayable

    s = load_session(str(_in_place_compaction(tmp_path)))
    replay = [m["content"] for m in s.messages[1:] if is_replayable(m)]
    assert replay == ["first task", None, "contents of f0.py", "Done with first task", "second task", "second answer",
                      "third task", "third answer", "fourth task", "fourth answer"]


def test_background_review_prompts_and_the_curator_reply_are_not_replayed(tmp_path: Path):
    from inspector.sessions.model import is_replayable

    path = tmp_path / "state.db"
    conn = fx.create(path)
    fx.add_session(conn, "s1", system_prompt="sys")
    fx.plain_exchange(conn, "s1", T0, "fix the bug")
    fx.add_message(conn, "s1", "user", "Review the conversation above and save memories", timestamp=T0 + 5)
    fx.add_message(conn, "s1", "assistant", "curated", timestamp=T0 + 6)
    fx.plain_exchange(conn, "s1", T0 + 10, "thanks", 1)
    conn.commit()
    conn.close()
    s = load_session(str(path))
    replayed = [m.get("content") for m in s.messages if is_replayable(m)]
    assert "curated" not in replayed and not any("Review the conversation" in str(c) for c in replayed)
    assert all(s.messages[c.message_index].get("content") != "curated" for c in s.api_calls)


def _files(folder: Path) -> dict[str, str]:
    return {p.name: _digest(p) for p in sorted(folder.iterdir())}


def test_a_hot_rollback_journal_is_read_from_a_private_copy_and_nothing_is_written(tmp_path: Path):
    import subprocess
    import sys

    path = tmp_path / "state.db"
    conn = fx.create(path, wal=False)
    fx.add_session(conn, "s1", system_prompt="sys")
    fx.plain_exchange(conn, "s1", T0, "committed")
    conn.commit()
    conn.close()
    committed = [m["content"] for m in load_session(str(path)).messages]
    # A writer dies mid-transaction with pages already spilled: the journal is hot.
    writer = ("import sqlite3, os\n"
              f"c = sqlite3.connect({str(path)!r}); c.execute('PRAGMA cache_size=1'); c.execute('BEGIN IMMEDIATE')\n"
              "for i in range(2000): c.execute(\"INSERT INTO messages(session_id, role, content, timestamp) "
              "VALUES ('s1', 'user', ?, 1)\", ('x' * 500,))\n"
              "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", writer], check=True)
    assert (tmp_path / "state.db-journal").exists()
    before = _files(tmp_path)
    s = load_session(str(path))
    assert [m["content"] for m in s.messages] == committed, "what was committed, not the dead writer's rows"
    assert any("private copy" in w for w in s.warnings)
    assert _files(tmp_path) == before, "neither the database nor its journal was touched"


def test_a_copied_wal_database_without_its_index_leaves_nothing_beside_it(tmp_path: Path):
    import shutil

    source = tmp_path / "live" / "state.db"
    source.parent.mkdir()
    conn = fx.create(source)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    fx.add_session(conn, "s1", system_prompt="sys")
    fx.plain_exchange(conn, "s1", T0, "only in the wal")
    conn.commit()
    copy = tmp_path / "copy"
    copy.mkdir()
    for suffix in ("", "-wal"):
        shutil.copyfile(f"{source}{suffix}", copy / f"state.db{suffix}")
    conn.close()
    before = _files(copy)
    s = load_session(str(copy / "state.db"))
    assert any(m.get("content") == "only in the wal" for m in s.messages), "committed rows in the -wal are read"
    assert _files(copy) == before, "no -shm is created beside the copy"


def test_detection_reads_only_the_head_of_a_database_and_names_a_gzipped_one(tmp_path: Path, plain_db: Path,
                                                                           monkeypatch):
    import gzip as gz

    from inspector.sessions import detect

    monkeypatch.setattr(detect, "open_source", lambda *_: (_ for _ in ()).throw(AssertionError("read whole")))
    assert detect_format(str(plain_db)) == "hermes-db"
    monkeypatch.undo()
    packed = tmp_path / "state.db.gz"
    packed.write_bytes(gz.compress(plain_db.read_bytes()))
    with pytest.raises(ReaderError, match="gzip-compressed SQLite database: decompress it first"):
        load_session(str(packed))


def test_a_turn_is_ended_by_a_final_reply_that_finished_with_stop(tmp_path: Path):
    path = tmp_path / "state.db"
    conn = fx.create(path)
    fx.add_session(conn, "s1", system_prompt="sys")
    fx.plain_exchange(conn, "s1", T0, "fix the bug")  # ends with finish_reason stop
    fx.add_message(conn, "s1", "user", "Review the conversation above and save memories", timestamp=T0 + 5)
    fx.add_message(conn, "s1", "assistant", "curated", timestamp=T0 + 6)  # not replayed: does not reopen it
    fx.add_message(conn, "s1", "user", "write it all out", timestamp=T0 + 10)
    fx.add_message(conn, "s1", "assistant", "Part one…", timestamp=T0 + 11, finish_reason="length")
    fx.add_message(conn, "s1", "user", "and now?", timestamp=T0 + 20)
    fx.add_message(conn, "s1", "assistant", None, timestamp=T0 + 21, finish_reason="tool_calls",
                   tool_calls=[fx.tool_call("c1", "read_file", {"path": "a"})])
    conn.commit()
    conn.close()
    assert [t.ended for t in load_session(str(path)).turns] == [True, False, False]
