"""How healthy a run was: what the host had to repair, the compress calls that did nothing, the
requests over the window, the faults (Qt-free).

The comparison's table marks the best value of each row; a run that only looks cheap because the
host repaired what it sent (orphan tool results dropped, stub results added: Hermes' sanitiser
before every call, run_agent.py:3848 of hermes-agent 0.19.0) or because it overflowed the window must not get
the star. :func:`eligible` says which runs may.
"""

from __future__ import annotations

from typing import Any

from inspector.trace import model as tm
from inspector.trace.model import Trace
from inspector.trace.summary import is_committed_compression

HEALTH_ROWS: tuple[tuple[str, str, str], ...] = (
    ("host_repairs", "host repairs", "requests the host's sanitiser had to repair before sending"),
    ("orphan_fixes", "orphan fixes", "requests where the sanitiser dropped an orphan tool result or added a "
                                     "stub result for a call without one"),
    ("no_progress", "no-progress compresses", "compress calls whose result the host kept nothing of"),
    ("overflows", "overflows", "requests over the model's window (the provider would reject them)"),
    ("faults", "faults", "faults the engine (or the host around it) raised"),
)
# any of these makes a run ineligible for a best value
_DISQUALIFYING = ("host_repairs", "orphan_fixes", "overflows")


def run_health(trace: Trace) -> dict[str, int]:
    """The figures of :data:`HEALTH_ROWS` for one run."""
    repairs = orphans = overflows = 0
    lists, messages = trace.store.lists, trace.store.messages
    for req in trace.requests:
        if req.selected != req.assembled and not req.selected_by_engine:
            repairs += 1
            before, after = set(lists[req.assembled]), set(lists[req.selected])
            dropped_tool = any(messages.get(k, {}).get("role") == "tool" for k in before - after)
            if dropped_tool or (after - before):
                orphans += 1
        window = trace.state_at(req.event)["context_length"]
        sent = req.tokens.get("tiktoken")
        if window and isinstance(sent, int) and sent > window:
            overflows += 1
    no_progress = sum(1 for ev in trace.events if ev.kind == tm.EV_COMPRESS and ev.fault is None
                      and not is_committed_compression(ev))
    return {"host_repairs": repairs, "orphan_fixes": orphans, "no_progress": no_progress, "overflows": overflows,
            "faults": len(trace.fault_events)}


def eligible(health: list[dict[str, Any] | None], *, ignore_faults: bool = False) -> list[bool]:
    """Which runs may hold a best value: no repairs, no overflows, and (unless ``ignore_faults``,
    for ranking the faults themselves) the fewest faults."""
    faults = [h["faults"] for h in health if h is not None]
    fewest = min(faults, default=0)
    return [h is not None and (ignore_faults or h["faults"] == fewest) and not any(h[k] for k in _DISQUALIFYING)
            for h in health]
