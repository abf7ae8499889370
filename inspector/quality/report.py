"""Retention in words and per turn: what the command line, the report and the window show.

One place formats a retention figure and names lost facts, so ``replay``, ``compare``, the HTML
report and the window say the same thing the same way.
"""

from __future__ import annotations

from typing import Any, TextIO

from inspector.quality.analysis import Analysis, analyse
from inspector.trace.model import Trace

LOST_SHOWN = 8  # lost facts named per run on the command line (--json and the window list all)


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def per_turn(trace: Trace, analysis: Analysis) -> dict[int, list[float]]:
    """Turn → the retention of each compaction committed in that turn (in order)."""
    out: dict[int, list[float]] = {}
    for point in analysis.retention.compactions:
        if point.event is None or not (0 <= point.event < len(trace.events)):
            continue
        turn = trace.events[point.event].turn
        if turn is not None:
            out.setdefault(turn, []).append(point.retention)
    return out


def turn_cell(values: list[float] | None) -> str | None:
    """A per-turn table cell: the compactions' retention figures, or None (no compaction that turn)."""
    if not values:
        return None
    return " ".join(percent(v) for v in values)


def run_line(label: str, analysis: Analysis) -> str:
    """``compressor: 74.5% of 776 facts retained (576 carried, 2 only in a summary, 198 lost)``."""
    end = analysis.retention.end
    c = end.counts()
    parts = [f"{c['carried']:,} carried", f"{c['summary']:,} only in a summary"]
    if c["recoverable"]:
        parts.append(f"{c['recoverable']:,} recoverable by tools")
    parts.append(f"{c['lost']:,} lost")
    per = ", ".join(percent(p.retention) for p in analysis.retention.compactions)
    comp = f"; per compaction {per}" if per else "; no compaction"
    if not end.total:
        return f"{label}: 100% retained (nothing left the context){comp}"
    return f"{label}: {percent(end.retention)} of {end.total:,} facts retained ({', '.join(parts)}){comp}"


def print_retention(traces: list[Trace], names: list[str], out: TextIO, *, shown: int = LOST_SHOWN) -> None:
    """Each run's retention and the first lost facts, with the message they came from."""
    out.write("\nfacts retained (at the last request, of the facts of every message no longer sent):\n")
    for name, trace in zip(names, traces):
        analysis = analyse(trace)
        out.write(f"  {run_line(name, analysis)}\n")
        lost = analysis.lost_facts()
        for f in lost[:shown]:
            text = " ".join(f.fact.text.split())
            out.write(f"    lost {f.fact.kind}: {text[:100]!r} (message {f.fact.origin})\n")
        if len(lost) > shown:
            out.write(f"    … and {len(lost) - shown:,} more lost (replay --json: runs[].quality.lost)\n")


def quality_json(trace: Trace) -> dict[str, Any]:
    return analyse(trace).summary_json()
