"""Claude Code JSONL: block regrouping, compaction boundaries, branches (docs/formats.md §4)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from inspector.sessions import load_session
from inspector.sessions.detect import detect_format

SID = "11111111-2222-3333-4444-555555555555"


def _rec(uuid, parent, kind, message=None, **extra):
    rec = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/p", "sessionId": SID,
           "version": "2.1.39", "type": kind, "uuid": uuid, "timestamp": "2026-02-10T22:57:54.764Z"}
    if message is not None:
        rec["message"] = message
    rec.update(extra)
    return rec


def _usage(inp, read, write, out, write_1h=0):
    return {"input_tokens": inp, "cache_read_input_tokens": read, "cache_creation_input_tokens": write,
            "cache_creation": {"ephemeral_5m_input_tokens": write - write_1h, "ephemeral_1h_input_tokens": write_1h},
            "output_tokens": out}


def _assistant(uuid, parent, mid, block, usage):
    return _rec(uuid, parent, "assistant", {"model": "claude-opus-4-6", "id": mid, "type": "message", "role": "assistant",
                                            "content": [block], "stop_reason": None, "usage": usage}, requestId="req_" + mid)


def _session() -> list[dict]:
    return [
        {"type": "summary", "summary": "Old title", "leafUuid": "x"},
        _rec("u1", None, "user", {"role": "user", "content": "fix the bug"}),
        _assistant("a1", "u1", "msg_1", {"type": "thinking", "thinking": "hmm", "signature": "sig"}, _usage(3, 100, 50, 1, 50)),
        _assistant("a2", "a1", "msg_1", {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file": "a"}}, _usage(3, 100, 50, 1, 50)),
        _assistant("a3", "a2", "msg_1", {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file": "b"}}, _usage(3, 100, 50, 40, 50)),
        _rec("r1", "a2", "user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]}),
        _rec("r2", "a3", "user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2",
                                                                "content": [{"type": "text", "text": "B"}, {"type": "image", "source": {}}]}]}),
        _rec("p1", "r2", "progress", data={"type": "hook_progress"}),
        _assistant("a4", "r2", "msg_2", {"type": "text", "text": "fixed"}, _usage(5, 150, 0, 7)),
        # an abandoned retry: hangs off u1 but is not on the chain ending at the last record
        _rec("x1", "a4", "user", {"role": "user", "content": "actually no"}),
        _rec("b1", None, "system", None, subtype="compact_boundary", content="Conversation compacted",
             logicalParentUuid="a4", compactMetadata={"trigger": "auto", "preTokens": 170_251}),
        _rec("s1", "b1", "user", {"role": "user", "content": "This session is being continued from a previous conversation..."},
             isCompactSummary=True, isVisibleInTranscriptOnly=True),
        _rec("m1", "s1", "user", {"role": "user", "content": "<system-reminder>be nice</system-reminder>"}, isMeta=True),
        _rec("u2", "m1", "user", {"role": "user", "content": "<task-notification>build done</task-notification>"}),
        _assistant("a5", "u2", "msg_3", {"type": "text", "text": "noted"}, _usage(2, 10, 20, 3)),
        _rec("d1", "a5", "system", None, subtype="turn_duration", durationMs=1200),
    ]


def _write(tmp_path: Path, records, name=f"{SID}.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_blocks_regroup_into_one_message_per_response_with_the_last_usage(tmp_path: Path):
    s = load_session(str(_write(tmp_path, _session())))
    assert s.title == "Old title"
    a = s.messages[1]
    assert a["role"] == "assistant" and a["x_reasoning"] == "hmm" and a["x_reasoning_opaque"] == [{"type": "thinking", "signature": "sig"}]
    assert [c["id"] for c in a["tool_calls"]] == ["t1", "t2"]
    assert json.loads(a["tool_calls"][0]["function"]["arguments"]) == {"file": "a"}
    first = s.api_calls[0].usage
    assert (first.prompt_tokens, first.cache_read_tokens, first.cache_write_tokens) == (153, 100, 50)
    assert first.completion_tokens == 40, "the last line of a response carries the final output tokens"
    assert first.cache_write_1h_tokens == 50
    assert [m["role"] for m in s.messages[2:4]] == ["tool", "tool"]
    assert s.messages[3]["content"] == "B\n[image]" and s.messages[3]["x_flags"]["multimodal"]
    assert len(s.api_calls) == 3 and s.api_calls[0].model == "claude-opus-4-6"


def test_compact_boundary_becomes_a_marker_at_the_summary(tmp_path: Path):
    s = load_session(str(_write(tmp_path, _session())))
    [c] = s.compactions
    assert c.kind == "claude-compact-boundary" and c.tokens_before == 170_251
    assert s.messages[c.message_index]["x_flags"]["compaction_summary"]
    assert c.summary.startswith("This session is being continued")


def test_turns_follow_genuine_prompts_and_notifications(tmp_path: Path):
    s = load_session(str(_write(tmp_path, _session())))
    assert [(s.messages[t.user_index]["content"][:12], t.meta) for t in s.turns] == [
        ("fix the bug", False), ("<task-notifi", True),
    ]


def test_abandoned_branches_are_reported_not_loaded(tmp_path: Path):
    records = _session()
    records[9]["parentUuid"] = "u1"  # the retry now forks off the first prompt
    s = load_session(str(_write(tmp_path, records)))
    assert all(m.get("content") != "actually no" for m in s.messages)
    assert any("abandoned" in w and w.endswith("line(s) 10") for w in s.warnings)


def test_gzip_file_and_subagent_children(tmp_path: Path):
    path = tmp_path / f"{SID}.jsonl.gz"
    path.write_bytes(gzip.compress("\n".join(json.dumps(r) for r in _session()).encode()))
    sub = tmp_path / SID / "subagents"
    sub.mkdir(parents=True)
    child = [_rec("c1", None, "user", {"role": "user", "content": "task"}, isSidechain=True, agentId="abc"),
             _assistant("c2", "c1", "msg_c", {"type": "text", "text": "done"}, _usage(1, 0, 0, 1))]
    _write(sub, child, "agent-abc.jsonl")
    assert detect_format(path) == "claude-code"
    s = load_session(str(path))
    assert len(s.messages) > 5
    [kid] = s.children
    assert kid.id == "abc" and kid.messages[0]["x_flags"]["sidechain"]


def test_hermes_trace_export_is_flagged(tmp_path: Path):
    records = [_rec("u1", None, "user", {"role": "user", "content": "hi"}, version="hermes-agent"),
               _rec("a1", "u1", "assistant", {"role": "assistant", "content": [{"type": "text", "text": "yo"}], "model": "m"},
                    version="hermes-agent")]
    s = load_session(str(_write(tmp_path, records, "trace.jsonl")))
    assert s.meta["hermes_trace_export"] and [m["content"] for m in s.messages] == ["hi", "yo"]
    assert s.api_calls[0].usage is None


def test_a_resumed_session_with_many_leading_summaries_is_still_detected(tmp_path: Path):
    summaries = [{"type": "summary", "summary": f"earlier part {i}", "leafUuid": f"leaf-{i}"} for i in range(25)]
    path = _write(tmp_path, summaries + _session())
    assert detect_format(path) == "claude-code"


def _reply(uuid, parent, block, stop_reason):
    record = _assistant(uuid, parent, "msg_" + uuid, block, _usage(1, 0, 0, 1))
    record["message"]["stop_reason"] = stop_reason
    return record


TEXT = {"type": "text", "text": "done"}
TOOL = {"type": "tool_use", "id": "t9", "name": "Bash", "input": {"command": "ls"}}


@pytest.mark.parametrize("tail, ended", [
    ([_reply("a1", "u1", TEXT, None)], False),  # 2.1.x: null on every line, more blocks may follow
    ([_reply("a1", "u1", TEXT, "end_turn")], True),
    ([_reply("a1", "u1", TEXT, "max_tokens")], True),
    ([_reply("a1", "u1", TOOL, "tool_use")], False),
    ([_reply("a1", "u1", TEXT, "pause_turn")], False),  # the client resumes a paused turn
    ([_reply("a1", "u1", TEXT, None), _rec("d1", "a1", "system", None, subtype="turn_duration", durationMs=900)], True),
    ([_reply("a1", "u1", TOOL, None),
      _rec("i1", "a1", "user", {"role": "user", "content": "[Request interrupted by user for tool use]"})], True),
])
def test_a_turn_is_ended_by_turn_duration_a_final_stop_reason_or_an_interruption(tmp_path: Path, tail, ended):
    records = [_rec("u1", None, "user", {"role": "user", "content": "list the files"}), *tail]
    [turn] = load_session(str(_write(tmp_path, records))).turns
    assert turn.ended is ended


def test_only_a_turn_the_file_closes_is_ended(tmp_path: Path):
    s = load_session(str(_write(tmp_path, _session())))
    # The first turn ends on hook context after a compaction; the second is closed by turn_duration.
    assert [t.ended for t in s.turns] == [False, True]


def _compacted_across_a_missing_parent() -> list[dict]:
    """Claude Code 2.1.x after an auto-compaction: the boundary has ``parentUuid: null`` and a
    ``logicalParentUuid`` that no line of the file carries."""
    return [
        _rec("u1", None, "user", {"role": "user", "content": "first prompt"}),
        _assistant("a1", "u1", "msg_1", {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}, _usage(3, 0, 900, 5)),
        _rec("r1", "a1", "user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]}),
        _assistant("a2", "r1", "msg_2", {"type": "text", "text": "read it"}, _usage(3, 900, 40, 6)),
        _rec("u2", "a2", "user", {"role": "user", "content": "second prompt"}),
        _assistant("a3", "u2", "msg_3", {"type": "text", "text": "ok"}, _usage(4, 940, 10, 2)),
        _rec("b1", None, "system", None, subtype="compact_boundary", content="Conversation compacted",
             logicalParentUuid="not-in-this-file", compactMetadata={"trigger": "auto", "preTokens": 955}),
        _rec("s1", "b1", "user", {"role": "user", "content": "This session is being continued..."}, isCompactSummary=True),
        _rec("u3", "s1", "user", {"role": "user", "content": "third prompt"}),
        _assistant("a4", "u3", "msg_4", {"type": "text", "text": "done"}, _usage(5, 0, 300, 3)),
    ]


def test_the_chain_continues_across_a_boundary_whose_logical_parent_is_not_in_the_file(tmp_path: Path):
    s = load_session(str(_write(tmp_path, _compacted_across_a_missing_parent())))
    assert not any("abandoned" in w for w in s.warnings)
    assert s.messages[0] == {**s.messages[0], "role": "user", "content": "first prompt"}
    assert len(s.api_calls) == 4
    assert [s.messages[t.user_index]["content"] for t in s.turns] == ["first prompt", "second prompt", "third prompt"]
    [c] = s.compactions
    assert c.tokens_before == 955 and s.messages[c.message_index]["x_flags"]["compaction_summary"]


def test_a_true_sibling_of_the_live_chain_is_still_abandoned_across_a_boundary(tmp_path: Path):
    records = _compacted_across_a_missing_parent()
    # a retry of the second prompt's reply: same parent as a3, written before it, off the chain
    records.insert(5, _assistant("x1", "u2", "msg_x", {"type": "text", "text": "retried"}, _usage(4, 940, 10, 2)))
    s = load_session(str(_write(tmp_path, records)))
    assert all(m.get("content") != "retried" for m in s.messages)
    assert any("abandoned" in w and w.endswith("line(s) 6") for w in s.warnings)
    assert len(s.api_calls) == 4


def test_an_mcp_reconnect_is_flagged_as_a_change_of_the_tool_list(tmp_path: Path):
    records = [
        _rec("u1", None, "user", {"role": "user", "content": "hi"}),
        _assistant("a1", "u1", "msg_1", {"type": "text", "text": "hello"}, _usage(3, 0, 900, 5)),
        _rec("c1", "a1", "user", {"role": "user", "content": "<command-name>/mcp</command-name>\n<command-message>mcp"
                                                              "</command-message>"}),
    ]
    s = load_session(str(_write(tmp_path, records)))
    assert s.messages[-1]["x_flags"] == {"meta": True, "tools_changed": True}
