"""Hermes 0.19.0's repair of the live history's role sequence, before every request.

Before it assembles a request the agent collapses what providers refuse in the working history
itself (agent/conversation_loop.py:851-868 calling agent/agent_runtime_helpers.py:465-681):
consecutive assistant messages are merged (tool calls joined, contents joined with a newline), a
tool result whose call is not among the preceding assistant's is dropped, and consecutive user
messages are merged with a blank line. The history shrinks, so an engine's next hook sees the
repaired list and the gates count it. A compaction that leaves an orphan tool result or two user
turns side by side is the usual cause.

Merged messages are new dicts here (Hermes edits the first of the pair in place): the host keeps
per-object caches of its history's messages, and the content is the same either way.
"""

from __future__ import annotations

from typing import Any

_VERIFY = frozenset({"verification_required", "verify_hook_continue"})


def _interim(m: dict[str, Any]) -> bool:
    """A Codex interim row, never merged (agent_runtime_helpers.py:526-531)."""
    return bool(m.get("codex_reasoning_items") or m.get("codex_message_items") or m.get("finish_reason") == "incomplete")


def _call_ids(message: dict[str, Any]) -> set[str]:
    ids: set[str] = set()
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict):
            for key in ("id", "call_id"):
                if call.get(key):
                    ids.add(call[key])
    return ids


def needs_repair(messages: list[Any], start: int = 0) -> bool:
    """Whether :func:`repair_sequence` would change ``messages``, looking at ``start`` onwards.

    ``start`` must be 0 or the index of an assistant message, where the tool-call bookkeeping
    starts over in Hermes' pass as well; the message before it is checked for adjacency.
    """
    known: set[str] = set()
    prev = messages[start - 1] if start > 0 else None
    for m in messages[start:]:
        if not isinstance(m, dict):
            prev = m
            continue
        role = m.get("role")
        p_role = prev.get("role") if isinstance(prev, dict) else None
        if role == "assistant":
            if p_role == "assistant" and not _interim(m) and not _interim(prev):
                return True
            known = _call_ids(m)
        elif role == "tool":
            cid = m.get("tool_call_id")
            if not cid or cid not in known:
                return True
            known.discard(cid)
        elif role == "user":
            if p_role == "user" and isinstance(m.get("content", ""), str) and isinstance(prev.get("content", ""), str):
                return True
            known = set()
        prev = m
    return False


def repair_sequence(messages: list[Any]) -> tuple[list[Any], int]:
    """(the repaired history, the number of repairs): Hermes' three passes in its order."""
    repairs = 0
    collapsed: list[Any] = []
    for m in messages:
        prev = collapsed[-1] if collapsed else None
        if (isinstance(m, dict) and m.get("role") == "assistant" and isinstance(prev, dict)
                and prev.get("role") == "assistant" and not _interim(m) and not _interim(prev)):
            repairs += 1
            if prev.get("finish_reason") in _VERIFY:
                collapsed[-1] = m
                continue
            joined = dict(prev)
            calls = list(prev.get("tool_calls") or []) + list(m.get("tool_calls") or [])
            if calls:
                joined["tool_calls"] = calls
            a, b = prev.get("content"), m.get("content")
            if isinstance(a, str) and isinstance(b, str):
                joined["content"] = "\n".join(p for p in (a.strip(), b.strip()) if p)
            elif not a and b is not None:
                joined["content"] = b
            if not prev.get("reasoning_content") and m.get("reasoning_content"):
                joined["reasoning_content"] = m["reasoning_content"]
            collapsed[-1] = joined
            continue
        collapsed.append(m)

    known: set[str] = set()
    filtered: list[Any] = []
    for m in collapsed:
        if not isinstance(m, dict):
            filtered.append(m)
            continue
        role = m.get("role")
        if role == "assistant":
            known = _call_ids(m)
        elif role == "tool":
            cid = m.get("tool_call_id")
            if not cid or cid not in known:
                repairs += 1
                continue
            known.discard(cid)
        elif role == "user":
            known = set()
        filtered.append(m)

    merged: list[Any] = []
    for m in filtered:
        prev = merged[-1] if merged else None
        if (isinstance(m, dict) and m.get("role") == "user" and isinstance(prev, dict) and prev.get("role") == "user"
                and isinstance(prev.get("content", ""), str) and isinstance(m.get("content", ""), str)):
            a, b = prev.get("content", ""), m.get("content", "")
            joined = dict(prev)
            joined["content"] = (a + "\n\n" + b) if a and b else (a or b)
            joined.pop("api_content", None)
            merged[-1] = joined
            repairs += 1
            continue
        merged.append(m)
    return (merged if repairs else messages), repairs
