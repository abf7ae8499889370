"""Every real sample transcript loads with the counts and token sums of docs/formats.md §8.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.sessions import list_sessions, load_session
from inspector.sessions.detect import detect_format

SUB = "claude_code/4d5611e5-241a-462a-8d15-5122611a9569/subagents"
ROLL = "codex/rollout-2026-02-23T"


def _sums(session):
    used = [c.usage for c in session.api_calls if c.usage is not None]
    return (
        sum(u.prompt_tokens for u in used),
        sum(u.cache_read_tokens for u in used),
        sum(u.cache_write_tokens for u in used),
    )


def _one(corpus: Path, pattern: str) -> Path:
    [path] = [p for p in corpus.glob(pattern + "*") if not p.name.endswith(".source.txt")]
    return path


def _genuine_prompts(session) -> int:
    return sum(1 for t in session.turns if t.user_index is not None and not t.meta)


def _parallel(session) -> int:
    return sum(1 for m in session.messages if len(m.get("tool_calls") or ()) > 1)


def _usage_invariant(session) -> None:
    for call in session.api_calls:
        u = call.usage
        if u is not None:
            assert u.cache_read_tokens + u.cache_write_tokens <= u.prompt_tokens
        assert session.messages[call.message_index]["role"] == "assistant"


@pytest.mark.parametrize(
    ("pattern", "records", "calls", "parallel", "sums"),
    [
        (f"{SUB}/agent-a2898e3.jsonl", 144, 12, 5, (675_466, 604_156, 71_257)),
        (f"{SUB}/agent-acompact-e1f845.jsonl", 5, 1, 0, (173_514, 164_830, 8_681)),
        ("claude_code/tool_heavy.jsonl", 39, 4, None, (105_981, 88_231, 17_696)),
    ],
)
def test_claude_code_samples(corpus: Path, pattern, records, calls, parallel, sums):
    path = _one(corpus, pattern)
    assert detect_format(path) == "claude-code"
    s = load_session(str(path))
    assert s.meta["records"] == records
    assert len(s.api_calls) == calls
    if parallel is not None:
        assert _parallel(s) == parallel
    assert _sums(s) == sums
    _usage_invariant(s)


def test_claude_code_tool_heavy_details(corpus: Path):
    s = load_session(str(corpus / "claude_code/tool_heavy.jsonl"))
    assert _genuine_prompts(s) == 2
    assert sum(1 for m in s.messages if m.get("x_flags", {}).get("interrupted")) == 2
    assert all(t.interrupted for t in s.turns)
    assert s.meta["annotations"]["queue-operation"] == 2
    assert any(u.cache_write_1h_tokens for u in (c.usage for c in s.api_calls)), "1-hour cache writes are kept"
    assert s.meta["orphan_calls"] == 0 and s.meta["orphan_results"] == 0
    first_call = s.messages[s.api_calls[0].message_index]
    assert set(first_call["tool_calls"][0]) == {"id", "type", "function"}


def test_claude_code_subagent_is_a_sidechain(corpus: Path):
    s = load_session(str(_one(corpus, f"{SUB}/agent-a2898e3.jsonl")))
    assert s.id == "a2898e3" and s.meta["parent_session_id"] == "4d5611e5-241a-462a-8d15-5122611a9569"
    assert all(m.get("x_flags", {}).get("sidechain") for m in s.messages)
    assert _genuine_prompts(s) == 1 and s.messages[0]["role"] == "user"


def test_claude_code_compaction_call_keeps_meta_reminders(corpus: Path):
    s = load_session(str(_one(corpus, f"{SUB}/agent-acompact-e1f845.jsonl")))
    assert [m["role"] for m in s.messages] == ["user"] * 4 + ["assistant"]
    assert sum(1 for m in s.messages if m.get("x_flags", {}).get("meta")) == 3
    assert _genuine_prompts(s) == 1 and len(s.turns) == 1
    assert s.warnings == []


@pytest.mark.parametrize(
    ("stamp", "lines", "calls", "prompt", "cached", "orphans", "started", "completed"),
    [
        ("12-41-04", 417, 28, 1_751_428, 1_651_968, 0, 1, 1),
        ("12-47-42", 837, 83, 6_740_973, None, 1, 7, 5),
        ("13-19-38", 19, 1, 34_469, 3_456, 1, 1, 0),
    ],
)
def test_codex_rollouts(corpus: Path, stamp, lines, calls, prompt, cached, orphans, started, completed):
    path = _one(corpus, ROLL + stamp)
    assert detect_format(path) == "codex"
    s = load_session(str(path))
    assert s.meta["records"] == lines
    assert len(s.api_calls) == calls
    p, r, w = _sums(s)
    assert p == prompt and w == 0, "Codex reports no cache writes"
    if cached is not None:
        assert r == cached
    assert s.meta["orphan_calls"] == orphans
    assert len(s.turns) == started and s.meta["turns_completed"] == completed
    assert sum(1 for t in s.turns if t.interrupted) == started - completed
    _usage_invariant(s)


def test_codex_parallel_turn_pairs_all_118_calls(corpus: Path):
    s = load_session(str(_one(corpus, ROLL + "12-41-04")))
    calls = [c for m in s.messages for c in m.get("tool_calls") or ()]
    results = [m for m in s.messages if m["role"] == "tool"]
    assert len(calls) == 118 and len(results) == 118
    assert {c["id"] for c in calls} == {m["tool_call_id"] for m in results}
    [turn] = s.turns
    assert s.messages[turn.user_index]["role"] == "user"
    assert not s.messages[turn.user_index].get("x_flags", {}).get("meta")
    preamble = [m for m in s.messages[: turn.user_index] if m["role"] in ("user", "system")]
    assert all(m.get("x_flags", {}).get("meta") for m in preamble[1:]), "injected context is meta, not a prompt"


def test_codex_resume_reinjection_is_meta(corpus: Path):
    s = load_session(str(_one(corpus, ROLL + "12-47-42")))
    prompts = [s.messages[t.user_index] for t in s.turns]
    assert len(prompts) == 7 and all(m["role"] == "user" for m in prompts)
    genuine = [m for m in s.messages if m["role"] == "user" and not m.get("x_flags", {}).get("meta")]
    assert len(genuine) == 7


def test_hermes_trajectory_samples(corpus: Path):
    path = corpus / "hermes_trajectory/trajectory_samples.jsonl"
    assert detect_format(path) == "trajectory"
    summaries = list_sessions(str(path))
    assert len(summaries) == 13
    sessions = [load_session(f"{path}#{s.id}") for s in summaries]
    for s in sessions:
        assert [m["role"] for m in s.messages] == ["system", "user", "assistant"]
        assert s.messages[2].get("x_reasoning"), "every gpt turn has a <think> block"
        assert "<think>" not in s.messages[2]["content"]
        assert "tool_calls" not in s.messages[2]
        assert len(s.api_calls) == 1
    assert {s.model for s in sessions} == {"k2p5", "kimi-k2.5"}


def test_openai_chat_array(corpus: Path):
    path = corpus / "openai_chat/github_issue.traj.json"
    assert detect_format(path) == "openai-array"
    s = load_session(str(path))
    roles = [m["role"] for m in s.messages]
    assert len(roles) == 22 and roles.count("system") == 1 and roles.count("user") == 11 and roles.count("assistant") == 10
    assert len(s.api_calls) == 10 and all(c.usage is None for c in s.api_calls)
    assert s.messages[1]["x_origin"]["line"] > s.messages[0]["x_origin"]["line"]
