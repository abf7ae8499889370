"""Hermes / ShareGPT trajectories with tool calls (docs/formats.md §2.4)."""

from __future__ import annotations

import json
from pathlib import Path

from inspector.sessions import load_session

SYSTEM = 'You are a function calling AI model.\n<tools>\n[{"name": "read", "description": "d", "parameters": {"type": "object"}}]\n</tools>'


def _entry():
    call = lambda name, args: f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"  # noqa: E731
    return {
        "conversations": [
            {"from": "system", "value": SYSTEM},
            {"from": "human", "value": "read two files"},
            {"from": "gpt", "value": "<think>\nplan\n</think>\nReading." + call("read", {"p": "a"}) + call("read", {"p": "b"})},
            {"from": "tool", "value": "<tool_response>\n" + json.dumps({"tool_call_id": None, "name": "read", "content": "A"})
             + "\n</tool_response>\n<tool_response>\n" + json.dumps({"name": "read", "content": {"text": "B"}}) + "\n</tool_response>"},
            {"from": "gpt", "value": "<think>\n</think>\n" + call("read", {"p": "c"})},
            {"from": "human", "value": "[CONTEXT SUMMARY]: read a, b, c"},
            {"from": "gpt", "value": "<think>\n</think>\nAll done."},
        ],
        "timestamp": "2026-04-13T21:38:56.194348",
        "model": "k2p5",
        "completed": True,
    }


def test_tool_calls_results_by_position_and_summary(tmp_path: Path):
    path = tmp_path / "trajectory_samples.jsonl"
    path.write_text(json.dumps(_entry()) + "\n")
    s = load_session(str(path))
    assert s.tools == [{"type": "function", "function": {"name": "read", "description": "d", "parameters": {"type": "object"}}}]
    roles = [m["role"] for m in s.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "user", "assistant"]
    first = s.messages[2]
    assert first["content"] == "Reading." and first["x_reasoning"] == "plan"
    assert [c["id"] for c in first["tool_calls"]] == ["call_0_0", "call_0_1"]
    assert json.loads(first["tool_calls"][1]["function"]["arguments"]) == {"p": "b"}
    assert [m["tool_call_id"] for m in s.messages[3:5]] == ["call_0_0", "call_0_1"], "paired by position"
    assert s.messages[4]["content"] == '{"text": "B"}'
    assert s.messages[5]["content"] is None and "x_reasoning" not in s.messages[5]
    assert s.messages[5]["x_flags"]["orphan"], "a call whose results were never written is flagged"
    [c] = s.compactions
    assert c.kind == "trajectory-summary" and c.message_index == 6
    assert len(s.turns) == 1 and len(s.api_calls) == 3 and s.model == "k2p5"
    assert s.started_at is not None and s.meta["completed"] is True
