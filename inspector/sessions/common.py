"""Helpers every reader shares: timestamps, flags, tool-call shapes, orphans, turns.

Kept in one place so the same input produces the same message shape whichever format it came
from (an OpenAI message in a Hermes row looks like one in a JSON array).
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from typing import Any

from inspector.sessions.model import ApiCall, Session, Turn, message_text

HERMES_SUMMARY_PREFIXES = ("[CONTEXT COMPACTION — REFERENCE ONLY]", "[CONTEXT SUMMARY]:")
PRUNED_TOOL_PLACEHOLDER = "[Old tool output cleared to save context space]"

# Keys an OpenAI chat message may carry on the wire; anything else moves to ``x_extra``.
WIRE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "audio"})
ROLES = frozenset({"system", "user", "assistant", "tool"})


def parse_timestamp(value: Any) -> float | None:
    """Epoch seconds (UTC) from epoch numbers (s or ms) or ISO-8601 strings; None if unusable.

    Naive ISO strings are read as UTC: sources that write them (Hermes snapshots) do not say
    which zone they meant, and UTC keeps ordering stable across machines.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            v = float(value)
        except OverflowError:  # a 400-digit integer is no time at all
            return None
        if not math.isfinite(v) or v < 0:
            return None
        return v / 1000.0 if v > 1e11 else v
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return None
        try:
            return parse_timestamp(float(s))
        except ValueError:
            pass
        if s.endswith(("Z", "z")):
            s = s[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        try:
            return dt.timestamp()
        except (OverflowError, OSError, ValueError):
            return None
    return None


def flag(message: dict[str, Any], **flags: bool) -> dict[str, Any]:
    """Set ``x_flags`` entries on a message (only true ones are stored)."""
    current = message.setdefault("x_flags", {})
    for name, on in flags.items():
        if on:
            current[name] = True
    if not current:
        message.pop("x_flags", None)
    return message


def flags_of(message: dict[str, Any]) -> dict[str, Any]:
    value = message.get("x_flags")
    return value if isinstance(value, dict) else {}


def origin(path: str, *, line: int | None = None, rowid: int | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"file": path}
    if line is not None:
        out["line"] = line
    if rowid is not None:
        out["rowid"] = rowid
    out.update({k: v for k, v in extra.items() if v is not None})
    return out


def arguments_string(value: Any) -> str:
    """Tool-call arguments as the JSON *string* OpenAI uses; strings are kept verbatim."""
    if isinstance(value, str):
        return value
    if value is None:
        return "{}"
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def normalize_tool_calls(raw: Any, where: str, warnings: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """OpenAI ``tool_calls`` reduced to ``{id, type, function}`` plus the extra keys per call.

    Hermes and Responses-API sources add ``call_id``/``response_item_id``; those are kept aside
    so the wire message stays a plain OpenAI message.
    """
    calls: list[dict[str, Any]] = []
    extras: list[dict[str, Any]] = []
    if raw is None:
        return calls, extras
    if not isinstance(raw, list):
        warnings.append(f"{where}: tool_calls is not a list; ignored")
        return calls, extras
    for k, item in enumerate(raw):
        if not isinstance(item, dict):
            warnings.append(f"{where}: tool call {k} is not an object; skipped")
            continue
        fn = item.get("function") if isinstance(item.get("function"), dict) else {}
        name = fn.get("name", item.get("name"))
        args = fn.get("arguments", item.get("arguments", item.get("input")))
        call_id = item.get("id") or item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"call_{where.replace(' ', '_')}_{k}"
            warnings.append(f"{where}: tool call {k} has no id; synthesised {call_id}")
        calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name if isinstance(name, str) else str(name or ""), "arguments": arguments_string(args)},
            }
        )
        extra = {key: v for key, v in item.items() if key not in ("id", "type", "function")}
        extras.append(extra)
    return calls, extras


def is_hermes_summary(text: str) -> bool:
    return text.lstrip().startswith(HERMES_SUMMARY_PREFIXES)


def mark_orphans(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """Flag tool calls without results and results without calls; returns both counts.

    Pairs by id, never by position (results may come back in any order). Server-side calls
    (listed in ``x_server_side_calls``) never get a result and are not orphans.
    """
    results: dict[str, int] = {}
    for i, msg in enumerate(messages):
        if msg.get("role") == "tool" and isinstance(msg.get("tool_call_id"), str):
            results.setdefault(msg["tool_call_id"], i)
    called: set[str] = set()
    orphan_calls = 0
    for msg in messages:
        if msg.get("role") != "assistant":
            continue
        server = set(msg.get("x_server_side_calls") or ())
        missing = []
        for call in msg.get("tool_calls") or ():
            cid = call.get("id")
            called.add(cid)
            if cid not in results and cid not in server:
                missing.append(cid)
        if missing:
            orphan_calls += len(missing)
            msg["x_orphan_calls"] = missing
            flag(msg, orphan=True)
    orphan_results = 0
    for msg in messages:
        if msg.get("role") == "tool" and msg.get("tool_call_id") not in called:
            orphan_results += 1
            flag(msg, orphan=True)
    return orphan_calls, orphan_results


def starts_turn(message: dict[str, Any]) -> bool:
    """A genuine user input (docs/formats.md §1.4): not meta, summary, synthetic or undone."""
    if message.get("role") != "user":
        return False
    f = flags_of(message)
    return not (f.get("meta") or f.get("compaction_summary") or f.get("synthetic") or f.get("inactive"))


def build_turns(messages: list[dict[str, Any]], *, turn_start=starts_turn) -> list[Turn]:
    """Contiguous turns, each starting at a genuine user message (or at the first message)."""
    turns: list[Turn] = []
    start: int | None = None
    user_index: int | None = None
    meta = False
    for i, msg in enumerate(messages):
        if i == 0 and msg.get("role") == "system":
            continue
        begin = turn_start(msg)
        if begin:
            if start is not None:
                turns.append(Turn(index=len(turns), start=start, end=i, user_index=user_index, meta=meta))
            start, user_index = i, i
            meta = bool(flags_of(msg).get("meta"))
        elif start is None:
            start, user_index, meta = i, None, False
    if start is not None:
        turns.append(Turn(index=len(turns), start=start, end=len(messages), user_index=user_index, meta=meta))
    # Context injected before the first prompt (hook reminders, instructions) belongs to it.
    if len(turns) > 1 and turns[0].user_index is None:
        lead = messages[turns[0].start : turns[0].end]
        if not any(m.get("role") == "assistant" for m in lead):
            first = turns.pop(0)
            turns[0].start = first.start
            for k, turn in enumerate(turns):
                turn.index = k
    for turn in turns:
        turn.interrupted = any(flags_of(m).get("interrupted") for m in messages[turn.start : turn.end])
    return turns


def default_api_calls(session: Session, model: str | None = None) -> list[ApiCall]:
    """One call per assistant message that a model actually produced (not summaries/copies)."""
    calls = []
    for i, msg in enumerate(session.messages):
        if msg.get("role") != "assistant":
            continue
        f = flags_of(msg)
        if f.get("synthetic") or f.get("compaction_summary") or f.get("inactive") or f.get("harness"):
            continue
        calls.append(ApiCall(message_index=i, timestamp=msg.get("x_timestamp"), model=model))
    return calls


def _strings_of(message: dict[str, Any]) -> list[str]:
    """The strings of a message a tokenizer will be given (content, its parts, tool arguments)."""
    out: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        out.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict):
                out.extend(v for v in part.values() if isinstance(v, str))
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
            out.append(fn["arguments"])
    return out


def refuse_huge_values(session: Session) -> None:
    """A :class:`ReaderError` naming the message (and its line or row) whose text is longer than
    :func:`~inspector.input_files.max_string_chars`: tiktoken aborts the whole process on a
    500 MB string, so it never gets one. Files are refused earlier, before parsing
    (:func:`inspector.input_files.check_values`); this catches what a database row holds."""
    from inspector.input_files import MIB, max_string_chars
    from inspector.sessions.model import ReaderError

    limit = max_string_chars()
    for i, msg in enumerate(session.messages):
        if any(len(text) > limit for text in _strings_of(msg)):
            where = msg.get("x_origin") if isinstance(msg.get("x_origin"), dict) else {}
            raise ReaderError(f"message {i} holds a text of more than {limit // MIB:,} MiB (INSPECTOR_MAX_STRING_MIB); "
                              "not read", path=session.source_path or where.get("file"), line=where.get("line"),
                              row=where.get("rowid"))


def finalize(session: Session) -> Session:
    """Fill what every reader leaves to the common rules: orphans, turns, start time, counts."""
    refuse_huge_values(session)
    orphan_calls, orphan_results = mark_orphans(session.messages)
    session.meta.setdefault("orphan_calls", orphan_calls)
    session.meta.setdefault("orphan_results", orphan_results)
    if not session.turns:
        session.turns = build_turns(session.messages)
    if session.started_at is None:
        for msg in session.messages:
            ts = msg.get("x_timestamp")
            if isinstance(ts, (int, float)):
                session.started_at = float(ts)
                break
    if session.model is None:
        for call in session.api_calls:
            if call.model:
                session.model = call.model
                break
    if session.title is None:
        for msg in session.messages:
            if starts_turn(msg):
                text = " ".join(message_text(msg).split())
                if text:
                    session.title = text[:80]
                break
    return session


THINK_RE = re.compile(r"<think>(.*?)</think>", re.DOTALL)
