"""The batch HTML report: per-session changes against the baseline, every data text escaped."""

from __future__ import annotations

import re

from inspector.batch.report import render_report, session_deltas
from inspector.batch.table import groups


def _row(session, engine, setting="default", **figures):
    base = {"session": session, "engine": engine, "setting": setting, "error": None, "tokens_sent": 100,
            "cost": 1.0, "cache_read": 50, "compressions": 1, "requests": 2, "faults": 0}
    return {**base, **figures}


def test_each_engine_is_measured_against_the_baseline_on_the_same_session_and_setting():
    results = [
        _row("s1", "base", tokens_sent=100), _row("s1", "new", tokens_sent=80),
        _row("s2", "base", tokens_sent=200), _row("s2", "new", tokens_sent=300),
        _row("s1", "base", "t=0.7", tokens_sent=50), _row("s1", "new", "t=0.7", tokens_sent=25),
    ]
    deltas = session_deltas(results, "base", "tokens_sent")
    assert deltas[("new", "default")] == [("s1", -0.2), ("s2", 0.5)]
    assert deltas[("new", "t=0.7")] == [("s1", -0.5)]
    # The baseline's other settings against its first one.
    assert deltas[("base", "t=0.7")] == [("s1", -0.5)]
    assert ("base", "default") not in deltas


def test_a_session_without_a_baseline_or_a_failed_task_has_no_delta():
    results = [_row("s1", "new"), _row("s2", "base"), _row("s2", "new", error="boom"),
               _row("s3", "base", tokens_sent=0), _row("s3", "new")]
    assert session_deltas(results, "base", "tokens_sent") == {}


def test_group_totals_and_medians_leave_failed_tasks_out():
    results = [_row("s1", "e", tokens_sent=10), _row("s2", "e", tokens_sent=30), _row("s3", "e", tokens_sent=50),
               _row("s4", "e", tokens_sent=None, error="bad")]
    [g] = groups(results)
    assert (g["sessions"], g["failed"], g["tokens_sent"], g["tokens_sent_median"]) == (4, 1, 90, 30)


def test_every_text_from_data_is_escaped_and_the_report_has_no_script():
    evil = "<script>alert(1)</script>"
    results = [_row(f"/tmp/{evil}.json", "base"), _row(f"/tmp/{evil}.json", f"new{evil}", tokens_sent=90),
               _row("s2", "base", error=f"failed {evil}")]
    html = render_report(results, baseline="base")
    assert "<script" not in html
    assert html.count("&lt;script&gt;") >= 3
    assert html.startswith("<!DOCTYPE html>")
    assert len(re.findall(r"<svg", html)) == 4  # tokens, cost, cache read, compactions
    assert "-10.0%" in html
