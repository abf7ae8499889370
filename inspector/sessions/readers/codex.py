"""OpenAI Codex CLI rollout JSONL (docs/formats.md §5).

Lines are ``{timestamp, type, payload}``. ``response_item`` payloads are Responses-API items
and make up the model context; ``event_msg`` is UI telemetry except ``task_started`` /
``task_complete`` (explicit turns), ``user_message`` (tells the genuine prompt apart from
injected context) and ``token_count`` (per-call usage, written twice per call: deduped by an
unchanged cumulative total). One call is the items between two usage events, collapsed into
one assistant message. ``compacted`` lines become a compaction marker followed by the
replacement history. Older rollouts without the ``payload`` wrapper are read too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from inspector.sessions.common import build_turns, finalize, flag, flags_of, origin, parse_timestamp
from inspector.sessions.model import ApiCall, Compaction, Session, Turn
from inspector.sessions.source import Source, iter_jsonl
from inspector.usage import normalize_usage

FORMATS = ("codex",)

ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "web_search_call",
        "ghost_snapshot",
    }
)
REDACTED = re.compile(r"len=(\d+) sha=([0-9a-f]+)")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p)
    return ""


def _same_prompt(item_text: str, event_text: str) -> bool:
    if item_text.strip() == event_text.strip() or (event_text.strip() and event_text.strip() in item_text):
        return True
    a, b = REDACTED.search(item_text), REDACTED.search(event_text)
    return bool(a and b and a.groups() == b.groups())


class _Builder:
    def __init__(self, source: Source):
        self.source = source
        self.s = Session(id="", source_format="codex", source_path=source.path)
        self.pending: int | None = None  # assistant message of the call in progress
        # A tool output arrived since the pending call's items: anything the model says next is a
        # new call, even when no token_count closed this one (legacy files, providers without usage).
        self.output_since_pending = False
        self.last_total: Any = None
        self.model: str | None = None
        self.turns: list[dict[str, Any]] = []
        self.user_items: list[int] = []  # user messages since the current turn started
        self.genuine: set[int] = set()
        self.skipped: dict[str, int] = {}
        self.saw_user_events = False  # legacy rollouts have none: then every user item is a prompt
        self.wrapped = False  # lines carry a ``payload`` (not a legacy rollout)
        # User items written before the first task_started of a wrapped rollout: injected context
        # (AGENTS.md, environment), not prompts, unless a user_message event claims one.
        self.preamble: set[int] = set()

    @property
    def msgs(self) -> list[dict[str, Any]]:
        return self.s.messages

    def add(self, msg: dict[str, Any], ts: float | None, lineno: int) -> int:
        if ts is not None:
            msg["x_timestamp"] = ts
        msg["x_origin"] = origin(self.source.path, line=lineno)
        self.msgs.append(msg)
        return len(self.msgs) - 1

    def assistant(self, ts: float | None, lineno: int) -> dict[str, Any]:
        if self.pending is not None and self.output_since_pending:
            self.close_call()
        if self.pending is None:
            self.pending = self.add({"role": "assistant", "content": None}, ts, lineno)
        return self.msgs[self.pending]

    def close_call(self, usage: Any = None) -> None:
        if self.pending is None:
            return
        self.s.api_calls.append(
            ApiCall(message_index=self.pending, usage=usage, timestamp=self.msgs[self.pending].get("x_timestamp"), model=self.model)
        )
        self.pending = None
        self.output_since_pending = False

    # --- response items ---------------------------------------------------------------
    def item(self, p: dict[str, Any], ts: float | None, lineno: int) -> None:
        kind = p.get("type")
        if kind == "message":
            role = p.get("role")
            text = _text(p.get("content"))
            if role == "assistant":
                msg = self.assistant(ts, lineno)
                msg["content"] = text if msg["content"] is None else msg["content"] + "\n" + text
                if p.get("phase"):
                    msg.setdefault("x_phases", []).append(p["phase"])
                return
            if role in ("developer", "system"):
                self.close_call()
                msg = {"role": "system", "content": text, "x_original_role": role}
                self.add(flag(msg, meta=True), ts, lineno)
                return
            if role == "user":
                self.close_call()
                content: Any = text
                if isinstance(p.get("content"), list) and any(
                    isinstance(c, dict) and c.get("type") == "input_image" for c in p["content"]
                ):
                    content = [_part(c) for c in p["content"] if isinstance(c, dict)]
                index = self.add({"role": "user", "content": content}, ts, lineno)
                self.user_items.append(index)
                if self.wrapped and not self.turns:
                    self.preamble.add(index)
                return
            self.s.warnings.append(f"line {lineno}: message with unknown role {role!r}; skipped")
        elif kind == "reasoning":
            msg = self.assistant(ts, lineno)
            summary = p.get("summary") if isinstance(p.get("summary"), list) else []
            text = "\n".join(str(s.get("text", "")) for s in summary if isinstance(s, dict))
            if text:
                msg["x_reasoning"] = text if "x_reasoning" not in msg else msg["x_reasoning"] + "\n" + text
            opaque = {k: p[k] for k in ("encrypted_content", "content", "id") if p.get(k) is not None}
            if opaque:
                msg.setdefault("x_reasoning_opaque", []).append(opaque)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            msg = self.assistant(ts, lineno)
            call_id = p.get("call_id") or p.get("id") or f"call_line{lineno}"
            if kind == "function_call":
                args = p.get("arguments")
                args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            elif kind == "custom_tool_call":
                args = json.dumps({"input": p.get("input", "")}, ensure_ascii=False)
            else:
                args = json.dumps(p.get("action", {}), ensure_ascii=False)
            name = p.get("name") or ("local_shell" if kind == "local_shell_call" else "")
            msg.setdefault("tool_calls", []).append(
                {"id": str(call_id), "type": "function", "function": {"name": str(name), "arguments": args}}
            )
            if kind != "function_call":
                msg.setdefault("x_call_kinds", {})[str(call_id)] = kind
        elif kind == "web_search_call":
            msg = self.assistant(ts, lineno)
            call_id = f"ws_line{lineno}"
            action = p.get("action", {})
            # The flag rides on the call itself (message-level ``x_`` keys are stripped before the host
            # sees the message), so the request sanitiser pairs it with no result (shaping.call_id).
            msg.setdefault("tool_calls", []).append(
                {"id": call_id, "type": "function", "x_server_side": True,
                 "function": {"name": "web_search", "arguments": json.dumps(action, ensure_ascii=False)}}
            )
            msg.setdefault("x_server_side_calls", []).append(call_id)
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            out = p.get("output")
            if isinstance(out, dict):
                out = out.get("content") if isinstance(out.get("content"), str) else json.dumps(out, ensure_ascii=False)
            elif not isinstance(out, str):
                out = "" if out is None else json.dumps(out, ensure_ascii=False)
            self.add({"role": "tool", "tool_call_id": str(p.get("call_id", "")), "content": out}, ts, lineno)
            if self.pending is not None:
                self.output_since_pending = True
        else:
            self.skipped[str(kind)] = self.skipped.get(str(kind), 0) + 1

    def window(self, value: Any) -> None:
        """Codex records the model's usable window on each turn (``model_context_window``); the last wins."""
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            self.s.context_window = value

    # --- events -----------------------------------------------------------------------
    def event(self, p: dict[str, Any], ts: float | None, lineno: int) -> None:
        kind = p.get("type")
        if kind == "task_started":
            self.window(p.get("model_context_window"))
            self.close_call()
            self.turns.append({"id": p.get("turn_id"), "start": len(self.msgs), "done": False, "aborted": False})
            self.user_items = []
        elif kind in ("task_complete", "turn_aborted"):
            self.close_call()
            for t in reversed(self.turns):
                if t["id"] == p.get("turn_id") or p.get("turn_id") is None:
                    t["done" if kind == "task_complete" else "aborted"] = True
                    break
        elif kind == "user_message":
            self.saw_user_events = True
            said = str(p.get("message", ""))
            candidates = [i for i in self.user_items if i not in self.genuine]
            match = next((i for i in reversed(candidates) if _same_prompt(_text(self.msgs[i]["content"]), said)), None)
            if match is None and candidates:
                match = candidates[-1]
            if match is not None:
                self.genuine.add(match)
        elif kind == "token_count":
            info = p.get("info")
            if not isinstance(info, dict):
                return
            self.window(info.get("model_context_window"))
            total = info.get("total_token_usage")
            if total is not None and total == self.last_total:
                return  # the duplicate that only refreshes rate limits
            self.last_total = total
            last = info.get("last_token_usage")
            if not isinstance(last, dict):
                self.s.warnings.append(f"line {lineno}: token_count without last_token_usage; ignored")
                return
            if self.pending is None:
                if not any(v for v in last.values() if isinstance(v, (int, float))):
                    return  # zeros after a compaction: no call of its own
                self.s.warnings.append(f"line {lineno}: usage with no items of its own; attached to an empty assistant message")
                self.assistant(ts, lineno)
                flag(self.msgs[self.pending], synthetic=True)
            self.close_call(normalize_usage(last, shape="responses"))

    def compacted(self, p: dict[str, Any], ts: float | None, lineno: int) -> None:
        """A ``compacted`` line: a marker, then the replacement history the next request starts from.

        Codex records no token figure here; the context that was compacted is the prompt of the
        call just before, so ``tokens_before`` is that call's recorded prompt. The summary is the
        history's ``compaction`` item when there is one (server-side compaction, its text
        encrypted), else its last message.
        """
        self.close_call()
        summary = p.get("message") if isinstance(p.get("message"), str) else None
        before = next((c.usage.prompt_tokens for c in reversed(self.s.api_calls) if c.usage is not None), None)
        self.s.compactions.append(Compaction(message_index=len(self.msgs), kind="codex-compacted", summary=summary,
                                             tokens_before=before, timestamp=ts))
        history = p.get("replacement_history")
        items = [i for i in history if isinstance(i, dict) and i.get("type") in ("message", "compaction")] \
            if isinstance(history, list) else []
        summary_at = next((k for k in range(len(items) - 1, -1, -1) if items[k].get("type") == "compaction"), len(items) - 1)
        for k, item in enumerate(items):
            if item.get("type") == "compaction":
                secret = item.get("encrypted_content")
                size = len(secret) if isinstance(secret, str) else 0
                msg = {"role": "user", "content": f"[encrypted compaction summary: {size:,} characters]"}
                msg["x_reasoning_opaque"] = [{k2: v for k2, v in item.items() if k2 != "type"}]
            else:
                role = item.get("role") if item.get("role") in ("user", "assistant") else "system"
                msg = {"role": role, "content": _text(item.get("content"))}
            flag(msg, synthetic=True, compaction_copy=True, compaction_summary=(k == summary_at))
            self.add(msg, ts, lineno)
        if not items and summary is not None:
            self.add(flag({"role": "assistant", "content": summary}, synthetic=True, compaction_summary=True), ts, lineno)

    def finish(self) -> Session:
        self.close_call()
        s = self.s
        if not self.saw_user_events:
            self.genuine = {i for i, m in enumerate(s.messages)
                            if m["role"] == "user" and not flags_of(m).get("synthetic") and i not in self.preamble}
        for i, msg in enumerate(s.messages):
            if msg["role"] == "user" and i not in self.genuine and not flags_of(msg).get("synthetic"):
                flag(msg, meta=True)
        if self.turns:
            s.turns = []
            for k, t in enumerate(self.turns):
                end = self.turns[k + 1]["start"] if k + 1 < len(self.turns) else len(s.messages)
                user = next((i for i in range(t["start"], end) if i in self.genuine), None)
                s.turns.append(
                    Turn(index=k, start=t["start"], end=end, user_index=user, interrupted=not t["done"], turn_id=t["id"],
                         ended=t["done"] or t["aborted"])
                )
            # The preamble injected before the first task_started belongs to that turn.
            s.turns[0].start = 1 if s.messages and s.messages[0].get("role") == "system" and s.turns[0].start > 0 else 0
            s.turns[0].start = min(s.turns[0].start, self.turns[0]["start"])
            s.meta["turns_completed"] = sum(1 for t in self.turns if t["done"])
        else:
            s.turns = build_turns(s.messages)
            s.meta["turns_completed"] = 0
        if self.skipped:
            s.meta["skipped_items"] = self.skipped
        return finalize(s)


def _part(c: dict[str, Any]) -> dict[str, Any]:
    if c.get("type") == "input_image":
        return {"type": "image_url", "image_url": {"url": str(c.get("image_url", ""))}}
    return {"type": "text", "text": str(c.get("text", ""))}


def read(source: Source, session_id: str | None = None) -> Session:
    b = _Builder(source)
    seen_any = False
    b.s.meta["records"] = 0
    for lineno, rec in iter_jsonl(source):
        b.s.meta["records"] += 1
        if not isinstance(rec, dict):
            b.s.warnings.append(f"line {lineno}: skipped, not a JSON object")
            continue
        ts = parse_timestamp(rec.get("timestamp"))
        kind = rec.get("type")
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            # Legacy rollouts: a header line, bare items, and state records.
            if lineno == 1 or "instructions" in rec:
                _meta(b, rec, ts)
                seen_any = True
            elif isinstance(kind, str) and kind in ITEM_TYPES:
                b.item(rec, ts, lineno)
                seen_any = True
            elif "record_type" in rec:
                b.skipped["state"] = b.skipped.get("state", 0) + 1
            else:
                b.s.warnings.append(f"line {lineno}: skipped, no 'payload' object")
            continue
        seen_any = b.wrapped = True
        if kind == "session_meta":
            _meta(b, payload, ts)
        elif kind == "response_item":
            b.item(payload, ts, lineno)
        elif kind == "event_msg":
            b.event(payload, ts, lineno)
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                b.model = payload["model"]
                b.s.model = b.s.model or b.model
        elif kind == "compacted":
            b.compacted(payload, ts, lineno)
        else:
            b.skipped[str(kind)] = b.skipped.get(str(kind), 0) + 1
    if not seen_any:
        raise source.error("no Codex rollout records (lines of {timestamp, type, payload})")
    b.s.warnings[:0] = source.warnings  # the lines that did not parse (collected while iterating)
    if not b.s.id:
        b.s.id = Path(source.path).name.split(".")[0]
    return b.finish()


def _meta(b: _Builder, p: dict[str, Any], ts: float | None) -> None:
    if b.s.id:
        b.s.meta.setdefault("resumed_meta", 0)
        b.s.meta["resumed_meta"] += 1
        return
    b.s.id = str(p.get("id") or p.get("session_id") or "")
    b.s.started_at = parse_timestamp(p.get("timestamp")) or ts
    b.s.cwd = p.get("cwd") if isinstance(p.get("cwd"), str) else None
    for key in ("originator", "cli_version", "model_provider", "git"):
        if key in p:
            b.s.meta[key] = p[key]
    if isinstance(p.get("source"), str):
        b.s.meta["source"] = p["source"]
    base = p.get("base_instructions")
    text = base.get("text") if isinstance(base, dict) else p.get("instructions")
    if isinstance(text, str) and text and not b.msgs:
        b.add({"role": "system", "content": text}, ts, 1)


READERS = {"codex": read}
