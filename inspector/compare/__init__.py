"""Compare engines side by side on one session (issue 6).

Qt-free: the runner, the lockstep alignment, the summary table, the HTML report and the
comparison bundle live here; the window's overlays and the ``compare`` command are thin users.

Typical use::

    specs = parse_specs(["compressor", "compressor:compression.threshold=0.6"])
    comparison = run_comparison(session, specs, config)
    table = summary_table(comparison)            # best values marked per row
    al = comparison.alignment                    # rows = (turn, call), one cursor for all runs
    series = aligned_series(comparison, "prompt_tokens")
"""

from __future__ import annotations

from inspector.compare.align import (
    SERIES_KEYS,
    Alignment,
    align_runs,
    aligned_series,
    compression_points,
    diff_runs,
)
from inspector.compare.bundle import COMPARISON_KIND, load_comparison, save_comparison
from inspector.compare.runs import (
    Comparison,
    RunResult,
    RunSpec,
    SpecError,
    parse_engine_spec,
    parse_specs,
    run_comparison,
    unique_labels,
)
from inspector.compare.table import (
    RUN_COLORS,
    SummaryTable,
    TableRow,
    counters_at,
    delta_to_first,
    estimate_cost,
    summary_table,
)

__all__ = [
    "COMPARISON_KIND",
    "RUN_COLORS",
    "SERIES_KEYS",
    "Alignment",
    "Comparison",
    "RunResult",
    "RunSpec",
    "SpecError",
    "SummaryTable",
    "TableRow",
    "align_runs",
    "aligned_series",
    "compression_points",
    "counters_at",
    "delta_to_first",
    "diff_runs",
    "estimate_cost",
    "load_comparison",
    "parse_engine_spec",
    "parse_specs",
    "run_comparison",
    "save_comparison",
    "summary_table",
    "unique_labels",
]
