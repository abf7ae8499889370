"""Tool-output pruning for the built-in compressor (agent/context_compressor.py:1649-1813 of hermes-agent 0.19.0; docs/host-contract.md §6.10).

Old tool results are the cheapest context to reclaim: the model already acted on them, so a
one-line description ("ran `pytest` -> exit 1, 40 lines output") keeps the thread of the work
while dropping the bulk. Everything here is pure (no engine state) so the fallback summary and
the proactive prune reuse the same one-line descriptions.

The one-line descriptions, the duplicate and screenshot placeholders and the order of the three
passes are Hermes' (``agent/context_compressor.py:708-856`` and ``:1649-1813`` of hermes-agent
0.19.0): they are data the model then reads in place of the output, and the differential suite
(``tests/differential``) checks them character for character against the real wheel.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

PRUNE_MIN_CHARS = 200
DUPLICATE_MIN_CHARS = 200
ARGS_TRUNCATE_THRESHOLD = 500
ARGS_LEAF_MAX = 200
ARGS_LEAF_SUFFIX = "...[truncated]"

DUPLICATE_MARKER = "[Duplicate tool output — same content as a more recent call]"
PRUNED_TOOL_PLACEHOLDER = "[Old tool output cleared to save context space]"
SCREENSHOT_REMOVED_PART = "[screenshot removed to save context]"
SCREENSHOT_REMOVED_PREFIX = "[screenshot removed] "
IMAGE_PART_TYPES = frozenset({"image", "image_url", "input_image"})

_PLACEHOLDER_PREFIXES = ("[Duplicate tool output", "[screenshot removed", PRUNED_TOOL_PLACEHOLDER)

_WS = re.compile(r"\s+")


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def one_line(value: Any, limit: int) -> str:
    """Collapse whitespace and clip to ``limit`` characters (with an ellipsis when clipped)."""
    text = _WS.sub(" ", str(value if value is not None else "")).strip()
    if len(text) > limit:
        return text[: max(0, limit - 3)] + "..."
    return text


def parse_args(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict; anything unparsable becomes ``{}``."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip():
        try:
            parsed = json.loads(raw)
        except (ValueError, TypeError):
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def tool_call_id_of(call: Any) -> str:
    """Hermes identifies a call by ``call_id`` when present (Responses API), else ``id``
    (``_get_tool_call_id``, context_compressor.py:2792)."""
    if isinstance(call, dict):
        return call.get("call_id", "") or call.get("id", "") or ""
    return getattr(call, "call_id", "") or getattr(call, "id", "") or ""


def build_call_map(messages: list[dict[str, Any]]) -> dict[Any, tuple[str, Any]]:
    """``tool call id -> (tool name, raw arguments)`` as the prune pass indexes calls.

    Keyed by the call's ``id`` (not ``call_id``), with ``"unknown"`` / ``""`` for what is
    missing, as context_compressor.py:1683-1696 does; object-shaped calls are read by attribute.
    """
    mapping: dict[Any, tuple[str, Any]] = {}
    for msg in messages:
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        for call in msg.get("tool_calls") or []:
            if isinstance(call, dict):
                fn = call.get("function") or {}
                if not isinstance(fn, dict):
                    fn = {}
                mapping[call.get("id", "")] = (fn.get("name", "unknown"), fn.get("arguments", ""))
            else:
                fn = getattr(call, "function", None)
                name = getattr(fn, "name", "unknown") if fn else "unknown"
                args = getattr(fn, "arguments", "") if fn else ""
                mapping[getattr(call, "id", "") or ""] = (name, args)
    return mapping


# --------------------------------------------------------------------------------------------
# One-line tool-result summaries (Hermes' formats, context_compressor.py:736-856)
# --------------------------------------------------------------------------------------------

_EXIT_CODE = re.compile(r'"exit_code"\s*:\s*(-?\d+)')
_TOTAL_COUNT = re.compile(r'"total_count"\s*:\s*(\d+)')
_BROWSER_TOOLS = frozenset({"browser_navigate", "browser_click", "browser_snapshot", "browser_type",
                            "browser_scroll", "browser_vision"})


def _text_arg(args: dict[str, Any], key: str, default: str = "") -> str:
    """An argument as text: models send booleans and numbers where strings are expected."""
    value = args.get(key, default)
    if isinstance(value, str):
        return value
    return default if value is None else str(value)


def _clip(text: str, limit: int, keep: int) -> str:
    return text[:keep] + "..." if len(text) > limit else text


def _describe(tool: str, args: dict[str, Any], content: str) -> str:
    size = f"{len(content):,}"
    lines = content.count("\n") + 1 if content.strip() else 0
    if tool == "terminal":
        match = _EXIT_CODE.search(content)
        code = match.group(1) if match else "?"
        return f"[terminal] ran `{_clip(_text_arg(args, 'command'), 80, 77)}` -> exit {code}, {lines} lines output"
    if tool == "read_file":
        return f"[read_file] read {args.get('path', '?')} from line {args.get('offset', 1)} ({size} chars)"
    if tool == "write_file":
        written = _text_arg(args, "content").count("\n") + 1 if args.get("content") else "?"
        return f"[write_file] wrote to {args.get('path', '?')} ({written} lines)"
    if tool == "search_files":
        match = _TOTAL_COUNT.search(content)
        return (f"[search_files] {args.get('target', 'content')} search for '{args.get('pattern', '?')}' "
                f"in {args.get('path', '.')} -> {match.group(1) if match else '?'} matches")
    if tool == "patch":
        return f"[patch] {args.get('mode', 'replace')} in {args.get('path', '?')} ({size} chars result)"
    if tool in _BROWSER_TOOLS:
        url, ref = args.get("url", ""), args.get("ref", "")
        where = f" {url}" if url else (f" ref={ref}" if ref else "")
        return f"[{tool}]{where} ({size} chars)"
    if tool == "web_search":
        return f"[web_search] query='{args.get('query', '?')}' ({size} chars result)"
    if tool == "web_extract":
        urls = args.get("urls", [])
        first = urls[0] if isinstance(urls, list) and urls else "?"
        if isinstance(first, dict):  # a web_search hit forwarded as is
            first = first.get("url") or first.get("href") or "?"
        elif not isinstance(first, str):
            first = "?"
        more = f" (+{len(urls) - 1} more)" if isinstance(urls, list) and len(urls) > 1 else ""
        return f"[web_extract] {first}{more} ({size} chars)"
    if tool == "delegate_task":
        return f"[delegate_task] '{_clip(_text_arg(args, 'goal'), 60, 57)}' ({size} chars result)"
    if tool == "execute_code":
        code = _text_arg(args, "code")
        preview = code[:60].replace("\n", " ") + ("..." if len(code) > 60 else "")
        return f"[execute_code] `{preview}` ({lines} lines output)"
    if tool in ("skill_view", "skills_list", "skill_manage"):
        return f"[{tool}] name={args.get('name', '?')} ({size} chars)"
    if tool == "vision_analyze":
        return f"[vision_analyze] '{_text_arg(args, 'question')[:50]}' ({size} chars)"
    if tool == "memory":
        return f"[memory] {args.get('action', '?')} on {args.get('target', '?')}"
    if tool == "todo":
        return "[todo] updated task list"
    if tool == "clarify":
        return "[clarify] asked user a question"
    if tool == "text_to_speech":
        return f"[text_to_speech] generated audio ({size} chars)"
    if tool == "cronjob":
        return f"[cronjob] {args.get('action', '?')}"
    if tool == "process":
        return f"[process] {args.get('action', '?')} session={args.get('session_id', '?')}"
    shown = "".join(f" {key}={str(value)[:40]}" for key, value in list(args.items())[:2])
    return f"[{tool}]{shown} ({size} chars result)"


def summarize_tool_result(name: Any, raw_args: Any, content: Any) -> str:
    """One line describing a tool result: what was run, on what, and how big the result was.

    Never raises (a malformed historical call must not break every later compaction); what the
    formats cannot describe becomes ``[tool] (N chars result)``.
    """
    tool = name if isinstance(name, str) else str(name)
    try:
        try:
            args = json.loads(raw_args) if raw_args else {}
        except (ValueError, TypeError):
            args = {}
        if not isinstance(args, dict):
            args = {}
        return _describe(tool, args, content or "")
    except Exception:
        size = len(content) if isinstance(content, str) else 0
        return f"[{tool}] ({size:,} chars result)"


def is_placeholder(text: str) -> bool:
    return text.startswith(_PLACEHOLDER_PREFIXES)


# --------------------------------------------------------------------------------------------
# The three passes
# --------------------------------------------------------------------------------------------


def prunable_boundary(
    messages: list[dict[str, Any]],
    protect_tail_count: int,
    protect_tail_tokens: int | None,
    estimate: Callable[[dict[str, Any]], int],
) -> int:
    """Index before which rows may be pruned (context_compressor.py:1698-1720).

    Walk back from the end summing per-row budget tokens; the row that would overflow the token
    budget is still protected, once at least ``min(protect_tail_count, n)`` rows are. The count
    is a floor in either case; without a positive token budget only the count protects.
    """
    n = len(messages)
    if not (protect_tail_tokens is not None and protect_tail_tokens > 0):
        return n - protect_tail_count
    minimum = min(protect_tail_count, n)
    acc = 0
    boundary = n
    for idx in range(n - 1, -1, -1):
        tokens = estimate(messages[idx])
        if acc + tokens > protect_tail_tokens and (n - idx) >= minimum:
            boundary = idx
            break
        acc += tokens
        boundary = idx
    return n - max(n - boundary, minimum)


def _shorten_leaves(value: Any) -> Any:
    if isinstance(value, str):
        return value[:ARGS_LEAF_MAX] + ARGS_LEAF_SUFFIX if len(value) > ARGS_LEAF_MAX else value
    if isinstance(value, dict):
        return {key: _shorten_leaves(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shorten_leaves(item) for item in value]
    return value


def shorten_arguments_json(raw: str) -> str:
    """Long string leaves of a JSON arguments blob clipped, re-serialised so it stays valid JSON.

    Arguments that are not JSON come back unchanged (a provider rejects a broken blob).
    """
    try:
        parsed = json.loads(raw)
    except (ValueError, TypeError):
        return raw
    return json.dumps(_shorten_leaves(parsed), ensure_ascii=False)


def shorten_tool_call_arguments(message: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of an assistant row with large arguments blobs shortened, or None if none changed."""
    calls = message.get("tool_calls")
    if not calls:
        return None
    new_calls = []
    changed = False
    for call in calls:
        if isinstance(call, dict):
            fn = call.get("function", {})
            raw = fn.get("arguments", "") if isinstance(fn, dict) else ""
            if isinstance(raw, str) and len(raw) > ARGS_TRUNCATE_THRESHOLD:
                short = shorten_arguments_json(raw)
                if short != raw:
                    call = {**call, "function": {**fn, "arguments": short}}
                    changed = True
        new_calls.append(call)
    return {**message, "tool_calls": new_calls} if changed else None


def _strip_image_parts(parts: list[Any]) -> list[Any] | None:
    """Image parts of a tool result replaced by a text part, or None when it had none."""
    if not any(isinstance(p, dict) and p.get("type") in IMAGE_PART_TYPES for p in parts):
        return None
    return [{"type": "text", "text": SCREENSHOT_REMOVED_PART}
            if isinstance(p, dict) and p.get("type") in IMAGE_PART_TYPES else p for p in parts]


def _replacement(msg: dict[str, Any], call_map: dict[Any, tuple[str, Any]]) -> Any:
    """Pass 2's new content for an old tool result, or None to keep it."""
    content = msg.get("content", "")
    if isinstance(content, list):
        return _strip_image_parts(content)
    if isinstance(content, dict) and content.get("_multimodal"):
        text = content.get("text_summary") or SCREENSHOT_REMOVED_PART
        return f"{SCREENSHOT_REMOVED_PREFIX}{text[:200]}"
    if not isinstance(content, str) or not content or content == PRUNED_TOOL_PLACEHOLDER:
        return None
    if content.startswith("[Duplicate tool output") or len(content) <= PRUNE_MIN_CHARS:
        return None
    name, args = call_map.get(msg.get("tool_call_id", ""), ("unknown", ""))
    return summarize_tool_result(name, args, content)


def prune_old_tool_results(
    messages: list[dict[str, Any]],
    protect_tail_count: int,
    protect_tail_tokens: int | None,
    estimate: Callable[[dict[str, Any]], int],
) -> tuple[list[dict[str, Any]], int]:
    """Hermes' three-pass prune on copies of the rows; returns ``(new_list, results_pruned)``.

    The protected tail is sized on the rows as given, before duplicates are replaced
    (context_compressor.py:1698); pass 1 then marks older copies of identical large results,
    pass 2 describes old results in one line, pass 3 shortens old large arguments (not counted).
    The caller's list and rows are never mutated.
    """
    if not messages:
        return messages, 0
    result = [dict(m) for m in messages]
    pruned = 0
    call_map = build_call_map(result)
    boundary = prunable_boundary(result, protect_tail_count, protect_tail_tokens, estimate)

    seen: set[str] = set()
    for idx in range(len(result) - 1, -1, -1):
        msg = result[idx]
        content = msg.get("content") or ""
        if msg.get("role") != "tool" or not isinstance(content, str) or len(content) < DUPLICATE_MIN_CHARS:
            continue
        digest = hashlib.md5(content.encode("utf-8", errors="replace")).hexdigest()[:12]
        if digest in seen:
            result[idx] = {**msg, "content": DUPLICATE_MARKER}
            pruned += 1
        else:
            seen.add(digest)

    for idx in range(boundary):
        msg = result[idx]
        if msg.get("role") != "tool":
            continue
        new = _replacement(msg, call_map)
        if new is not None:
            result[idx] = {**msg, "content": new}
            pruned += 1

    for idx in range(boundary):
        msg = result[idx]
        if msg.get("role") == "assistant":
            shortened = shorten_tool_call_arguments(msg)
            if shortened is not None:
                result[idx] = shortened
    return result, pruned
