"""Built-in compressor: compress() steps, tail cut, role rule, sanitiser (agent/context_compressor.py:2798-3727 of hermes-agent 0.19.0)."""

from __future__ import annotations

import copy
import json

import pytest

from inspector.engines.compressor import (
    END_MARKER,
    LEGACY_SUMMARY_PREFIX,
    SUMMARY_PREFIX,
    ContextCompressor,
)
from inspector.engines.compressor_prune import DUPLICATE_MARKER
from inspector.engines.compressor_summary import (
    MERGED_PRIOR_CLOSE,
    MERGED_PRIOR_OPEN,
    summary_body_from_text,
)
from tests.engines.compressor_fakes import NO_PROVIDER, FakeAux, completion, hermetic, install_aux  # noqa: F401

# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------



def engine(ctx: int = 200_000, **kw) -> ContextCompressor:
    kw.setdefault("quiet_mode", True)
    kw.setdefault("now", "2026-03-14")
    return ContextCompressor("test-model", config_context_length=ctx, **kw)


def u(text: str, **extra) -> dict:
    return {"role": "user", "content": text, **extra}


def a(text: str = "", calls: list | None = None, **extra) -> dict:
    msg = {"role": "assistant", "content": text, **extra}
    if calls:
        msg["tool_calls"] = calls
    return msg


def call(cid: str, name: str = "terminal", **args) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def tool(cid: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": content}


def chat(n: int, start: int = 0) -> list[dict]:
    return [u(f"user {i}") if i % 2 == 0 else a(f"reply {i}") for i in range(start, start + n)]


def sized(role: str, tokens: int, tag: str = "") -> dict:
    """A row whose budget estimate is exactly ``tokens`` (text/4 + 10)."""
    body = (tag + "x" * ((tokens - 10) * 4))[: (tokens - 10) * 4]
    return {"role": role, "content": body}


def role_of(msg: dict) -> str:
    return msg["role"]


# ---------------------------------------------------------------------------------------------
# the shape of an offline compaction
# ---------------------------------------------------------------------------------------------


def test_offline_compaction_shape():
    c = engine()
    msgs = chat(40)
    out = c.compress(msgs)
    # head 3, one summary, tail of min_tail = max(3, min(20, 8)) = 8 rows
    assert [m["content"] for m in out[:3]] == ["user 0", "reply 1", "user 2"]
    assert [m["content"] for m in out[4:]] == [f"user {i}" if i % 2 == 0 else f"reply {i}" for i in range(32, 40)]
    summary = out[3]
    assert summary["role"] == "assistant"
    assert summary["_compressed_summary"] is True
    assert summary["content"].startswith(SUMMARY_PREFIX + "\n## Historical Task Snapshot\n")
    assert summary["content"].endswith("\n\n" + END_MARKER)
    assert set(summary) == {"role", "content", "_compressed_summary"}
    assert c.compression_count == 1
    assert c._last_summary_fallback_used is True
    assert c._last_summary_dropped_count == 29
    assert c._last_compression_made_progress is True
    assert c._last_compress_aborted is False


def test_prefix_and_marker_texts():
    assert SUMMARY_PREFIX.startswith(
        "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below."
    )
    assert "\n" not in SUMMARY_PREFIX
    assert LEGACY_SUMMARY_PREFIX == "[CONTEXT SUMMARY]:"
    assert END_MARKER == "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"


def test_offline_compaction_is_deterministic():
    msgs = chat(40) + [a("", [call("c1", command="ls /src")]), tool("c1", "main.py\nutil.py"), a("done")]
    first = engine().compress(msgs)
    second = engine().compress(copy.deepcopy(msgs))
    assert first == second


def test_input_is_never_mutated():
    msgs = [{"role": "system", "content": "sys"}]
    msgs += [dict(m, _db_persisted=True) for m in chat(10)]
    msgs += [a("", [call("c1", command="cat big")]), tool("c1", "y" * 5000)]
    msgs += [u([{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "http://x/i.png"}}])]
    msgs += [a("seen", [call("c2", "read_file", path="/a.py")]), tool("c2", "z" * 3000)]
    msgs += chat(30, start=100)
    snapshot = copy.deepcopy(msgs)
    c = engine()
    c.tail_token_budget = 40
    c.compress(msgs)
    assert msgs == snapshot


# ---------------------------------------------------------------------------------------------
# step 2: head protection and the minimum size
# ---------------------------------------------------------------------------------------------


def test_too_short_returns_same_object():
    c = engine()
    msgs = chat(7)
    assert c.compress(msgs) is msgs
    assert c._ineffective_compression_count == 1
    assert c.compression_count == 0
    with_system = [{"role": "system", "content": "s"}, *chat(7)]  # 8 <= 1 + 3 + 4
    assert c.compress(with_system) is with_system
    assert c._ineffective_compression_count == 2


def test_head_protection_drops_after_first_compaction():
    c = engine()
    out = c.compress(chat(40))
    assert c._protect_head_size(out) == 0
    longer = out + chat(20, start=40)
    out2 = c.compress(longer)
    # no head any more: the new summary is first, followed by the 8-row tail
    assert out2[0]["_compressed_summary"] is True
    assert len(out2) == 9
    assert c.compression_count == 2
    # a fresh engine protects the head even when the transcript opens with a summary (as Hermes)
    assert engine()._protect_head_size(longer) == 3
    with_system = [{"role": "system", "content": "s"}, *chat(10)]
    assert engine()._protect_head_size(with_system) == 4


def test_system_note_appended_once_and_db_flag_stripped():
    c = engine()
    msgs = [{"role": "system", "content": "You are helpful.", "_db_persisted": True}]
    msgs += [dict(m, _db_persisted=True) for m in chat(40)]
    out = c.compress(msgs)
    assert out[0]["content"].startswith("You are helpful.\n\n[Note: Some earlier conversation turns have been compacted")
    assert out[0]["content"].endswith("remains fully authoritative regardless of compaction.]")
    assert all("_db_persisted" not in m for m in out)
    out2 = c.compress(out + chat(20, start=40))
    assert out2[0]["content"].count("[Note: Some earlier conversation turns") == 1


# ---------------------------------------------------------------------------------------------
# steps 3-4: prune first, then the window
# ---------------------------------------------------------------------------------------------


def test_prune_runs_before_the_window_and_reaches_head_rows():
    c = engine()
    c.tail_token_budget = 50
    big = '{"exit_code": 0}\n' + "\n".join(f"line {i}" for i in range(200))
    msgs = [u("start"), a("", [call("c1", command="ls -la")]), tool("c1", big), *chat(40, start=10)]
    out = c.compress(msgs)
    assert out[2] == {"role": "tool", "tool_call_id": "c1", "content": "[terminal] ran `ls -la` -> exit 0, 201 lines output"}


def test_no_window_returns_pruned_list_and_counts_ineffective():
    c = engine()
    msgs = [u("go"), a("", [call(f"c{i}") for i in range(6)])] + [tool(f"c{i}", f"out {i}") for i in range(6)]
    out = c.compress(msgs)
    assert out == msgs  # deep-equal: the host sees "no progress"
    assert c._ineffective_compression_count == 1
    assert c.compression_count == 0
    assert c._last_compression_made_progress is False

    dup = "D" * 300
    msgs2 = [u("go"), a("", [call(f"c{i}") for i in range(6)])] + [tool(f"c{i}", dup) for i in range(6)]
    out2 = c.compress(msgs2)
    assert out2 != msgs2
    assert [m["content"] for m in out2[2:]] == [DUPLICATE_MARKER] * 5 + [dup]
    assert c._ineffective_compression_count == 2
    assert msgs2[2]["content"] == dup


# ---------------------------------------------------------------------------------------------
# tail cut (context_compressor.py:3177-3295)
# ---------------------------------------------------------------------------------------------


def _sized_chat(n: int) -> list[dict]:
    return [sized("user" if i % 2 == 0 else "assistant", 100, f"m{i} ") for i in range(n)]


def test_tail_cut_uses_soft_budget():
    c = engine(protect_last_n=3)
    c.tail_token_budget = 200  # soft 300 -> three 100-token rows
    assert c._find_tail_cut_by_tokens(_sized_chat(10), 2) == 7
    assert c._find_tail_cut_by_tokens(_sized_chat(10), 2, token_budget=300) == 6  # soft 450


def test_tail_cut_keeps_min_tail_rows_over_budget():
    c = engine(protect_last_n=3)
    c.tail_token_budget = 10
    assert c._find_tail_cut_by_tokens(_sized_chat(10), 2) == 7
    c = engine(protect_last_n=20)  # floor = min(20, 8) = 8; cap = available - 2 = 5
    c.tail_token_budget = 10
    assert c._find_tail_cut_by_tokens(_sized_chat(10), 2) == 5


def test_tail_cut_rewalks_with_raw_budget_when_everything_fits():
    c = engine(protect_last_n=3)
    c.tail_token_budget = 600  # soft 900 covers rows 2..9 (800) -> re-walk with 600
    # rows 4..9 fill the 600 exactly; row 3, which overflows it, is kept in the tail too
    assert c._find_tail_cut_by_tokens(_sized_chat(10), 2) == 3


def test_tail_cut_aligns_back_to_the_calling_assistant():
    c = engine(protect_last_n=3)
    msgs = [
        sized("user", 100),
        sized("assistant", 100),
        sized("user", 100),
        a("", [call("c1"), call("c2")]),
        dict(sized("tool", 100), tool_call_id="c1"),
        dict(sized("tool", 100), tool_call_id="c2"),
        sized("assistant", 100, "answer "),
        sized("user", 100, "next "),
        sized("assistant", 100, "final "),
    ]
    c.tail_token_budget = 267  # soft 400 -> cut lands between the two tool results (5)
    assert c._find_tail_cut_by_tokens(msgs, 1) == 3


def test_tail_cut_keeps_last_user_message():
    c = engine(protect_last_n=3)
    msgs = _sized_chat(5) + [sized("assistant", 100, f"a{i} ") for i in range(4)]  # last user at 4
    c.tail_token_budget = 10
    assert c._find_tail_cut_by_tokens(msgs, 2) == 4


def test_tail_cut_pushes_past_reply_when_user_is_first_compressible_row():
    c = engine(protect_last_n=3)
    msgs = [
        u("first"),
        a("hi"),
        u("the only ask"),
        a("", [call("c1")]),
        tool("c1", "r1"),
        a("", [call("c2")]),
        tool("c2", "r2"),
        a("", [call("c3")]),
        tool("c3", "r3"),
    ]
    c.tail_token_budget = 1
    # user at head_end (2) cannot stay in the tail: summarise it with its reply and results
    assert c._find_tail_cut_by_tokens(msgs, 2) == 5


def test_tail_cut_keeps_last_assistant_with_visible_text():
    c = engine(protect_last_n=3)
    msgs = [
        u("q0"),
        u("q1"),
        u("q2"),
        a("<think>hidden</think>the answer"),
        u("next"),
        a("", [call("c1")]),
        tool("c1", "r1"),
        a("<think>only thinking</think>", [call("c2")]),
        tool("c2", "r2"),
    ]
    c.tail_token_budget = 1
    # Hermes reads the text as it is: "<think>only thinking</think>" is visible text (row 7)
    assert c._find_tail_cut_by_tokens(msgs, 1) == 4


def test_tail_cut_falls_back_to_last_assistant_without_text():
    c = engine(protect_last_n=3)
    msgs = [u("q0"), a("", [call("c1")]), tool("c1", "r"), u("q3"), u("q4"), u("q5"), u("q6")]
    c.tail_token_budget = 1
    assert c._find_tail_cut_by_tokens(msgs, 0) == 1


def test_tail_cut_never_starts_on_tool_row_and_stays_in_range():
    c = engine(protect_last_n=3)
    msgs = [u("go"), a("", [call("c1")])] + [tool("c1", "r")] * 6
    assert c._find_tail_cut_by_tokens(msgs, 8) == 9  # past the end when the head is everything (Hermes)
    assert c._align_boundary_forward(msgs, 2) == 8
    assert c._align_boundary_backward(msgs, 5) == 1
    assert c._align_boundary_backward(msgs, 1) == 1


def _asks_between_tool_rounds() -> list[dict]:
    """Four asks, each followed by a bulky tool round that alone overflows the tail budget."""
    msgs = [u("setup"), a("ready")]
    for i in range(4):
        msgs += [u(f"ask {i}"), a("", [call(f"c{i}")]), dict(sized("tool", 2000), tool_call_id=f"c{i}"), a(f"done {i}")]
    return msgs


def _asks(rows: list[dict]) -> list[str]:
    return [m["content"] for m in rows if m["role"] == "user"]


def test_min_tail_user_messages_keeps_that_many_asks_in_the_tail():
    msgs = _asks_between_tool_rounds()
    one = engine(protect_last_n=3)
    one.tail_token_budget = 100
    assert _asks(msgs[one._find_tail_cut_by_tokens(msgs, 2):]) == ["ask 3"]
    three = engine(protect_last_n=3, min_tail_user_messages=3)
    three.tail_token_budget = 100
    cut = three._find_tail_cut_by_tokens(msgs, 2)
    assert msgs[cut]["content"] == "ask 1"  # the cut lands on the ask itself
    assert _asks(msgs[cut:]) == ["ask 1", "ask 2", "ask 3"]


def test_min_tail_user_messages_beyond_the_asks_there_are_keeps_them_all_but_never_the_head():
    msgs = _asks_between_tool_rounds()
    c = engine(protect_last_n=3, min_tail_user_messages=50)
    c.tail_token_budget = 100
    assert _asks(msgs[c._find_tail_cut_by_tokens(msgs, 1):]) == ["ask 0", "ask 1", "ask 2", "ask 3"]
    # when the oldest ask is the first compressible row, the cut still stays one past the head
    assert c._find_tail_cut_by_tokens(msgs, 2) == 3


def test_min_tail_user_messages_counts_only_real_asks():
    msgs = _asks_between_tool_rounds()
    msgs[10:10] = [u("   "), u(SUMMARY_PREFIX + "\nold", _compressed_summary=True), u("synthetic", _synthetic=True)]
    c = engine(protect_last_n=3, min_tail_user_messages=2)
    c.tail_token_budget = 100
    cut = c._find_tail_cut_by_tokens(msgs, 2)
    assert msgs[cut]["content"] == "ask 2"


def test_compress_keeps_min_tail_user_messages_asks_verbatim():
    msgs = [{"role": "system", "content": "sys"}] + _asks_between_tool_rounds()
    c = engine(protect_first_n=0, protect_last_n=3, min_tail_user_messages=2)
    c.tail_token_budget = 100
    out = c.compress(msgs)
    # the summary follows the system prompt as a user row, so it merges into the first kept ask
    assert out[1]["content"].startswith(MERGED_PRIOR_OPEN + "ask 2" + MERGED_PRIOR_CLOSE)
    assert _asks(out[2:]) == ["ask 3"]
    assert c._last_summary_dropped_count == 10
    default = engine(protect_first_n=0, protect_last_n=3)
    default.tail_token_budget = 100
    out = default.compress(msgs)
    assert out[1]["content"].startswith(MERGED_PRIOR_OPEN + "ask 3" + MERGED_PRIOR_CLOSE)
    assert default._last_summary_dropped_count == 14


def test_has_content_to_compress():
    c = engine()
    assert c.has_content_to_compress(chat(40)) is True
    only_tools = [u("go"), a("", [call("c1")])] + [tool("c1", "r")] * 6
    assert c.has_content_to_compress(only_tools) is True  # Hermes' answer, though compress() has no window
    # the tail cut always leaves at least one row to summarise once the head ends early
    assert c.has_content_to_compress(chat(4)) is True


# ---------------------------------------------------------------------------------------------
# summaries (context_compressor.py:2144-2613) through the LLM, iterative updates, rehydration
# ---------------------------------------------------------------------------------------------


def test_first_compaction_prompt_framing(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux("## Goal\nship it"))
    c = engine(provider="openrouter", base_url="http://main", api_key="k", api_mode="chat_completions")
    c.compress(chat(40))
    assert len(fake.calls) == 1
    kwargs = fake.calls[0]
    assert kwargs["task"] == "compression"
    assert kwargs["main_runtime"] == {
        "model": "test-model",
        "provider": "openrouter",
        "base_url": "http://main",
        "api_key": "k",
        "api_mode": "chat_completions",
    }
    assert "model" not in kwargs and "max_tokens" not in kwargs
    assert kwargs["messages"] == [{"role": "user", "content": fake.prompts[0]}]
    prompt = fake.prompts[0]
    assert "summarization agent creating a context checkpoint" in prompt
    assert "TURNS TO SUMMARIZE:\n[USER]: user 3" not in prompt  # row 3 is an assistant row
    assert "TURNS TO SUMMARIZE:\n[ASSISTANT]: reply 3\n\n[USER]: user 4" in prompt
    assert "[USER]: user 31" not in prompt and "[ASSISTANT]: reply 31" in prompt
    assert "[USER]: user 2\n" not in prompt
    assert "PREVIOUS SUMMARY" not in prompt
    assert "TEMPORAL ANCHORING: today's date is 2026-03-14." in prompt
    assert "Target ~2000 tokens." in prompt
    assert "Write only the summary body" in prompt


def test_summary_message_from_llm_is_grounded(monkeypatch):
    install_aux(monkeypatch, FakeAux("<think>plan</think>## Historical Task Snapshot\nmodel paraphrase\n\n## Goal\nG"))
    c = engine()
    out = c.compress(chat(40))
    body = (
        "## Historical Task Snapshot\n"
        "User asked (deterministic, from compacted turns): 'user 30'\n"
        "Historical only; newer protected-tail messages after this summary win.\n\n"
        "## Goal\nG"
    )
    assert out[3]["content"] == SUMMARY_PREFIX + "\n" + body + "\n\n" + END_MARKER
    assert c._previous_summary == body
    assert c._last_summary_fallback_used is False
    assert c.compression_count == 1


def test_iterative_update_uses_previous_summary(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux("## Goal\nfirst body", "## Goal\nsecond body"))
    c = engine()
    out = c.compress(chat(40))
    first_body = c._previous_summary
    c.compress(out + chat(20, start=40))
    prompt = fake.prompts[1]
    assert f"PREVIOUS SUMMARY:\n{first_body}\n\nNEW TURNS TO INCORPORATE:\n[USER]: user 32" in prompt
    assert "TURNS TO SUMMARIZE" not in prompt
    assert "Preserve every detail of the previous summary" in prompt
    assert "[CONTEXT COMPACTION" not in prompt  # the old summary row is not re-serialised
    assert "second body" in c._previous_summary


def test_previous_summary_rehydrated_from_transcript(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux("## Goal\nfirst body", "## Goal\nsecond body"))
    c = engine()
    out = c.compress(chat(40))
    first_body = c._previous_summary
    c.on_session_end("sid", out)
    assert c._previous_summary is None
    c.compress(out + chat(20, start=40))
    assert f"PREVIOUS SUMMARY:\n{first_body}\n" in fake.prompts[1]


def test_other_sessions_previous_summary_is_dropped(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux("## Goal\nnew"))
    c = engine()
    c._previous_summary = "stale body from another conversation"
    c.compress(chat(40))
    assert "stale body" not in fake.prompts[0]
    assert "TURNS TO SUMMARIZE:" in fake.prompts[0]


def test_summary_body_extraction_handles_all_forms():
    body = "## Goal\nG"
    assert summary_body_from_text(SUMMARY_PREFIX + "\n" + body + "\n\n" + END_MARKER) == body
    assert summary_body_from_text(LEGACY_SUMMARY_PREFIX + " " + body) == body
    assert summary_body_from_text("[CONTEXT COMPACTION] older wording here\n" + body) == body
    merged = MERGED_PRIOR_OPEN + "hello" + MERGED_PRIOR_CLOSE + SUMMARY_PREFIX + "\n" + body + "\n\n" + END_MARKER
    assert summary_body_from_text(merged) == body


# ---------------------------------------------------------------------------------------------
# step 6: focus
# ---------------------------------------------------------------------------------------------


def test_auto_focus_from_three_newest_user_messages(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux("## Goal\nx"))
    engine().compress(chat(40))
    assert fake.prompts[0].endswith(
        'FOCUS TOPIC: "Recent user focus:\n- user 34\n- user 36\n- user 38"\n'
        "Prioritise this topic: spend roughly 60-70% of the target length on information "
        "relevant to it and compress everything else harder."
    )


def test_auto_focus_limits():
    c = engine()
    long_text = "word " * 100
    focus = c._auto_focus_topic([u(long_text), u("  spaced\n\n out  ")])
    lines = focus.split("\n")
    assert lines[0] == "Recent user focus:"
    assert lines[1] == "- " + " ".join(long_text.split())[:259] + "…"
    assert lines[2] == "- spaced out"
    # three 260-char items exceed 700 characters: Hermes keeps all three and cuts the whole text
    msgs = [u("A" * 300), u("B" * 300), u("C" * 300)]
    focus = c._auto_focus_topic(msgs)
    assert focus.startswith("Recent user focus:\n- " + "A" * 259 + "…\n- " + "B" * 259 + "…\n- CCC")
    assert len(focus) == 700 and focus.endswith("C…")
    # summaries and synthetic rows are not user asks
    summary = u(SUMMARY_PREFIX + "\nbody", _compressed_summary=True)
    todo = u("todo list", _todo_snapshot_synthetic=True)
    assert c._auto_focus_topic([summary, todo]) is None


def test_explicit_focus_topic_wins(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux("## Goal\nx"))
    engine().compress(chat(40), focus_topic="database migration")
    assert 'FOCUS TOPIC: "database migration"' in fake.prompts[0]
    assert "Recent user focus" not in fake.prompts[0]


# ---------------------------------------------------------------------------------------------
# step 8: abort and fallback
# ---------------------------------------------------------------------------------------------


def test_abort_on_summary_failure_keeps_original():
    c = engine(abort_on_summary_failure=True)
    msgs = chat(40)
    out = c.compress(msgs)
    assert out == msgs  # Hermes returns its pruned copy, unchanged here
    assert c._last_compress_aborted is True
    assert c._last_summary_error == "no auxiliary LLM provider configured"
    assert c.compression_count == 0
    assert c._last_compression_made_progress is False


def test_offline_the_stand_in_summary_is_not_a_failure_to_abort_on():
    c = engine(abort_on_summary_failure=True, offline_stand_in=True)
    msgs = chat(40)
    out = c.compress(msgs)
    assert out is not msgs and c._last_compress_aborted is False
    assert c.compression_count == 1 and c._last_summary_fallback_used is True


@pytest.mark.parametrize(
    "exc",
    [PermissionError("Error code: 403 - forbidden"), ConnectionError("stream closed before completion")],
)
def test_auth_and_connection_failures_abort(monkeypatch, exc):
    install_aux(monkeypatch, FakeAux(exc))
    c = engine()
    msgs = chat(40)
    assert c.compress(msgs) == msgs  # Hermes returns its pruned copy, unchanged here
    assert c._last_compress_aborted is True
    assert c.compression_count == 0


def test_timeout_falls_back_instead_of_aborting(monkeypatch):
    install_aux(monkeypatch, FakeAux(TimeoutError("read timed out")))
    c = engine()
    out = c.compress(chat(40))
    assert c._last_compress_aborted is False
    assert c._last_summary_fallback_used is True
    assert "read timed out" in out[3]["content"]  # the exception's own text, as Hermes keeps it
    assert c.compression_count == 1


def test_empty_reply_is_a_failure(monkeypatch):
    install_aux(monkeypatch, FakeAux("   "))
    c = engine()
    c.compress(chat(40))
    assert c._last_summary_fallback_used is True
    assert "empty content" in c._last_summary_error


def test_dict_shaped_response_and_non_string_content(monkeypatch):
    install_aux(monkeypatch, FakeAux({"choices": [{"message": {"content": 12345}}]}))
    c = engine()
    out = c.compress(chat(40))
    assert "12345" in out[3]["content"]
    assert c._last_summary_fallback_used is False


# ---------------------------------------------------------------------------------------------
# cache of real summaries
# ---------------------------------------------------------------------------------------------


def test_real_summaries_are_cached_on_disk(monkeypatch, tmp_path):
    fake = install_aux(monkeypatch, FakeAux("## Goal\ncached body"))
    first = engine().compress(chat(40))
    assert len(fake.calls) == 1
    files = list((tmp_path / "summary-cache").glob("*.json"))
    assert len(files) == 1
    second_engine = engine()
    second = second_engine.compress(chat(40))
    assert len(fake.calls) == 1  # served from the cache
    assert second == first
    assert second_engine._last_summary_from_cache is True


def test_fallback_summaries_are_never_cached(tmp_path):
    engine().compress(chat(40))
    assert not list((tmp_path / "summary-cache").glob("*.json"))


# ---------------------------------------------------------------------------------------------
# steps 10-11: role rule and merge form
# ---------------------------------------------------------------------------------------------

S = u(SUMMARY_PREFIX + "\nold", _compressed_summary=True)


@pytest.mark.parametrize(
    ("messages", "start", "end", "expected"),
    [
        ([u("h"), a("w"), u("t")], 1, 2, ("assistant", False)),  # head user, tail user
        ([a("h"), u("w"), u("t")], 1, 2, ("user", True)),  # head assistant, tail user -> merge
        ([u("x"), a("h"), u("w"), a("t")], 2, 3, ("user", False)),  # head assistant, tail assistant
        ([u("h"), u("w"), a("t")], 1, 2, ("assistant", True)),  # head user, tail assistant -> merge
        ([u("x"), tool("c", "h"), a("w"), u("t")], 2, 3, ("assistant", False)),  # head tool: flip
        ([{"role": "system", "content": "s"}, a("w"), u("t")], 1, 2, ("user", True)),  # forced
        ([S, a("w"), a("t")], 1, 2, ("assistant", True)),  # a user-role summary counts as a user row
        ([u("w"), a("t"), u("z")], 0, 1, ("assistant", True)),  # start 0 counts as a user head
        ([u("w"), a("t")], 0, 1, ("user", False)),  # ...but no real user survives: forced user
        ([u("w"), u("t")], 0, 1, ("assistant", False)),
        ([u("h"), a("w")], 1, 2, ("assistant", False)),  # empty tail counts as user
    ],
)
def test_summary_role_rule(messages, start, end, expected):
    assert ContextCompressor._summary_role(messages, start, end) == expected


def test_merge_form_end_to_end():
    c = engine(protect_first_n=2)
    msgs = chat(40)
    msgs[32] = u("user 32", api_content="user 32 + injected memory")
    out = c.compress(msgs)
    assert len(out) == 10
    merged = out[2]
    assert merged["role"] == "user"
    assert merged["_compressed_summary"] is True
    assert "api_content" not in merged
    assert merged["content"].startswith(MERGED_PRIOR_OPEN + "user 32" + MERGED_PRIOR_CLOSE + SUMMARY_PREFIX + "\n")
    assert merged["content"].endswith("\n\n" + END_MARKER)
    assert msgs[32]["api_content"] == "user 32 + injected memory"


def test_merge_form_with_list_content():
    part = {"type": "text", "text": "hello"}
    merged = ContextCompressor._merge_summary_into({"role": "user", "content": [part]}, "SUM")
    assert merged["content"] == [
        {"type": "text", "text": MERGED_PRIOR_OPEN},
        part,
        {"type": "text", "text": MERGED_PRIOR_CLOSE + "SUM\n\n" + END_MARKER},
    ]


# ---------------------------------------------------------------------------------------------
# step 13: tool-pair sanitiser
# ---------------------------------------------------------------------------------------------


def test_sanitizer_drops_orphans_and_strips_unanswered_calls():
    c = engine()
    msgs = [
        u("go"),
        a("", [call("c1"), call("c2")]),
        tool("c1", "r1"),
        tool("c9", "orphan"),
        a("", [call("c3")]),
        a("kept text", [call("c4")]),
        {"role": "assistant", "content": "", "tool_calls": [{"id": "x", "call_id": "r5", "function": {"name": "t", "arguments": "{}"}}]},
        tool("r5", "answered by call_id"),
    ]
    snapshot = copy.deepcopy(msgs)
    out = c._sanitize_tool_pairs(msgs)
    assert out == [
        u("go"),
        a("", [call("c1")]),
        tool("c1", "r1"),
        {"role": "assistant", "content": "(tool call removed)"},
        {"role": "assistant", "content": "kept text"},
        msgs[6],
        tool("r5", "answered by call_id"),
    ]
    assert msgs == snapshot


def test_compress_drops_orphan_tool_results_in_the_tail():
    c = engine()
    msgs = chat(38) + [tool("ghost", "orphan result"), a("answer")]
    out = c.compress(msgs)
    assert all(m.get("tool_call_id") != "ghost" for m in out)


# ---------------------------------------------------------------------------------------------
# step 14: historical media
# ---------------------------------------------------------------------------------------------


def _img_user(text: str, url: str) -> dict:
    return u([{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}])


def test_images_before_newest_image_user_message_are_stripped():
    c = engine()
    msgs = [_img_user("first", "http://x/1.png"), *chat(34, start=1), _img_user("second", "http://x/2.png"), *chat(5, start=36)]
    out = c.compress(msgs)
    assert out[0]["content"] == [
        {"type": "text", "text": "first"},
        {"type": "text", "text": "[Attached image — stripped after compression]"},
    ]
    newest = next(m for m in out if isinstance(m["content"], list) and m["content"][0]["text"] == "second")
    assert newest["content"][1]["type"] == "image_url"
    assert msgs[0]["content"][1]["type"] == "image_url"


def test_images_kept_when_no_user_message_carries_one():
    c = engine()
    shot = a([{"type": "text", "text": "t"}, {"type": "image_url", "image_url": {"url": "data:x"}}])
    assert c._strip_historical_media([shot, u("q")]) == [shot, u("q")]


# ---------------------------------------------------------------------------------------------
# compression_count and the host-facing flags
# ---------------------------------------------------------------------------------------------


def test_compression_count_increments_once_per_assembly():
    c = engine()
    c.compress(chat(40))
    assert c.compression_count == 1
    c.compress(chat(4))  # no-op: 4 <= 0 + 4 once the head protection is gone
    assert c.compression_count == 1
    c.abort_on_summary_failure = True
    c.compress(chat(60))  # aborted
    assert c.compression_count == 1


def test_memory_context_is_sanitised_and_escaped(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux("## Goal\nx"))
    engine().compress(chat(40), memory_context="  likes <b>bold</b> & api_key=supersecretvalue  ")
    prompt = fake.prompts[0]
    assert (
        'MEMORY PROVIDER CONTEXT:\n<memory-provider-context>\n'
        '"likes \\u003cb\\u003ebold\\u003c/b\\u003e \\u0026 api_key=[REDACTED]"\n'
        "</memory-provider-context>"
    ) in prompt
    fake2 = install_aux(monkeypatch, FakeAux("## Goal\nx"))
    engine().compress(chat(40), memory_context="")
    assert "MEMORY PROVIDER CONTEXT" not in fake2.prompts[0]


# ---------------------------------------------------------------------------------------------
# one instance, two sessions (the seed's thread contract)
# ---------------------------------------------------------------------------------------------


def test_an_instance_continues_the_summary_in_memory_over_the_transcripts(monkeypatch):
    """Hermes prefers its in-memory summary (context_compressor.py:3437): one instance compacting
    two conversations in turn carries the other one's summary on, and so does ours."""
    fake = install_aux(monkeypatch, FakeAux("## Goal\nsession A body", "## Goal\nsession B body", "## Goal\nA2"))
    c = engine()
    a_out = c.compress(chat(40))
    b_msgs = [u(f"B ask {i}") if i % 2 == 0 else a(f"B reply {i}") for i in range(40)]
    c.compress(b_msgs)
    c.compress(a_out + chat(20, start=40))
    assert "session B body" in fake.prompts[2] and "session A body" not in fake.prompts[2]


def test_concurrent_compress_on_pool_threads_never_mixes_sessions():
    from concurrent.futures import ThreadPoolExecutor

    # compression_count (and so head protection) is per instance, as in Hermes; what must hold
    # is that no session's rows or summary text end up in another session's result.
    sessions = [[u(f"s{k} ask {i}") if i % 2 == 0 else a(f"s{k} reply {i}") for i in range(40)] for k in range(4)]
    shared = engine()
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda s: shared.compress(copy.deepcopy(s)), sessions))
    for k, out in enumerate(got):
        text = json.dumps(out)
        assert f"s{k} ask 38" in text
        assert all(f"s{j} " not in text for j in range(4) if j != k)
        assert "An earlier compaction summary preceded" not in text
    assert shared.compression_count == 4


def test_per_call_flags_reset_on_every_compress():
    c = engine(abort_on_summary_failure=True)
    c.compress(chat(40))
    assert c._last_compress_aborted is True
    c.abort_on_summary_failure = False
    c.compress(chat(40))
    assert c._last_compress_aborted is False
    assert c._last_summary_fallback_used is True and c._last_compression_made_progress is True
    c.compress(chat(4))  # no-op after the first compaction
    assert (c._last_summary_fallback_used, c._last_summary_dropped_count, c._last_compression_made_progress) == (False, 0, False)
