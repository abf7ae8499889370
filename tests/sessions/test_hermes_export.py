"""Hermes JSONL export and per-session logs (docs/formats.md §2.2, §2.3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.sessions import ReaderError, list_sessions, load_session
from inspector.sessions.detect import detect_format

SUMMARY = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below.\n\nDid X."


def _row(i: int, sid: str, role: str, content, **extra):
    row = {
        "id": i, "session_id": sid, "role": role, "content": content, "tool_call_id": None, "tool_calls": None,
        "tool_name": None, "effect_disposition": None, "timestamp": 1_760_000_000.0 + i, "token_count": None,
        "finish_reason": None, "reasoning": None, "reasoning_content": None, "reasoning_details": None,
        "codex_reasoning_items": None, "codex_message_items": None, "platform_message_id": None, "observed": 0,
        "active": 1, "compacted": 0, "api_content": None,
    }
    row.update(extra)
    return row


def _session_line(sid: str, messages, **extra):
    row = {"id": sid, "source": "telegram", "started_at": 1_760_000_000.0, "model": "deepseek-chat", "system_prompt": "sys",
           "title": f"title {sid}", "input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 90, "cache_write_tokens": 0,
           "end_reason": None, "messages": messages}
    row.update(extra)
    return json.dumps(row, ensure_ascii=False)


def _export(tmp_path: Path) -> Path:
    call = {"id": "c1", "call_id": "c1", "response_item_id": "fc_1", "type": "function", "function": {"name": "web", "arguments": "{}"}}
    first = [
        _row(1, "s1", "user", "search cats"),
        _row(2, "s1", "assistant", None, tool_calls=[call], reasoning_details='[{"type": "reasoning.text"}]'),
        _row(3, "s1", "tool", "[Old tool output cleared to save context space]", tool_call_id="c1", tool_name="web"),
        _row(4, "s1", "user", SUMMARY),
        _row(5, "s1", "assistant", "cats are great", finish_reason="stop"),
        _row(6, "s1", "user", [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}], observed=1),
    ]
    second = [_row(7, "s2", "user", "hello"), _row(8, "s2", "assistant", "hi")]
    path = tmp_path / "export.jsonl"
    path.write_text(_session_line("s1", first) + "\n" + _session_line("s2", second) + "\n", encoding="utf-8")
    return path


def test_export_jsonl_lists_and_loads_each_session(tmp_path: Path):
    path = _export(tmp_path)
    assert detect_format(path) == "hermes-export"
    summaries = list_sessions(str(path))
    assert [(s.id, s.title, s.source, s.model) for s in summaries] == [
        ("s1", "title s1", "telegram", "deepseek-chat"), ("s2", "title s2", "telegram", "deepseek-chat"),
    ]
    assert summaries[0].prompt_tokens == 100 and summaries[0].usage_source == "aggregate-only"
    s = load_session(f"{path}#s1")
    assert [m["role"] for m in s.messages] == ["system", "user", "assistant", "tool", "user", "assistant", "user"]
    assert s.messages[2]["tool_calls"] == [{"id": "c1", "type": "function", "function": {"name": "web", "arguments": "{}"}}]
    assert s.messages[2]["x_reasoning_opaque"]["reasoning_details"] == [{"type": "reasoning.text"}]
    assert s.messages[3]["x_flags"] == {"pruned": True}
    assert s.messages[4]["x_flags"]["compaction_summary"]
    assert s.messages[6]["content"][1]["type"] == "image_url"
    assert s.messages[6]["x_flags"]["observed"], "group-chat context the agent only observed is not a prompt"
    assert [c.kind for c in s.compactions] == ["hermes-summary"]
    assert [s.messages[t.user_index]["content"] for t in s.turns] == ["search cats"]
    assert s.messages[1]["x_origin"]["rowid"] == 1 and s.messages[1]["x_origin"]["line"] == 1


def test_export_without_an_id_loads_the_first_and_says_so(tmp_path: Path):
    s = load_session(str(_export(tmp_path)))
    assert s.id == "s1" and any("2 sessions" in w for w in s.warnings)
    with pytest.raises(ReaderError, match="s1, s2"):
        load_session(str(_export(tmp_path)), session_id="nope")


def test_session_json_snapshot(tmp_path: Path):
    data = {
        "session_id": "20250101_000000_aaaaaa", "model": "m", "base_url": "http://x", "platform": "cli",
        "session_start": "2025-01-01T00:00:00", "last_updated": "2025-01-01T00:05:00", "system_prompt": "sys",
        "tools": [{"type": "function", "function": {"name": "t"}}], "message_count": 2,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "<think>hmm</think>hello", "reasoning": "hmm", "finish_reason": "stop"},
        ],
    }
    path = tmp_path / "session_20250101_000000_aaaaaa.json"
    path.write_text(json.dumps(data, indent=2))
    assert detect_format(path) == "hermes-session-json"
    s = load_session(str(path))
    assert s.id == "20250101_000000_aaaaaa" and s.tools == data["tools"]
    assert [m["role"] for m in s.messages] == ["system", "user", "assistant"]
    assert s.messages[2]["x_reasoning"] == "hmm" and s.started_at == 1_735_689_600.0
    assert any("stale" in w for w in s.warnings)


def test_gateway_transcript_jsonl(tmp_path: Path):
    lines = [
        {"role": "session_meta", "tools": [], "model": "m", "platform": "telegram", "timestamp": "2025-01-01T00:00:00Z"},
        {"role": "user", "content": "hi", "timestamp": "2025-01-01T00:00:01Z", "message_id": 7},
        {"role": "assistant", "content": "yo", "timestamp": "2025-01-01T00:00:02Z",
         "reasoning_details": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
    ]
    path = tmp_path / "abc.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    assert detect_format(path) == "hermes-gateway-jsonl"
    s = load_session(str(path))
    assert [m["content"] for m in s.messages] == ["hi", "yo"]
    assert s.messages[0]["x_timestamp"] == 1_735_689_601.0 and s.messages[0]["x_extra"] == {"message_id": 7}
    assert s.messages[1]["x_reasoning_opaque"]["reasoning_details"][0]["signature"] == "s"
    assert s.meta["platform"] == "telegram"


def test_request_dump_is_one_prompt(tmp_path: Path):
    dump = {"timestamp": "2025-01-01T00:00:00", "session_id": "sid", "reason": "max_retries",
            "request": {"method": "POST", "url": "u", "headers": {}, "body": {"model": "m", "messages": [
                {"role": "system", "content": "s"}, {"role": "user", "content": "q"}], "tools": []}}}
    path = tmp_path / "request_dump_sid_20250101_000000_000000.json"
    path.write_text(json.dumps(dump))
    assert detect_format(path) == "hermes-request-dump"
    s = load_session(str(path))
    assert s.id == "sid" and [m["role"] for m in s.messages] == ["system", "user"] and s.api_calls == []
    assert s.meta["reason"] == "max_retries"


def test_an_exported_turn_is_ended_by_a_final_reply_that_finished_with_stop(tmp_path: Path):
    rows = [_row(1, "s1", "user", "hi"), _row(2, "s1", "assistant", "hello", finish_reason="stop"),
            _row(3, "s1", "user", "more"), _row(4, "s1", "assistant", "and", finish_reason="length")]
    path = tmp_path / "short.jsonl"
    path.write_text(_session_line("s1", rows) + "\n", encoding="utf-8")
    assert [t.ended for t in load_session(str(path)).turns] == [True, False]
    # The group-chat message observed after the answer is replayed too: the turn is not over.
    assert [t.ended for t in load_session(str(_export(tmp_path))).turns] == [False]
