"""Batch results as figures: one group per engine × setting, one row per task.

A group's totals add up its sessions; its medians are over sessions (one long session does not
hide what happens to the typical one). Hit rates are ratios of sums, the recorded one over the
requests whose transcript reported usage. Failed tasks are counted, never averaged in.
"""

from __future__ import annotations

import csv
import io
import statistics
from typing import Any, TextIO

# One row per task in --csv and --json: (column, result field).
TASK_COLUMNS = ("session", "session_id", "format", "engine", "engine_version", "setting", "ok", "error", "turns",
                "requests", "compressions", "tokens_sent", "cache_read", "cache_write", "hit_rate", "cost",
                "peak_prompt", "faults", "recorded_requests", "recorded_prompt", "recorded_cache_read",
                "recorded_hit_rate", "stopped", "engine_seconds", "seconds", "reused", "trace_path", "key")
CSV_MAGIC = ",".join(TASK_COLUMNS[:4])  # how a CSV this command wrote begins (see outputs.output_problem)


def task_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{c: r.get(c) for c in TASK_COLUMNS} for r in results]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def groups(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figures per (engine, setting), in the order the groups first appear."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results:
        by.setdefault((r["engine"], r["setting"]), []).append(r)
    out = []
    for (engine, setting), rows in by.items():
        ok = [r for r in rows if r.get("error") is None]
        sent = sum(r.get("tokens_sent") or 0 for r in ok)
        read = sum(r.get("cache_read") or 0 for r in ok)
        costs = [r["cost"] for r in ok if r.get("cost") is not None]
        recorded = [r for r in ok if r.get("recorded_prompt")]
        rec_prompt = sum(r["recorded_prompt"] for r in recorded)
        rec_read = sum(r.get("recorded_cache_read") or 0 for r in recorded)
        out.append({
            "engine": engine, "setting": setting, "sessions": len(rows), "failed": len(rows) - len(ok),
            "stopped": sum(1 for r in ok if r.get("stopped")),
            "requests": sum(r.get("requests") or 0 for r in ok),
            "requests_median": _median([r.get("requests") or 0 for r in ok]),
            "tokens_sent": sent, "tokens_sent_median": _median([r.get("tokens_sent") or 0 for r in ok]),
            "cost": round(sum(costs), 6) if costs else None, "cost_median": _median(costs),
            "hit_rate": read / sent if sent else None,
            "recorded_hit_rate": rec_read / rec_prompt if rec_prompt else None,
            "compressions": sum(r.get("compressions") or 0 for r in ok),
            "compressions_median": _median([r.get("compressions") or 0 for r in ok]),
            "faults": sum(r.get("faults") or 0 for r in ok),
        })
    return out


def _pct(value: float | None) -> str | None:
    return None if value is None else f"{value * 100:.1f}%"


def _med(value: float | None, digits: int = 1) -> str | None:
    if value is None:
        return None
    return f"{value:,.0f}" if float(value).is_integer() and digits == 1 else f"{value:,.{digits}f}"


def print_groups(results: list[dict[str, Any]], out: TextIO) -> None:
    from inspector.host.cli import _print_table
    from inspector.terminal import printable

    header = ["engine", "setting", "sessions", "failed", "stopped", "requests", "req med", "tokens sent", "sent med",
              "cost $", "cost med", "hit sim", "hit rec", "compactions", "comp med", "faults"]
    rows = [[printable(g["engine"]), printable(g["setting"]), g["sessions"], g["failed"], g["stopped"], g["requests"],
             _med(g["requests_median"]), g["tokens_sent"], _med(g["tokens_sent_median"]),
             None if g["cost"] is None else f"{g['cost']:,.4f}", _med(g["cost_median"], 4),
             _pct(g["hit_rate"]), _pct(g["recorded_hit_rate"]), g["compressions"], _med(g["compressions_median"]),
             g["faults"]] for g in groups(results)]
    _print_table(header, rows, out, left=(0, 1))


def print_failures(results: list[dict[str, Any]], out: TextIO, limit: int = 10) -> None:
    from inspector.terminal import printable

    failed = [r for r in results if r.get("error") is not None]
    for r in failed[:limit]:
        out.write(f"failed: {printable(r['session'])} × {printable(r['engine'])} ({printable(r['setting'])}): "
                  f"{printable(' '.join(str(r['error']).split()))[:300]}\n")
    if len(failed) > limit:
        out.write(f"failed: … and {len(failed) - limit} more (--json or --csv lists them all)\n")


def csv_text(results: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(TASK_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in task_rows(results):
        # A cell a spreadsheet would run as a formula (=, +, -, @) is quoted as text.
        writer.writerow({k: ("'" + v if isinstance(v, str) and v and v[0] in "=+-@" else v) for k, v in row.items()})
    return buf.getvalue()


def is_batch_csv(head: bytes) -> bool:
    return head.startswith(CSV_MAGIC.encode())
