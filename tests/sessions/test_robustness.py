"""Property tests: any input either loads or raises ReaderError, never another error or a hang.

Each reader gets valid samples that are truncated, byte-flipped, or replaced by random JSON.
Readers are called directly (not through load_session's safety net) so real bugs surface.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.sessions import ReaderError, load_session
from inspector.sessions.detect import FORMATS, detect_text
from inspector.sessions.readers import READERS, hermes_db
from inspector.sessions.source import Source

from . import hermes_db_fixtures as fx

SEEDS: dict[str, str] = {
    "openai-array": json.dumps([
        {"role": "system", "content": "s"}, {"role": "user", "content": "u", "timestamp": "2025-01-01T00:00:00Z"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
         "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
        {"role": "tool", "tool_call_id": "c", "content": "r"},
    ]),
    "openai-request-log": json.dumps({"messages": [{"role": "user", "content": "u"}],
                                      "response": {"choices": [{"message": {"role": "assistant", "content": "a"}}]}, "usage": {"prompt_tokens": 3}}),
    "trajectory": json.dumps({"conversations": [
        {"from": "system", "value": "<tools>\n[{\"name\": \"f\"}]\n</tools>"}, {"from": "human", "value": "q"},
        {"from": "gpt", "value": "<think>\nr\n</think>\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"},
        {"from": "tool", "value": "<tool_response>\n{\"tool_call_id\": null, \"name\": \"f\", \"content\": {\"ok\": 1}}\n</tool_response>"},
        {"from": "human", "value": "[CONTEXT SUMMARY]: s"}]}),
    "claude-code": "\n".join(json.dumps(r) for r in [
        {"type": "user", "sessionId": "s", "uuid": "1", "parentUuid": None, "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "sessionId": "s", "uuid": "2", "parentUuid": "1", "message": {"id": "m", "role": "assistant",
         "content": [{"type": "tool_use", "id": "t", "name": "R", "input": {}}], "usage": {"input_tokens": 1, "output_tokens": 1}}},
        {"type": "user", "sessionId": "s", "uuid": "3", "parentUuid": "2", "message": {"role": "user",
         "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}},
        {"type": "system", "subtype": "compact_boundary", "sessionId": "s", "uuid": "4", "parentUuid": None,
         "logicalParentUuid": "3", "compactMetadata": {"preTokens": 9}},
    ]),
    "codex": "\n".join(json.dumps(r) for r in [
        {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "x"}},
        {"timestamp": "2026-01-01T00:00:01Z", "type": "event_msg", "payload": {"type": "task_started", "turn_id": "t"}},
        {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}},
        {"timestamp": "2026-01-01T00:00:02Z", "type": "response_item", "payload": {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"}},
        {"timestamp": "2026-01-01T00:00:03Z", "type": "event_msg", "payload": {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": 5}, "last_token_usage": {"input_tokens": 5, "cached_input_tokens": 1}}}},
        {"timestamp": "2026-01-01T00:00:04Z", "type": "compacted", "payload": {"message": "m", "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}]}},
    ]),
    "hermes-export": json.dumps({"id": "s", "source": "cli", "started_at": 1.0, "system_prompt": "p", "messages": [
        {"id": 1, "session_id": "s", "role": "user", "content": "u", "timestamp": 1.0},
        {"id": 2, "session_id": "s", "role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]},
        {"id": 3, "session_id": "s", "role": "tool", "content": "\u0000json:[{\"type\": \"text\", \"text\": \"r\"}]", "tool_call_id": "c"},
        {"id": 4, "session_id": "s", "role": "user", "content": "[CONTEXT SUMMARY]: x"}]}),
    "hermes-session-json": json.dumps({"session_id": "s", "session_start": "2025-01-01T00:00:00", "system_prompt": "p", "tools": [],
                                       "messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]}),
    "hermes-gateway-jsonl": json.dumps({"role": "session_meta", "tools": []}) + "\n" + json.dumps({"role": "user", "content": "u", "timestamp": "x"}),
    "hermes-request-dump": json.dumps({"session_id": "s", "reason": "r", "request": {"body": {"messages": [{"role": "user", "content": "u"}]}}}),
}
SEEDS["openai-jsonl"] = "\n".join(json.dumps(m) for m in json.loads(SEEDS["openai-array"]))
SEEDS["openai-object"] = json.dumps({"messages": json.loads(SEEDS["openai-array"]), "tools": [{"type": "function"}]})
SEEDS["openai-conversations"] = SEEDS["openai-object"] + "\n" + SEEDS["openai-object"]

TEXT_FORMATS = sorted(SEEDS)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["role", "content", "messages", "type", "payload", "tool_calls", "id", "conversations", "from", "value",
                         "usage", "message", "uuid", "parentUuid", "sessionId", "info", "timestamp", "function", "call_id"]),
        inner, max_size=6),
    max_leaves=20,
)
PROFILE = settings(max_examples=60, deadline=2000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _read(fmt: str, text: str) -> None:
    try:
        READERS[fmt](Source(path="fuzz.json", text=text))
    except ReaderError as exc:
        assert "fuzz.json" in str(exc), "errors name the file"


def test_every_text_format_has_a_seed_and_a_reader():
    assert set(TEXT_FORMATS) == set(FORMATS) - {"hermes-db"}
    for fmt, text in SEEDS.items():
        READERS[fmt](Source(path="seed", text=text))
        assert detect_text(text) == fmt or fmt in ("openai-object", "openai-conversations")


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
@PROFILE
@given(data=st.data())
def test_truncated_input_loads_or_raises_reader_error(fmt: str, data):
    text = SEEDS[fmt]
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    _read(fmt, text[:cut])


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
@PROFILE
@given(data=st.data())
def test_corrupted_input_loads_or_raises_reader_error(fmt: str, data):
    text = list(SEEDS[fmt])
    for _ in range(data.draw(st.integers(min_value=1, max_value=8))):
        i = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
        text[i] = data.draw(st.sampled_from(list('{}[]",:0an\n\\x\x00é')))
    _read(fmt, "".join(text))


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
@PROFILE
@given(value=JSONISH, lines=st.booleans())
def test_random_json_loads_or_raises_reader_error(fmt: str, value, lines: bool):
    text = json.dumps(value)
    if lines:
        text = text + "\n" + text
    _read(fmt, text)


@PROFILE
@given(blob=st.binary(max_size=300))
def test_random_bytes_through_load_session(tmp_path_factory, blob: bytes):
    path = tmp_path_factory.mktemp("fuzz") / "blob.bin"
    path.write_bytes(blob)
    try:
        load_session(str(path))
    except ReaderError:
        pass


@settings(max_examples=25, deadline=5000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_corrupted_databases_load_or_raise_reader_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("db") / "state.db"
    conn = fx.create(path, wal=False)
    fx.add_session(conn, "s", system_prompt="p")
    fx.plain_exchange(conn, "s", 1.0, "hello")
    fx.add_message(conn, "s", "assistant", "\x00json:[1,", tool_calls="not json")
    conn.commit()
    conn.close()
    raw = bytearray(path.read_bytes())
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(min_value=0, max_value=len(raw)))]
    else:
        for _ in range(data.draw(st.integers(min_value=1, max_value=20))):
            raw[data.draw(st.integers(min_value=0, max_value=len(raw) - 1))] = data.draw(st.integers(0, 255))
    path.write_bytes(bytes(raw))
    try:
        hermes_db.load(str(path), "s")
        hermes_db.list_sessions(str(path))
    except ReaderError as exc:
        assert "state.db" in str(exc)


def test_damaged_sqlite_values_become_warnings(tmp_path: Path):
    path = tmp_path / "state.db"
    conn = fx.create(path)
    fx.add_session(conn, "s")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp, tool_calls) VALUES ('s', 'assistant', X'00FF', 'soon', '{')")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s', 'wizard', 'x', 1)")
    conn.commit()
    conn.close()
    s = hermes_db.load(str(path), "s")
    assert len(s.messages) == 1 and len(s.warnings) == 2
    assert "row 1" in s.warnings[0] and "row 2" in s.warnings[1]


CORPUS_FORMATS = {
    "claude_code/tool_heavy.jsonl": "claude-code",
    "codex/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl": "codex",
    "hermes_trajectory/trajectory_samples.jsonl": "trajectory",
    "openai_chat/github_issue.traj.json": "openai-array",
}


@pytest.mark.parametrize("name", sorted(CORPUS_FORMATS))
@PROFILE
@given(data=st.data())
def test_truncated_real_files_load_or_raise_reader_error(corpus: Path, name: str, data):
    text = (corpus / name).read_text(encoding="utf-8")
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    reader = data.draw(st.sampled_from([CORPUS_FORMATS[name], *TEXT_FORMATS]))
    _read(reader, text[:cut])
