"""Loader counts on every corpus file agree with an independent count of the raw JSONL records.

The expected figures are computed here from the records themselves (not copied from a run of
the loader), with the simplest reading of each format: a Claude Code provider call is one
``message.id`` whose last line carries the usage; a Codex call is one ``token_count`` whose
cumulative total changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.sessions import load_session

META = ("<command-", "<local-command-", "<system-reminder>", "[Request interrupted by user")


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _claude_expected(records: list[dict]) -> dict:
    last_usage: dict[str, dict] = {}
    for r in records:
        m = r.get("message") or {}
        if r.get("type") == "assistant" and m.get("model") != "<synthetic>" and isinstance(m.get("usage"), dict):
            last_usage[m.get("id")] = m["usage"]
    prompts = 0
    for r in records:
        c = (r.get("message") or {}).get("content")
        if r.get("type") != "user" or r.get("isMeta") or r.get("isCompactSummary"):
            continue
        text = c if isinstance(c, str) else next((b.get("text", "") for b in c or () if b.get("type") == "text"), None)
        if text is not None and not text.lstrip().startswith(META):
            prompts += 1
    u = last_usage.values()
    return {
        "calls": len(last_usage),
        "prompt": sum(x.get("input_tokens", 0) + x.get("cache_read_input_tokens", 0) + x.get("cache_creation_input_tokens", 0) for x in u),
        "read": sum(x.get("cache_read_input_tokens", 0) for x in u),
        "prompts": prompts,
        "compactions": sum(1 for r in records if r.get("subtype") == "compact_boundary"),
    }


def _codex_expected(records: list[dict]) -> dict:
    calls = prompt = read = 0
    last_total = None
    for r in records:
        p = r.get("payload") or {}
        if r.get("type") == "event_msg" and p.get("type") == "token_count" and isinstance(p.get("info"), dict):
            total = p["info"].get("total_token_usage")
            if total == last_total:
                continue
            last_total = total
            last = p["info"]["last_token_usage"]
            calls += 1
            prompt += last["input_tokens"]
            read += last.get("cached_input_tokens", 0)
    return {
        "calls": calls, "prompt": prompt, "read": read,
        "prompts": sum(1 for r in records if (r.get("payload") or {}).get("type") == "user_message"),
        "compactions": sum(1 for r in records if r.get("type") == "compacted"),
    }


def _loaded(s) -> dict:
    used = [c.usage for c in s.api_calls if c.usage is not None]
    return {
        "calls": len(s.api_calls),
        "prompt": sum(u.prompt_tokens for u in used),
        "read": sum(u.cache_read_tokens for u in used),
        "prompts": sum(1 for t in s.turns if t.user_index is not None and not t.meta),
        "compactions": len(s.compactions),
    }


def _files(corpus: Path, folder: str) -> list[Path]:
    return sorted(p for p in (corpus / folder).rglob("*.jsonl"))


def test_every_claude_code_file(corpus: Path):
    files = _files(corpus, "claude_code")
    assert files
    for path in files:
        s = load_session(str(path))
        assert _loaded(s) == _claude_expected(_records(path)), path.name
        assert not any("abandoned" in w for w in s.warnings), path.name


def test_every_codex_rollout(corpus: Path):
    files = _files(corpus, "codex")
    assert files
    for path in files:
        s = load_session(str(path))
        assert _loaded(s) == _codex_expected(_records(path)), path.name
        windows = {(r.get("payload") or {}).get("model_context_window") for r in _records(path)} - {None}
        assert s.context_window in windows and s.context_window == 258_400, path.name


@pytest.mark.parametrize("name", ["_compacted_across_a_missing_parent"])
def test_the_compacted_claude_code_fixture_counts_too(tmp_path: Path, name):
    from tests.sessions import test_claude_code as cc

    path = cc._write(tmp_path, getattr(cc, name)())
    assert _loaded(load_session(str(path))) == _claude_expected(_records(path))


def test_the_openai_message_list(corpus: Path):
    path = corpus / "openai_chat/github_issue.traj.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    s = load_session(str(path))
    assert len(s.api_calls) == sum(1 for m in raw if m.get("role") == "assistant")
    assert len(s.messages) == len(raw) and s.compactions == []


def test_every_hermes_trajectory_entry(corpus: Path):
    from inspector.sessions import list_sessions

    path = corpus / "hermes_trajectory/trajectory_samples.jsonl"
    entries = _records(path)
    summaries = list_sessions(str(path))
    assert len(summaries) == len(entries)
    for summary, entry in zip(summaries, entries):
        s = load_session(f"{path}#{summary.id}")
        turns = entry["conversations"]
        assert len(s.api_calls) == sum(1 for t in turns if t["from"] == "gpt")
        assert sum(1 for m in s.messages if m["role"] == "user") == sum(1 for t in turns if t["from"] == "human")
