"""The summary table: figures recomputed here from requests/events (not via summarise), best marks, deltas."""

from __future__ import annotations

import json

import pytest

from inspector.cache.rules import load_rules
from inspector.compare import delta_to_first, estimate_cost, parse_specs, run_comparison, summary_table
from inspector.compare.runs import Comparison, RunResult, RunSpec
from inspector.compare.table import mark_best
from inspector.trace.model import STATE_FIELDS, CacheInfo

from .conftest import make_session, synthetic_trace


def _independent_figures(trace) -> dict:
    reqs = trace.requests
    sent = 0
    read = 0
    write = 0
    peak = 0
    cost = 0.0
    for r in reqs:
        sent += r.usage["prompt_tokens"]
        read += r.usage["cache_read_tokens"]
        write += r.usage["cache_write_tokens"]
        peak = max(peak, r.usage["prompt_tokens"])
        cost += r.cache.cost
    committed = 0
    faults = 0
    seconds = 0.0
    for e in trace.events:
        seconds += e.duration
        if e.fault is not None:
            faults += 1
        if e.kind == "compress" and isinstance(e.result, dict) and "$list" in e.result and not e.result.get("unchanged"):
            committed += 1
    return {"requests": len(reqs), "compressions": committed, "tokens_sent": sent, "cache_read": read,
            "cache_write": write, "hit_rate": read / sent, "cost": cost, "peak_prompt": peak, "faults": faults,
            "engine_seconds": seconds}


@pytest.fixture(scope="module")
def real_comparison(plugin_dir):
    from inspector.config import load_config

    cfg = load_config(None, {"model": {"default": "claude-opus-4-5"}})
    session = make_session(turns=6)
    return run_comparison(session, parse_specs(["cmp_tail", "cmp_tail_late", "cmp_never", "cmp_broken"]), cfg,
                          plugin_dirs=[str(plugin_dir)])


def test_table_figures_match_an_independent_count(real_comparison):
    table = summary_table(real_comparison)
    assert table.labels == ["cmp_tail", "cmp_tail_late", "cmp_never", "cmp_broken"]
    for i, run in enumerate(real_comparison.runs[:3]):
        want = _independent_figures(run.trace)
        for key, value in want.items():
            got = table.row(key).values[i]
            assert got == pytest.approx(value, rel=1e-6, abs=1e-4), (run.label, key)
    # the broken run has no values, and its error is in the table
    assert all(r.values[3] is None for r in table.rows)
    assert table.status[3] == "load_failed" and "cmp_broken" in table.errors[3]


def test_compressing_runs_differ_as_expected(real_comparison):
    table = summary_table(real_comparison)
    comps = table.row("compressions").values
    assert comps[0] > comps[1] > 0 and comps[2] == 0
    peak = table.row("peak_prompt").values
    assert peak[0] < peak[1] < peak[2]
    assert table.row("peak_prompt").best == [True, False, False, False]
    assert table.row("compressions").best == [False, False, True, False]
    assert table.row("requests").best == [False] * 4  # not ranked


def test_best_marks():
    assert mark_best([3, 1, 1], "low") == [False, True, True]  # ties: all marked
    assert mark_best([3, 1, 5], "high") == [False, False, True]
    assert mark_best([None, 2, 4], "low") == [False, True, False]
    assert mark_best([2, 2, 2], "low") == [True, True, True]
    assert mark_best([1, 2], None) == [False, False]
    assert mark_best([7, None], "low") == [False, False]  # a lone value is not "best"
    assert mark_best([0.1 + 0.2, 0.3], "low") == [True, True]  # float noise is a tie


def test_delta_to_first():
    assert delta_to_first([10, 12, 7, None]) == [None, 2, -3, None]
    assert delta_to_first([None, 1]) == [None, None]
    assert delta_to_first([0.5, 0.25]) == [None, -0.25]
    assert delta_to_first([]) == []


def test_table_text_and_json(real_comparison):
    table = summary_table(real_comparison)
    text = table.render_text()
    lines = text.splitlines()
    assert lines[0].split()[0] == "summary" and "cmp_tail_late" in lines[0]
    peak_line = next(line for line in lines if line.startswith("peak prompt tokens"))
    assert peak_line.count("*") == 1
    assert "(+" in peak_line  # deltas to the first run
    assert "load_failed" in text
    data = json.loads(json.dumps(table.to_json()))
    assert [r["label"] for r in data["runs"]] == table.labels
    row = next(r for r in data["rows"] if r["key"] == "peak_prompt")
    assert row["best"] == [True, False, False, False]
    assert row["delta_to_first"][1] == row["values"][1] - row["values"][0]


def test_cost_is_priced_from_the_provider_table_when_the_host_left_it_empty(base_config):
    trace = synthetic_trace([2, 1])
    for r in trace.requests:
        r.cache = CacheInfo(read=r.cache.read, write=r.cache.write, uncached=r.cache.uncached, cost=None)
    price = load_rules().price_for("claude-opus-4-5")
    assert price is not None
    want = sum(r.cache.uncached * price.input + r.cache.read * price.cache_read + r.cache.write * price.cache_write_5m
               + r.tokens["completion"] * price.output for r in trace.requests) / 1e6
    assert estimate_cost(trace, base_config) == pytest.approx(want, rel=1e-6)
    # a model without a price gives no cost rather than a made-up one
    cfg = dict(base_config, model={**base_config["model"], "default": "no-such-model-xyz"})
    assert estimate_cost(trace, cfg) is None
    comp = Comparison(runs=[RunResult(spec=RunSpec("s", (), "s"), trace=trace, config=base_config)])
    assert summary_table(comp).row("cost").values == [pytest.approx(want, rel=1e-6)]


def test_counters_at_a_row_with_deltas():
    from inspector.compare import counters_at

    a = synthetic_trace([2, 2], compress_before={(1, 0)})
    b = synthetic_trace([2, 3])
    comp = Comparison(runs=[RunResult(spec=RunSpec("a", (), "a"), trace=a),
                            RunResult(spec=RunSpec("b", (), "b"), trace=b),
                            RunResult(spec=RunSpec("c", (), "c"), status="load_failed", error="x")])
    row = comp.alignment.rows.index((1, 2))
    states = counters_at(comp, row)
    assert states[2] is None
    assert states[0]["exact"] is False and states[1]["exact"] is True
    assert states[0]["compression_count"] == 1 and states[1]["compression_count"] == 0
    assert states[1]["delta"]["compression_count"] == -1
    assert states[0]["delta"]["compression_count"] is None
    assert states[1]["delta"]["last_prompt_tokens"] == states[1]["last_prompt_tokens"] - states[0]["last_prompt_tokens"]


def test_no_delta_is_taken_from_the_reset_sentinel():
    from inspector.compare import counters_at

    a, b = synthetic_trace([2, 2]), synthetic_trace([2, 2])
    comp = Comparison(runs=[RunResult(spec=RunSpec("a", (), "a"), trace=a),
                            RunResult(spec=RunSpec("b", (), "b"), trace=b)])
    row = 1
    k = comp.alignment.event_for(0, row)
    a.state_at(k)  # builds the arrays
    for run, trace in enumerate((a, b)):
        trace.events[comp.alignment.event_for(run, row)].state = tuple(
            -1 if (run == 0 and f == "last_prompt_tokens") else v
            for f, v in zip(STATE_FIELDS, trace.events[comp.alignment.event_for(run, row)].state))
        trace.finish()
    states = counters_at(comp, row)
    assert states[0]["last_prompt_tokens"] == -1
    assert states[1]["delta"]["last_prompt_tokens"] is None, "-1 means unknown: +N against it would be made up"


def test_a_run_with_more_faults_is_never_best_at_anything_else():
    from inspector.trace.model import Event, Fault

    calm = synthetic_trace([2, 2])
    broken = synthetic_trace([2, 2], base_tokens=10)  # smaller prompts: it would win "tokens sent"
    for _ in range(3):
        broken.add_event(Event(index=0, kind="compress", fault=Fault("exception", "compress exploded")))
    broken.finish()
    comp = Comparison(runs=[RunResult(spec=RunSpec("calm", (), "calm"), trace=calm),
                            RunResult(spec=RunSpec("broken", (), "broken"), trace=broken)])
    table = summary_table(comp)
    assert table.row("tokens_sent").values[1] < table.row("tokens_sent").values[0]
    assert table.row("tokens_sent").best == [False, False]  # the lower figure is the broken run's
    assert table.row("faults").best == [True, False]
