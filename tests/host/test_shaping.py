"""The last pass over a request before a provider call (Hermes' ``_sanitize_api_messages``)."""

from __future__ import annotations

from inspector.host.shaping import STUB_RESULT, sanitize_request


def _call(cid: str) -> dict:
    return {"id": cid, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}


def test_a_paired_request_is_returned_as_is():
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "assistant", "content": None, "tool_calls": [_call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "r"}]
    out, done = sanitize_request(messages)
    assert out is messages and not any(done.values())


def test_refused_roles_orphans_and_missing_results_are_mended_like_hermes():
    messages = [{"role": "system", "content": "s"},
                {"role": "banana", "content": "?"},
                {"role": "tool", "tool_call_id": "gone", "content": "its call was summarised away"},
                {"role": "user", "content": "u"},
                {"role": "assistant", "content": None, "tool_calls": [_call("c1"), _call("c2")]},
                {"role": "tool", "tool_call_id": "c2", "content": "r2"}]
    out, done = sanitize_request(messages)
    assert done == {"roles": 1, "orphans": 1, "stubs": 1}
    assert [m.get("role") for m in out] == ["system", "user", "assistant", "tool", "tool"]
    assert out[3] == {"role": "tool", "content": STUB_RESULT, "tool_call_id": "c1"}  # right after its call
    assert out[4]["tool_call_id"] == "c2"


def test_a_result_before_its_call_is_not_an_orphan():
    # Hermes pairs by id across the whole request, not by order.
    messages = [{"role": "user", "content": "u"}, {"role": "tool", "tool_call_id": "c1", "content": "r"},
                {"role": "assistant", "content": None, "tool_calls": [_call("c1")]}]
    out, done = sanitize_request(messages)
    assert out is messages
