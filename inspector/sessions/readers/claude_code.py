"""Claude Code session JSONL (docs/formats.md §4).

Claude Code writes one line per content block of a response, each with a copy of the usage,
so lines are regrouped by ``message.id`` into one assistant message carrying the *last* line's
usage (the only one with the final ``output_tokens``). Tool results arrive in ``user`` records
and become ``tool`` messages. A ``system/compact_boundary`` becomes a compaction marker whose
new context starts at the ``isCompactSummary`` message; the chain goes on across the boundary
(to its ``logicalParentUuid``, or to the record written before it when no line carries that
uuid). Records on abandoned ``parentUuid`` branches (edits, retries: true siblings of the live
chain) are left out and listed in the warnings. Subagent files next to the
session (``<id>/subagents/agent-*.jsonl``) load as child sessions. A turn is marked ``ended``
when a ``system/turn_duration`` record follows it, or its last reply carries a final
``stop_reason`` (a file still being written may hold only some of a reply's block lines).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspector.sessions.common import (
    arguments_string,
    build_turns,
    finalize,
    flag,
    flags_of,
    origin,
    parse_timestamp,
)
from inspector.sessions.model import ApiCall, Compaction, ReaderError, Session
from inspector.sessions.source import Source, iter_jsonl, open_source
from inspector.usage import normalize_usage

FORMATS = ("claude-code",)

META_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<system-reminder>",
)
INTERRUPTED = "[Request interrupted by user"
MCP_COMMAND = "<command-name>/mcp</command-name>"
NOTIFICATION = "<task-notification>"
NOT_CONVERSATION = ("progress", "file-history-snapshot", "queue-operation")
# Anthropic stop reasons after which the model does not go on by itself (``tool_use`` waits for
# results, ``pause_turn`` is resumed by the client); 2.1.x writes null on every line.
FINAL_STOP_REASONS = frozenset({"end_turn", "stop_sequence", "max_tokens", "refusal", "model_context_window_exceeded"})


def _active_records(records: list[tuple[int, dict[str, Any]]], warnings: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """Drop user/assistant records that sit on abandoned ``parentUuid`` branches.

    The active branch is the chain ending at the last record; a record is abandoned only when
    its parent is in this file but it is not on that chain. Parallel tool calls make the
    chain skip sibling lines (a result hangs off its own ``tool_use`` line), so lines of a kept
    response and results of its calls stay even when off the chain.
    """
    by_uuid = {r["uuid"]: r for _, r in records if isinstance(r.get("uuid"), str)}
    if not by_uuid or not any(r.get("parentUuid") for r in by_uuid.values()):
        return records
    last = next(r for _, r in reversed(records) if isinstance(r.get("uuid"), str))
    chain: set[str] = set()
    cursor: Any = last["uuid"]
    while isinstance(cursor, str) and cursor in by_uuid and cursor not in chain:
        chain.add(cursor)
        rec = by_uuid[cursor]
        cursor = rec.get("parentUuid") or rec.get("logicalParentUuid")
        if not (isinstance(cursor, str) and cursor in by_uuid) and _is_boundary(rec):
            cursor = _written_before(records, rec)
    kept_ids = {_message_id(r) for r in by_uuid.values() if r.get("uuid") in chain and r.get("type") == "assistant"}
    tool_ids: set[str] = set()
    for _, r in records:
        if r.get("type") == "assistant" and _message_id(r) in kept_ids:
            for block in _blocks(r):
                if block.get("type") == "tool_use":
                    tool_ids.add(str(block.get("id")))
    out, dropped = [], []
    for lineno, r in records:
        if r.get("type") not in ("user", "assistant") or not isinstance(r.get("uuid"), str) or r["uuid"] in chain:
            out.append((lineno, r))
        elif not isinstance(r.get("parentUuid"), str) or r["parentUuid"] not in by_uuid:
            out.append((lineno, r))  # its parent lives in another file (a forked subagent): not a branch here
        elif r["type"] == "assistant" and _message_id(r) in kept_ids:
            out.append((lineno, r))
        elif r["type"] == "user" and _is_result_of(r, tool_ids):
            out.append((lineno, r))
        else:
            dropped.append(lineno)
    if dropped:
        shown = ", ".join(map(str, dropped[:10])) + (", …" if len(dropped) > 10 else "")
        warnings.append(f"{len(dropped)} record(s) on abandoned branches (edits/retries) not loaded: line(s) {shown}")
    return out


def _is_boundary(rec: dict[str, Any]) -> bool:
    return rec.get("type") == "system" and rec.get("subtype") == "compact_boundary"


def _written_before(records: list[tuple[int, dict[str, Any]]], boundary: dict[str, Any]) -> str | None:
    """The conversation record written just before a compaction boundary: where its chain goes on.

    Claude Code 2.1.x starts the compacted context with ``parentUuid: null`` and names the last
    pre-compaction record in ``logicalParentUuid``, which may be absent from the file (a real
    session's boundary names a uuid no line carries). The boundary is written when the next
    request is about to go out, so the record before it is the tip of the live chain.
    """
    previous = None
    for _, r in records:
        if r is boundary:
            return previous
        if r.get("type") in ("user", "assistant") and isinstance(r.get("uuid"), str):
            previous = r["uuid"]
    return None


def _message_id(rec: dict[str, Any]) -> str:
    msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
    mid = msg.get("id") or rec.get("requestId") or rec.get("uuid")
    return str(mid)


def _blocks(rec: dict[str, Any]) -> list[dict[str, Any]]:
    msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
    content = msg.get("content")
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _is_result_of(rec: dict[str, Any], tool_ids: set[str]) -> bool:
    blocks = _blocks(rec)
    return bool(blocks) and all(b.get("type") == "tool_result" and str(b.get("tool_use_id")) in tool_ids for b in blocks)


def _classify(text: str) -> dict[str, bool]:
    t = text.lstrip()
    if t.startswith(MCP_COMMAND):
        # /mcp reconnects the MCP servers: the tool list (the head of every request) is rebuilt,
        # which the next call's recorded cache read shows (only the part before it is still cached).
        return {"meta": True, "tools_changed": True}
    if t.startswith(INTERRUPTED):
        return {"meta": True, "interrupted": True}
    if t.startswith(NOTIFICATION):
        return {"meta": True, "notification": True}
    if t.startswith(META_PREFIXES):
        return {"meta": True}
    return {}


def _part(block: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic content block as an OpenAI content part (images become data URLs)."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind == "image":
        src = block.get("source") if isinstance(block.get("source"), dict) else {}
        if src.get("type") == "base64":
            url = f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"
        else:
            url = str(src.get("url", ""))
        return {"type": "image_url", "image_url": {"url": url}}
    return dict(block)


def _tool_content(content: Any) -> tuple[str, bool]:
    """A tool_result's content as text; list content is flattened (images as a placeholder)."""
    if isinstance(content, str):
        return content, False
    if content is None:
        return "", False
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text":
                parts.append(str(b.get("text", "")))
            elif isinstance(b, dict) and b.get("type") == "image":
                parts.append("[image]")
            else:
                parts.append(str(b))
        return "\n".join(parts), True
    return str(content), False


class _Builder:
    def __init__(self, source: Source):
        self.source = source
        self.s = Session(id="", source_format="claude-code", source_path=source.path)
        self.s.warnings.extend(source.warnings)
        self.groups: dict[str, int] = {}  # message.id -> index of its assistant message
        self.usage: dict[int, tuple[dict[str, Any], int]] = {}
        self.annotations: dict[str, int] = {}
        self.turn_closed_at: set[int] = set()  # message counts at which a system/turn_duration was written

    def note(self, kind: str) -> None:
        self.annotations[kind] = self.annotations.get(kind, 0) + 1

    def add(self, msg: dict[str, Any], rec: dict[str, Any], lineno: int) -> None:
        ts = parse_timestamp(rec.get("timestamp"))
        if ts is not None:
            msg["x_timestamp"] = ts
        msg["x_origin"] = origin(self.source.path, line=lineno)
        if rec.get("isSidechain"):
            flag(msg, sidechain=True)
        self.s.messages.append(msg)

    def user(self, rec: dict[str, Any], lineno: int) -> None:
        message = rec.get("message") if isinstance(rec.get("message"), dict) else None
        if message is None:
            self.s.warnings.append(f"line {lineno}: user record has no 'message'; skipped")
            return
        content = message.get("content")
        flags: dict[str, bool] = {}
        if rec.get("isMeta"):
            flags["meta"] = True
        if rec.get("isCompactSummary"):
            flags["compaction_summary"] = True
        if isinstance(content, str):
            msg = {"role": "user", "content": content}
            flags.update(_classify(content))
            self._user_message(msg, flags, rec, lineno)
            return
        if not isinstance(content, list):
            self.s.warnings.append(f"line {lineno}: user content is neither text nor blocks; skipped")
            return
        others = []
        for block in content:
            if not isinstance(block, dict):
                self.s.warnings.append(f"line {lineno}: content block is not an object; skipped")
            elif block.get("type") == "tool_result":
                text, multimodal = _tool_content(block.get("content"))
                tool = {"role": "tool", "tool_call_id": str(block.get("tool_use_id", "")), "content": text}
                if multimodal:
                    flag(tool, multimodal=True)
                if block.get("is_error"):
                    tool["x_is_error"] = True
                self.add(tool, rec, lineno)
            else:
                others.append(_part(block))
        if others:
            first = next((p.get("text", "") for p in others if p.get("type") == "text"), "")
            flags.update(_classify(first))
            self._user_message({"role": "user", "content": others}, flags, rec, lineno)

    def _user_message(self, msg: dict[str, Any], flags: dict[str, bool], rec: dict[str, Any], lineno: int) -> None:
        flag(msg, **flags)
        if flags.get("compaction_summary") and self.s.compactions and self.s.compactions[-1].summary is None:
            c = self.s.compactions[-1]
            c.summary = msg["content"] if isinstance(msg["content"], str) else None
            c.message_index = len(self.s.messages)
        self.add(msg, rec, lineno)

    def assistant(self, rec: dict[str, Any], lineno: int) -> None:
        message = rec.get("message") if isinstance(rec.get("message"), dict) else None
        if message is None:
            self.s.warnings.append(f"line {lineno}: assistant record has no 'message'; skipped")
            return
        mid = _message_id(rec)
        index = self.groups.get(mid)
        if index is None:
            msg: dict[str, Any] = {"role": "assistant", "content": None}
            if message.get("model") == "<synthetic>" or rec.get("isApiErrorMessage"):
                flag(msg, synthetic=True)
            elif isinstance(message.get("model"), str):
                msg["x_model"] = message["model"]
            self.add(msg, rec, lineno)
            index = len(self.s.messages) - 1
            self.groups[mid] = index
        msg = self.s.messages[index]
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] if isinstance(content, str) else []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                text = str(block.get("text", ""))
                msg["content"] = text if msg["content"] is None else msg["content"] + "\n" + text
            elif kind == "thinking":
                thought = str(block.get("thinking", ""))
                msg["x_reasoning"] = thought if "x_reasoning" not in msg else msg["x_reasoning"] + "\n" + thought
                if block.get("signature"):
                    msg.setdefault("x_reasoning_opaque", []).append({"type": "thinking", "signature": block["signature"]})
            elif kind == "redacted_thinking":
                msg.setdefault("x_reasoning_opaque", []).append(dict(block))
            elif kind == "tool_use":
                msg.setdefault("tool_calls", []).append(
                    {
                        "id": str(block.get("id", f"toolu_line{lineno}")),
                        "type": "function",
                        "function": {"name": str(block.get("name", "")), "arguments": arguments_string(block.get("input"))},
                    }
                )
            else:
                msg.setdefault("x_other_blocks", []).append(dict(block))
        if isinstance(message.get("usage"), dict):
            self.usage[index] = (message["usage"], lineno)
        if isinstance(message.get("stop_reason"), str):
            msg["x_stop_reason"] = message["stop_reason"]

    def system(self, rec: dict[str, Any], lineno: int) -> None:
        sub = rec.get("subtype")
        if sub == "compact_boundary":
            meta = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), dict) else {}
            pre = meta.get("preTokens")
            self.s.compactions.append(
                Compaction(
                    message_index=len(self.s.messages),
                    kind="claude-compact-boundary",
                    tokens_before=pre if isinstance(pre, int) else None,
                    timestamp=parse_timestamp(rec.get("timestamp")),
                )
            )
            self.s.meta.setdefault("compaction_triggers", []).append(meta.get("trigger"))
        elif sub == "turn_duration":
            self.turn_closed_at.add(len(self.s.messages))
        self.note(f"system/{sub}")

    def finish(self) -> Session:
        s = self.s
        for index in sorted(self.groups.values()):
            msg = s.messages[index]
            model = msg.pop("x_model", None)
            if flags_of(msg).get("synthetic"):
                continue
            raw = self.usage.get(index)
            usage = normalize_usage(raw[0], shape="anthropic") if raw else None
            s.api_calls.append(ApiCall(message_index=index, usage=usage, timestamp=msg.get("x_timestamp"), model=model))
        s.meta["annotations"] = self.annotations
        s.turns = build_turns(s.messages, turn_start=_turn_start)
        for turn in s.turns:
            turn.ended = turn.end in self.turn_closed_at or _ends_turn(s.messages[turn.end - 1])
        return finalize(s)


def _ends_turn(msg: dict[str, Any]) -> bool:
    """A turn's last message says it is over: a reply with a final stop reason, or an interruption."""
    if msg.get("role") == "assistant":
        return not msg.get("tool_calls") and msg.get("x_stop_reason") in FINAL_STOP_REASONS
    return msg.get("role") == "user" and bool(flags_of(msg).get("interrupted"))


def _turn_start(msg: dict[str, Any]) -> bool:
    if msg.get("role") != "user":
        return False
    f = flags_of(msg)
    if f.get("notification"):
        return True
    return not (f.get("meta") or f.get("compaction_summary") or f.get("synthetic"))


def read(source: Source, session_id: str | None = None, *, load_children: bool = True) -> Session:
    records = []
    for lineno, rec in iter_jsonl(source):
        if isinstance(rec, dict):
            records.append((lineno, rec))
        else:
            source.warnings.append(f"line {lineno}: skipped, not a JSON object")
    if not any(r.get("type") in ("user", "assistant", "system", "summary") or "sessionId" in r for _, r in records):
        raise source.error("no Claude Code records (type user/assistant/system with a sessionId) in this file")
    b = _Builder(source)
    b.s.meta["records"] = len(records)
    records = _active_records(records, b.s.warnings)
    for lineno, rec in records:
        kind = rec.get("type")
        if not b.s.id and isinstance(rec.get("sessionId"), str):
            b.s.id = rec.get("agentId") or rec["sessionId"]
            if rec.get("agentId"):
                b.s.meta["parent_session_id"] = rec["sessionId"]
                b.s.meta["agent_id"] = rec["agentId"]
            b.s.cwd = rec.get("cwd") if isinstance(rec.get("cwd"), str) else None
            for key in ("version", "gitBranch", "slug"):
                if key in rec:
                    b.s.meta[key] = rec[key]
            if rec.get("version") == "hermes-agent":
                b.s.meta["hermes_trace_export"] = True
                b.s.warnings.append("Hermes trace export: timestamps are the export time and there is no usage")
        if kind == "user":
            b.user(rec, lineno)
        elif kind == "assistant":
            b.assistant(rec, lineno)
        elif kind == "system":
            b.system(rec, lineno)
        elif kind == "summary":
            if b.s.title is None and isinstance(rec.get("summary"), str):
                b.s.title = rec["summary"]
            b.note("summary")
        elif isinstance(kind, str) and kind in NOT_CONVERSATION:
            b.note(kind)
        else:
            b.note(f"unknown/{kind}")
    if not b.s.id:
        b.s.id = Path(source.path).name.split(".")[0]
    session = b.finish()
    if load_children and "agent_id" not in session.meta:
        _load_children(session)
    return session


def _load_children(session: Session) -> None:
    path = Path(session.source_path or "")
    folder = path.parent / path.name.split(".")[0] / "subagents"
    if not folder.is_dir():
        return
    for child in sorted(folder.glob("agent-*.jsonl*")):
        if child.name.endswith(".source.txt"):
            continue
        try:
            session.children.append(read(open_source(child), load_children=False))
        except ReaderError as exc:
            session.warnings.append(f"subagent {child.name} not loaded: {exc}")


READERS = {"claude-code": read}
