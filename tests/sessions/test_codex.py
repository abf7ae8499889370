"""Codex rollouts: compaction with replacement history, web search, legacy lines (docs/formats.md §5)."""

from __future__ import annotations

import json
from pathlib import Path

from inspector.sessions import load_session
from inspector.sessions.detect import detect_format


def _line(kind, payload, ts="2026-02-23T12:00:00.000Z"):
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload})


def _usage(total_in, last_in, cached):
    return {"info": {"total_token_usage": {"input_tokens": total_in, "cached_input_tokens": 0, "output_tokens": 1},
                     "last_token_usage": {"input_tokens": last_in, "cached_input_tokens": cached, "output_tokens": 1,
                                          "reasoning_output_tokens": 0}}, "type": "token_count"}


def _rollout(tmp_path: Path) -> Path:
    msg = lambda role, text: {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}  # noqa: E731
    lines = [
        _line("session_meta", {"id": "sess-1", "timestamp": "2026-02-23T12:00:00Z", "cwd": "/r", "originator": "codex_cli_rs",
                               "base_instructions": {"text": "You are Codex."}}),
        _line("event_msg", {"type": "task_started", "turn_id": "t1"}),
        _line("response_item", msg("user", "find the docs")),
        _line("event_msg", {"type": "user_message", "message": "find the docs"}),
        _line("turn_context", {"turn_id": "t1", "model": "gpt-5"}),
        _line("response_item", {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "docs"}}),
        _line("response_item", {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin Patch"}),
        _line("event_msg", _usage(100, 100, 0)),
        _line("event_msg", _usage(100, 100, 0)),
        _line("response_item", {"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"}),
        _line("compacted", {"message": "summary text", "replacement_history": [msg("user", "find the docs"),
                                                                              {"type": "message", "role": "assistant",
                                                                               "content": [{"type": "output_text", "text": "summary text"}]}]}),
        _line("event_msg", {"type": "context_compacted"}),
        _line("event_msg", _usage(100, 0, 0)),
        _line("event_msg", {"type": "task_complete", "turn_id": "t1"}),
    ]
    path = tmp_path / "rollout-2026-02-23T12-00-00-sess-1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_compaction_web_search_and_custom_tools(tmp_path: Path):
    path = _rollout(tmp_path)
    assert detect_format(path) == "codex"
    s = load_session(str(path))
    assert s.messages[0] == {"role": "system", "content": "You are Codex.", "x_origin": s.messages[0]["x_origin"], "x_timestamp": s.messages[0]["x_timestamp"]}
    [call] = s.api_calls
    assert call.usage.prompt_tokens == 100 and call.model == "gpt-5"
    a = s.messages[call.message_index]
    assert a["content"] is None and [c["function"]["name"] for c in a["tool_calls"]] == ["web_search", "apply_patch"]
    assert json.loads(a["tool_calls"][1]["function"]["arguments"]) == {"input": "*** Begin Patch"}
    assert s.meta["orphan_calls"] == 0, "server-side web searches never get a result and are not orphans"
    [c] = s.compactions
    assert c.kind == "codex-compacted" and c.summary == "summary text"
    after = s.messages[c.message_index:]
    assert [m["role"] for m in after] == ["user", "assistant"]
    assert all(m["x_flags"]["synthetic"] for m in after) and after[-1]["x_flags"]["compaction_summary"]
    [turn] = s.turns
    assert not turn.interrupted and s.messages[turn.user_index]["content"] == "find the docs"


def test_legacy_rollout_without_payload_wrapper(tmp_path: Path):
    lines = [
        {"id": "legacy-1", "timestamp": "2025-06-01T00:00:00Z", "instructions": "be helpful"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"record_type": "state"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]},
    ]
    path = tmp_path / "rollout-old.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    assert detect_format(path) == "codex"
    s = load_session(str(path))
    assert s.id == "legacy-1"
    assert [m["content"] for m in s.messages] == ["be helpful", "hi", "hello"]
    assert len(s.api_calls) == 1 and s.api_calls[0].usage is None
    assert [s.messages[t.user_index]["content"] for t in s.turns] == ["hi"]


def test_a_line_that_is_not_json_is_reported_not_dropped_silently(tmp_path: Path):
    path = _rollout(tmp_path)
    lines = path.read_text().splitlines()
    lines.insert(3, lines[3][:40])  # a torn line, as a crashed writer leaves it
    path.write_text("\n".join(lines) + "\n")
    s = load_session(str(path))
    assert any(w.startswith("line 4: skipped, not valid JSON") for w in s.warnings)


def test_without_token_counts_each_answer_after_a_tool_output_is_its_own_call(tmp_path: Path):
    fn = lambda cid, cmd: {"type": "function_call", "call_id": cid, "name": "shell", "arguments": json.dumps({"cmd": cmd})}  # noqa: E731
    out = lambda cid, text: {"type": "function_call_output", "call_id": cid, "output": text}  # noqa: E731
    lines = [
        _line("session_meta", {"id": "sess-2", "timestamp": "2026-02-23T12:00:00Z", "cwd": "/r"}),
        _line("event_msg", {"type": "task_started", "turn_id": "t"}),
        _line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        _line("response_item", fn("A", "ls")),
        _line("event_msg", {"type": "token_count", "info": None}),  # a provider that reports no usage
        _line("response_item", out("A", "x")),
        _line("response_item", fn("B", "pwd")),
        _line("response_item", out("B", "/w")),
        _line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "All done."}]}),
        _line("event_msg", {"type": "task_complete", "turn_id": "t"}),
    ]
    path = tmp_path / "rollout-2026-02-23T12-00-00-sess-2.jsonl"
    path.write_text("\n".join(lines) + "\n")
    s = load_session(str(path))
    answers = [s.messages[c.message_index] for c in s.api_calls]
    assert [[t["id"] for t in a.get("tool_calls") or []] for a in answers] == [["A"], ["B"], []]
    assert answers[-1]["content"] == "All done."


def test_a_turn_is_ended_by_task_complete_or_turn_aborted(tmp_path: Path):
    lines = [_line("session_meta", {"id": "sess-3", "timestamp": "2026-02-23T12:00:00Z", "cwd": "/r"})]
    for turn_id, end in (("t1", "task_complete"), ("t2", "turn_aborted"), ("t3", None)):
        lines += [
            _line("event_msg", {"type": "task_started", "turn_id": turn_id}),
            _line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": turn_id}]}),
            _line("event_msg", {"type": "user_message", "message": turn_id}),
            _line("response_item", {"type": "message", "role": "assistant", "phase": "commentary",
                                    "content": [{"type": "output_text", "text": "Looking."}]}),
        ]
        if end:
            lines.append(_line("event_msg", {"type": end, "turn_id": turn_id}))
    path = tmp_path / "rollout-2026-02-23T12-00-00-sess-3.jsonl"
    path.write_text("\n".join(lines) + "\n")
    s = load_session(str(path))
    # The third turn's last item reads like an answer, but Codex has not said the turn is over.
    assert [(t.turn_id, t.ended) for t in s.turns] == [("t1", True), ("t2", True), ("t3", False)]


def test_context_injected_before_the_first_task_is_not_a_prompt(tmp_path: Path):
    """A rollout still being written: so far only the instructions and context Codex sends first."""
    msg = lambda role, text: {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}  # noqa: E731
    lines = [
        _line("session_meta", {"id": "sess-4", "timestamp": "2026-02-23T12:00:00Z", "cwd": "/r"}),
        _line("response_item", msg("developer", "permissions")),
        _line("response_item", msg("user", "# AGENTS.md instructions")),
        _line("response_item", msg("user", "<environment_context>cwd /r</environment_context>")),
    ]
    path = tmp_path / "rollout-2026-02-23T12-00-00-sess-4.jsonl"
    path.write_text("\n".join(lines) + "\n")
    s = load_session(str(path))
    assert [t.user_index for t in s.turns] == [None]  # no prompt yet, so no turn a follower could play
    assert all(m["x_flags"]["meta"] for m in s.messages if m["role"] == "user")
    lines += [_line("event_msg", {"type": "task_started", "turn_id": "t1"}), _line("response_item", msg("user", "go")),
              _line("event_msg", {"type": "user_message", "message": "go"})]
    path.write_text("\n".join(lines) + "\n")
    s = load_session(str(path))
    assert [(s.messages[t.user_index]["content"], t.start) for t in s.turns] == [("go", 1)]  # the context leads it


def _remote_compaction(tmp_path: Path) -> Path:
    """A rollout with Codex' recorded window and a server-side (encrypted) compaction."""
    msg = lambda role, text: {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}  # noqa: E731
    lines = [
        _line("session_meta", {"id": "sess-2", "timestamp": "2026-02-23T12:00:00Z", "cwd": "/r"}),
        _line("event_msg", {"type": "task_started", "turn_id": "t1", "model_context_window": 258_400}),
        _line("response_item", msg("user", "go")),
        _line("event_msg", {"type": "user_message", "message": "go"}),
        _line("turn_context", {"turn_id": "t1", "model": "gpt-5.3-codex"}),
        _line("response_item", {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q"}}),
        _line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "found"}]}),
        _line("event_msg", _usage(200_000, 200_000, 150_000)),
        _line("compacted", {"replacement_history": [msg("user", "go"),
                                                    {"type": "compaction", "encrypted_content": "gAAAA" + "x" * 995}]}),
        _line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "on"}]}),
        _line("event_msg", _usage(210_000, 10_000, 0)),
        _line("event_msg", {"type": "task_complete", "turn_id": "t1"}),
    ]
    path = tmp_path / "rollout-2026-02-23T12-00-00-sess-2.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_recorded_context_window_is_read(tmp_path: Path):
    assert load_session(str(_remote_compaction(tmp_path))).context_window == 258_400


def test_an_encrypted_compaction_item_is_the_summary_and_the_previous_prompt_is_tokens_before(tmp_path: Path):
    s = load_session(str(_remote_compaction(tmp_path)))
    [c] = s.compactions
    assert c.tokens_before == 200_000, "the prompt of the call just before the compaction"
    copied = s.messages[c.message_index:c.message_index + 2]
    assert [m["x_flags"].get("compaction_summary", False) for m in copied] == [False, True]
    assert "1,000 characters" in copied[1]["content"] and copied[1]["x_reasoning_opaque"][0]["encrypted_content"].startswith("gAAAA")


def test_a_web_search_keeps_its_server_side_flag_so_no_stub_result_is_added(tmp_path: Path):
    from inspector.host.shaping import sanitize_request
    from inspector.sessions.model import wire_message

    s = load_session(str(_remote_compaction(tmp_path)))
    first = s.messages[s.api_calls[0].message_index]
    wire = [wire_message(m) for m in s.messages[: s.api_calls[0].message_index + 1]]
    assert wire[-1]["tool_calls"][0]["x_server_side"] is True
    _, done = sanitize_request(wire)
    assert done["stubs"] == 0 and first["tool_calls"][0]["function"]["name"] == "web_search"
