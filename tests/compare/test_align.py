"""Lockstep alignment by (turn, call): synthetic traces with differing request counts, and real replays."""

from __future__ import annotations

import math

from inspector.compare import (
    align_runs,
    aligned_series,
    compression_points,
    diff_runs,
    parse_specs,
    run_comparison,
)
from inspector.compare.runs import Comparison, RunResult, RunSpec
from inspector.trace.diff import OP_EQUAL, apply_diff
from inspector.trace.model import EV_COMPRESS, EV_TURN, KEY_SCHEME, Event, legacy_message_key

from .conftest import make_session, synthetic_trace


def _comparison(*traces):
    return Comparison(runs=[RunResult(spec=RunSpec(f"e{i}", (), f"run{i}"), trace=t) for i, t in enumerate(traces)])


def test_rows_are_the_union_and_missing_requests_are_none():
    a = synthetic_trace([1, 2, 1])  # 4 requests
    b = synthetic_trace([1, 3, 1, 2])  # 7 requests: an extra call in turn 1 (a compaction restart), one more turn
    c = synthetic_trace([1])  # stopped early
    al = align_runs([a, b, c, None])
    assert al.rows == [(0, 0), (1, 0), (1, 1), (1, 2), (2, 0), (3, 0), (3, 1)]
    assert al.index == [
        [0, 0, 0, None],
        [1, 1, None, None],
        [2, 2, None, None],
        [None, 3, None, None],
        [3, 4, None, None],
        [None, 5, None, None],
        [None, 6, None, None],
    ]
    # every request of every run is in the alignment exactly once, at its own (turn, call)
    for run, trace in enumerate([a, b, c]):
        seen = [al.index[row][run] for row in range(len(al.rows)) if al.index[row][run] is not None]
        assert seen == list(range(len(trace.requests)))
        for row, (turn, call) in enumerate(al.rows):
            req = al.request(run, row)
            assert req is None or (req.turn, req.call) == (turn, call)


def test_event_for_exact_and_fallback():
    a = synthetic_trace([1, 2, 1])
    b = synthetic_trace([1, 3, 1])
    al = align_runs([a, b, None])
    row = al.rows.index((1, 2))
    assert al.event_for(1, row) == b.requests[3].event
    # run a has no (1, 2): the state in force is its latest earlier request, (1, 1)
    assert al.event_for(0, row) == a.requests[2].event
    assert al.event_for(0, row, fallback=False) is None
    assert al.event_for(2, row) is None
    # cursor beyond the end clamps to the last row
    assert al.event_for(0, 999) == a.requests[-1].event


def test_row_for_maps_every_event_back_to_a_row():
    a = synthetic_trace([1, 2, 1], compress_before={(1, 1)})
    b = synthetic_trace([2, 2, 1])
    al = align_runs([a, b])
    for run, trace in enumerate([a, b]):
        for req in trace.requests:
            row = al.row_for(run, req.event)
            assert al.rows[row] == (req.turn, req.call)
            assert al.event_for(run, row) == req.event  # round trip
        for ev in trace.events:
            row = al.row_for(run, ev.index)
            assert row is not None
            if ev.kind == EV_TURN:  # a turn marker leads up to the turn's first request
                assert al.rows[row] == (ev.turn, 0)
    # the compress before (1, 1) happens after (1, 0): the request in force is (1, 0)
    comp = next(e for e in a.events if e.kind == EV_COMPRESS)
    assert al.rows[al.row_for(0, comp.index)] == (1, 0)


def test_aligned_series_have_nan_where_a_run_has_no_request():
    a = synthetic_trace([1, 2])
    b = synthetic_trace([1, 3])
    comp = _comparison(a, b)
    prompt = aligned_series(comp, "prompt_tokens")
    assert len(prompt) == 2 and all(len(s) == len(comp.alignment.rows) == 4 for s in prompt)
    assert prompt[1] == [float(r.usage["prompt_tokens"]) for r in b.requests]
    assert prompt[0][:3] == [float(r.usage["prompt_tokens"]) for r in a.requests]
    assert math.isnan(prompt[0][3])
    custom = aligned_series(comp, lambda trace, req: float(req.call))
    assert custom[1] == [0.0, 0.0, 1.0, 2.0]


def test_compression_series_and_points():
    a = synthetic_trace([2, 2, 2], compress_before={(1, 1)})
    b = synthetic_trace([2, 2, 2], compress_before={(0, 1), (2, 0)})
    comp = _comparison(a, b)
    counts = aligned_series(comp, "compression_count")
    assert counts[0] == [0, 0, 0, 1, 1, 1]
    assert counts[1] == [0, 1, 1, 1, 2, 2]
    points = compression_points(comp)
    assert [p["x"] for p in points[0]] == [2.5]  # between rows (1,0) and (1,1)
    assert [p["x"] for p in points[1]] == [0.5, 3.5]
    assert points[1][0]["tokens_before"] == 999 and points[1][0]["tokens_after"] == 111


def test_compression_points_stand_on_the_compression_count_not_the_message_count():
    b = synthetic_trace([2, 2, 2], compress_before={(0, 1), (2, 0)})
    last = b.events[b.compress_events[-1]]
    # a compress call that returned its input: Hermes keeps the transcript, the count stays at 2
    b.add_event(Event(index=0, kind=EV_COMPRESS, turn=last.turn, args=last.args,
                      result={"$list": last.args["messages"]["$list"], "unchanged": True}, state=last.state))
    b.finish()
    comp = _comparison(synthetic_trace([2, 2, 2]), b)
    counts = aligned_series(comp, "compression_count")[1]
    points = compression_points(comp)[1]
    assert [p["compression_count"] for p in points] == [counts[1], counts[4]] == [1, 2]
    assert [p["count_after"] for p in points] == [2, 2], "count_after stays the message count"
    calls = compression_points(comp, every_call=True)[1]
    assert [(p["committed"], p["compression_count"]) for p in calls] == [(True, 1), (True, 2), (False, 2)]
    assert calls[2]["tokens_after"] is None and calls[2]["count_after"] is None


def test_diff_runs_on_synthetic_traces():
    a = synthetic_trace([2, 2], compress_before={(1, 0)})
    b = synthetic_trace([2, 3])
    comp = _comparison(a, b)
    al = comp.alignment
    assert diff_runs(comp, al.rows.index((0, 1)), 0, 1).identical
    d = diff_runs(comp, al.rows.index((1, 1)), 0, 1)
    assert not d.identical and d.common_prefix == 1  # only the system message is shared
    assert d.after == b.request_messages(b.requests[3])
    assert diff_runs(comp, al.rows.index((1, 2)), 0, 1) is None  # run 0 has no such request


def test_diff_runs_against_a_trace_keyed_the_old_way_still_finds_the_shared_prefix():
    a = synthetic_trace([2, 2])
    b = synthetic_trace([2, 2])
    # b as an older inspector saved it: the same messages under canonical-JSON keys.
    old_keys = {k: legacy_message_key(m) for k, m in b.store.messages.items()}
    b.store.messages = {old_keys[k]: m for k, m in b.store.messages.items()}
    b.store.lists = [tuple(old_keys[k] for k in lst) for lst in b.store.lists]
    b.meta.pop("message_keys", None)
    a.meta["message_keys"] = KEY_SCHEME
    comp = _comparison(a, b)
    assert all(diff_runs(comp, row, 0, 1).identical for row in range(len(comp.alignment.rows)))


def test_real_replays_align_by_turn_and_call(plugin_dir, base_config):
    session = make_session(turns=6)
    comp = run_comparison(session, parse_specs(["cmp_tail", "cmp_never"]), base_config,
                          plugin_dirs=[str(plugin_dir)])
    tail, never = comp.traces
    al = comp.alignment
    assert al.rows == [(t, c) for t in range(6) for c in range(2)]
    assert all(None not in slots for slots in al.index)
    # before any compression the two runs sent the same messages; after it they differ
    first_comp = next(e for e in tail.events if e.kind == EV_COMPRESS)
    comp_row = al.row_for(0, first_comp.index)
    assert diff_runs(comp, 0, 0, 1).identical
    later = comp_row + 1
    d = diff_runs(comp, later, 0, 1)
    assert d is not None and not d.identical and d.common_prefix >= 1
    # the diff is exact: applying it to run A's request gives run B's
    ra, rb = al.request(0, later), al.request(1, later)
    assert apply_diff(tail.request_messages(ra), d) == never.request_messages(rb)
    assert any(op.kind != OP_EQUAL for op in d.ops)
    # tokens drop in the compressing run only
    prompt = aligned_series(comp, "prompt_tokens")
    assert prompt[0][-1] < prompt[1][-1]


def test_spans_partition_the_events_the_way_row_for_maps_them():
    a = synthetic_trace([1, 2, 1], compress_before={(1, 1)})
    al = align_runs([a])
    owners = {}
    for pos in range(len(a.requests)):
        first, last = al.span(0, pos)
        for k in range(first, last + 1):
            owners[k] = pos
            assert al.row_for(0, k) == al.row_for(0, a.requests[pos].event)
    assert sorted(owners) == list(range(min(owners), len(a.events)))


def test_other_runs_follow_the_primary_to_the_same_hook_of_the_row(plugin_dir, base_config):
    session = make_session(turns=6)
    comp = run_comparison(session, parse_specs(["cmp_tail", "cmp_never"]), base_config,
                          plugin_dirs=[str(plugin_dir)])
    tail, never = comp.traces
    al = comp.alignment
    for row in range(len(al.rows)):
        first, last = al.span(1, al.index[row][1])
        for k in range(first, last + 1):
            j = al.event_at_phase(0, row, 1, k)
            assert al.row_for(0, j) == row  # never leaves the row
            kind = never.events[k].kind
            nth = sum(e.kind == kind for e in never.events[first:k + 1])
            tail_first, tail_last = al.span(0, al.index[row][0])
            if sum(e.kind == kind for e in tail.events[tail_first:tail_last + 1]) >= nth:
                assert tail.events[j].kind == kind  # the same hook, the same time in the row
                assert sum(e.kind == kind for e in tail.events[tail_first:j + 1]) == nth
    # after the response both runs hold that request's prompt size, not the previous one's
    row = 3
    k = next(e.index for e in never.events if e.kind == "update_from_response" and al.row_for(1, e.index) == row)
    j = al.event_at_phase(0, row, 1, k)
    assert tail.state_at(j)["last_prompt_tokens"] == al.request(0, row).usage["prompt_tokens"]
    assert never.state_at(k)["last_prompt_tokens"] == al.request(1, row).usage["prompt_tokens"]
    # the compress only one run has maps to a point inside the other run's row
    compress = next(e for e in tail.events if e.kind == EV_COMPRESS)
    row = al.row_for(0, compress.index)
    assert al.row_for(1, al.event_at_phase(1, row, 0, compress.index)) == row
    assert al.event_at_phase(0, row, 0, compress.index) == compress.index


def test_real_replays_with_different_request_counts(plugin_dir, base_config):
    """A run cancelled after two turns has fewer requests; rows past its end are None for it."""
    import threading

    cancel = threading.Event()

    def progress(label, done, total):
        if label == "cmp_slow" and done >= 2:  # the worker reports turns in batches: at least two done
            cancel.set()

    session = make_session(turns=5)
    full = run_comparison(session, parse_specs(["cmp_tail"]), base_config, plugin_dirs=[str(plugin_dir)])
    short = run_comparison(session, parse_specs(["cmp_slow"]), base_config, plugin_dirs=[str(plugin_dir)],
                           progress=progress, cancel=cancel)
    traces = [full.traces[0], short.traces[0]]
    al = align_runs(traces)
    n_short = len(traces[1].requests)
    assert n_short < len(traces[0].requests)
    assert len(al.rows) == len(traces[0].requests)
    assert [slots[1] for slots in al.index] == list(range(n_short)) + [None] * (len(al.rows) - n_short)
    # the cursor past the short run's end shows its last state
    assert al.event_for(1, len(al.rows) - 1) == traces[1].requests[-1].event
