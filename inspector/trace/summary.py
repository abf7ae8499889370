"""Whole-session figures of a trace: the rows of the replay summary and the comparison table."""

from __future__ import annotations

from typing import Any

from inspector.trace.model import EV_COMPRESS, EV_TURN, Event, Trace

# (key, label, better) — better is "low", "high" or None (not ranked)
SUMMARY_ROWS: list[tuple[str, str, str | None]] = [
    ("requests", "provider requests", None),
    ("compressions", "compressions committed", "low"),
    ("tokens_sent", "prompt tokens sent", "low"),
    ("cache_read", "cached tokens read", "high"),
    ("cache_write", "cache tokens written", "low"),
    ("hit_rate", "cache hit rate", "high"),
    ("cost", "estimated cost (USD)", "low"),
    ("peak_prompt", "peak prompt tokens", "low"),
    ("faults", "faults", "low"),
    ("engine_seconds", "engine time (s)", "low"),
]


def is_committed_compression(ev: Event) -> bool:
    """A compress event whose result the host kept (a new message list, not "unchanged").

    Faulted, aborted and no-progress calls are not: Hermes keeps the transcript as it was.
    """
    return (
        ev.kind == EV_COMPRESS
        and isinstance(ev.result, dict)
        and "$list" in ev.result
        and not ev.result.get("unchanged")
    )


def summarise(trace: Trace) -> dict[str, Any]:
    """Totals over the whole session, computed from the requests and events only."""
    reqs = trace.requests
    sent = sum(r.usage.get("prompt_tokens", 0) for r in reqs)
    read = sum(r.usage.get("cache_read_tokens", 0) for r in reqs)
    write = sum(r.usage.get("cache_write_tokens", 0) for r in reqs)
    costs = [r.cache.cost for r in reqs if r.cache.cost is not None]
    committed = sum(1 for e in trace.events if is_committed_compression(e))
    # Summed in whole microseconds, the precision a saved trace keeps, so a trace shows the same
    # figure before and after it is saved and reopened.
    engine_time = sum(_whole_micros(e.duration) for e in trace.events) / 1_000_000
    return {
        "requests": len(reqs),
        "compressions": committed,
        "tokens_sent": sent,
        "cache_read": read,
        "cache_write": write,
        "hit_rate": (read / sent) if sent else 0.0,
        "cost": round(sum(costs), 6) if costs else None,
        "peak_prompt": max((r.usage.get("prompt_tokens", 0) for r in reqs), default=0),
        "faults": len(trace.fault_events),
        "engine_seconds": round(engine_time, 4),
        "turns": trace.turn_count,
    }


def per_turn_rows(trace: Trace) -> list[dict[str, Any]]:
    """One row per turn the trace played: the turn's last request figures, cache sums, first miss
    reason, faults. A turn without a provider call (its user message got no reply: an interrupted
    turn) has a row too, with ``reply`` False and no request figures, so the rows count what the
    progress line counted."""
    rows: dict[int, dict[str, Any]] = {
        e.turn: _blank_row(e.turn) for e in trace.events if e.kind == EV_TURN and e.turn is not None
    }
    last_request: dict[int, int] = {}
    for r in trace.requests:
        row = rows.setdefault(r.turn, _blank_row(r.turn))
        row["requests"] += 1
        row["reply"] = True
        row["prompt"] = r.tokens.get("tiktoken", 0)
        row["rough"] = r.tokens.get("rough", 0)
        row["recorded"] = (r.recorded or {}).get("prompt_tokens")
        row["cache_read"] += r.usage.get("cache_read_tokens", 0)
        row["cache_write"] += r.usage.get("cache_write_tokens", 0)
        # what the cache simulator found, beside what the provider reported (None: nothing recorded)
        row["simulated_read"] += r.cache.read
        row["simulated_write"] += r.cache.write
        if r.recorded:
            row["recorded_read"] = (row["recorded_read"] or 0) + int(r.recorded.get("cache_read_tokens") or 0)
            row["recorded_write"] = (row["recorded_write"] or 0) + int(r.recorded.get("cache_write_tokens") or 0)
        if not row["miss"] and r.cache.reason_kind not in ("hit", "disabled", ""):
            row["miss"] = r.cache.reason
        last_request[r.turn] = r.event
    # A turn's state is the one its last event left (its threshold: at its last request); the
    # state is looked up once per turn, not at each of a long session's 100,000+ events.
    last: dict[int, int] = {}
    for e in trace.events:
        if e.turn is not None and e.turn in rows:
            last[e.turn] = e.index
    for turn, k in last.items():
        row = rows[turn]
        state = trace.state_at(k)
        row["compression_count"] = state["compression_count"]
        if not row["reply"]:  # no request to read it at: as the turn left it
            row["threshold"] = state["threshold_tokens"]
    for turn, k in last_request.items():
        rows[turn]["threshold"] = trace.state_at(k)["threshold_tokens"]
    for k in trace.fault_events:
        turn = trace.events[k].turn
        if turn is not None and turn in rows:
            rows[turn]["faults"] += 1
    return [rows[k] for k in sorted(rows)]


def _blank_row(turn: int) -> dict[str, Any]:
    return {"turn": turn, "reply": False, "requests": 0, "prompt": None, "rough": None, "recorded": None,
            "threshold": None, "compression_count": None, "cache_read": 0, "cache_write": 0, "miss": "", "faults": 0,
            "simulated_read": 0, "simulated_write": 0, "recorded_read": None, "recorded_write": None}


def fault_rows(trace: Trace, limit: int | None = None) -> list[dict[str, Any]]:
    """What went wrong, where: one row per fault (event, turn, hook, kind, message), in order."""
    rows = []
    for k in trace.fault_events[:limit]:
        ev = trace.events[k]
        assert ev.fault is not None
        rows.append({"event": k, "turn": ev.turn, "hook": ev.kind, "kind": ev.fault.kind, "message": ev.fault.message,
                     "where": ev.fault.where})
    return rows


def output_rows(trace: Trace) -> list[dict[str, Any]]:
    """What the engine printed and logged, one row per hook call that wrote anything, in order."""
    return [{"event": ev.index, "turn": ev.turn, "hook": ev.kind, "output": ev.output}
            for ev in trace.events if ev.output is not None]


def _whole_micros(seconds: Any) -> int:
    try:
        return round(seconds * 1_000_000)
    except (TypeError, ValueError, OverflowError):
        return 0
