"""Plain OpenAI chat transcripts (docs/formats.md §3): arrays, JSONL, wrappers and request logs.

Variants, all mapped onto the same message shape by :func:`map_message`:
``openai-array`` (``[{role, content}, …]``), ``openai-jsonl`` (one message per line),
``openai-object`` (``{"messages": [...], "tools": [...]}``, also the mini-swe-agent and SWE-agent
wrappers), ``openai-conversations`` (one ``{"messages"}`` conversation per line, several
sessions) and ``openai-request-log`` (one provider call per record, JSONL or one JSON object).

Messages may carry a per-message ``timestamp`` (epoch or ISO) and, on assistant messages, a
``usage`` object in any provider shape; it becomes that call's :class:`ApiCall` usage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspector.sessions.common import (
    ROLES,
    THINK_RE,
    WIRE_KEYS,
    default_api_calls,
    finalize,
    is_hermes_summary,
    normalize_tool_calls,
    origin,
    parse_timestamp,
)
from inspector.sessions.model import ApiCall, Compaction, ReaderError, Session, message_text
from inspector.sessions.source import Source, element_lines, iter_jsonl, parse_json
from inspector.sessions.summary import SessionSummary, summarize
from inspector.usage import normalize_usage

FORMATS = ("openai-array", "openai-jsonl", "openai-object", "openai-conversations", "openai-request-log")

_MAPPED = frozenset({"timestamp", "usage", "model", "reasoning", "reasoning_content", "reasoning_details", "function_call"})


def map_message(
    raw: Any, *, where: str, warnings: list[str], file: str, line: int | None = None, index: int | None = None
) -> dict[str, Any] | None:
    """One OpenAI chat message as a Session message, or None (with a warning) if unusable.

    Non-wire keys are preserved under ``x_extra`` rather than dropped; reasoning fields become
    ``x_reasoning`` / ``x_reasoning_opaque``; ``usage`` and ``model`` are left in ``x_usage_raw``
    / ``x_model`` for the caller to turn into an :class:`ApiCall`.
    """
    if not isinstance(raw, dict):
        warnings.append(f"{where}: skipped, a message must be a JSON object (got {type(raw).__name__})")
        return None
    role = raw.get("role")
    original_role = role
    if role == "developer":
        role = "system"
    elif role == "function":
        role = "tool"
    if not isinstance(role, str) or role not in ROLES:
        warnings.append(f"{where}: skipped, unknown role {str(role)[:40]!r}")
        return None
    msg: dict[str, Any] = {"role": role}
    content = raw.get("content")
    if content is not None and not isinstance(content, (str, list)):
        warnings.append(f"{where}: content is a {type(content).__name__}, kept as its JSON text")
        content = _as_text(content)
    msg["content"] = content
    if role == "assistant":
        calls, extras = normalize_tool_calls(raw.get("tool_calls"), where, warnings)
        legacy = raw.get("function_call")
        if isinstance(legacy, dict) and not calls:
            calls, extras = normalize_tool_calls([{"id": f"call_{line or index}_fn", "function": legacy}], where, [])
        if calls:
            msg["tool_calls"] = calls
            if any(extras):
                msg["x_tool_call_extras"] = extras
        reasoning = raw.get("reasoning")
        if not isinstance(reasoning, str) or not reasoning.strip():
            rc = raw.get("reasoning_content")
            reasoning = rc if isinstance(rc, str) and rc.strip() else None
        if not reasoning and isinstance(msg.get("content"), str) and "<think>" in msg["content"]:
            # Inline reasoning (docs/formats.md §3.1): shown as reasoning, while the content stays as it was
            # sent, since whether the agent re-sent it is for the engine to decide, not the loader.
            found = [t.strip() for t in THINK_RE.findall(msg["content"]) if t.strip()]
            reasoning = "\n\n".join(found) or None
        if reasoning:
            msg["x_reasoning"] = reasoning
        opaque = {k: raw[k] for k in ("reasoning_details", "reasoning_content") if raw.get(k) not in (None, "")}
        if opaque:
            msg["x_reasoning_opaque"] = opaque
        if raw.get("usage") is not None:
            msg["x_usage_raw"] = raw["usage"]
        if isinstance(raw.get("model"), str):
            msg["x_model"] = raw["model"]
    if role == "tool":
        tcid = raw.get("tool_call_id")
        if tcid is not None:
            msg["tool_call_id"] = str(tcid)
    for key in ("name", "refusal", "audio"):
        if raw.get(key) is not None:
            msg[key] = raw[key]
    if original_role != role:
        msg["x_original_role"] = original_role
    ts = parse_timestamp(raw.get("timestamp"))
    if ts is not None:
        msg["x_timestamp"] = ts
    elif raw.get("timestamp") is not None:
        warnings.append(f"{where}: timestamp {raw.get('timestamp')!r} is not epoch seconds or ISO-8601; ignored")
    extra = {k: v for k, v in raw.items() if k not in WIRE_KEYS and k not in _MAPPED}
    if extra:
        msg["x_extra"] = extra
    msg["x_origin"] = origin(file, line=line, index=index)
    return msg


def _as_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _pair_function_results(messages: list[dict[str, Any]]) -> None:
    """Legacy ``function`` results have no id: pair each with the latest unanswered call."""
    pending: list[str] = []
    for msg in messages:
        if msg.get("role") == "assistant":
            pending = [c["id"] for c in msg.get("tool_calls") or ()]
        elif msg.get("role") == "tool" and "tool_call_id" not in msg:
            if pending:
                msg["tool_call_id"] = pending.pop(0)
            else:
                msg["tool_call_id"] = ""


def _calls_from_messages(session: Session) -> list[ApiCall]:
    """One call per assistant message; recorded ``usage`` on a message becomes the call's usage."""
    calls = default_api_calls(session)
    for call in calls:
        msg = session.messages[call.message_index]
        raw = msg.pop("x_usage_raw", None)
        call.model = msg.pop("x_model", None)
        if raw is None:
            continue
        if not isinstance(raw, dict):
            session.warnings.append(f"message {call.message_index}: usage is not an object; ignored")
            continue
        call.usage = normalize_usage(raw)
    for msg in session.messages:
        msg.pop("x_usage_raw", None)
        msg.pop("x_model", None)
    return calls


def build_session(
    raw_messages: list[Any],
    *,
    source: Source,
    fmt: str,
    session_id: str,
    lines: list[int] | None = None,
    line: int | None = None,
    tools: Any = None,
) -> Session:
    """A session from a list of OpenAI messages (shared by every list-shaped variant)."""
    session = Session(id=session_id, source_format=fmt, source_path=source.path)
    session.warnings.extend(source.warnings)
    for i, raw in enumerate(raw_messages):
        ln = lines[i] if lines and i < len(lines) else line
        where = f"line {ln}" if ln is not None else f"message {i}"
        if line is not None and lines is None:
            where = f"line {line} message {i}"
        msg = map_message(raw, where=where, warnings=session.warnings, file=source.path, line=ln, index=i if lines is None else None)
        if msg is not None:
            session.messages.append(msg)
    _pair_function_results(session.messages)
    session.api_calls = _calls_from_messages(session)
    _set_tools(session, tools)
    return finalize(session)


def _set_tools(session: Session, tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        session.warnings.append("'tools' is not a list; ignored")
        return
    good = [t for t in tools if isinstance(t, dict)]
    if len(good) != len(tools):
        session.warnings.append(f"{len(tools) - len(good)} tool schema(s) are not objects; skipped")
    session.tools = good


# --- readers -------------------------------------------------------------------------------


def read_array(source: Source, session_id: str | None = None) -> Session:
    data = parse_json(source)
    if not isinstance(data, list):
        raise source.error(f"expected a JSON array of messages, found a {type(data).__name__}")
    if not data:
        raise source.error("the message array is empty")
    lines = element_lines(source.text)
    if len(lines) != len(data):
        lines = None
    return build_session(data, source=source, fmt="openai-array", session_id=_stem(source), lines=lines)


def read_jsonl(source: Source, session_id: str | None = None) -> Session:
    records = list(iter_jsonl(source))
    msgs = [r for _, r in records]
    lines = [ln for ln, _ in records]
    return build_session(msgs, source=source, fmt="openai-jsonl", session_id=_stem(source), lines=lines)


def read_object(source: Source, session_id: str | None = None) -> Session:
    data = parse_json(source)
    if not isinstance(data, dict):
        raise source.error(f"expected a JSON object with 'messages', found a {type(data).__name__}")
    key = "messages" if "messages" in data else "history" if "history" in data else None
    if key is None or not isinstance(data[key], list):
        raise source.error("expected a 'messages' list in the JSON object; keys seen: " + _keys(data))
    session = build_session(data[key], source=source, fmt="openai-object", session_id=str(data.get("id") or _stem(source)), tools=data.get("tools"))
    # The model and title at the top level, else in a metadata object beside the messages.
    extra = next((data[k] for k in ("meta", "metadata") if isinstance(data.get(k), dict)), {})
    model = next((v for v in (data.get("model"), extra.get("model")) if isinstance(v, str) and v), None)
    if model:
        session.model = model
    title = next((v for v in (data.get("title"), extra.get("title")) if isinstance(v, str) and v), None)
    if title:
        session.title = title
    if "trajectory_format" in data:
        session.meta["wrapper"] = str(data["trajectory_format"])
    elif key == "history":
        session.meta["wrapper"] = "swe-agent"
    return session


def _conversation_records(source: Source) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for lineno, rec in iter_jsonl(source):
        if isinstance(rec, dict) and isinstance(rec.get("messages"), list):
            out.append((lineno, rec))
        else:
            source.warnings.append(f"line {lineno}: skipped, no 'messages' list")
    if not out:
        raise source.error("no line holds a 'messages' list")
    return out


def read_conversations(source: Source, session_id: str | None = None) -> Session:
    records = _conversation_records(source)
    lineno, rec = pick_record(source, records, session_id, id_of=lambda ln, r: str(ln))
    session = build_session(rec["messages"], source=source, fmt="openai-conversations", session_id=str(lineno), line=lineno, tools=rec.get("tools"))
    if isinstance(rec.get("model"), str):
        session.model = rec["model"]
    return session


def list_conversations(source: Source) -> list[SessionSummary]:
    out = []
    for lineno, rec in _conversation_records(source):
        s = build_session(rec["messages"], source=Source(source.path, ""), fmt="openai-conversations", session_id=str(lineno), line=lineno)
        out.append(summarize(s))
    return out


def pick_record(source: Source, records: list, session_id: str | None, *, id_of) -> Any:
    """The record with ``session_id``, or the first one (noting the others in the warnings)."""
    ids = [id_of(*r) for r in records]
    if session_id is None:
        if len(records) > 1:
            source.warnings.append(
                f"file holds {len(records)} sessions; loaded the first ({ids[0]}). Pick another with FILE#ID "
                f"(ids: {', '.join(ids[:10])}{', …' if len(ids) > 10 else ''})"
            )
        return records[0]
    for rid, rec in zip(ids, records):
        if rid == session_id:
            return rec
    raise ReaderError(
        f"no session {session_id!r}; sessions in this file: {', '.join(ids[:20])}{', …' if len(ids) > 20 else ''}",
        path=source.path,
    )


# --- request logs --------------------------------------------------------------------------


def _response_message(rec: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(assistant message, usage, model) of one request-log record, whatever the nesting."""
    resp = rec.get("response")
    if resp is None and "choices" in rec:
        resp = rec
    if resp is None:
        resp = rec.get("completion")
    usage = rec.get("usage")
    model = rec.get("model")
    message: Any = None
    if isinstance(resp, dict):
        body = resp.get("body") if isinstance(resp.get("body"), dict) else resp
        usage = usage if usage is not None else body.get("usage")
        model = model or body.get("model")
        choices = body.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
        elif isinstance(body.get("role"), str):
            message = body
        elif isinstance(body.get("content"), (str, list)):
            message = {"role": "assistant", "content": body["content"]}
    elif isinstance(resp, str):
        message = {"role": "assistant", "content": resp}
    return message, usage, model


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = ("role", "content", "tool_call_id")
    if any(a.get(k) != b.get(k) for k in keys):
        return False
    ca = [(c["id"], c["function"]["name"]) for c in a.get("tool_calls") or ()]
    cb = [(c["id"], c["function"]["name"]) for c in b.get("tool_calls") or ()]
    return ca == cb


def _signature(m: dict[str, Any]) -> tuple[Any, ...]:
    """What :func:`_same` compares, as a hashable value."""
    calls = tuple((c["id"], c["function"]["name"]) for c in m.get("tool_calls") or ())
    return m.get("role"), repr(m.get("content")), m.get("tool_call_id"), calls


def _overlaps(prompt: list[dict[str, Any]], context: list[dict[str, Any]]) -> bool:
    seen = {_signature(m) for m in context}
    return any(_signature(m) in seen for m in prompt)


def _other_system(prompt: list[dict[str, Any]], context: list[dict[str, Any]]) -> bool:
    """Both open with a system prompt, and not the same one: another agent's (or helper's) call."""
    return bool(prompt and context) and prompt[0].get("role") == context[0].get("role") == "system" \
        and not _same(prompt[0], context[0])


def _after_rewrite(
    prompt: list[dict[str, Any]], shared: int, context: list[dict[str, Any]], transcript: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], str | None]:
    """(messages new since the previous call, the summary text) of a prompt that rewrote history.

    A rewritten prompt re-sends kept history (and a summary in place of what it dropped): what
    follows the previous call's last message is new, the rest was already in the conversation.
    Without that anchor, the messages the conversation has not seen yet are new.
    """
    last = _signature(context[-1])
    anchor = next((j for j in range(len(prompt) - 1, shared - 1, -1) if _signature(prompt[j]) == last), None)
    known = {_signature(m) for m in transcript}
    if anchor is not None:
        fresh, rewritten = prompt[anchor + 1:], prompt[shared:anchor + 1]
    else:
        fresh = [m for m in prompt[shared:] if _signature(m) not in known]
        rewritten = []
    summaries = [m for m in rewritten + fresh if _signature(m) not in known and _is_summary(m)]
    summaries += [m for m in rewritten if _signature(m) not in known and not _is_summary(m)]
    fresh = [m for m in fresh if not _is_summary(m)]
    text = "\n\n".join(message_text(m) for m in summaries if message_text(m))
    return fresh, text or None


def _is_summary(m: dict[str, Any]) -> bool:
    content = m.get("content")
    return isinstance(content, str) and is_hermes_summary(content)


def _request_records(source: Source) -> list[tuple[int | None, dict[str, Any]]]:
    stripped = source.text.lstrip()
    records: list[tuple[int | None, dict[str, Any]]] = []
    single = None
    if stripped.startswith("{"):
        first = stripped.split("\n", 1)[0]
        try:
            json.loads(first)
        except ValueError:
            single = parse_json(source)
    if single is not None:
        items: list = [(1, single)]
    else:
        items = list(iter_jsonl(source))
    for lineno, rec in items:
        if isinstance(rec, dict) and isinstance(rec.get("messages"), list):
            records.append((lineno, rec))
        else:
            source.warnings.append(f"line {lineno}: skipped, not a request record with a 'messages' list")
    if not records:
        raise source.error("no request record with a 'messages' list")
    return records


def read_request_log(source: Source, session_id: str | None = None) -> Session:
    """Each record is one call: the transcript is the growing prompt plus each response.

    Prompts normally extend the previous one; when one does not (the agent rewrote history,
    e.g. compacted), the new prompt's differing tail is appended after a marker.
    """
    records = _request_records(source)
    session = Session(id=_stem(source), source_format="openai-request-log", source_path=source.path)
    session.warnings.extend(source.warnings)
    msgs = session.messages
    context: list[dict[str, Any]] = []  # the previous call's prompt + response (what a prefix must match)
    tools = None
    for n, (lineno, rec) in enumerate(records):
        prompt = []
        for i, raw in enumerate(rec["messages"]):
            m = map_message(raw, where=f"line {lineno} message {i}", warnings=session.warnings, file=source.path, line=lineno, index=i)
            if m is not None:
                prompt.append(m)
        if n and context and not _overlaps(prompt, context) and _other_system(prompt, context):
            # Another line of calls in the same log (a summariser, a title generator): not a turn
            # of this conversation, and its prompt would otherwise be replayed as one.
            session.warnings.append(f"line {lineno}: a call that shares no message with the conversation "
                                    "(an auxiliary call?) was left out of it")
            continue
        shared = 0
        while shared < min(len(context), len(prompt)) and _same(context[shared], prompt[shared]):
            shared += 1
        if n and shared < len(context):
            fresh, summary = _after_rewrite(prompt, shared, context, msgs)
            session.warnings.append(
                f"line {lineno}: prompt does not extend the previous call's (differs from message {shared}): "
                "the agent rewrote its history here; only the messages new since the previous call join the conversation"
            )
            session.compactions.append(Compaction(message_index=len(msgs), kind="request-rewrite", summary=summary,
                                                  timestamp=parse_timestamp(rec.get("timestamp"))))
            msgs.extend(fresh)
        else:
            msgs.extend(prompt[shared:] if n else prompt)
        message, usage, model = _response_message(rec)
        if isinstance(rec.get("tools"), list):
            tools = rec["tools"]
        if message is None:
            session.warnings.append(f"line {lineno}: record has no response message; its call has no assistant message")
            context = prompt
            continue
        reply = map_message(message, where=f"line {lineno} response", warnings=session.warnings, file=source.path, line=lineno)
        if reply is None or reply.get("role") != "assistant":
            session.warnings.append(f"line {lineno}: response is not an assistant message; skipped")
            context = prompt
            continue
        reply.pop("x_usage_raw", None)
        reply.pop("x_model", None)
        ts = parse_timestamp(rec.get("timestamp") or rec.get("created_at") or rec.get("created"))
        if ts is not None:
            reply["x_timestamp"] = ts
        msgs.append(reply)
        call = ApiCall(message_index=len(msgs) - 1, timestamp=ts, model=model if isinstance(model, str) else None)
        if isinstance(usage, dict):
            call.usage = normalize_usage(usage)
        elif usage is not None:
            session.warnings.append(f"line {lineno}: usage is not an object; ignored")
        session.api_calls.append(call)
        context = prompt + [reply]
    _pair_function_results(msgs)
    _set_tools(session, tools)
    return finalize(session)


def _stem(source: Source) -> str:
    name = Path(source.path).name
    for suffix in (".gz", ".jsonl", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or "session"


def _keys(data: dict[str, Any]) -> str:
    return ", ".join(sorted(map(str, data))[:12]) or "(none)"


READERS = {
    "openai-array": read_array,
    "openai-jsonl": read_jsonl,
    "openai-object": read_object,
    "openai-conversations": read_conversations,
    "openai-request-log": read_request_log,
}
LISTERS = {"openai-conversations": list_conversations}
