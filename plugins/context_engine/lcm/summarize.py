"""Summary text for DAG nodes: an auxiliary LLM when one is configured, a deterministic digest when not.

The fallback is not a degraded afterthought: replays run offline by default, so it is what most
traces will show. It has one hard property the engine relies on: its output is bounded by a
fraction of its input, so every compaction shrinks the context and repeated compactions converge.
An LLM answer that is not shorter than its sources is rejected for the same reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .layout import message_text

_WS = re.compile(r"\s+")
_WORD = re.compile(r"[A-Za-z0-9_./-]{3,}")

MAX_RENDERED_BODY = 4000


def collapse(text: str, limit: int) -> str:
    """Whitespace-collapsed prefix of ``text`` with an ellipsis when cut."""
    flat = _WS.sub(" ", text or "").strip()
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)].rstrip() + "…"


def _call_brief(call: dict[str, Any], limit: int = 90) -> str:
    fn = call.get("function", {}) if isinstance(call, dict) else {}
    name = fn.get("name", "?") if isinstance(fn, dict) else "?"
    raw = fn.get("arguments", "") if isinstance(fn, dict) else ""
    try:
        args = json.loads(raw) if isinstance(raw, str) and raw else (raw or {})
    except ValueError:
        args = {"args": raw}
    if isinstance(args, dict):
        inner = ", ".join(f"{k}={collapse(str(v), 40)}" for k, v in list(args.items())[:4])
    else:
        inner = collapse(str(args), 60)
    return collapse(f"{name}({inner})", limit)


def focus_terms(focus_topic: str | None) -> list[str]:
    return [w.lower() for w in _WORD.findall(focus_topic or "")]


def render_for_llm(messages: list[dict[str, Any]]) -> str:
    """Transcript text handed to the summariser: roles, calls and (bounded) bodies."""
    blocks = []
    for msg in messages:
        role = str(msg.get("role", "?")).upper()
        body = message_text({"content": msg.get("content")})
        if len(body) > MAX_RENDERED_BODY:
            body = body[:3000] + "\n…[truncated]…\n" + body[-800:]
        if role == "TOOL":
            blocks.append(f"[TOOL RESULT {msg.get('tool_call_id', '')}]: {body}")
            continue
        text = f"[{role}]: {body}"
        calls = msg.get("tool_calls") or []
        if calls:
            text += "\n[Tool calls: " + "; ".join(_call_brief(c, 300) for c in calls) + "]"
        blocks.append(text)
    return "\n\n".join(blocks)


def _tool_names(messages: list[dict[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for msg in messages:
        for call in msg.get("tool_calls") or []:
            if isinstance(call, dict):
                fn = call.get("function") or {}
                names[str(call.get("id", ""))] = str(fn.get("name", "tool")) if isinstance(fn, dict) else "tool"
    return names


def fallback_leaf(messages: list[dict[str, Any]], focus_topic: str | None, budget_chars: int) -> str:
    """One line per message, focus matches first and longer, capped at ``budget_chars``."""
    terms = focus_terms(focus_topic)
    names = _tool_names(messages)
    focused: list[str] = []
    lines: list[str] = []
    for msg in messages:
        role = msg.get("role")
        text = message_text({"content": msg.get("content")})
        hit = bool(terms) and any(t in text.lower() for t in terms)
        width = 400 if hit else 160
        if role == "user":
            line = f"- User: {collapse(text, width)}"
        elif role == "assistant":
            calls = msg.get("tool_calls") or []
            said = collapse(text, width) if text.strip() else ""
            if calls:
                called = "; ".join(_call_brief(c) for c in calls)
                line = f"- Assistant: {said} → called {called}" if said else f"- Assistant called {called}"
            else:
                line = f"- Assistant: {said}"
        elif role == "tool":
            first = collapse(text.strip().splitlines()[0] if text.strip() else "(empty)", 100 if not hit else 300)
            n_lines = text.count("\n") + 1 if text else 0
            line = f"- {names.get(str(msg.get('tool_call_id', '')), 'tool')} result: {first} ({n_lines} lines, {len(text)} chars)"
        else:
            line = f"- {role}: {collapse(text, width)}"
        (focused if hit else lines).append(line)
    header = f"Focus: {collapse(focus_topic or '', 160)}\n" if terms else ""
    return _fit(header, focused + lines, budget_chars, len(messages))


def fallback_condensed(children: list[tuple[str, str]], focus_topic: str | None, budget_chars: int) -> str:
    """Merge child summaries: each child keeps its first lines, in proportion to the budget."""
    terms = focus_terms(focus_topic)
    share = max(120, budget_chars // max(1, len(children)))
    lines: list[str] = []
    for node_id, summary in children:
        body = [ln for ln in summary.splitlines() if ln.strip() and not ln.startswith("Focus:")]
        if terms:
            body.sort(key=lambda ln: 0 if any(t in ln.lower() for t in terms) else 1)
        taken, used = [], 0
        for ln in body:
            ln = collapse(ln, 200)
            if used + len(ln) + 1 > share - len(node_id) - 4:
                break
            taken.append(ln)
            used += len(ln) + 1
        lines.append(f"[{node_id}]")
        lines.extend("  " + ln for ln in taken)
    header = f"Focus: {collapse(focus_topic or '', 160)}\n" if terms else ""
    return _fit(header, lines, budget_chars, len(lines))


def _fit(header: str, lines: list[str], budget_chars: int, total: int) -> str:
    out = header
    kept = 0
    for ln in lines:
        if len(out) + len(ln) + 1 > budget_chars:
            break
        out += ln + "\n"
        kept += 1
    if kept < len(lines):
        out += f"(… {len(lines) - kept} more lines omitted; expand the node for the originals)\n"
    return out.rstrip("\n")


LLM_SYSTEM = (
    "You compress part of a coding-agent conversation into a dense, factual summary that another "
    "instance of the agent will rely on. Keep file paths, function names, commands, error messages, "
    "decisions and open problems. Do not add commentary. Write plain text, at most {target} words."
)


def llm_summary(
    call_llm: Callable[..., Any] | None,
    source_text: str,
    *,
    level: int,
    focus_topic: str | None,
    target_tokens: int,
) -> str | None:
    """Ask the auxiliary model for a summary; None means "use the fallback".

    Exceptions propagate to the caller, which decides whether to keep trying for the rest of
    the compaction (a missing provider will not appear mid-call).
    """
    if call_llm is None:
        return None
    what = "conversation span" if level == 0 else "set of earlier summaries (merge them into one)"
    user = f"Summarise this {what}.\n"
    if focus_topic:
        user += f"Give priority to anything about: {focus_topic}\n"
    user += "\n---\n" + source_text
    response = call_llm(
        task="compression",
        messages=[
            {"role": "system", "content": LLM_SYSTEM.format(target=max(60, int(target_tokens * 0.75)))},
            {"role": "user", "content": user},
        ],
        max_tokens=max(256, target_tokens),
    )
    text = _content_of(response)
    if not text or not text.strip():
        return None
    return text.strip()


def _content_of(response: Any) -> str | None:
    """``response.choices[0].message.content`` across the shapes Hermes adapters return."""
    try:
        choices = response["choices"] if isinstance(response, dict) else response.choices
        first = choices[0]
        message = first["message"] if isinstance(first, dict) else first.message
        content = message.get("content") if isinstance(message, dict) else message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        return None
    if isinstance(content, list):
        content = "\n".join(
            p.get("text", "") if isinstance(p, dict) else str(p) for p in content
        )
    return content if isinstance(content, str) else (None if content is None else str(content))
