"""Plain OpenAI chat transcripts: arrays, message JSONL, wrappers, request logs (docs/formats.md §3)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from inspector.sessions import ReaderError, list_sessions, load_session
from inspector.sessions.detect import detect_format

CONVERSATION = [
    {"role": "system", "content": "You are terse.", "timestamp": 1_760_000_000},
    {"role": "user", "content": "list files", "timestamp": "2025-10-09T08:53:21Z"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": {"path": "."}}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 8, "prompt_tokens_details": {"cached_tokens": 100}},
        "model": "gpt-4.1",
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"},
    {
        "role": "assistant",
        "content": "Two files.",
        "usage": {"input_tokens": 30, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5, "output_tokens": 4},
        "reasoning_content": "count them",
    },
]


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _check_conversation(s) -> None:
    assert [m["role"] for m in s.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert s.messages[0]["x_timestamp"] == 1_760_000_000.0
    assert s.messages[1]["x_timestamp"] == 1_760_000_001.0, "ISO strings become epoch seconds"
    assert s.messages[2]["tool_calls"][0]["function"]["arguments"] == '{"path": "."}', "arguments become a JSON string"
    first, second = (c.usage for c in s.api_calls)
    assert (first.prompt_tokens, first.cache_read_tokens, first.completion_tokens) == (120, 100, 8), "OpenAI: cached is a subset"
    assert (second.prompt_tokens, second.cache_read_tokens, second.cache_write_tokens) == (135, 100, 5), "Anthropic: additive"
    assert s.api_calls[0].model == "gpt-4.1"
    assert [c.message_index for c in s.api_calls] == [2, 4]
    assert s.messages[4]["x_reasoning"] == "count them"
    assert all("usage" not in m and "timestamp" not in m for m in s.messages), "bookkeeping never stays on the wire"


def test_a_message_array_with_timestamps_and_usage(tmp_path: Path):
    path = _write(tmp_path / "chat.json", json.dumps(CONVERSATION, indent=2))
    assert detect_format(path) == "openai-array"
    s = load_session(str(path))
    _check_conversation(s)
    assert [m["x_origin"]["line"] for m in s.messages] == [2, 7, 12, 36, 41], "each message names its line"
    assert len(s.turns) == 1 and s.turns[0].user_index == 1


def test_message_per_line_jsonl(tmp_path: Path):
    path = _write(tmp_path / "chat.jsonl", "\n".join(json.dumps(m) for m in CONVERSATION) + "\n")
    assert detect_format(path) == "openai-jsonl"
    s = load_session(str(path))
    _check_conversation(s)
    assert [m["x_origin"]["line"] for m in s.messages] == [1, 2, 3, 4, 5]


def test_a_messages_object_sets_the_tools(tmp_path: Path):
    tools = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]
    path = _write(tmp_path / "chat.json", json.dumps({"messages": CONVERSATION, "tools": tools}, indent=1))
    assert detect_format(path) == "openai-object"
    s = load_session(str(path))
    _check_conversation(s)
    assert s.tools == tools


def test_a_messages_object_names_its_model_and_title_at_the_top_or_in_its_metadata(tmp_path: Path):
    for extra, model, title in (({"model": "gpt-4o", "title": "t1"}, "gpt-4o", "t1"),
                                ({"meta": {"model": "gpt-4.1", "title": "t2"}}, "gpt-4.1", "t2"),
                                ({"metadata": {"model": "o3"}, "model": "gpt-5"}, "gpt-5", "list files")):
        path = _write(tmp_path / "chat.json", json.dumps({"messages": CONVERSATION, **extra}))
        s = load_session(str(path))
        assert (s.model, s.title) == (model, title)  # without one, the title is the first prompt


def test_conversation_per_line_holds_several_sessions(tmp_path: Path):
    lines = [json.dumps({"messages": CONVERSATION}), json.dumps({"messages": [{"role": "user", "content": "hi"}]})]
    path = _write(tmp_path / "train.jsonl", "\n".join(lines))
    assert detect_format(path) == "openai-conversations"
    assert [s.id for s in list_sessions(str(path))] == ["1", "2"]
    s = load_session(str(path))
    assert len(s.messages) == 5 and any("2 sessions" in w for w in s.warnings)
    assert [m["content"] for m in load_session(f"{path}#2").messages] == ["hi"]
    with pytest.raises(ReaderError, match="no session '9'"):
        load_session(f"{path}#9")


def test_request_log_builds_the_transcript_and_keeps_each_calls_usage(tmp_path: Path):
    sys_ = {"role": "system", "content": "sys"}
    u1 = {"role": "user", "content": "hello"}
    a1 = {"role": "assistant", "content": "hi there"}
    u2 = {"role": "user", "content": "bye"}
    records = [
        {"messages": [sys_, u1], "response": {"choices": [{"message": a1}], "usage": {"prompt_tokens": 50, "completion_tokens": 3}}, "timestamp": 1_760_000_000},
        {"messages": [sys_, u1, a1, u2], "response": {"choices": [{"message": {"role": "assistant", "content": "ciao"}}]},
         "usage": {"prompt_tokens": 60, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 48}}, "model": "m"},
    ]
    path = _write(tmp_path / "requests.jsonl", "\n".join(json.dumps(r) for r in records))
    assert detect_format(path) == "openai-request-log"
    s = load_session(str(path))
    assert [m["content"] for m in s.messages] == ["sys", "hello", "hi there", "bye", "ciao"], "history is not repeated"
    assert [(c.message_index, c.usage.prompt_tokens, c.usage.cache_read_tokens) for c in s.api_calls] == [(2, 50, 0), (4, 60, 48)]
    assert s.api_calls[1].model == "m" and s.api_calls[0].timestamp == 1_760_000_000.0


def test_request_log_with_rewritten_history_is_marked(tmp_path: Path):
    r1 = {"messages": [{"role": "user", "content": "a"}], "response": {"choices": [{"message": {"role": "assistant", "content": "b"}}]}}
    r2 = {"messages": [{"role": "user", "content": "summary of a/b"}, {"role": "user", "content": "c"}],
          "response": {"choices": [{"message": {"role": "assistant", "content": "d"}}]}}
    path = _write(tmp_path / "requests.jsonl", json.dumps(r1) + "\n" + json.dumps(r2))
    s = load_session(str(path))
    assert [m["content"] for m in s.messages] == ["a", "b", "summary of a/b", "c", "d"]
    assert [c.kind for c in s.compactions] == ["request-rewrite"] and s.compactions[0].message_index == 2
    assert any("line 2" in w for w in s.warnings)


def test_gzip_is_read_transparently(tmp_path: Path):
    path = tmp_path / "chat.json.gz"
    path.write_bytes(gzip.compress(json.dumps(CONVERSATION).encode()))
    assert detect_format(path) == "openai-array"
    _check_conversation(load_session(str(path)))


def test_bad_lines_are_skipped_with_a_warning_naming_the_line(tmp_path: Path):
    text = "\n".join(json.dumps(m) for m in CONVERSATION[:2]) + '\n{"role": "assistant", "cont\n' + json.dumps(CONVERSATION[3])
    s = load_session(str(_write(tmp_path / "chat.jsonl", text)))
    assert len(s.messages) == 3
    assert any(w.startswith("line 3:") for w in s.warnings)
    assert s.messages[2].get("x_flags", {}).get("orphan"), "a result whose call was lost is flagged, not dropped"


def test_unknown_roles_and_bad_content_are_reported(tmp_path: Path):
    msgs = [{"role": "user", "content": {"weird": 1}}, {"role": "narrator", "content": "x"}, {"role": "developer", "content": "rules"}]
    s = load_session(str(_write(tmp_path / "chat.json", json.dumps(msgs))))
    assert [m["role"] for m in s.messages] == ["user", "system"]
    assert s.messages[0]["content"] == '{"weird": 1}'
    assert s.messages[1]["x_original_role"] == "developer"
    assert len(s.warnings) == 2 and "narrator" in s.warnings[1]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty"),
        ("[]", "empty"),
        ("[1, 2]", "int"),
        ("hello", "not a JSON transcript"),
        ('{"foo": 1}', "keys on line 1: foo"),
        ('{\n"foo": 1\n}', "keys seen: foo"),
        ("{not json\n{also not}", "neither JSON Lines nor one JSON object"),
    ],
)
def test_unreadable_files_raise_a_reader_error_naming_the_file(tmp_path: Path, text: str, match: str):
    path = _write(tmp_path / "x.json", text)
    with pytest.raises(ReaderError, match=match) as err:
        load_session(str(path))
    assert str(path) in str(err.value)


def test_a_forced_format_that_does_not_fit_is_a_reader_error(tmp_path: Path):
    path = _write(tmp_path / "chat.json", json.dumps(CONVERSATION))
    with pytest.raises(ReaderError, match="claude-code|Claude Code"):
        load_session(str(path), format="claude-code")
    with pytest.raises(ReaderError):
        load_session(str(path), format="hermes-db")
    assert len(load_session(str(path), format="openai").messages) == 5


def _record(messages: list[dict], reply: str, prompt_tokens: int) -> dict:
    return {"messages": messages, "response": {"choices": [{"message": {"role": "assistant", "content": reply}}],
                                               "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5}}}


def test_a_compacted_prompt_adds_only_what_is_new_and_keeps_the_summary_on_the_marker(tmp_path: Path):
    s_, u = {"role": "system", "content": "S"}, lambda text: {"role": "user", "content": text}
    a = lambda text: {"role": "assistant", "content": text}  # noqa: E731
    records = [
        _record([s_, u("u1")], "a1", 100),
        _record([s_, u("u1"), a("a1"), u("u2")], "a2", 150),
        # history rewritten: a summary replaces u1/a1, u2/a2 are re-sent, u3 is new
        _record([s_, u("[CONTEXT SUMMARY]: u1/a1"), u("u2"), a("a2"), u("u3")], "a3", 90),
    ]
    path = _write(tmp_path / "requests.jsonl", "\n".join(json.dumps(r) for r in records))
    s = load_session(str(path))
    assert [m["content"] for m in s.messages] == ["S", "u1", "a1", "u2", "a2", "u3", "a3"], "re-sent history is not new"
    assert [c.message_index for c in s.api_calls] == [2, 4, 6], "one call per record, none invented"
    (marker,) = s.compactions
    assert (marker.kind, marker.message_index, marker.summary) == ("request-rewrite", 5, "[CONTEXT SUMMARY]: u1/a1")


def test_an_auxiliary_call_in_a_request_log_is_left_out_of_the_conversation(tmp_path: Path):
    s_, u, a = {"role": "system", "content": "You are an agent."}, (lambda t: {"role": "user", "content": t}), \
        (lambda t: {"role": "assistant", "content": t})
    history = [s_, u("u1")]
    records = [_record(history, "a1", 100)]
    history = history + [a("a1"), u("u2")]
    records.append(_record(history, "a2", 150))
    records.append(_record([{"role": "system", "content": "You summarise."}, u("Summarise: u1 a1 u2 a2")], "SUMMARY", 60))
    history = history + [a("a2"), u("u3")]
    records.append(_record(history, "a3", 200))
    path = _write(tmp_path / "proxy.jsonl", "\n".join(json.dumps(r) for r in records))
    s = load_session(str(path))
    assert [m["content"] for m in s.messages] == ["You are an agent.", "u1", "a1", "u2", "a2", "u3", "a3"]
    assert [c.usage.prompt_tokens for c in s.api_calls] == [100, 150, 200]
    assert any("line 3" in w and "auxiliary" in w for w in s.warnings)


def test_inline_think_is_shown_as_reasoning_and_the_content_stays_as_sent(tmp_path: Path):
    msgs = [{"role": "user", "content": "what is it?"},
            {"role": "assistant", "content": "<think>it has whiskers</think>It is a cat."}]
    s = load_session(str(_write(tmp_path / "think.json", json.dumps(msgs))))
    assert s.messages[1]["x_reasoning"] == "it has whiskers"
    assert s.messages[1]["content"] == "<think>it has whiskers</think>It is a cat."


def test_line_and_paragraph_separators_inside_strings_do_not_split_a_line(tmp_path: Path):
    lines = [{"role": "user", "content": "one\u2028two\u2029three\x85four"}, {"role": "assistant", "content": "ok"}]
    path = tmp_path / "sep.jsonl"
    path.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in lines) + "\r\n", encoding="utf-8")
    s = load_session(str(path))
    assert [m["content"] for m in s.messages] == ["one\u2028two\u2029three\x85four", "ok"]
    assert s.warnings == []


def test_a_utf16_file_is_read_and_said_to_be_utf16(tmp_path: Path):
    path = tmp_path / "ps.jsonl"
    path.write_bytes("\n".join(json.dumps(m) for m in CONVERSATION[1:2] + [{"role": "assistant", "content": "hi"}])
                     .encode("utf-16"))
    s = load_session(str(path))
    assert [m["content"] for m in s.messages] == ["list files", "hi"]
    assert any("UTF-16" in w for w in s.warnings)


def test_json_errors_read_naturally(tmp_path: Path):
    path = _write(tmp_path / "cut.json", '[{"role": "user", "content": "hi"}, {"role": "user", "content": "never ends')
    with pytest.raises(ReaderError) as err:
        load_session(str(path))
    assert "Unterminated string starting at column" in str(err.value) and "at at" not in str(err.value)
