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
        for line in probe_lines(analysis):
            out.write(f"    {line}\n")
        lost = analysis.lost_facts()
        for f in lost[:shown]:
            text = " ".join(f.fact.text.split())
            out.write(f"    lost {f.fact.kind}: {text[:100]!r} (message {f.fact.origin})\n")
        if len(lost) > shown:
            out.write(f"    … and {len(lost) - shown:,} more lost (replay --json: runs[].quality.lost)\n")


def quality_json(trace: Trace) -> dict[str, Any]:
    return analyse(trace).summary_json()


# -- the probe options of ``replay`` and ``compare`` -------------------------------------------


def add_probe_arguments(parser: Any) -> None:
    """``--probe-tools`` and ``--probe-questions N`` (one definition for both commands)."""
    parser.add_argument("--probe-tools", action="store_true",
                        help="at the end of each run, look lost facts up with the engine's declared read-only "
                             "retrieval tools (inspector.probe_tools)")
    parser.add_argument("--probe-questions", type=int, default=0, metavar="N",
                        help="ask N questions made from the facts against the last request, with the "
                             "auxiliary.compression model, and grade the answers (cached on disk)")


def apply_probe_options(args: Any, config: dict[str, Any]) -> None:
    """``--probe-tools`` is a setting the replay reads (it needs the live engine)."""
    if getattr(args, "probe_tools", False):
        config.setdefault("inspector", {})["probe_tools"] = True


def run_graded_probes(args: Any, traces: list[Trace], config: dict[str, Any], err: TextIO) -> None:
    """``--probe-questions``: ask and grade after the runs; offline, one note says they were skipped."""
    n = int(getattr(args, "probe_questions", 0) or 0)
    if n <= 0:
        return
    from inspector.quality.probes import grade_questions

    for trace in traces:
        report = grade_questions(trace, config, n)
        if report.get("note"):
            err.write(f"note: {report['note']}\n")
            break


def probe_lines(analysis: Analysis) -> list[str]:
    """What the probes found, in words (nothing when none ran)."""
    out = []
    tools = analysis.probes.get("tools")
    if tools and tools.get("declared"):  # an engine that declares no retrieval tool has nothing to say
        if tools.get("used"):
            out.append(f"retrieval tools {', '.join(tools['used'])}: {tools['recoverable']:,} lost facts recoverable "
                       f"({tools['calls']:,} dry-run calls)")
        else:
            out.append(f"retrieval tools: {tools.get('note', 'none')}")
    graded = analysis.probes.get("graded")
    if graded and graded.get("asked"):
        out.append(f"graded probes ({graded.get('model')}): {graded['correct']} of {graded['asked']} answered right"
                   + (f" ({graded['cached']} from the cache)" if graded.get("cached") else ""))
    return out
