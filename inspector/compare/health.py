"""How healthy a run was: what the host had to repair, the compress calls that did nothing, the
requests over the window, the faults (Qt-free).

The comparison's table marks the best value of each row; a run that only looks cheap because the
host repaired what it sent (orphan tool results dropped, stub results added: Hermes' sanitiser
before every call, run_agent.py:3848 of hermes-agent 0.19.0) or because it overflowed the window
must not get the star. :func:`eligible` says which runs may, and :func:`best_marks` is the ★ rule
the window's Runs table and the HTML report both show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inspector.trace import model as tm
from inspector.trace.model import Trace
from inspector.trace.summary import is_committed_compression

if TYPE_CHECKING:
    from inspector.compare.table import SummaryTable

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


def best_marks(table: SummaryTable, health: list[dict[str, Any] | None]) -> dict[str, list[bool]]:
    """Per summary row key, which runs get the ★.

    The table's own marks (:mod:`inspector.compare.table`: the fewest faults; cost among the
    runs that retain the most facts) are kept where the run is eligible; where a marked run is
    not (it needed repairs or overflowed), the best eligible run gets the ★ instead. The faults
    row ranks every run free of repairs and overflows.
    """
    from inspector.compare.table import RETENTION_KEY, mark_best

    ok = eligible(health)
    sound = eligible(health, ignore_faults=True)
    kept = next((row.values for row in table.rows if row.key == RETENTION_KEY), None)
    out: dict[str, list[bool]] = {}
    for row in table.rows:
        usable = sound if row.key == "faults" else ok
        marks = [bool(row.best and row.best[i]) and usable[i] for i in range(len(row.values))]
        if not any(marks) and any(row.best or ()):
            ranked = [v if usable[i] else None for i, v in enumerate(row.values)]
            if row.key == "cost" and kept is not None:
                ranked = _among_best_kept(ranked, kept, ok)
            marks = mark_best(ranked, row.better)
        out[row.key] = marks
    return out


def _among_best_kept(ranked: list[Any], kept: list[Any], usable: list[bool]) -> list[Any]:
    """``ranked`` left only for the usable runs that retain as many facts as the best usable run."""
    best = max((v for i, v in enumerate(kept) if usable[i] and isinstance(v, int | float)), default=None)
    if best is None:
        return ranked
    return [v if isinstance(kept[i], int | float) and abs(kept[i] - best) <= 1e-9 else None
            for i, v in enumerate(ranked)]
