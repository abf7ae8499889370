"""The whole-session summary table of a comparison, best value per row marked.

Figures come from :func:`inspector.trace.summary.summarise` (one definition of "tokens sent",
"compressions committed", ... for the replay command, the window and this table), except the
cost: a request the host could not price (``cache.cost is None``) is priced here from the
provider table with the run's own config, so a comparison still shows a cost when the host
did not record one. A row is ranked only when :data:`SUMMARY_ROWS` says which way is better;
the best value is marked on every run that has it (ties all marked), and nothing is marked when
fewer than two runs have a value (a lone value is not "best" of anything).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inspector.trace.model import STATE_FIELDS, Trace
from inspector.trace.summary import SUMMARY_ROWS, summarise

if TYPE_CHECKING:
    from inspector.compare.runs import Comparison

# One colour per run, in run order (Okabe–Ito: distinguishable with common colour blindness).
# The report uses these; the window's overlays should too, so a run has one colour everywhere.
RUN_COLORS: tuple[str, ...] = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
                               "#F0E442")

Number = int | float

# The quality row beside cost (``inspector.quality``): facts still available at the end of the run.
RETENTION_KEY = "retention"
RETENTION_LABEL = "facts retained"


@dataclass
class TableRow:
    """One figure across runs: ``values[i]`` for run i (None: the run has no value)."""

    key: str
    label: str
    better: str | None  # "low" | "high" | None (not ranked)
    values: list[Any]
    best: list[bool] = field(default_factory=list)

    @property
    def deltas(self) -> list[Number | None]:
        """Each run's value minus run 0's (None for run 0 and where either value is missing)."""
        return delta_to_first(self.values)


@dataclass
class SummaryTable:
    labels: list[str]
    rows: list[TableRow]
    status: list[str]
    errors: list[str | None]
    summaries: list[dict[str, Any] | None]

    def row(self, key: str) -> TableRow:
        for r in self.rows:
            if r.key == key:
                return r
        raise KeyError(key)

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": [{"label": lab, "status": st, "error": err}
                     for lab, st, err in zip(self.labels, self.status, self.errors)],
            "rows": [{"key": r.key, "label": r.label, "better": r.better, "values": r.values, "best": r.best,
                      "delta_to_first": r.deltas} for r in self.rows],
        }

    def render_text(self, *, mark: str = "*", deltas: bool = True) -> str:
        """Plain-text table: one column per run, ``*`` after the best value of each ranked row.

        With ``deltas``, counters of runs after the first also show the difference to run 0.
        """
        header = ["summary", *self.labels]
        body: list[list[str]] = []
        for r in self.rows:
            cells = [r.label]
            for i, value in enumerate(r.values):
                text = format_value(r.key, value)
                if deltas and i > 0 and r.deltas[i] is not None and r.key not in ("hit_rate", RETENTION_KEY):
                    text += f" ({format_delta(r.key, r.deltas[i])})"
                elif deltas and i > 0 and r.key in ("hit_rate", RETENTION_KEY) and r.deltas[i] is not None:
                    text += f" ({r.deltas[i] * 100:+.1f} pt)"
                if r.best and r.best[i]:
                    text += f" {mark}"
                cells.append(text)
            body.append(cells)
        # The error itself is printed above the table (stderr); here it only names the status.
        body.append(["status", *[st if not err else f"{st} (see error)" for st, err in zip(self.status, self.errors)]])
        widths = [max(len(row[c]) for row in [header, *body]) for c in range(len(header))]
        lines = ["  ".join(cell.ljust(widths[c]) if c == 0 else cell.rjust(widths[c])
                           for c, cell in enumerate(row)).rstrip() for row in [header, *body]]
        lines.append(f"({mark} best value in the row among the runs with the fewest faults; ties all marked; "
                     "for cost, among those that also retain as many facts as the best)")
        return "\n".join(lines) + "\n"


def format_value(key: str, value: Any) -> str:
    """A table cell as text: percent for the hit rate, dollars for cost, thousands separators."""
    if value is None:
        return "-"
    if key == "hit_rate":
        return f"{value * 100:.1f}%"
    if key == "cost":
        return f"${value:.4f}"
    if key == RETENTION_KEY:
        return f"{value * 100:.1f}%"
    if key == "engine_seconds":
        return f"{value:.3f}"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}"
    return str(value)


def format_delta(key: str, delta: Number) -> str:
    if key == "cost":
        return f"{'+' if delta >= 0 else '-'}${abs(delta):.4f}"
    if isinstance(delta, int):
        return f"{delta:+,}"
    return f"{delta:+,.3f}"


def delta_to_first(values: Sequence[Any]) -> list[Number | None]:
    """``values[i] - values[0]`` for i ≥ 1; None for run 0 and where a value is missing/non-numeric."""
    out: list[Number | None] = [None] * len(values)
    if not values or not _is_number(values[0]):
        return out
    base = values[0]
    for i in range(1, len(values)):
        v = values[i]
        if _is_number(v):
            d = v - base
            out[i] = round(d, 9) if isinstance(d, float) else d
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))


def mark_best(values: Sequence[Any], better: str | None) -> list[bool]:
    """Which runs hold the best value (all of them on a tie); nothing when unranked or < 2 values."""
    marks = [False] * len(values)
    if better not in ("low", "high"):
        return marks
    nums = [(i, v) for i, v in enumerate(values) if _is_number(v)]
    if len(nums) < 2:
        return marks
    target = min(v for _, v in nums) if better == "low" else max(v for _, v in nums)
    for i, v in nums:
        if v == target or math.isclose(v, target, rel_tol=1e-9, abs_tol=1e-12):
            marks[i] = True
    return marks


def estimate_cost(trace: Trace, config: dict[str, Any] | None = None) -> float | None:
    """US$ for the run: the host's per-request cost, else priced from usage with the provider table.

    ``config`` (default: the config recorded in the trace) chooses the cache profile, TTL and
    model, exactly as the replay did. None when no request could be priced (unknown model).
    """
    total = 0.0
    priced = 0
    pricer: Any = None
    for req in trace.requests:
        cost = req.cache.cost
        if cost is None:
            if pricer is None:
                pricer = _pricer(trace, config) or False
            if pricer:
                try:
                    cost = pricer.cost(req.cache.read, req.cache.write, req.cache.uncached,
                                       int(req.tokens.get("completion", req.usage.get("completion_tokens", 0))))
                except Exception:
                    cost = None
        if cost is not None:
            total += cost
            priced += 1
    return total if priced else None


def _pricer(trace: Trace, config: dict[str, Any] | None) -> Any:
    """A cache simulator used only for its ``cost()``: same profile/TTL/model as the run."""
    from inspector.host.replay import make_simulator

    cfg = config if config is not None else trace.meta.get("config")
    if not isinstance(cfg, dict):
        return None
    model = str((cfg.get("model") or {}).get("default") or (trace.meta.get("session") or {}).get("model") or "")
    try:
        return make_simulator(cfg, model)
    except Exception:
        return None


def run_summary(trace: Trace, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """``summarise(trace)`` with the cost completed by :func:`estimate_cost`."""
    summary = summarise(trace)
    summary["cost"] = estimate_cost(trace, config)
    return summary


def summary_table(comparison: Comparison) -> SummaryTable:
    """The comparison's whole-session table (rows of :data:`SUMMARY_ROWS`, one column per run)."""
    summaries: list[dict[str, Any] | None] = []
    for run in comparison.runs:
        summaries.append(run_summary(run.trace, run.config) if run.trace is not None else None)
    # A run with more faults than the others is not "best" at anything else: an engine that raises
    # in every compress "compresses least" and keeps the best cache because it never changes a thing.
    faults = [s.get("faults") if s is not None else None for s in summaries]
    fewest = min((f for f in faults if _is_number(f)), default=None)
    retained = _retention_values(comparison)
    for s, value in zip(summaries, retained):
        if s is not None:
            s[RETENTION_KEY] = value
    best_kept = max((v for v, f in zip(retained, faults) if v is not None and f == fewest), default=None)
    rows = []
    for key, label, better in SUMMARY_ROWS:
        values = [s.get(key) if s is not None else None for s in summaries]
        ranked = values if key == "faults" else [v if f == fewest else None for v, f in zip(values, faults)]
        if key == "cost" and best_kept is not None:
            # Cheap because it forgot is not best: ★ goes to the cheapest of the runs that keep as much as the best.
            ranked = [v if k is not None and math.isclose(k, best_kept, abs_tol=1e-9) else None
                      for v, k in zip(ranked, retained)]
        marks = mark_best(ranked, better)
        if key == "cost" and best_kept is not None and not any(marks):
            marks = _lone_best(ranked, [v if f == fewest else None for v, f in zip(values, faults)])
        rows.append(TableRow(key, label, better, values, marks))
        if key == "cost":
            kept_ranked = [v if f == fewest else None for v, f in zip(retained, faults)]
            rows.append(TableRow(RETENTION_KEY, RETENTION_LABEL, "high", retained, mark_best(kept_ranked, "high")))
    return SummaryTable(labels=comparison.labels, rows=rows, status=[r.status for r in comparison.runs],
                        errors=[r.error for r in comparison.runs], summaries=summaries)


def _lone_best(ranked: Sequence[Any], candidates: Sequence[Any]) -> list[bool]:
    """The one run left after the retention filter is the best, when there was a choice to make."""
    left = [i for i, v in enumerate(ranked) if _is_number(v)]
    chosen = sum(1 for v in candidates if _is_number(v)) >= 2 and len(left) == 1
    return [chosen and i in left for i in range(len(ranked))]


def _retention_values(comparison: Comparison) -> list[float | None]:
    """Each run's end-of-run fact retention (None for a run without a trace)."""
    from inspector.quality.analysis import analyse

    return [round(analyse(run.trace).run_retention, 6) if run.trace is not None else None for run in comparison.runs]


def counters_at(
    comparison: Comparison, row: int, fields: Sequence[str] = STATE_FIELDS, *, at: tuple[int, int] | None = None
) -> list[dict[str, Any] | None]:
    """Each run's engine token attributes at cursor ``row``, plus ``delta`` to run 0 per field.

    Without ``at`` each run is read at its request marker (the state the request was sent
    with). ``at=(run, event)`` reads that run at that event and every other run at the same
    point of the row (see :meth:`Alignment.event_at_phase`), so stepping through a row's
    hooks moves every column. Entry i is None when run i has no trace. ``entry["exact"]``
    says whether the run had a request at that row (False: the values are those in force).
    """
    al = comparison.alignment
    states: list[dict[str, Any] | None] = []
    for run, trace in enumerate(al.traces):
        k = al.event_for(run, row) if at is None else al.event_at_phase(run, row, *at)
        if trace is None or k is None:
            states.append(None)
            continue
        state = trace.state_at(k)
        states.append({**{f: state[f] for f in fields}, "exact": al.has_request(run, row), "event": k})
    for f in fields:
        # -1 is Hermes' "unknown since the compaction" sentinel, not a count: no delta to or from it
        deltas = delta_to_first([s[f] if s is not None and s[f] >= 0 else None for s in states])
        for s, d in zip(states, deltas):
            if s is not None:
                s.setdefault("delta", {})[f] = d
    return states
