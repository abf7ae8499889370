"""Turning the working transcript into the request a provider receives (agent/conversation_loop.py:870-1090 of hermes-agent 0.19.0; docs/host-contract.md §2.5).

Two stages, as in Hermes: *shaping* (what ``select_context`` sees: ``api_content`` replayed as
content, bookkeeping fields dropped) and *sanitising* (what is sent: top-level ``_`` keys
stripped, string content whitespace-stripped, tool-call JSON canonicalised, orphan tool results
dropped). Both are pure functions of a message, so the host caches them per message object.
"""

from __future__ import annotations

import json
from typing import Any

# Keys build_api_messages drops before a request is assembled.
_DROP_ON_SHAPE = ("api_content", "timestamp", "reasoning", "finish_reason", "_thinking_prefill")


def shape_message(message: dict[str, Any]) -> dict[str, Any]:
    """The per-message form inside ``request_messages`` (before sanitising)."""
    out = dict(message)
    api_content = out.get("api_content")
    if api_content is not None and out.get("role") in ("user", "assistant"):
        out["content"] = api_content
    for key in _DROP_ON_SHAPE:
        out.pop(key, None)
    calls = out.get("tool_calls")
    if isinstance(calls, list) and any(isinstance(c, dict) and not _CALL_FIELDS_KEPT.issuperset(c) for c in calls):
        # Responses-API ids stay in the history but not in a chat-completions request
        # (run_agent.py:6073-6131, applied while building api_messages, conversation_loop.py:900-901).
        out["tool_calls"] = [{k: v for k, v in c.items() if k not in _CALL_FIELDS_DROPPED} if isinstance(c, dict) else c
                             for c in calls]
    return out


_CALL_FIELDS_DROPPED = frozenset({"call_id", "response_item_id"})
_CALL_FIELDS_KEPT = frozenset({"id", "type", "function", "index", "extra_content"})


# Built once: json.dumps with arguments constructs a new encoder on every call.
_ARGS_ENCODER = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _canonical_arguments(arguments: Any) -> Any:
    if not isinstance(arguments, str):
        return arguments
    try:
        canonical = _ARGS_ENCODER.encode(json.loads(arguments))
    except (ValueError, TypeError):
        return arguments
    return arguments if canonical == arguments else canonical  # one string kept, not two equal ones


def sanitize_message(message: dict[str, Any]) -> dict[str, Any]:
    """The per-message wire form: what the provider receives for this row."""
    out = {k: v for k, v in message.items() if not k.startswith("_")}
    content = out.get("content")
    if isinstance(content, str):
        out["content"] = content.strip()
    calls = out.get("tool_calls")
    if calls is not None:
        if not calls:
            out.pop("tool_calls")
        else:
            fixed = []
            for call in calls:
                if isinstance(call, dict) and isinstance(call.get("function"), dict):
                    fn = dict(call["function"])
                    fn["arguments"] = _canonical_arguments(fn.get("arguments"))
                    call = {**call, "function": fn}
                fixed.append(call)
            out["tool_calls"] = fixed
    return out


# Roles the provider accepts; anything else is dropped before a call (Hermes' allow-list).
VALID_ROLES = frozenset({"system", "user", "assistant", "tool", "function", "developer"})
# What Hermes sends in place of a tool result that no longer exists (its exact words).
STUB_RESULT = "[Result unavailable — see context summary above]"


def call_id(call: Any) -> str:
    """A tool call's id as Hermes reads it (``call_id`` first, then ``id``).

    A call the provider ran itself (``x_server_side``: a Codex ``web_search_call``) never gets a
    tool result, so it pairs with nothing: Hermes keeps server-side items out of its tool calls
    (``_SERVER_SIDE_TOOL_CALL_TYPES``, agent/codex_responses_adapter.py:1198 of hermes-agent 0.19.0)
    and the request sanitiser must not add a stub result Codex never sent.
    """
    if not isinstance(call, dict) or call.get("x_server_side"):
        return ""
    return call.get("call_id") or call.get("id") or ""


def sanitize_request(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Hermes' last pass over a request (``_sanitize_api_messages``, run_agent.py:3848 of hermes-agent 0.19.0).

    Drops messages whose role the API refuses, drops tool results whose call is in no assistant
    message of the request, and adds a stub result right after each call that has none.
    Returns the list (the same object when nothing changed) and what was done.
    """
    kept = [m for m in messages if m.get("role") in VALID_ROLES]
    calls = {cid for m in kept if m.get("role") == "assistant" for c in (m.get("tool_calls") or ()) if (cid := call_id(c))}
    results = {m.get("tool_call_id") for m in kept if m.get("role") == "tool" and m.get("tool_call_id")}
    orphans, missing = results - calls, calls - results
    done = {"roles": len(messages) - len(kept), "orphans": 0, "stubs": 0}
    if orphans:
        before = len(kept)
        kept = [m for m in kept if not (m.get("role") == "tool" and m.get("tool_call_id") in orphans)]
        done["orphans"] = before - len(kept)
    if missing:
        patched: list[dict[str, Any]] = []
        for m in kept:
            patched.append(m)
            if m.get("role") == "assistant":
                for c in m.get("tool_calls") or ():
                    if call_id(c) in missing:
                        patched.append({"role": "tool", "content": STUB_RESULT, "tool_call_id": call_id(c)})
                        done["stubs"] += 1
        kept = patched
    return (messages, done) if not any(done.values()) else (kept, done)


def describe_sanitised(done: dict[str, int]) -> str:
    parts = [f"{n} {what}" for what, n in (("message(s) with a role the API refuses dropped", done["roles"]),
                                           ("orphan tool result(s) dropped", done["orphans"]),
                                           ("stub result(s) added for calls without one", done["stubs"])) if n]
    return "host sanitiser (Hermes' last pass before a call): " + ", ".join(parts)


def validate_selection(result: Any) -> str | None:
    """Hermes' acceptance test for a ``select_context`` result; None when accepted (docs/host-contract.md §3)."""
    if result is None:
        return None
    if not isinstance(result, list):
        return f"invalid value (not a non-empty list of dicts): got {type(result).__name__}"
    if not result:
        return "invalid value (not a non-empty list of dicts): empty list"
    for i, item in enumerate(result):
        if not isinstance(item, dict):
            return f"invalid value (not a non-empty list of dicts): item {i} is {type(item).__name__}"
    return None


def validate_messages(result: Any) -> str | None:
    """Is a ``compress`` result a list of message dicts? None when it is.

    Roles are not checked: Hermes commits whatever list it gets (agent/conversation_compression.py:1076-1171 of hermes-agent 0.19.0) and its request sanitiser
    drops refused roles from every request (run_agent.py:3848); :func:`refused_roles` names them.
    """
    if not isinstance(result, list):
        return f"compress returned {type(result).__name__}, expected a list of messages"
    for i, item in enumerate(result):
        if not isinstance(item, dict):
            return f"compress returned a list whose item {i} is {type(item).__name__}, not a message dict"
    return None


def refused_roles(messages: list[dict[str, Any]]) -> list[str]:
    """``message i: 'role'`` for each message whose role providers refuse."""
    return [f"message {i}: {m.get('role')!r}" for i, m in enumerate(messages) if m.get("role") not in VALID_ROLES]
