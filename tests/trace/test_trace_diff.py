"""The keyed structural message diff: properties, the engine actions it must label, speed."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.trace.diff import (
    DiffOp,
    apply_diff,
    diff_messages,
    is_summary,
    refine_messages,
    refine_text,
    stats,
)
from inspector.trace.model import message_key

SUMMARY = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below."


def conversation(turns: int, *, tool_chars: int = 200) -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        msgs.append({"role": "user", "content": f"Step {t}: please look at module_{t}.py"})
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{t}",
                        "type": "function",
                        "function": {"name": "read", "arguments": f'{{"n":{t}}}'},
                    }
                ],
            }
        )
        body = " ".join(f"line{t}_{i}" for i in range(tool_chars // 8))
        msgs.append({"role": "tool", "tool_call_id": f"call_{t}", "content": body})
        msgs.append({"role": "assistant", "content": f"Module {t} defines function f{t}."})
    return msgs


def check_cover(diff, before, after) -> None:
    """Ops tile both lists exactly once and in order; every label is consistent."""
    bi = ai = 0
    for op in diff.ops:
        assert op.before_range[0] == bi and op.after_range[0] == ai, op
        assert op.before_range[1] >= bi and op.after_range[1] >= ai
        bi, ai = op.before_range[1], op.after_range[1]
        b = before[op.before_range[0] : op.before_range[1]]
        a = after[op.after_range[0] : op.after_range[1]]
        if op.kind == "equal":
            assert b == a and b
        elif op.kind == "removed":
            assert b and not a
        elif op.kind == "added":
            assert a and not b
        elif op.kind == "changed":
            assert len(b) == len(a) == 1 and b != a
            assert b[0].get("role") == a[0].get("role")
        elif op.kind == "summarised":
            assert op.summarised_from == len(b) >= 1
            assert a and all(is_summary(m) for m in a)
        else:  # pragma: no cover - a new kind must be added to the test
            raise AssertionError(op.kind)
        if op.kind != "summarised":
            assert op.summarised_from is None
    assert (bi, ai) == (len(before), len(after))


def roundtrip(before, after):
    diff = diff_messages(before, after)
    check_cover(diff, before, after)
    assert apply_diff(before, diff) == after
    return diff


# -- specific engine actions ----------------------------------------------------------------


def test_identical_and_empty_lists():
    msgs = conversation(3)
    diff = roundtrip(msgs, list(msgs))
    assert diff.identical and diff.common_prefix == len(msgs)
    assert [op.kind for op in diff.ops] == ["equal"]
    empty = roundtrip([], [])
    assert empty.ops == [] and empty.common_prefix == 0
    assert [op.kind for op in roundtrip([], msgs).ops] == ["added"]
    assert [op.kind for op in roundtrip(msgs, []).ops] == ["removed"]


def test_append_is_prefix_plus_added():
    before = conversation(5)
    after = before + conversation(6)[len(before) :]
    diff = roundtrip(before, after)
    assert diff.common_prefix == len(before)
    assert [op.kind for op in diff.ops] == ["equal", "added"]
    assert diff.ops[1].after_range == (len(before), len(after))


def test_compression_replacing_middle_span_is_summarised():
    before = conversation(10)
    head, tail = before[:3], before[-8:]
    summary = {"role": "user", "content": SUMMARY + "\nWe read modules 1-7.", "_compressed_summary": True}
    after = head + [summary] + tail
    diff = roundtrip(before, after)
    assert diff.common_prefix == 3
    assert diff.common_suffix == 8
    kinds = [op.kind for op in diff.ops]
    assert kinds == ["equal", "summarised", "equal"]
    op = diff.ops[1]
    n = len(before) - 3 - 8
    assert op == DiffOp("summarised", (3, 3 + n), (3, 4), summarised_from=n)
    s = stats(diff, tokens=lambda m: len(str(m.get("content") or "")))
    assert s["dropped"] == s["summarised"] == n and s["summaries"] == 1 and s["added"] == 1
    assert s["kept"] == 11


def test_summary_recognised_by_text_alone_and_legacy_prefix():
    # Replayed transcripts do not carry the in-process _compressed_summary flag.
    before = conversation(6)
    for text in (SUMMARY + " body", "[CONTEXT SUMMARY]: legacy body"):
        after = before[:1] + [{"role": "user", "content": text}] + before[-4:]
        diff = roundtrip(before, after)
        (op,) = diff.ops_of("summarised")
        assert op.summarised_from == len(before) - 5


def test_merged_summary_into_first_tail_message():
    before = conversation(6)
    tail0 = before[-4]
    merged = dict(
        tail0, content="[PRIOR CONTEXT — for reference only; not a new message]\n" + tail0["content"]
    )
    after = before[:1] + [merged] + before[-3:]
    diff = roundtrip(before, after)
    (op,) = diff.ops_of("summarised")
    # The merged message stands for the summarised span *and* the tail message it absorbed.
    assert op.before_range == (1, len(before) - 3) and op.after_range == (1, 2)


def test_second_compaction_summarises_the_old_summary_too():
    base = conversation(8)
    old = {"role": "user", "content": SUMMARY + " first"}
    before = base[:1] + [old] + base[5:]
    new = {"role": "user", "content": SUMMARY + " second, covering the first"}
    after = base[:1] + [new] + base[-4:]
    diff = roundtrip(before, after)
    (op,) = diff.ops_of("summarised")
    assert op.before_range[0] == 1 and op.summarised_from == len(before) - 5


def test_select_context_dropping_messages_is_removed():
    before = conversation(8)
    # A windowing engine keeps the system prompt and the last two turns.
    after = before[:1] + before[-8:]
    diff = roundtrip(before, after)
    assert [op.kind for op in diff.ops] == ["equal", "removed", "equal"]
    assert diff.ops[1].before_range == (1, len(before) - 8)
    s = stats(diff, tokens=lambda m: 10)
    assert s["dropped"] == len(before) - 9 and s["added"] == 0
    assert s["tokens_dropped"] == 10 * (len(before) - 9)
    assert s["tokens_before"] == 10 * len(before) and s["tokens_after"] == 10 * len(after)
    assert s["tokens_prefix"] == 10


def test_edited_tool_result_is_changed_with_word_highlights():
    before = conversation(4)
    idx = 7  # the tool result of turn 1
    assert before[idx]["role"] == "tool"
    edited = dict(before[idx], content=before[idx]["content"].replace("line1_3", "EDITED"))
    after = before[:idx] + [edited] + before[idx + 1 :]
    diff = roundtrip(before, after)
    assert [op.kind for op in diff.ops] == ["equal", "changed", "equal"]
    op = diff.ops[1]
    assert op.before_range == (idx, idx + 1)
    segments = diff.refine(op)
    changed = [seg for seg in segments if seg[0] != "equal"]
    assert changed == [("replace", "line1_3", "EDITED")]
    assert stats(diff)["changed"] == 1 and stats(diff)["tokens_before"] is None


def test_pruned_tool_output_pairs_by_tool_call_id():
    before = conversation(5)
    after = [
        dict(m, content="[Old tool output cleared to save context space]")
        if m["role"] == "tool" and i < 12
        else m
        for i, m in enumerate(before)
    ]
    diff = roundtrip(before, after)
    changed = diff.ops_of("changed")
    assert len(changed) == 3  # tool results of turns 0, 1, 2 (indices 3, 7, 11)
    assert not diff.ops_of("summarised") and not diff.ops_of("added")
    assert stats(diff)["changed"] == 3


def test_tool_calls_stripped_from_assistant_is_changed():
    before = conversation(3)
    stripped = dict(before[2], content="(tool call removed)")
    stripped.pop("tool_calls")
    after = before[:2] + [stripped] + before[4:]  # the tool result went too
    diff = roundtrip(before, after)
    assert diff.common_prefix == 2


def test_duplicates_do_not_confuse_the_diff():
    ok = {"role": "tool", "content": "OK"}
    user = {"role": "user", "content": "continue"}
    before = [ok, user] * 50
    after = before[10:]
    diff = roundtrip(before, after)
    s = stats(diff)
    assert s["dropped"] == 10 and s["kept"] == 90
    # A duplicate displaced by its ordinal is still reported equal, not removed + added.
    # Here "ok" is occurrence 1 before and occurrence 0 after.
    x = {"role": "assistant", "content": "x"}
    diff = roundtrip([ok, x, ok], [x, ok])
    assert stats(diff)["kept"] == 2 and stats(diff)["dropped"] == 1


def test_keys_from_the_store_are_used():
    before, after = conversation(3), conversation(4)
    kb = [message_key(m) for m in before]
    ka = [message_key(m) for m in after]
    diff = diff_messages(before, after, keys_before=kb, keys_after=ka)
    assert apply_diff(before, diff) == after
    try:
        diff_messages(before, after, keys_before=kb[:-1])
    except ValueError:
        pass
    else:  # pragma: no cover
        raise AssertionError("mismatched keys accepted")


def test_apply_diff_checks_the_before_list():
    before, after = conversation(2), conversation(3)
    diff = diff_messages(before, after)
    try:
        apply_diff(before[:-1], diff)
    except ValueError:
        pass
    else:  # pragma: no cover
        raise AssertionError("wrong before list accepted")


def test_stats_invariants():
    before = conversation(12)
    summary = {"role": "assistant", "content": SUMMARY + " x"}
    edited = dict(before[-2], content=before[-2]["content"] + " more words here")
    after = before[:2] + [summary] + before[20:-2] + [edited, before[-1], {"role": "user", "content": "new"}]
    diff = roundtrip(before, after)
    s = stats(diff, tokens=lambda m: len(str(m)))
    assert s["kept"] + s["dropped"] + s["changed"] == len(before)
    assert s["kept"] + s["added"] + s["changed"] == len(after)
    assert s["tokens_before"] == sum(len(str(m)) for m in before)
    assert s["tokens_after"] == sum(len(str(m)) for m in after)


# -- property tests -------------------------------------------------------------------------

_POOL = [
    {"role": "user", "content": "continue"},
    {"role": "user", "content": "please fix the failing test in parser.py"},
    {"role": "assistant", "content": "Done."},
    {"role": "assistant", "content": "I will read the file first and then fix it"},
    {"role": "tool", "tool_call_id": "a", "content": "OK"},
    {"role": "tool", "tool_call_id": "a", "content": "[Old tool output cleared to save context space]"},
    {"role": "tool", "tool_call_id": "b", "content": "def parse(x):\n    return x\n"},
    {"role": "tool", "tool_call_id": "b", "content": "def parse(x):\n    return int(x)\n"},
    {"role": "user", "content": SUMMARY + "\nsummary one"},
    {"role": "assistant", "content": SUMMARY + "\nsummary two", "_compressed_summary": True},
    {"role": "user", "content": "[PRIOR CONTEXT — for reference only]\ncontinue"},
    {"role": "system", "content": "You are helpful."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "a", "function": {"name": "ls", "arguments": "{}"}}],
    },
]

messages = st.lists(st.sampled_from(_POOL), max_size=30)


@st.composite
def edited_pairs(draw):
    """An "after" derived from "before" the way engines do it: cut, summarise, edit, append."""
    before = draw(messages)
    after = list(before)
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["cut", "summarise", "edit", "insert"]))
        i = draw(st.integers(0, len(after)))
        j = draw(st.integers(i, len(after)))
        if op == "cut":
            del after[i:j]
        elif op == "summarise":
            after[i:j] = [draw(st.sampled_from(_POOL[8:11]))]
        elif op == "edit" and i < len(after):
            after[i] = dict(after[i], content=str(after[i].get("content")) + " edited")
        else:
            after[i:i] = draw(messages)
    return before, after


@settings(max_examples=300, deadline=None)
@given(messages, messages)
def test_property_apply_rebuilds_after_for_unrelated_lists(before, after):
    roundtrip(before, after)


@settings(max_examples=300, deadline=None)
@given(edited_pairs())
def test_property_apply_rebuilds_after_for_engine_edits(pair):
    before, after = pair
    diff = roundtrip(before, after)
    s = stats(diff, tokens=lambda m: 1)
    assert s["tokens_before"] == len(before) and s["tokens_after"] == len(after)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_property_refine_text_reassembles_both_sides(a, b):
    segs = refine_text(a, b)
    assert "".join(x for _, x, _ in segs) == a
    assert "".join(y for _, _, y in segs) == b
    for tag, x, y in segs:
        assert tag in {"equal", "delete", "insert", "replace"}
        if tag == "equal":
            assert x == y
        assert x or y


# -- refinement -----------------------------------------------------------------------------


def test_refine_lines_then_words():
    a = "alpha\nthe answer is 41 today\nomega\n"
    b = "alpha\nthe answer is 42 today\nomega\nextra\n"
    assert refine_text(a, b) == [
        ("equal", "alpha\nthe answer is ", "alpha\nthe answer is "),
        ("replace", "41", "42"),
        ("equal", " today\nomega\n", " today\nomega\n"),
        ("insert", "", "extra\n"),
    ]


def test_refine_unrelated_lines_are_replaced_whole():
    segs = refine_text("completely different words\n", "nothing shared at all here\n")
    assert segs == [("replace", "completely different words\n", "nothing shared at all here\n")]


def test_refine_messages_includes_tool_call_arguments():
    a = {
        "role": "assistant",
        "tool_calls": [{"id": "1", "function": {"name": "read", "arguments": '{"p": "a.py"}'}}],
    }
    b = {
        "role": "assistant",
        "tool_calls": [{"id": "1", "function": {"name": "read", "arguments": '{"p": "b.py"}'}}],
    }
    segs = refine_messages(a, b)
    assert ("replace", "a", "b") in segs


def test_refine_long_text_is_fast_and_word_level():
    words = [f"token{i % 97} value{i}" for i in range(6000)]
    a = " ".join(words)  # one ~100 KB line: character-level would take minutes
    b = a.replace("value3000", "value3000x")
    t0 = time.perf_counter()
    segs = refine_text(a, b)
    took = time.perf_counter() - t0
    print(f"\nrefine {len(a) / 1024:.0f} KiB single line: {took * 1000:.1f} ms")
    assert [s for s in segs if s[0] != "equal"] == [("replace", "value3000", "value3000x")]


# -- speed ----------------------------------------------------------------------------------


def test_5000_message_diff_is_fast():
    before = conversation(1250, tool_chars=400)  # 5,001 messages
    assert len(before) == 5001
    summary = {"role": "user", "content": SUMMARY + " long", "_compressed_summary": True}
    after = before[:1] + [summary] + before[2000:4000]
    after += [
        dict(m, content="[Old tool output cleared to save context space]") if m["role"] == "tool" else m
        for m in before[4000:4200]
    ]
    after += before[4200:] + conversation(1300)[5001:]
    kb = [message_key(m) for m in before]
    ka = [message_key(m) for m in after]
    t0 = time.perf_counter()
    diff = diff_messages(before, after, keys_before=kb, keys_after=ka)
    keyed = time.perf_counter() - t0
    t0 = time.perf_counter()
    diff2 = diff_messages(before, after)
    hashed = time.perf_counter() - t0
    assert diff2.ops == diff.ops
    check_cover(diff, before, after)
    assert apply_diff(before, diff) == after
    (op,) = diff.ops_of("summarised")
    assert op.summarised_from == 1999
    assert len(diff.ops_of("changed")) == 50
    print(
        f"\ndiff {len(before)} -> {len(after)} messages: {keyed * 1000:.1f} ms with store keys, {hashed * 1000:.1f} ms hashing"
    )


def test_many_identical_messages_stay_fast():
    # docs/prompt-caching.md §7.3: 2,000 identical + 500 unique items took 866 ms with autojunk=False.
    same = {"role": "tool", "tool_call_id": "x", "content": "same tool result"}
    unique = [{"role": "user", "content": f"u{i}"} for i in range(500)]
    before = [same] * 2000 + unique
    after = unique[:250] + [same] * 1500 + unique[250:]
    t0 = time.perf_counter()
    diff = roundtrip(before, after)
    took = time.perf_counter() - t0
    print(f"\n2,000 duplicates + 500 unique: {took * 1000:.1f} ms, {len(diff.ops)} ops")
    assert stats(diff)["kept"] >= 1750


def test_big_changed_block_falls_back_to_linear_pairing():
    # 400 x 400 removed/added cells exceeds the DP budget; tool ids still pair.
    before = conversation(100)
    after = [dict(m, content=str(m.get("content")) + " v2") if m["role"] != "system" else m for m in before]
    t0 = time.perf_counter()
    diff = roundtrip(before, after)
    took = time.perf_counter() - t0
    print(f"\n400-message rewrite: {took * 1000:.1f} ms")
    assert len(diff.ops_of("changed")) >= 100  # every tool result pairs by tool_call_id
