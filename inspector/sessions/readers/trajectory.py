"""Hermes / ShareGPT trajectories (docs/formats.md §2.4): ``conversations`` of ``from``/``value`` turns.

One JSONL line per conversation (several sessions per file, ids are line numbers). ``gpt``
turns carry ``<think>`` and ``<tool_call>`` tags; a ``tool`` turn holds all results of the
previous call as ``<tool_response>`` blocks, paired by embedded id or else by position, which is
how Hermes wrote them. A ``human`` turn starting ``[CONTEXT SUMMARY]:`` is a compaction marker.
"""

from __future__ import annotations

import json
import re
from typing import Any

from inspector.sessions.common import finalize, flag, origin, parse_timestamp
from inspector.sessions.model import ApiCall, Compaction, ReaderError, Session
from inspector.sessions.readers.openai_chat import pick_record
from inspector.sessions.source import Source, iter_jsonl, parse_json
from inspector.sessions.summary import SessionSummary, summarize

FORMATS = ("trajectory",)

ROLE_OF = {"system": "system", "human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "tool": "tool"}
THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)
TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
TOOL_RESPONSE = re.compile(r"<tool_response>(.*?)(?:</tool_response>|$)", re.DOTALL)
TOOLS = re.compile(r"<tools>(.*?)</tools>", re.DOTALL)
SUMMARY_PREFIX = "[CONTEXT SUMMARY]:"


def _entries(source: Source) -> list[tuple[int, dict[str, Any]]]:
    """(id number, entry) for a JSONL file, a single conversation array, or a list of entries."""
    stripped = source.text.lstrip()
    if stripped.startswith("["):
        data = parse_json(source)
        if not isinstance(data, list) or not data:
            raise source.error("expected a non-empty JSON array")
        if all(isinstance(x, dict) and "conversations" in x for x in data):
            return [(i + 1, x) for i, x in enumerate(data)]
        return [(1, {"conversations": data})]
    out = []
    for lineno, rec in iter_jsonl(source):
        if isinstance(rec, dict) and isinstance(rec.get("conversations"), list):
            out.append((lineno, rec))
        else:
            source.warnings.append(f"line {lineno}: skipped, no 'conversations' list")
    if not out:
        raise source.error("no line holds a 'conversations' list")
    return out


def _tools_from_system(text: str, warnings: list[str], where: str) -> list[dict[str, Any]]:
    m = TOOLS.search(text)
    if not m or not m.group(1).strip():
        return []
    try:
        raw = json.loads(m.group(1))
    except ValueError:
        warnings.append(f"{where}: <tools> block is not valid JSON; tool schemas not loaded")
        return []
    if not isinstance(raw, list):
        return []
    tools = []
    for t in raw:
        if isinstance(t, dict) and isinstance(t.get("name"), str):
            fn = {k: t[k] for k in ("name", "description", "parameters") if k in t}
            tools.append({"type": "function", "function": fn})
    return tools


def _assistant(value: str, turn: int, where: str, warnings: list[str]) -> dict[str, Any]:
    thinks = [t.strip() for t in THINK.findall(value)]
    calls = []
    for k, body in enumerate(TOOL_CALL.findall(value)):
        try:
            parsed = json.loads(body.strip())
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            warnings.append(f"{where}: <tool_call> {k} is not a JSON object; kept with empty arguments")
            parsed = {"name": "unknown", "arguments": {}}
        args = parsed.get("arguments", {})
        calls.append(
            {
                "id": f"call_{turn}_{k}",
                "type": "function",
                "function": {
                    "name": str(parsed.get("name") or "unknown"),
                    "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
                },
            }
        )
    text = TOOL_CALL.sub("", THINK.sub("", value)).strip()
    msg: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        msg["tool_calls"] = calls
    reasoning = "\n".join(t for t in thinks if t)
    if reasoning:
        msg["x_reasoning"] = reasoning
    return msg


def _tool_results(value: str, pending: list[dict[str, Any]], where: str, warnings: list[str]) -> list[dict[str, Any]]:
    blocks = TOOL_RESPONSE.findall(value) or [value]
    ids = [c["id"] for c in pending]
    names = {c["id"]: c["function"]["name"] for c in pending}
    out = []
    for k, body in enumerate(blocks):
        try:
            parsed = json.loads(body.strip())
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "content" in parsed:
            content = parsed["content"]
            wanted = parsed.get("tool_call_id")
            name = parsed.get("name")
        else:
            content, wanted, name = body.strip(), None, None
        if wanted in ids:
            call_id = wanted
        elif k < len(ids):
            call_id = ids[k]
        else:
            call_id = f"unmatched_{k}"
            warnings.append(f"{where}: tool response {k} has no matching <tool_call>; kept as an orphan result")
        msg = {
            "role": "tool",
            "tool_call_id": call_id,
            "content": content if isinstance(content, str) else json.dumps(content, ensure_ascii=False),
            "name": str(name or names.get(call_id, "unknown")),
        }
        out.append(msg)
    return out


def build(entry: dict[str, Any], *, source: Source, entry_id: int, line: int | None) -> Session:
    session = Session(id=str(entry_id), source_format="trajectory", source_path=source.path)
    session.warnings.extend(source.warnings)
    meta = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else {}
    model = entry.get("model") or meta.get("model")
    session.model = model if isinstance(model, str) else None
    session.started_at = parse_timestamp(entry.get("timestamp") or meta.get("timestamp"))
    for key in ("completed", "partial", "api_calls", "prompt_index", "toolsets_used", "tool_stats"):
        if key in entry:
            session.meta[key] = entry[key]
    pending: list[dict[str, Any]] = []
    gpt_turns = 0
    conversations = entry.get("conversations")
    if not isinstance(conversations, list):
        raise source.error(f"'conversations' is {type(conversations).__name__}, not a list of turns", line=line)
    for k, turn in enumerate(conversations):
        where = f"line {line} turn {k}" if line is not None else f"turn {k}"
        if not isinstance(turn, dict):
            session.warnings.append(f"{where}: skipped, not an object")
            continue
        speaker = turn.get("from", turn.get("role"))
        value = turn.get("value", turn.get("content"))
        role = ROLE_OF.get(speaker) if isinstance(speaker, str) else None
        if role is None:
            session.warnings.append(f"{where}: skipped, unknown speaker {speaker!r}")
            continue
        if not isinstance(value, str):
            value = "" if value is None else json.dumps(value, ensure_ascii=False)
        if role == "assistant":
            msg = _assistant(value, gpt_turns, where, session.warnings)
            gpt_turns += 1
            pending = list(msg.get("tool_calls") or ())
            new = [msg]
        elif role == "tool":
            new = _tool_results(value, pending, where, session.warnings)
            pending = []
        else:
            msg = {"role": role, "content": value}
            if role == "system":
                session.tools = _tools_from_system(value, session.warnings, where)
                if session.messages:
                    flag(msg, meta=True)
            if role == "user" and value.lstrip().startswith(SUMMARY_PREFIX):
                flag(msg, compaction_summary=True)
                session.compactions.append(Compaction(message_index=len(session.messages), kind="trajectory-summary", summary=value))
            new = [msg]
        for m in new:
            m["x_origin"] = origin(source.path, line=line, turn=k)
            session.messages.append(m)
            if m["role"] == "assistant":
                session.api_calls.append(ApiCall(message_index=len(session.messages) - 1, model=session.model))
    if not session.messages:
        raise source.error("conversation has no usable turns", line=line)
    return finalize(session)


def read(source: Source, session_id: str | None = None) -> Session:
    entries = _entries(source)
    num, entry = pick_record(source, entries, session_id, id_of=lambda n, e: str(n))
    line = num if not source.text.lstrip().startswith("[") else None
    return build(entry, source=source, entry_id=num, line=line)


def list_sessions(source: Source) -> list[SessionSummary]:
    jsonl = not source.text.lstrip().startswith("[")
    out = []
    for num, entry in _entries(source):
        quiet = Source(source.path, "")
        try:
            out.append(summarize(build(entry, source=quiet, entry_id=num, line=num if jsonl else None)))
        except ReaderError as exc:  # one bad entry must not hide the others
            source.warnings.append(f"entry {num}: {exc}")
    return out


READERS = {"trajectory": read}
LISTERS = {"trajectory": list_sessions}
