"""Built-in compressor: the three-pass tool-output prune and the proactive prune (agent/context_compressor.py:419-446, 1649-1813 of hermes-agent 0.19.0; docs/host-contract.md §6.10)."""

from __future__ import annotations

import copy
import json

import pytest

from inspector.engines.compressor import ContextCompressor
from inspector.engines.compressor_prune import (
    DUPLICATE_MARKER,
    summarize_tool_result,
)
from inspector.tokens.rough import message_rough_chars


def engine(**kw) -> ContextCompressor:
    kw.setdefault("quiet_mode", True)
    return ContextCompressor("test-model", config_context_length=200_000, **kw)


def call(cid: str, name: str = "terminal", **args) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def a(text: str = "", calls: list | None = None) -> dict:
    msg = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = calls
    return msg


def tool(cid: str, content) -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": content}


def reads(k: int, size: int = 1500) -> list[dict]:
    """A user ask followed by k read_file calls, each answered with ``size`` chars."""
    msgs: list[dict] = [{"role": "user", "content": "read the files"}]
    for i in range(k):
        msgs.append(a("", [call(f"c{i}", "read_file", path=f"/src/f{i}.py", offset=i + 1)]))
        msgs.append(tool(f"c{i}", str(i) * size))
    return msgs


# ---------------------------------------------------------------------------------------------
# per-row budget estimate (context_compressor.py:419-446)
# ---------------------------------------------------------------------------------------------


def test_estimate_msg_budget_tokens():
    c = engine()
    tc = call("c1", command="ls")
    msg = {"role": "assistant", "content": "abcd" * 10, "tool_calls": [tc], "reasoning": "r" * 40,
           "reasoning_details": [{"type": "summary", "text": "t"}]}
    expected = 40 // 4 + 10 + len(str(tc)) // 4 + 40 // 4 + len(json.dumps([{"type": "summary", "text": "t"}])) // 4
    assert c._estimate_msg_budget_tokens(msg) == expected
    parts = [{"type": "text", "text": "x" * 100}, {"type": "image_url", "image_url": {"url": "data:..."}}]
    assert c._estimate_msg_budget_tokens({"role": "user", "content": parts}) == (100 + 6400) // 4 + 10
    assert c._estimate_msg_budget_tokens({"role": "user", "content": None}) == 10


# ---------------------------------------------------------------------------------------------
# boundary
# ---------------------------------------------------------------------------------------------


def test_count_only_boundary_protects_last_rows():
    c = engine()
    msgs = reads(6)  # 13 rows
    out, changed = c._prune_old_tool_results(msgs, protect_tail_count=4)
    assert changed == 4  # tool rows 2, 4, 6, 8; rows 9..12 protected
    for i in (2, 4, 6, 8):
        assert out[i]["content"].startswith("[read_file] read /src/f")
    assert out[9:] == msgs[9:]


def test_token_boundary_protects_rows_within_budget_but_at_least_count():
    c = engine()
    msgs = reads(6)
    budget = sum(c._estimate_msg_budget_tokens(m) for m in msgs[-6:])
    out, _ = c._prune_old_tool_results(msgs, protect_tail_count=2, protect_tail_tokens=budget)
    # the six rows within the budget and the row that overflows it (6) are protected
    assert [i for i, m in enumerate(out) if m != msgs[i]] == [2, 4]
    # the count wins when it protects more than the budget
    out, _ = c._prune_old_tool_results(msgs, protect_tail_count=10, protect_tail_tokens=1)
    assert [i for i, m in enumerate(out) if m != msgs[i]] == [2]
    # the count alone (20 > 13 rows): nothing prunable
    out, changed = c._prune_old_tool_results(msgs, protect_tail_count=c.protect_last_n)
    assert changed == 0 and out == msgs


# ---------------------------------------------------------------------------------------------
# pass 1: duplicates
# ---------------------------------------------------------------------------------------------


def test_pass1_replaces_older_identical_outputs_everywhere():
    c = engine()
    same = "S" * 250
    short = "s" * 199
    msgs = [
        {"role": "user", "content": "go"},
        a("", [call("c1"), call("c2"), call("c3"), call("c4")]),
        tool("c1", same),
        tool("c2", short),
        tool("c3", same),
        tool("c4", short),
    ]
    out, changed = c._prune_old_tool_results(msgs, protect_tail_count=len(msgs))  # everything protected
    assert out[2]["content"] == DUPLICATE_MARKER
    assert out[4]["content"] == same  # the newest copy stays
    assert out[3]["content"] == short  # below 200 characters: not deduplicated
    assert changed == 1


# ---------------------------------------------------------------------------------------------
# pass 2: old tool results
# ---------------------------------------------------------------------------------------------


def test_pass2_images_multimodal_long_text_and_placeholders():
    c = engine()
    parts = [{"type": "text", "text": "caption"}, {"type": "image_url", "image_url": {"url": "data:png"}}]
    multimodal = {"_multimodal": True, "text_summary": "T" * 300, "content": parts}
    placeholder = "[screenshot removed] " + "p" * 250
    msgs = [
        {"role": "user", "content": "go"},
        a("", [call("c1", "browser_vision"), call("c2", "browser_vision"), call("c3"), call("c4"), call("c5")]),
        tool("c1", parts),
        tool("c2", multimodal),
        tool("c3", "x" * 200),
        tool("c4", placeholder),
        tool("c5", "long\n" * 100),
        {"role": "user", "content": "protected"},
    ]
    out, changed = c._prune_old_tool_results(msgs, protect_tail_count=1)
    assert out[2]["content"] == [{"type": "text", "text": "caption"}, {"type": "text", "text": "[screenshot removed to save context]"}]
    assert out[3]["content"] == "[screenshot removed] " + "T" * 200
    assert out[4]["content"] == "x" * 200  # exactly 200: kept
    assert out[5]["content"] == "[terminal] ran `` -> exit ?, 1 lines output"  # only duplicates are skipped
    assert out[6]["content"] == "[terminal] ran `` -> exit ?, 101 lines output"
    assert changed == 4


def test_pass2_names_a_result_without_a_matching_call_unknown():
    c = engine()
    msgs = [{"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": "zz", "name": "mystery", "content": "m" * 300}, {"role": "user", "content": "end"}]
    out, _ = c._prune_old_tool_results(msgs, protect_tail_count=1)
    assert out[1]["content"] == "[unknown] (300 chars result)"


# ---------------------------------------------------------------------------------------------
# pass 3: long tool-call arguments
# ---------------------------------------------------------------------------------------------


def test_pass3_clips_long_string_leaves_in_json_arguments():
    c = engine()
    args = {"path": "/a/é.py", "content": "é" * 600, "nested": {"k": ["q" * 300, 5]}}
    long_call = {"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": json.dumps(args)}}
    small_call = call("c2", "write_file", path="/b.py", content="tiny")
    non_json = {"id": "c3", "type": "function", "function": {"name": "x", "arguments": "not json " * 100}}
    msgs = [
        {"role": "user", "content": "go"},
        a("", [long_call, small_call, non_json]),
        tool("c1", "ok"),
        tool("c2", "ok"),
        tool("c3", "ok"),
        a("", [dict(long_call, id="c4")]),
        tool("c4", "ok"),
    ]
    snapshot = copy.deepcopy(msgs)
    out, _ = c._prune_old_tool_results(msgs, protect_tail_count=2)
    new_args = out[1]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(new_args) == {
        "path": "/a/é.py",
        "content": "é" * 200 + "...[truncated]",
        "nested": {"k": ["q" * 200 + "...[truncated]", 5]},
    }
    assert "é" in new_args  # ensure_ascii=False
    assert out[1]["tool_calls"][1] is small_call
    assert out[1]["tool_calls"][2] is non_json
    assert out[5] == msgs[5]  # protected
    assert msgs == snapshot


# ---------------------------------------------------------------------------------------------
# one-line templates
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "content", "expected"),
    [
        ("terminal", {"command": "pytest -q"}, json.dumps({"output": "l1\nl2\nl3", "exit_code": 1}),
         "[terminal] ran `pytest -q` -> exit 1, 1 lines output"),
        ("terminal", {"command": "make"}, "building\nexit code: 2", "[terminal] ran `make` -> exit ?, 2 lines output"),
        ("read_file", {"path": "/a/b.py", "offset": 40}, "c" * 1234, "[read_file] read /a/b.py from line 40 (1,234 chars)"),
        ("read_file", {"path": "/a/b.py"}, "c" * 10, "[read_file] read /a/b.py from line 1 (10 chars)"),
        ("search_files", {"pattern": "TODO", "path": "src", "target": "content"}, json.dumps({"total_count": 7}),
         "[search_files] content search for 'TODO' in src -> 7 matches"),
        ("search_files", {"pattern": "*.py", "target": "files"}, "a.py\nb.py\n\n", "[search_files] files search for '*.py' in . -> ? matches"),
        ("write_file", {"path": "/w.txt", "content": "a\nbc"}, "ok", "[write_file] wrote to /w.txt (2 lines)"),
        ("patch", {"path": "/p.py", "mode": "replace"}, "r" * 5000, "[patch] replace in /p.py (5,000 chars result)"),
        ("web_search", {"query": "hermes agent"}, "w" * 49, "[web_search] query='hermes agent' (49 chars result)"),
        ("web_extract", {"urls": [{"url": "https://a"}, "https://b"]}, "e" * 9, "[web_extract] https://a (+1 more) (9 chars)"),
        ("browser_navigate", {"url": "https://x.org"}, "n" * 5, "[browser_navigate] https://x.org (5 chars)"),
        ("browser_click", {"ref": "@e5"}, "k" * 3, "[browser_click] ref=@e5 (3 chars)"),
        ("memory", {"action": "add", "target": "user"}, "m", "[memory] add on user"),
        ("execute_code", {"code": "a=1\nb=2\nprint(a+b)"}, "3\n", "[execute_code] `a=1 b=2 print(a+b)` (2 lines output)"),
        ("custom_tool", {"a": 1, "b": "x", "c": [1, 2]}, "z" * 300, "[custom_tool] a=1 b=x (300 chars result)"),
        ("terminal", {"command": True}, "o", "[terminal] ran `True` -> exit ?, 1 lines output"),
    ],
)
def test_one_line_templates(name, args, content, expected):
    assert summarize_tool_result(name, json.dumps(args), content) == expected


def test_template_clips_long_command_to_80_chars():
    line = summarize_tool_result("terminal", json.dumps({"command": "echo " + "a" * 200}), "out")
    cmd = line.split("`")[1]
    assert len(cmd) == 80 and cmd.endswith("...")


def test_a_template_that_cannot_describe_the_call_never_raises():
    assert summarize_tool_result("read_file", "[1, 2]", "x" * 3000) == "[read_file] read ? from line 1 (3,000 chars)"
    assert summarize_tool_result("search_files", json.dumps({"pattern": None}), None) \
        == "[search_files] content search for 'None' in . -> ? matches"


# ---------------------------------------------------------------------------------------------
# proactive prune (docs/host-contract.md §6.10)
# ---------------------------------------------------------------------------------------------


def test_proactive_prune_is_off_by_default():
    c = engine()
    msgs = reads(4, size=9000)
    out, reclaimed = c.prune_tool_results_only(msgs, current_tokens=10**6)
    assert out is msgs and reclaimed == 0


def test_proactive_prune_trigger_and_result():
    c = engine(protect_last_n=2, proactive_prune_tokens=1000, proactive_prune_min_reclaim_tokens=100)
    c.tail_token_budget = 0
    msgs = reads(4, size=9000) + [{"role": "user", "content": "small"}]
    snapshot = copy.deepcopy(msgs)
    out, reclaimed = c.prune_tool_results_only(msgs, current_tokens=1000)
    assert out is msgs and reclaimed == 0  # not above the trigger
    out, reclaimed = c.prune_tool_results_only(msgs, current_tokens=5000)
    changed = [i for i, m in enumerate(out) if m is not msgs[i]]
    assert changed == [2, 4, 6]  # the last tool result (8) is in the protected tail
    expected = sum(message_rough_chars(msgs[i])[0] - message_rough_chars(out[i])[0] for i in changed) // 4
    assert reclaimed == expected and reclaimed > 0
    assert out[2]["content"] == "[read_file] read /src/f0.py from line 1 (9,000 chars)"
    assert msgs == snapshot
    # re-arm watermark: no second prune at the same pressure
    again, n = c.prune_tool_results_only(msgs, current_tokens=5000)
    assert again is msgs and n == 0
    again, n = c.prune_tool_results_only(msgs, current_tokens=5001)
    assert n == reclaimed


def test_proactive_prune_respects_min_chars_and_min_reclaim():
    c = engine(protect_last_n=1, proactive_prune_tokens=1, proactive_prune_min_reclaim_tokens=10**9)
    c.tail_token_budget = 0
    msgs = reads(3, size=9000) + [{"role": "user", "content": "x"}]
    out, n = c.prune_tool_results_only(msgs, current_tokens=10)
    assert out is msgs and n == 0
    c = engine(protect_last_n=1, proactive_prune_tokens=1, proactive_prune_min_reclaim_tokens=0)
    c.tail_token_budget = 0
    out, n = c.prune_tool_results_only(reads(3, size=7000) + [{"role": "user", "content": "x"}], current_tokens=10)
    assert n == 0  # 7000 <= 8000 chars: nothing qualifies
    assert engine(proactive_prune_min_result_chars=5).proactive_prune_min_result_chars == 200
