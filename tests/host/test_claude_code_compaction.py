"""End to end on the shape of a real Claude Code 2.1.x session that auto-compacted: every call
loads, and the built-in compressor, fed calibrated usage at the real window, compacts where the
recorded usage crossed its threshold (issue 19)."""

from __future__ import annotations

import json
from pathlib import Path

from inspector.cache.accuracy import threshold_crossing
from inspector.config import load_config
from inspector.engines.discovery import load_engine
from inspector.host.calibration import request_counts
from inspector.host.replay import replay
from inspector.sessions import load_session
from inspector.tokens.counter import TokenCounter

SID = "22222222-3333-4444-5555-666666666666"
HEAD, RATIO = 20_000, 1.15
BEFORE, AFTER = 34, 3  # provider calls before and after the agent's own compaction


def _rec(uuid, parent, kind, message=None, **extra):
    rec = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/p", "sessionId": SID,
           "version": "2.1.39", "type": kind, "uuid": uuid, "timestamp": f"2026-02-10T22:{len(uuid) % 60:02d}:00.000Z"}
    if message is not None:
        rec["message"] = message
    rec.update(extra)
    return rec


def _records() -> list[dict]:
    out = [_rec("u0", None, "user", {"role": "user", "content": "audit every module"})]
    parent = "u0"
    for k in range(BEFORE + AFTER):
        if k == BEFORE:
            out.append(_rec("b1", None, "system", None, subtype="compact_boundary", content="Conversation compacted",
                            logicalParentUuid="gone-from-this-file", compactMetadata={"trigger": "auto", "preTokens": 1}))
            out.append(_rec("s1", "b1", "user", {"role": "user", "content": "This session is being continued: "
                                                 + "summary line\n" * 200}, isCompactSummary=True))
            parent = "s1"
        a, r = f"a{k}", f"r{k}"
        out.append(_rec(a, parent, "assistant", {"model": "claude-opus-4-6", "id": f"msg_{k}", "type": "message",
                                                  "role": "assistant", "stop_reason": None, "content": [
                                                      {"type": "tool_use", "id": f"t{k}", "name": "Read", "input": {"n": k}}]}))
        body = "".join(f"module {k} line {i}: value = {i * (k + 3)} # checked\n" for i in range(420))
        out.append(_rec(r, a, "user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                                                    "content": body}]}))
        parent = r
    out.append(_rec("a_end", parent, "assistant", {"model": "claude-opus-4-6", "id": "msg_end", "type": "message",
                                                    "role": "assistant", "stop_reason": "end_turn",
                                                    "content": [{"type": "text", "text": "done"}]}))
    return out


def _write(path: Path, records) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def _with_usage(tmp_path: Path) -> Path:
    """The records, with the usage a provider with an unrecorded head and another tokenizer reports."""
    records = _records()
    path = _write(tmp_path / f"{SID}.jsonl", records)
    s = load_session(str(path))
    sent, _ = request_counts(s, TokenCounter("cl100k_base"))
    prompts = {f"msg_{k}": int(HEAD + RATIO * sent[c.message_index])
               for k, c in enumerate(s.api_calls[:-1])} | {"msg_end": int(HEAD + RATIO * sent[s.api_calls[-1].message_index])}
    previous = 0
    for rec in records:
        mid = (rec.get("message") or {}).get("id")
        if rec["type"] == "assistant" and mid in prompts:
            prompt = prompts[mid]
            read = min(previous, prompt) if previous < prompt else HEAD
            rec["message"]["usage"] = {"input_tokens": 3, "cache_read_input_tokens": read,
                                       "cache_creation_input_tokens": prompt - read - 3, "output_tokens": 40}
            previous = prompt
        if rec.get("subtype") == "compact_boundary":
            rec["compactMetadata"]["preTokens"] = previous
    return _write(path, records)


def test_every_call_before_the_boundary_is_loaded(tmp_path: Path):
    s = load_session(str(_with_usage(tmp_path)))
    assert len(s.api_calls) == BEFORE + AFTER + 1
    assert s.messages[0]["content"] == "audit every module"
    assert not any("abandoned" in w for w in s.warnings)
    [c] = s.compactions
    assert c.tokens_before == s.api_calls[BEFORE - 1].usage.prompt_tokens


def test_the_compressor_compacts_where_the_recorded_usage_crossed_its_threshold(tmp_path: Path):
    path = _with_usage(tmp_path)
    config = load_config(None)
    trace = replay(load_session(str(path)), load_engine("compressor", config), config)
    assert trace.meta["assumed"]["context_length"]["value"] == 200_000
    crossing = threshold_crossing(trace)
    assert crossing["threshold"] == 150_000 and crossing["recorded_crossed_at"] is not None
    assert abs(crossing["delta"]) <= 2, crossing
    cal = trace.meta["usage_model"]["calibration"]
    assert abs(cal["hidden_tokens"] - HEAD) < 200 and abs(cal["ratio"] - RATIO) < 0.01

    tokenizer = load_config(None, {"inspector": {"usage": "tokenizer"}})
    late = threshold_crossing(replay(load_session(str(path)), load_engine("compressor", tokenizer), tokenizer))
    assert late["engine_compacted_before"] is None or late["delta"] > 2, "our count alone compacts late"
