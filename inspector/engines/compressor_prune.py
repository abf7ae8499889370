"""Tool-output pruning for the built-in compressor (hermes-host.md §6.5, §6.10).

Old tool results are the cheapest context to reclaim: the model already acted on them, so a
one-line description ("ran `pytest` -> exit 1, 40 lines output") keeps the thread of the work
while dropping the bulk. Everything here is pure (no engine state) so the fallback summary can
reuse the same one-line descriptions, and subclasses that call ``_prune_old_tool_results`` see
the same behaviour as Hermes' built-in.
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
SCREENSHOT_REMOVED_PART = "[screenshot removed to save context]"
SCREENSHOT_REMOVED_PREFIX = "[screenshot removed] "
IMAGE_PART_TYPES = frozenset({"image", "image_url", "input_image"})

_PLACEHOLDER_PREFIXES = (DUPLICATE_MARKER, "[screenshot removed")

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


def _parse_json_result(content: str) -> Any:
    stripped = content.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        return json.loads(stripped)
    except (ValueError, TypeError):
        return None


def tool_call_id_of(call: dict[str, Any]) -> str:
    """Hermes identifies a call by ``call_id`` when present (Responses API), else ``id``."""
    return str(call.get("call_id") or call.get("id") or "")


def build_call_map(messages: list[dict[str, Any]]) -> dict[str, tuple[str, Any]]:
    """``tool_call_id -> (tool name, raw arguments)`` from every assistant tool call."""
    mapping: dict[str, tuple[str, Any]] = {}
    for msg in messages:
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        for call in msg.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            fn = call.get("function") or {}
            name = fn.get("name") if isinstance(fn, dict) else None
            args = fn.get("arguments") if isinstance(fn, dict) else None
            for key in {call.get("id"), call.get("call_id")}:
                if key:
                    mapping[str(key)] = (str(name or "tool"), args)
    return mapping


def _first_arg(args: dict[str, Any], *names: str, default: Any = "") -> Any:
    for name in names:
        value = args.get(name)
        if value not in (None, ""):
            return value
    return default


# --------------------------------------------------------------------------------------------
# One-line tool-result summaries (own templates, one per common Hermes tool)
# --------------------------------------------------------------------------------------------

_EXIT_RE = re.compile(r"(?i)\bexit(?:[ _]?code|[ _]?status)?\s*[:=]?\s*(-?\d+)")


def _terminal(args: dict[str, Any], content: str) -> str:
    cmd = one_line(_first_arg(args, "command", "cmd"), 80)
    data = _parse_json_result(content)
    output = content
    code: Any = "?"
    if isinstance(data, dict):
        for key in ("exit_code", "returncode", "exit_status", "status_code"):
            if isinstance(data.get(key), int):
                code = data[key]
                break
        if isinstance(data.get("output"), str):
            output = data["output"]
    if code == "?":
        match = _EXIT_RE.search(content)
        if match:
            code = int(match.group(1))
    lines = len(output.splitlines())
    return f"[terminal] ran `{cmd}` -> exit {code}, {lines} lines output"


def _read_file(args: dict[str, Any], content: str) -> str:
    path = one_line(_first_arg(args, "path", "file_path", "file", default="?"), 120)
    offset = _first_arg(args, "offset", "start_line", "line", default=1)
    return f"[read_file] read {path} from line {offset} ({len(content)} chars)"


def _write_file(args: dict[str, Any], content: str) -> str:
    path = one_line(_first_arg(args, "path", "file_path", "file", default="?"), 120)
    body = args.get("content")
    size = f"{len(body)} chars written" if isinstance(body, str) else f"{len(content)} chars result"
    return f"[write_file] wrote {path} ({size})"


def _patch(args: dict[str, Any], content: str) -> str:
    path = one_line(_first_arg(args, "path", "file_path", default="?"), 120)
    mode = one_line(_first_arg(args, "mode", default="replace"), 20)
    return f"[patch] {mode} edit of {path} ({len(content)} chars result)"


def _count_matches(data: Any, content: str) -> int:
    if isinstance(data, dict):
        for key in ("total_count", "count", "total", "num_matches"):
            if isinstance(data.get(key), int):
                return data[key]
        for key in ("matches", "results", "files"):
            if isinstance(data.get(key), list):
                return len(data[key])
    if isinstance(data, list):
        return len(data)
    return sum(1 for line in content.splitlines() if line.strip())


def _search_files(args: dict[str, Any], content: str) -> str:
    target = one_line(_first_arg(args, "target", default="content"), 20)
    pattern = one_line(_first_arg(args, "pattern", "query", "regex", default="?"), 80)
    path = one_line(_first_arg(args, "path", "directory", default="."), 100)
    count = _count_matches(_parse_json_result(content), content)
    return f"[search_files] {target} search for '{pattern}' in {path} -> {count} matches"


def _web_search(args: dict[str, Any], content: str) -> str:
    query = one_line(_first_arg(args, "query", "q", default="?"), 100)
    data = _parse_json_result(content)
    count: int
    if isinstance(data, dict) and isinstance(data.get("data"), dict):
        web = data["data"].get("web")
        count = len(web) if isinstance(web, list) else 0
    elif isinstance(data, (dict, list)):
        count = _count_matches(data, content)
    else:
        count = len(re.findall(r"https?://", content))
    return f"[web_search] searched '{query}' -> {count} results ({len(content)} chars)"


def _web_extract(args: dict[str, Any], content: str) -> str:
    urls = args.get("urls")
    if not isinstance(urls, list):
        single = _first_arg(args, "url", default="")
        urls = [single] if single else []
    shown = one_line(", ".join(str(u) for u in urls), 120) or "?"
    return f"[web_extract] extracted {len(urls)} page(s): {shown} ({len(content)} chars)"


def _browser_navigate(args: dict[str, Any], content: str) -> str:
    url = one_line(_first_arg(args, "url", default="?"), 120)
    return f"[browser_navigate] opened {url} ({len(content)} chars page snapshot)"


def _browser_snapshot(args: dict[str, Any], content: str) -> str:
    mode = "full" if args.get("full") else "compact"
    return f"[browser_snapshot] {mode} page snapshot ({len(content)} chars)"


def _browser_click(args: dict[str, Any], content: str) -> str:
    ref = one_line(_first_arg(args, "ref", "selector", "element", default="?"), 60)
    return f"[browser_click] clicked {ref} ({len(content)} chars result)"


def _browser_type(args: dict[str, Any], content: str) -> str:
    ref = one_line(_first_arg(args, "ref", "selector", "element", default="?"), 60)
    text = args.get("text")
    typed = f"{len(text)} chars" if isinstance(text, str) else "text"
    return f"[browser_type] typed {typed} into {ref} ({len(content)} chars result)"


def _browser_vision(args: dict[str, Any], content: str) -> str:
    question = one_line(_first_arg(args, "question", "prompt", default="page"), 80)
    return f"[browser_vision] looked at the page for '{question}' ({len(content)} chars)"


def _execute_code(args: dict[str, Any], content: str) -> str:
    code = _first_arg(args, "code", "source", default="")
    lines = len(str(code).splitlines())
    return f"[execute_code] ran {lines} lines of code -> {len(content)} chars output"


def _delegate_task(args: dict[str, Any], content: str) -> str:
    goal = one_line(_first_arg(args, "goal", "task", "prompt", default="?"), 80)
    return f"[delegate_task] delegated '{goal}' -> {len(content)} chars report"


def _vision_analyze(args: dict[str, Any], content: str) -> str:
    image = one_line(_first_arg(args, "image_url", "image", "path", default="?"), 100)
    return f"[vision_analyze] analysed {image} ({len(content)} chars)"


def _process(args: dict[str, Any], content: str) -> str:
    action = one_line(_first_arg(args, "action", default="?"), 20)
    session = one_line(_first_arg(args, "session_id", "pid", default=""), 40)
    return f"[process] {action} {session} ({len(content)} chars)".replace("  ", " ")


def _skill_view(args: dict[str, Any], content: str) -> str:
    name = one_line(_first_arg(args, "name", "skill", default="?"), 60)
    return f"[skill_view] loaded skill {name} ({len(content)} chars)"


def _memory(args: dict[str, Any], content: str) -> str:
    action = one_line(_first_arg(args, "action", default="?"), 20)
    target = one_line(_first_arg(args, "target", default=""), 20)
    return f"[memory] {action} {target} ({len(content)} chars result)".replace("  ", " ")


def _todo(args: dict[str, Any], content: str) -> str:
    todos = args.get("todos")
    items = f"{len(todos)} items" if isinstance(todos, list) else "read"
    return f"[todo] todo list {items} ({len(content)} chars)"


def _session_search(args: dict[str, Any], content: str) -> str:
    query = one_line(_first_arg(args, "query", default="?"), 80)
    return f"[session_search] searched past sessions for '{query}' ({len(content)} chars)"


def _generic(name: str, args: dict[str, Any], content: str) -> str:
    pairs = []
    for key, value in list(args.items())[:4]:
        shown = value if isinstance(value, (str, int, float, bool)) else json.dumps(value, ensure_ascii=False)
        pairs.append(f"{key}={one_line(shown, 40)}")
    joined = (" " + " ".join(pairs)) if pairs else ""
    return f"[{name}]{joined} ({len(content)} chars result)"


_TEMPLATES: dict[str, Callable[[dict[str, Any], str], str]] = {
    "terminal": _terminal,
    "read_file": _read_file,
    "write_file": _write_file,
    "patch": _patch,
    "search_files": _search_files,
    "web_search": _web_search,
    "web_extract": _web_extract,
    "browser_navigate": _browser_navigate,
    "browser_snapshot": _browser_snapshot,
    "browser_click": _browser_click,
    "browser_type": _browser_type,
    "browser_vision": _browser_vision,
    "execute_code": _execute_code,
    "delegate_task": _delegate_task,
    "vision_analyze": _vision_analyze,
    "process": _process,
    "skill_view": _skill_view,
    "memory": _memory,
    "todo": _todo,
    "session_search": _session_search,
}


def summarize_tool_result(name: str | None, raw_args: Any, content: str) -> str:
    """One line describing a tool result: what was run, on what, and how big the result was."""
    tool = str(name or "tool")
    args = parse_args(raw_args)
    template = _TEMPLATES.get(tool)
    try:
        if template is not None:
            line = template(args, content)
        else:
            line = _generic(tool, args, content)
    except Exception:  # a template must never break compaction
        line = _generic(tool, {}, content)
    return one_line(line, 300)


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
    """Index before which rows may be pruned.

    Walk back from the end summing per-row budget tokens; stop once the next row would exceed
    the token budget *and* at least ``min(protect_tail_count, n)`` rows are protected. Without a
    token budget only the row count protects.
    """
    n = len(messages)
    minimum = max(0, min(int(protect_tail_count or 0), n))
    if protect_tail_tokens is None:
        return n - minimum
    acc = 0
    count = 0
    for idx in range(n - 1, -1, -1):
        tokens = estimate(messages[idx])
        if acc + tokens > protect_tail_tokens and count >= minimum:
            break
        acc += tokens
        count += 1
    return n - max(count, minimum)


def _shorten_leaves(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str):
        if len(value) > ARGS_LEAF_MAX:
            return value[:ARGS_LEAF_MAX] + ARGS_LEAF_SUFFIX, True
        return value, False
    if isinstance(value, list):
        changed = False
        out = []
        for item in value:
            new, ch = _shorten_leaves(item)
            out.append(new)
            changed = changed or ch
        return out, changed
    if isinstance(value, dict):
        changed = False
        out_d = {}
        for key, item in value.items():
            new, ch = _shorten_leaves(item)
            out_d[key] = new
            changed = changed or ch
        return out_d, changed
    return value, False


def shorten_tool_call_arguments(message: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of an assistant row with long JSON arguments' string leaves clipped, or None."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return None
    new_calls = []
    changed = False
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        raw = fn.get("arguments") if isinstance(fn, dict) else None
        if isinstance(raw, str) and len(raw) > ARGS_TRUNCATE_THRESHOLD:
            try:
                parsed = json.loads(raw)
            except (ValueError, TypeError):
                new_calls.append(call)
                continue
            short, ch = _shorten_leaves(parsed)
            if ch:
                new_fn = dict(fn)
                new_fn["arguments"] = json.dumps(short, ensure_ascii=False)
                new_call = dict(call)
                new_call["function"] = new_fn
                new_calls.append(new_call)
                changed = True
                continue
        new_calls.append(call)
    if not changed:
        return None
    out = dict(message)
    out["tool_calls"] = new_calls
    return out


def _strip_images_from_tool_content(content: Any) -> Any:
    """Pass-2 image handling; returns the new content or the same object if nothing applies."""
    if isinstance(content, list):
        if not any(isinstance(p, dict) and p.get("type") in IMAGE_PART_TYPES for p in content):
            return content
        return [
            {"type": "text", "text": SCREENSHOT_REMOVED_PART}
            if isinstance(p, dict) and p.get("type") in IMAGE_PART_TYPES
            else p
            for p in content
        ]
    if isinstance(content, dict) and content.get("_multimodal"):
        summary = str(content.get("text_summary") or "")
        return SCREENSHOT_REMOVED_PREFIX + summary[:200]
    return content


def prune_old_tool_results(
    messages: list[dict[str, Any]],
    protect_tail_count: int,
    protect_tail_tokens: int | None,
    estimate: Callable[[dict[str, Any]], int],
) -> tuple[list[dict[str, Any]], int]:
    """Hermes' three-pass prune on a shallow copy; returns ``(new_list, rows_changed)``.

    Rows that are not changed are the very same dicts as in the input; changed rows are new
    dicts, so the caller's list is never mutated.
    """
    result = list(messages)
    n = len(result)
    if n == 0:
        return result, 0
    changed_rows: set[int] = set()
    call_map = build_call_map(result)

    # Pass 1 — identical large tool outputs: keep the newest, mark the older copies.
    seen: set[str] = set()
    for idx in range(n - 1, -1, -1):
        msg = result[idx]
        if not isinstance(msg, dict) or msg.get("role") != "tool":
            continue
        content = msg.get("content")
        if not isinstance(content, str) or len(content) < DUPLICATE_MIN_CHARS or is_placeholder(content):
            continue
        digest = hashlib.md5(content.encode("utf-8", "surrogatepass")).hexdigest()
        if digest in seen:
            new = dict(msg)
            new["content"] = DUPLICATE_MARKER
            result[idx] = new
            changed_rows.add(idx)
        else:
            seen.add(digest)

    boundary = prunable_boundary(result, protect_tail_count, protect_tail_tokens, estimate)

    # Pass 2 — old tool results: screenshots out, long text down to one line.
    for idx in range(boundary):
        msg = result[idx]
        if not isinstance(msg, dict) or msg.get("role") != "tool":
            continue
        content = msg.get("content")
        stripped = _strip_images_from_tool_content(content)
        if stripped is not content:
            new = dict(msg)
            new["content"] = stripped
            result[idx] = new
            changed_rows.add(idx)
            continue
        if isinstance(content, str) and len(content) > PRUNE_MIN_CHARS and not is_placeholder(content):
            tool_id = str(msg.get("tool_call_id") or "")
            name, args = call_map.get(tool_id, (msg.get("name") or msg.get("tool_name") or "tool", None))
            line = summarize_tool_result(name, args, content)
            if len(line) < len(content):
                new = dict(msg)
                new["content"] = line
                result[idx] = new
                changed_rows.add(idx)

    # Pass 3 — old assistant rows: clip long string leaves inside large JSON arguments.
    for idx in range(boundary):
        msg = result[idx]
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        shortened = shorten_tool_call_arguments(msg)
        if shortened is not None:
            result[idx] = shortened
            changed_rows.add(idx)

    return result, len(changed_rows)
