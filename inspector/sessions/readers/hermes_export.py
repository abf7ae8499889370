"""Hermes files other than state.db: the JSONL export and the per-session JSON logs.

- ``hermes-export``: ``hermes sessions export`` JSONL, one session row + its active messages
  per line (docs/formats.md §2.2). Several sessions per file; ids are Hermes session ids.
- ``hermes-session-json``: ``~/.hermes/sessions/session_<sid>.json`` snapshots (docs/formats.md §2.3.1). They
  may be stale after a compaction (Hermes never overwrites with a shorter list).
- ``hermes-gateway-jsonl``: old gateway transcripts, a ``session_meta`` line then messages (docs/formats.md §2.3.2).
- ``hermes-request-dump``: ``request_dump_*.json``, the exact prompt of one failed call (docs/formats.md §2.3.3).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspector.sessions.common import (
    PRUNED_TOOL_PLACEHOLDER,
    build_turns,
    default_api_calls,
    finalize,
    flag,
    is_hermes_summary,
    message_text,
    parse_timestamp,
)
from inspector.sessions.model import ReaderError, Session, Usage
from inspector.sessions.readers.hermes_common import (
    map_row,
    mark_compactions,
    mark_harness_replies,
    mark_turn_ends,
)
from inspector.sessions.readers.openai_chat import build_session, pick_record
from inspector.sessions.source import Source, iter_jsonl, parse_json
from inspector.sessions.summary import SessionSummary, summarize
from inspector.usage import token_count

FORMATS = ("hermes-export", "hermes-session-json", "hermes-gateway-jsonl", "hermes-request-dump")


def _int(value: Any) -> int:
    return token_count(value)


def _export_records(source: Source) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for lineno, rec in iter_jsonl(source):
        if isinstance(rec, dict) and isinstance(rec.get("messages"), list) and "id" in rec:
            out.append((lineno, rec))
        else:
            source.warnings.append(f"line {lineno}: skipped, not an exported session (needs 'id' and a 'messages' list)")
    if not out:
        raise source.error("no exported Hermes session (a line with 'id', 'source', 'started_at', 'messages')")
    return out


def _build_export(rec: dict[str, Any], source: Source, lineno: int) -> Session:
    session = Session(id=str(rec["id"]), source_format="hermes-export", source_path=source.path)
    session.warnings.extend(source.warnings)
    messages = []
    for i, raw in enumerate(rec["messages"]):
        where = f"line {lineno} message {i}"
        if not isinstance(raw, dict):
            session.warnings.append(f"{where}: skipped, not an object")
            continue
        msg = map_row(raw, file=source.path, where=where, warnings=session.warnings, line=lineno)
        if msg is not None:
            msg["x_origin"]["index"] = i
            if raw.get("id") is not None:
                msg["x_origin"]["rowid"] = raw["id"]
            messages.append(msg)
    mark_harness_replies(messages)
    compactions = mark_compactions(messages)
    prompt = rec.get("system_prompt")
    offset = 0
    if isinstance(prompt, str) and prompt:
        session.messages.append({"role": "system", "content": prompt, "x_origin": {"file": source.path, "line": lineno}})
        offset = 1
    session.messages.extend(messages)
    for c in compactions:
        c.message_index += offset
    session.compactions = compactions
    session.title = rec.get("title") if isinstance(rec.get("title"), str) else None
    session.model = rec.get("model") if isinstance(rec.get("model"), str) else None
    session.started_at = parse_timestamp(rec.get("started_at"))
    session.cwd = rec.get("cwd") if isinstance(rec.get("cwd"), str) else None
    if any(k in rec for k in ("input_tokens", "output_tokens", "cache_read_tokens")):
        uncached, read, write = _int(rec.get("input_tokens")), _int(rec.get("cache_read_tokens")), _int(rec.get("cache_write_tokens"))
        session.aggregate_usage = Usage(
            prompt_tokens=uncached + read + write,
            completion_tokens=_int(rec.get("output_tokens")),
            cache_read_tokens=read,
            cache_write_tokens=write,
            reasoning_tokens=_int(rec.get("reasoning_tokens")),
            source="aggregate-only",
        )
    for key in ("source", "end_reason", "parent_session_id", "billing_provider", "api_call_count"):
        if rec.get(key) is not None:
            session.meta[key] = rec[key]
    session.api_calls = default_api_calls(session, model=session.model)
    session.turns = build_turns(session.messages)
    mark_turn_ends(session.messages, session.turns)
    return finalize(session)


def read_export(source: Source, session_id: str | None = None) -> Session:
    records = _export_records(source)
    lineno, rec = pick_record(source, records, session_id, id_of=lambda ln, r: str(r["id"]))
    return _build_export(rec, source, lineno)


def list_export(source: Source) -> list[SessionSummary]:
    out = []
    for lineno, rec in _export_records(source):
        try:
            out.append(summarize(_build_export(rec, Source(source.path, ""), lineno)))
        except ReaderError as exc:
            source.warnings.append(f"line {lineno}: {exc}")
    return out


def _flag_hermes_text(session: Session) -> None:
    """Summary and pruning markers Hermes writes into content, for the OpenAI-shaped logs."""
    for msg in session.messages:
        text = message_text(msg)
        if msg["role"] in ("user", "assistant") and is_hermes_summary(text):
            flag(msg, compaction_summary=True)
        if msg["role"] == "tool" and text.strip() == PRUNED_TOOL_PLACEHOLDER:
            flag(msg, pruned=True)


def _with_system(raw_messages: list[Any], system_prompt: Any) -> list[Any]:
    has_system = bool(raw_messages) and isinstance(raw_messages[0], dict) and raw_messages[0].get("role") == "system"
    if isinstance(system_prompt, str) and system_prompt and not has_system:
        return [{"role": "system", "content": system_prompt}, *raw_messages]
    return raw_messages


def _finish_logged(session: Session) -> Session:
    _flag_hermes_text(session)
    session.compactions = mark_compactions(session.messages[1:] if _leading_system(session) else session.messages)
    if _leading_system(session):
        for c in session.compactions:
            c.message_index += 1
    session.api_calls = [c for c in session.api_calls if not session.messages[c.message_index].get("x_flags", {}).get("compaction_summary")]
    session.turns = build_turns(session.messages)
    return session


def _leading_system(session: Session) -> bool:
    return bool(session.messages) and session.messages[0].get("role") == "system"


def read_session_json(source: Source, session_id: str | None = None) -> Session:
    data = parse_json(source)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise source.error("not a Hermes session_*.json snapshot: needs a 'messages' list")
    raw = _with_system(data["messages"], data.get("system_prompt"))
    session = build_session(raw, source=source, fmt="hermes-session-json", session_id=str(data.get("session_id") or ""), tools=data.get("tools"))
    session.model = data.get("model") if isinstance(data.get("model"), str) else session.model
    session.started_at = parse_timestamp(data.get("session_start")) or session.started_at
    for key in ("platform", "base_url", "last_updated", "message_count"):
        if key in data:
            session.meta[key] = data[key]
    session.warnings.append("session_*.json snapshots can be stale after a compaction (Hermes keeps the longer list)")
    return _finish_logged(session)


def read_gateway_jsonl(source: Source, session_id: str | None = None) -> Session:
    records = list(iter_jsonl(source))
    head_line, head = records[0]
    if not isinstance(head, dict) or head.get("role") != "session_meta":
        raise source.error("not a Hermes gateway transcript: line 1 must be a session_meta record", line=head_line)
    body = records[1:]
    session = build_session(
        [r for _, r in body], source=source, fmt="hermes-gateway-jsonl", session_id=_stem(source), lines=[ln for ln, _ in body], tools=head.get("tools")
    )
    session.model = head.get("model") if isinstance(head.get("model"), str) else session.model
    session.started_at = parse_timestamp(head.get("timestamp")) or session.started_at
    if "platform" in head:
        session.meta["platform"] = head["platform"]
    stamps = {m.get("x_timestamp") for m in session.messages if "x_timestamp" in m}
    if len(session.messages) > 2 and len(stamps) == 1:
        session.warnings.append("every line carries the same timestamp (a rewrite); timestamps are not per message")
    return _finish_logged(session)


def read_request_dump(source: Source, session_id: str | None = None) -> Session:
    data = parse_json(source)
    request = data.get("request") if isinstance(data, dict) else None
    body = request.get("body") if isinstance(request, dict) else None
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            body = None
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise source.error("not a Hermes request dump: needs request.body.messages")
    session = build_session(body["messages"], source=source, fmt="hermes-request-dump", session_id=str(data.get("session_id") or _stem(source)), tools=body.get("tools"))
    session.model = body.get("model") if isinstance(body.get("model"), str) else None
    session.started_at = parse_timestamp(data.get("timestamp"))
    session.meta["reason"] = data.get("reason")
    if data.get("error") is not None:
        session.meta["error"] = data["error"]
    session.warnings.append("a request dump is the prompt of one failed call: there is no response or usage")
    return _finish_logged(session)


def _stem(source: Source) -> str:
    return Path(source.path).name.split(".")[0] or "session"


READERS = {
    "hermes-export": read_export,
    "hermes-session-json": read_session_json,
    "hermes-gateway-jsonl": read_gateway_jsonl,
    "hermes-request-dump": read_request_dump,
}
LISTERS = {"hermes-export": list_export}
