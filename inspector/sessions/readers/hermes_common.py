"""What Hermes' state.db rows and its exports share: row → message, and compaction structure.

Hermes persists each message as a row (``hermes_state.py``); the export writes the same rows as
JSON. Both go through :func:`map_row`. :func:`mark_compactions` then finds where the original
agent compacted: summary rows, and the head/tail *copies* compaction re-inserted (they repeat
earlier messages and must not be replayed as new input).

Flags set here (``x_flags``): ``archived`` (row summarised away by in-place compaction, still
real history), ``inactive`` + ``rewound`` (undone by ``/rewind``/``/undo``: not part of the
conversation), ``compaction_summary``, ``synthetic`` + ``compaction_copy`` (re-inserted copies),
``meta`` + ``observed``/``harness`` (not user input), ``pruned`` (tool output cleared by Hermes).
"""

from __future__ import annotations

import json
from typing import Any

from inspector.sessions.common import (
    PRUNED_TOOL_PLACEHOLDER,
    flag,
    flags_of,
    is_hermes_summary,
    normalize_tool_calls,
    origin,
    parse_timestamp,
)
from inspector.sessions.model import Compaction, Turn, is_replayable, message_text

JSON_PREFIX = "\x00json:"
HARNESS_PREFIXES = ("review the conversation above",)
MAX_COPY_SPAN = 64  # protect_first_n / protect_last_n are far below this in practice
SKIPPED_ROLES = ("session_meta", "system")


def decode_content(value: Any, where: str, warnings: list[str]) -> Any:
    """Row content: text, or the list/dict Hermes stored after the ``"\\x00json:"`` prefix."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str) and value.startswith(JSON_PREFIX):
        try:
            decoded = json.loads(value[len(JSON_PREFIX) :])
        except (ValueError, RecursionError):
            warnings.append(f"{where}: multimodal content is not valid JSON; kept as text")
            return value[len(JSON_PREFIX) :]
        if isinstance(decoded, (list, str)) or decoded is None:
            return decoded
        return [decoded] if isinstance(decoded, dict) else str(decoded)
    if value is None or isinstance(value, (str, list)):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value)


def _json_field(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def map_row(row: dict[str, Any], *, file: str, where: str, warnings: list[str], rowid: Any = None, line: int | None = None) -> dict[str, Any] | None:
    """One Hermes message row (DB or export) as a Session message; None for skipped roles."""
    role = row.get("role")
    if role in SKIPPED_ROLES:
        return None
    if role not in ("user", "assistant", "tool"):
        warnings.append(f"{where}: skipped, unknown role {role!r}")
        return None
    content = decode_content(row.get("content"), where, warnings)
    msg: dict[str, Any] = {"role": role, "content": content}
    text = message_text(msg)
    if role == "assistant":
        raw_calls = _json_field(row.get("tool_calls"))
        if isinstance(row.get("tool_calls"), str) and isinstance(raw_calls, str):
            warnings.append(f"{where}: tool_calls is not valid JSON; kept aside as text")
            msg["x_tool_calls_raw"] = raw_calls
            raw_calls = None
        calls, extras = normalize_tool_calls(raw_calls, where, warnings)
        if calls:
            msg["tool_calls"] = calls
            if any(extras):
                msg["x_tool_call_extras"] = extras
        reasoning = row.get("reasoning")
        if not isinstance(reasoning, str) or not reasoning.strip():
            rc = row.get("reasoning_content")
            reasoning = rc if isinstance(rc, str) and rc.strip() else None
        if reasoning:
            msg["x_reasoning"] = reasoning
        opaque = {
            k: _json_field(row[k])
            for k in ("reasoning_details", "codex_reasoning_items", "codex_message_items", "reasoning_content")
            if row.get(k) not in (None, "")
        }
        if opaque:
            msg["x_reasoning_opaque"] = opaque
        if row.get("finish_reason"):
            msg["x_finish_reason"] = row["finish_reason"]
    elif role == "tool":
        if row.get("tool_call_id") is not None:
            msg["tool_call_id"] = str(row["tool_call_id"])
        if row.get("tool_name"):
            msg["name"] = str(row["tool_name"])
        if text.strip() == PRUNED_TOOL_PLACEHOLDER:
            flag(msg, pruned=True)
    api_content = row.get("api_content")
    if isinstance(api_content, bytes):
        api_content = api_content.decode("utf-8", errors="replace")
    if api_content is not None and api_content != row.get("content"):
        msg["api_content"] = decode_content(api_content, where, warnings)
    ts = parse_timestamp(row.get("timestamp"))
    if ts is not None:
        msg["x_timestamp"] = ts
    if role in ("user", "assistant") and is_hermes_summary(text):
        flag(msg, compaction_summary=True)
    if role == "user":
        if row.get("observed"):
            flag(msg, meta=True, observed=True)
        if text.lstrip().lower().startswith(HARNESS_PREFIXES):
            flag(msg, meta=True, harness=True)
    active = row.get("active", 1)
    compacted = row.get("compacted", 0)
    if active is not None and not active:
        if compacted:
            flag(msg, archived=True)
        else:
            flag(msg, inactive=True, rewound=True)
    extra = {k: row[k] for k in ("platform_message_id", "effect_disposition", "token_count") if row.get(k) is not None}
    if extra:
        msg["x_hermes"] = extra
    msg["x_origin"] = origin(file, rowid=rowid, line=line)
    return msg


def mark_harness_replies(messages: list[dict[str, Any]]) -> None:
    """The curator reply after a background-review prompt is not conversation either."""
    for i, msg in enumerate(messages[:-1]):
        if flags_of(msg).get("harness") and messages[i + 1].get("role") == "assistant":
            flag(messages[i + 1], meta=True, harness=True)


def mark_turn_ends(messages: list[dict[str, Any]], turns: list[Turn]) -> None:
    """A turn has ended when its last real message is a reply the model finished with ``stop``.

    Hermes writes whole rows, one per message, so the only open question for a session still
    being written is whether more calls follow: ``tool_calls`` leaves the turn open, and so, to
    be safe, does any reason other than ``stop`` (a truncated ``length`` reply may be continued)
    or none at all. Rows appended later that a replay skips (the background review and its
    reply, compaction copies) do not reopen it.
    """
    for turn in turns:
        last = next((messages[i] for i in range(turn.end - 1, turn.start - 1, -1) if is_replayable(messages[i])), None)
        turn.ended = (last is not None and last.get("role") == "assistant" and not last.get("tool_calls")
                      and last.get("x_finish_reason") == "stop")


def _sig(msg: dict[str, Any]) -> tuple[Any, ...]:
    calls = tuple((c.get("id"), c["function"].get("name"), c["function"].get("arguments")) for c in msg.get("tool_calls") or ())
    content = msg.get("content")
    if not isinstance(content, str):
        content = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    return (msg.get("role"), content, msg.get("tool_call_id"), calls)


def _match(sigs: list[tuple[Any, ...]], a: int, b: int, n: int) -> bool:
    return all(sigs[a + j] == sigs[b + j] for j in range(n))


def mark_compactions(messages: list[dict[str, Any]], segment_starts: list[int] | None = None) -> list[Compaction]:
    """Find compactions in rows ordered by id and flag the copies each one re-inserted.

    ``segment_starts`` are indices where a rotated child session begins (its first rows are
    the compacted list). Rewound rows are ignored: compaction only ever saw live rows.
    """
    live = [i for i, m in enumerate(messages) if not flags_of(m).get("rewound")]
    sigs = [_sig(messages[i]) for i in live]
    pos = {idx: k for k, idx in enumerate(live)}
    summaries = [k for k, i in enumerate(live) if flags_of(messages[i]).get("compaction_summary")]
    starts = {pos[s] for s in segment_starts or () if s in pos}
    last_archived = max((k for k, i in enumerate(live) if flags_of(messages[i]).get("archived")), default=None)
    transition = None
    if last_archived is not None and last_archived + 1 < len(live):
        transition = last_archived + 1
    events: list[tuple[int, str]] = [(k, "summary") for k in summaries] + [(k, "segment") for k in starts]
    if transition is not None:
        events.append((transition, "transition"))
    events.sort()
    compactions: list[Compaction] = []
    context_start = 0
    covered_until = -1
    for k, kind in events:
        if k <= covered_until and kind != "segment":
            continue
        if kind == "summary":
            # Head copies sit right before the summary and repeat the context's first rows.
            h = 0
            for cand in range(min(MAX_COPY_SPAN, (k - context_start) // 2), 0, -1):
                if _match(sigs, k - cand, context_start, cand):
                    h = cand
                    break
            begin, summary_at = k - h, k
        else:
            begin = k
            h = 0
            for cand in range(min(MAX_COPY_SPAN, k - context_start, len(live) - k), 0, -1):
                if _match(sigs, k, context_start, cand):
                    h = cand
                    break
            summary_at = k + h if k + h < len(live) and (k + h) in summaries else None
        tail_from = (summary_at + 1) if summary_at is not None else begin + h
        t = 0
        for cand in range(min(MAX_COPY_SPAN, begin - context_start - h, len(live) - tail_from), 0, -1):
            if cand > 0 and _match(sigs, tail_from, begin - cand, cand):
                t = cand
                break
        for j in list(range(begin, begin + h)) + list(range(tail_from, tail_from + t)):
            flag(messages[live[j]], synthetic=True, compaction_copy=True)
        summary_msg = messages[live[summary_at]] if summary_at is not None else None
        compactions.append(
            Compaction(
                message_index=live[begin],
                kind="hermes-rotation" if kind == "segment" else "hermes-summary",
                summary=message_text(summary_msg) if summary_msg is not None else None,
                timestamp=(summary_msg or messages[live[begin]]).get("x_timestamp"),
            )
        )
        context_start = begin
        covered_until = tail_from + t - 1
    return compactions
