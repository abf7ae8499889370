"""Save and reopen a comparison as one file (a trace bundle with the runs' specs in its meta).

The bundle format belongs to :mod:`inspector.trace.io`; this module only decides what the
bundle meta says about a comparison: the specs and labels in run order, each run's status and
error, and which trace in the bundle is which run (a run that failed before producing a trace
has none, but it stays in the comparison so reopening shows the same columns and errors).
"""

from __future__ import annotations

import os
from typing import Any

from inspector.compare.runs import Comparison, RunResult, RunSpec
from inspector.trace.io import load_bundle, save_bundle

COMPARISON_KIND = "context-inspector-comparison"
COMPARISON_VERSION = 1


def _scrub(node: Any) -> Any:
    """Drop anything that looks like an API key: a bundle is a document users share."""
    if isinstance(node, dict):
        return {k: _scrub(v) for k, v in node.items() if "api_key" not in str(k).lower() or k == "api_key_env"}
    if isinstance(node, list | tuple):
        return [_scrub(v) for v in node]
    return node


def save_comparison(comparison: Comparison, path: str | os.PathLike[str]) -> None:
    """Write every run's trace and the comparison's specs/labels/errors into one bundle file."""
    traces = []
    runs_meta = []
    for run in comparison.runs:
        slot = None
        if run.trace is not None:
            slot = len(traces)
            traces.append(run.trace)
        runs_meta.append({
            "spec": run.spec.public_json(), "label": run.label, "status": run.status, "error": run.error,
            "details": run.details, "seconds": round(run.seconds, 4), "warnings": list(run.warnings),
            "trace": slot,
        })
    meta = {
        "kind": COMPARISON_KIND,
        "version": COMPARISON_VERSION,
        "session": _scrub(comparison.session),
        "runs": runs_meta,
        "extra": _scrub({k: v for k, v in comparison.meta.items() if k != "specs"}),
    }
    save_bundle(traces, path, meta=meta)


def load_comparison(path: str | os.PathLike[str]) -> Comparison:
    """Reopen a comparison saved by :func:`save_comparison`.

    A plain bundle (no comparison meta) also opens: each trace becomes a run labelled from its
    trace meta. Raises :class:`inspector.trace.io.TraceFormatError` for files that are not
    bundles, as :func:`load_bundle` does.
    """
    traces, meta = load_bundle(path)
    runs: list[RunResult] = []
    if meta.get("kind") == COMPARISON_KIND and isinstance(meta.get("runs"), list):
        for entry in meta["runs"]:
            spec = RunSpec.from_json(entry.get("spec") or {})
            spec = RunSpec(spec.engine, spec.overrides, str(entry.get("label") or spec.label or spec.engine))
            slot = entry.get("trace")
            trace = traces[slot] if isinstance(slot, int) and 0 <= slot < len(traces) else None
            runs.append(RunResult(
                spec=spec, trace=trace, status=str(entry.get("status") or "ok"), error=entry.get("error"),
                details=str(entry.get("details") or ""), seconds=float(entry.get("seconds") or 0.0),
                warnings=list(entry.get("warnings") or []),
                config=trace.meta.get("config") if trace is not None else None,
            ))
        extra = meta.get("extra") if isinstance(meta.get("extra"), dict) else {}
        return Comparison(runs=runs, session=dict(meta.get("session") or {}),
                          meta={**extra, "specs": [r.spec.public_json() for r in runs]})
    seen: set[str] = set()
    for n, trace in enumerate(traces):
        label = str(trace.meta.get("label") or (trace.meta.get("engine") or {}).get("name") or f"run {n + 1}")
        base, k = label, 2
        while label in seen:
            label, k = f"{base} #{k}", k + 1
        seen.add(label)
        engine = str((trace.meta.get("engine") or {}).get("name") or label)
        runs.append(RunResult(spec=RunSpec(engine, (), label), trace=trace, config=trace.meta.get("config")))
    session = dict(traces[0].meta.get("session") or {}) if traces else {}
    return Comparison(runs=runs, session=session, meta={})
