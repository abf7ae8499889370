"""Every panel: renders empty / lifecycle-only / demo / faulted traces and follows the cursor.

The generic tests run over ``PANEL_CLASSES``, so a new panel is covered by adding it there;
the per-panel tests check that what is drawn is the trace's answer at the cursor.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication, QPlainTextEdit

from inspector.trace import model as tm
from inspector.trace.model import Trace
from inspector.ui.derive import event_lists, figures
from inspector.ui.panels import PANEL_CLASSES
from inspector.ui.panels.base import Panel


def interesting_events(trace: Trace) -> list[int]:
    """First, last, a compression, a fault, a request marker: where panels change most."""
    if not len(trace):
        return []
    picks = {0, len(trace) - 1, len(trace) // 2}
    picks.update(trace.compress_events[:2])
    picks.update(trace.fault_events[:2])
    picks.update(ev.index for ev in trace.events if ev.kind in (tm.EV_REQUEST, tm.EV_SELECT))
    return sorted(picks)[:40]


@pytest.mark.parametrize("cls", PANEL_CLASSES, ids=lambda c: c.panel_id)
def test_panel_renders_and_follows_the_cursor(shown, cls: type[Panel], any_trace: Trace) -> None:
    cursor, make = shown
    panel = make(cls, any_trace)
    assert panel.panel_id and panel.title
    assert panel.minimumSizeHint().width() > 0
    for k in interesting_events(any_trace):
        cursor.set(k)
        assert panel.rendered_cursor == k, f"{cls.panel_id} did not follow the cursor to {k}"
    assert panel.grab().width() > 0


@pytest.mark.parametrize("cls", PANEL_CLASSES, ids=lambda c: c.panel_id)
def test_panel_without_trace_and_hidden_panels_catch_up(shown, cls: type[Panel], demo_trace: Trace) -> None:
    cursor, make = shown
    panel = make(cls, None)
    panel.hide()
    cursor.set_trace(demo_trace)
    cursor.set(len(demo_trace) // 3)
    assert panel.rendered_cursor is None, "a hidden panel skips work"
    panel.show()
    QApplication.processEvents()
    assert panel.rendered_cursor == len(demo_trace) // 3, "and catches up from the cursor when shown"


def test_counters_show_the_state_at_the_cursor(shown, faulty_trace: Trace) -> None:
    from inspector.ui.panels.counters import CountersPanel

    cursor, make = shown
    panel = make(CountersPanel, faulty_trace)
    for k in interesting_events(faulty_trace):
        cursor.set(k)
        state = faulty_trace.state_at(k)
        assert panel.values["threshold_tokens"].text() == f"{state['threshold_tokens']:,}"
        assert panel.values["compression_count"].text() == f"{state['compression_count']:,}"
        ev = faulty_trace.events[k]
        if ev.fault is not None:
            assert "Fault" in panel.alert.text()


def test_timeline_cursor_line_and_click_to_jump(shown, demo_trace: Trace) -> None:
    from inspector.ui.panels.timeline import TimelinePanel

    cursor, make = shown
    panel = make(TimelinePanel, demo_trace)
    fig = figures(demo_trace)
    assert set(panel.curves) >= {"tiktoken", "rough", "recorded"}, "one curve per figure the trace has"
    x, y = panel.curves["tiktoken"].getData()
    assert x.dtype == np.float64 and len(x) == len(demo_trace.requests)
    assert len(panel.threshold.getData()[0]) < 10, "threshold drawn from change points, not per request"
    k = demo_trace.compress_events[0]
    cursor.set(k)
    assert panel.cursor_line.line.value() == pytest.approx(fig.cursor_x(k))
    assert fig.cursor_x(k) % 1 == 0.5, "after a compression the cursor sits between requests"
    panel._clicked(12.2)  # what a click at x=12.2 in the plot does
    assert cursor.index == demo_trace.requests[12].event
    panel.cursor_line.line.setValue(30.0)  # dragging the line
    assert cursor.index == demo_trace.requests[30].event


def test_legends_sit_above_the_data_in_order(shown, demo_trace: Trace) -> None:
    from inspector.ui.panels.timeline import TimelinePanel

    _, make = shown
    panel = make(TimelinePanel, demo_trace, width=600, height=260)
    QApplication.processEvents()
    legend, view = panel.legend.sceneBoundingRect(), panel.plot.getViewBox().sceneBoundingRect()
    assert legend.height() > 0 and legend.bottom() <= view.top() + 1, "the legend never covers a curve"
    names = [label.text for _sample, label in panel.legend.items]
    assert names[-2:] == ["threshold", "context length"] and names[0].startswith("sent · ")
    assert "gate: no" in names, "the points of what each should_compress call tested are named"


def test_request_axes_tick_whole_numbers_even_for_one_request(shown) -> None:
    from inspector.ui.panels.compression import CompressionPanel
    from inspector.ui.panels.timeline import TimelinePanel
    from inspector.ui.synthetic import build_trace

    _, make = shown
    one = build_trace(requests=1)
    for cls in (TimelinePanel, CompressionPanel):
        panel = make(cls, one, width=500, height=240)
        axis = panel.plot.getAxis("bottom")
        assert not axis.autoSIPrefix
        lo, hi = panel.plot.getViewBox().viewRange()[0]
        ticks = [v for _spacing, values in axis.tickValues(lo, hi, 400) for v in values]
        assert ticks and all(float(v).is_integer() for v in ticks), ticks


def test_threshold_line_steps_when_update_model_changes_it(demo_trace: Trace) -> None:
    fig = figures(demo_trace)
    assert len(set(fig.threshold.tolist())) == 2, "the synthetic trace switches model once"
    from inspector.ui.derive import step_points

    xs, ys = step_points(fig.x, fig.threshold)
    assert sorted(set(ys.tolist())) == sorted(set(fig.threshold.tolist()))


def test_compression_timeline_has_one_dot_per_compression(shown, faulty_trace: Trace) -> None:
    from inspector.ui.panels.compression import CompressionPanel, describe

    cursor, make = shown
    panel = make(CompressionPanel, faulty_trace)
    fig = figures(faulty_trace)
    assert len(panel.dots.points()) == len(fig.compressions) == len(faulty_trace.compress_events)
    faulted = [c for c in fig.compressions if c.faulted]
    assert faulted, "the faulty trace has a timed-out compress"
    assert "FAULTED" in describe(faulted[0])
    ok = next(c for c in fig.compressions if not c.faulted)
    assert "before" in describe(ok) and f"{ok.after_tokens:,}" in describe(ok)
    panel._clicked(ok.x)
    assert cursor.index == ok.event, "clicking a compression dot selects the compress event"


def _with_idle_compress_calls(trace: Trace) -> Trace:
    """Two compress calls Hermes keeps nothing of: one returned its input, one was aborted."""
    last = trace.events[trace.compress_events[-1]]
    before = last.args["messages"]
    # the host records its rough estimate as tokens_before; a synthetic rough figure is 12% over tiktoken
    rough = sum(trace.store.tokens[k]["rough"] for k in trace.store.lists[before["$list"]])
    args = {"messages": before, "tokens_before": rough}
    trace.add_event(tm.Event(index=0, kind=tm.EV_COMPRESS, turn=last.turn, args=args,
                             result={"$list": before["$list"], "unchanged": True}))
    trace.add_event(tm.Event(index=0, kind=tm.EV_COMPRESS, turn=last.turn, args=args, result=None))
    return trace.finish()


def test_compression_header_counts_committed_compressions_as_the_replay_summary_does(shown) -> None:
    from inspector.trace.summary import summarise
    from inspector.ui.panels.compression import CompressionPanel, describe
    from inspector.ui.panels.timeline import TimelinePanel
    from inspector.ui.synthetic import build_trace

    cursor, make = shown
    trace = _with_idle_compress_calls(build_trace(60, faults=True, seed=7))
    fig = figures(trace)
    committed = [c for c in fig.compressions if c.committed]
    faulted = [c for c in fig.compressions if c.faulted]
    idle = fig.compressions[-2:]
    assert len(committed) == summarise(trace)["compressions"] >= 2 and faulted
    assert not any(c.committed or c.faulted for c in idle)

    panel = make(CompressionPanel, trace)
    cursor.set(0)
    assert panel.readout.text() == (f"{len(committed)} compressions committed, {len(faulted)} faulted, "
                                    "2 compress calls made no progress")
    assert len(panel.dots.points()) == len(fig.compressions), "every call still has its dot"
    assert "no progress, transcript unchanged" in describe(idle[0])
    timeline = make(TimelinePanel, trace)
    assert len(timeline.markers) == len(committed) + len(faulted), "no marker for a call that changed nothing"


def test_a_compress_call_that_changed_nothing_is_neither_last_compression_nor_alerted_as_one(shown) -> None:
    from inspector.ui.panels.compression import CompressionPanel
    from inspector.ui.panels.counters import CountersPanel
    from inspector.ui.synthetic import build_trace

    cursor, make = shown
    trace = _with_idle_compress_calls(build_trace(60, faults=True, seed=7))
    fig = figures(trace)
    committed = [c for c in fig.compressions if c.committed]
    timeline, counters = make(CompressionPanel, trace), make(CountersPanel, trace)
    no_progress, aborted = fig.compressions[-2:]
    for c, note in ((no_progress, "Compress: no progress, transcript unchanged"),
                    (aborted, "Compress aborted: transcript unchanged")):
        cursor.set(c.event)
        assert "Compression at this event" not in counters.alert.text()
        assert note in counters.alert.text()
        assert f"last before cursor: event {committed[-1].event}," in timeline.readout.text()
    cursor.set(committed[-1].event)
    assert "Compression at this event" in counters.alert.text()
    faulted = next(c for c in fig.compressions if c.faulted)
    cursor.set(faulted.event)
    last = [c for c in committed if c.event < faulted.event][-1]
    assert f"last before cursor: event {last.event}, {last.before_tokens:,} → {last.after_tokens:,}" in timeline.readout.text()
    cursor.set(committed[0].event - 1)
    assert "last before cursor" not in timeline.readout.text(), "no compression committed yet"


def test_an_unchanged_transcript_has_the_same_size_before_and_after(demo_trace: Trace) -> None:
    from inspector.ui.synthetic import build_trace

    fig = figures(_with_idle_compress_calls(build_trace(60, faults=True, seed=7)))
    no_progress, aborted = fig.compressions[-2:]
    for c in (no_progress, aborted):
        assert c.unit == "rough tok" and c.after_tokens == c.before_tokens > 0
        assert c.after_messages == c.before_messages > 0
    faulted = next(c for c in fig.compressions if c.faulted)
    assert faulted.unit == "tok" and faulted.after_tokens == faulted.before_tokens > 0
    ok = next(c for c in figures(demo_trace).compressions if c.committed)
    assert ok.unit == "tok" and 0 < ok.after_tokens < ok.before_tokens


def test_compare_mode_puts_each_compress_call_on_its_runs_staircase(shown) -> None:
    from inspector.compare.runs import Comparison, RunResult, RunSpec
    from inspector.ui.compare import CompareView
    from inspector.ui.panels.compression import CompressionPanel
    from inspector.ui.synthetic import build_trace

    traces = [build_trace(60, faults=False, seed=3), _with_idle_compress_calls(build_trace(60, faults=True, seed=7))]
    view = CompareView(Comparison(runs=[RunResult(spec=RunSpec(f"e{i}", (), f"run{i}"), trace=t)
                                        for i, t in enumerate(traces)]))
    cursor, make = shown
    panel = make(CompressionPanel, None)
    panel.set_comparison(view)
    cursor.set_trace(traces[0])
    counts = view.series("compression_count")
    expected = []
    for run, trace in enumerate(traces):
        steps = counts[run]
        for c in figures(trace).compressions:
            x = view.alignment.event_x(run, c.event)
            later = [y for row, y in enumerate(steps) if row > x and np.isfinite(y)]
            y = later[0] if later else steps[np.isfinite(steps)][-1]  # the staircase just after the call
            expected.append((x, y, "x" if c.faulted else "o", c.committed))
    dots = [(p.pos().x(), p.pos().y(), p.symbol(), p.brush().color().alpha() > 0) for p in panel.dots.points()]
    assert sorted(dots) == sorted(expected)
    assert sum(1 for *_, filled in dots if not filled) == 3, "hollow: run 2's timeout, no-progress and aborted calls"
    tips = [p.data() for p in panel.dots.points() if p.brush().color().alpha() == 0]
    assert sum("FAULTED" in t for t in tips) == 1 and sum("transcript unchanged" in t for t in tips) == 2
    cursor.set(0)
    n = [sum(c.committed for c in figures(t).compressions) for t in traces]
    assert panel.readout.text() == f"Compressions committed — run0: {n[0]} · run1: {n[1]}"


def test_diff_at_compress_compares_engine_input_and_output(shown, demo_trace: Trace) -> None:
    from inspector.ui.panels.diff import DiffPanel

    cursor, make = shown
    panel = make(DiffPanel, demo_trace)
    k = demo_trace.compress_events[0]
    cursor.set(k)
    before, after = event_lists(demo_trace.events[k])
    assert panel.comparison is not None
    assert (panel.comparison.before, panel.comparison.after) == (before, after)
    assert panel.comparison.stats["summarised"] > 0
    assert "summarised" in panel.header.text() and "dropped" in panel.header.text()
    kinds = {row.kind for row in panel.model.rows}
    assert "summarised" in kinds
    first = panel.model.first_interesting_row()
    assert panel.table.currentIndex().row() == first, "the first change is selected and shown"


def test_diff_at_select_context_compares_the_assembled_request_with_the_engines_selection(shown) -> None:
    from inspector.host.replay import replay
    from inspector.trace.model import EV_SELECT
    from inspector.ui.panels.diff import DiffPanel
    from tests.host.conftest import CountingEngine, coding_session

    class Trims(CountingEngine):
        def select_context(self, request_messages, **kw):
            if len(request_messages) > 4:
                return [request_messages[0], *request_messages[-2:]]
            return None  # the request goes out as assembled

    trace = replay(coding_session(3), Trims(), {"model": {"context_length": 128000}})
    selects = [e for e in trace.events if e.kind == EV_SELECT]
    trimmed = next(e for e in selects if e.result is not None)
    untouched = next(e for e in selects if e.result is None)
    cursor, make = shown
    panel = make(DiffPanel, trace)
    cursor.set(trimmed.index)
    assembled = trimmed.args["request_messages"]["$list"]
    assert (panel.comparison.before, panel.comparison.after) == (assembled, trimmed.result["$list"])
    assert "what the engine received" in panel.pair_at(trimmed.index)[0]
    title, before, after = panel.pair_at(untouched.index)
    assert before == after == untouched.args["request_messages"]["$list"] and "returned None" in title


def test_diff_at_a_select_context_that_mutated_its_input_shows_what_went_out(shown) -> None:
    from inspector.host.replay import replay
    from inspector.trace.model import EV_SELECT
    from inspector.ui.panels.diff import DiffPanel
    from tests.host.conftest import CountingEngine, coding_session

    class Mutates(CountingEngine):
        def select_context(self, request_messages, **kw):
            if len(request_messages) > 4:
                del request_messages[1:3]  # in place, returning None: Hermes sends the mutated list

    trace = replay(coding_session(3), Mutates(), {"model": {"context_length": 128000}})
    ev = next(e for e in trace.events if e.kind == EV_SELECT and e.fault is not None)
    assert ev.fault.kind == "mutated_input"
    cursor, make = shown
    panel = make(DiffPanel, trace)
    title, before, after = panel.pair_at(ev.index)
    assert (before, after) == (ev.args["request_messages"]["$list"], ev.result["$list"]) and before != after
    assert "what went on" in title and "discarded" not in title


def test_diff_elsewhere_compares_with_previous_request_and_highlights_words(shown, demo_trace: Trace) -> None:
    from inspector.ui.panels.diff import DiffPanel

    cursor, make = shown
    panel = make(DiffPanel, demo_trace)
    req = demo_trace.requests[5]
    cursor.set(req.event)
    assert panel.comparison.before == demo_trace.requests[4].selected
    assert panel.comparison.after == req.selected
    # a changed row gets word highlights (extra selections), text stays plain
    diff = panel.model.diff
    from inspector.trace.diff import diff_messages

    a = [{"role": "user", "content": "keep the <b>old</b> words here"}]
    b = [{"role": "user", "content": "keep the <b>new</b> words here"}]
    d = diff_messages(a, b)
    panel.model.set_diff(d, {})
    row = next(i for i, r in enumerate(panel.model.rows) if r.kind == "changed")
    panel.table.selectRow(row)
    assert "<b>old</b>" in panel.before_text.toPlainText()
    assert panel.before_text.extraSelections() and panel.after_text.extraSelections()
    assert diff is not None


def test_cache_strip_matches_the_request(shown, demo_trace: Trace) -> None:
    from inspector.ui.panels.cache import CachePanel

    cursor, make = shown
    panel = make(CachePanel, demo_trace)
    miss = demo_trace.next_cache_miss(0)
    req = demo_trace.requests[demo_trace.events[miss].request]
    cursor.set(miss)
    assert sum(panel.strip.blocks) == sum(req.cache.block_tokens)
    assert f"Request #{req.index}" in panel.header.text()
    assert panel.reason.text()
    if req.cache.cause_event is not None:
        assert panel.cause_button.isEnabled()
        panel.cause_button.click()
        assert cursor.index == req.cache.cause_event
    assert panel.strip.status_of(0, 1) in ("read", "written", "uncached")


def test_request_panel_shows_plain_text_never_html(shown, demo_trace: Trace) -> None:
    from inspector.ui.panels.request import RequestPanel

    cursor, make = shown
    panel = make(RequestPanel, demo_trace)
    # turn 2's user message contains markup; find a request that carries it
    req = demo_trace.requests[-1]
    cursor.set(req.event)
    keys = demo_trace.store.get_list(req.selected)
    assert panel.model.rowCount() == len(keys)
    html_row = next(
        (i for i, k in enumerate(keys) if "<b>this</b>" in str(demo_trace.store.messages[k].get("content"))), None
    )
    if html_row is None:  # compressed away at the end: look earlier
        req = next(r for r in demo_trace.requests if any(
            "<b>this</b>" in str(demo_trace.store.messages[k].get("content")) for k in demo_trace.store.get_list(r.selected)))
        cursor.set(req.event)
        keys = demo_trace.store.get_list(req.selected)
        html_row = next(i for i, k in enumerate(keys) if "<b>this</b>" in str(demo_trace.store.messages[k].get("content")))
    panel.table.selectRow(html_row)
    assert isinstance(panel.message_text, QPlainTextEdit)
    assert "Render <b>this</b> literally & keep <script>alert(1)</script>" in panel.message_text.toPlainText()
    panel.tabs.setCurrentIndex(2)
    assert '"messages"' in panel.raw_text.toPlainText()
    panel.tabs.setCurrentIndex(1)
    assert "lcm_expand" in panel.tools_text.toPlainText()


def test_engine_panel_status_follows_cursor(shown, demo_trace: Trace) -> None:
    from inspector.ui.panels.engine import EnginePanel

    cursor, make = shown
    panel = make(EnginePanel, demo_trace)
    assert panel.header.text().startswith("compressor")
    k = demo_trace.compress_events[-1]
    cursor.set(k)
    status = demo_trace.status_at(k)
    shown = {panel.status_item.child(i).text(0): panel.status_item.child(i).text(1)
             for i in range(panel.status_item.childCount())}
    assert shown["compression_count"] == str(status["compression_count"])
    sections = [panel.tree.topLevelItem(i).text(0) for i in range(panel.tree.topLevelItemCount())]
    assert "Config" in sections and "Files written" in sections and any(s.startswith("Tool schemas") for s in sections)


def test_engine_panel_shows_the_output_at_the_cursor_as_plain_text_and_steps_between_calls_with_output(
        shown, faulty_trace: Trace) -> None:
    from inspector.ui.panels.engine import EnginePanel

    trace = faulty_trace
    cursor, make = shown
    panel = make(EnginePanel, trace)
    with_output = [ev.index for ev in trace.events if ev.output is not None]
    assert len(with_output) >= 3
    k = with_output[1]
    saved, trace.events[k].output = trace.events[k].output, "<b>not bold</b> &amp;\nsecond line\n"
    try:
        panel.set_trace(trace)
        cursor.set(k)
        assert panel.output_text.toPlainText() == "<b>not bold</b> &amp;\nsecond line\n"
        assert panel.output_title.text().startswith(f"Printed and logged at event {k} ({trace.events[k].kind}): 2 lines")
        panel.next_output.click()
        assert cursor.index == with_output[2]
        assert panel.output_text.toPlainText() == trace.events[with_output[2]].output
        panel.prev_output.click()
        panel.prev_output.click()
        assert cursor.index == with_output[0]
        quiet = next(i for i in range(len(trace)) if trace.events[i].output is None)
        cursor.set(quiet)
        assert panel.output_text.toPlainText() == "" and panel.output_title.text().startswith("Nothing printed")
    finally:
        trace.events[k].output = saved


def _mouse(widget, kind, pos, buttons) -> None:  # noqa: ANN001 - a viewport, a QEvent type, a QPointF
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtGui import QMouseEvent

    button = Qt.MouseButton.LeftButton if kind != QMouseEvent.Type.MouseMove else Qt.MouseButton.NoButton
    event = QMouseEvent(kind, QPointF(pos), widget.mapToGlobal(QPointF(pos)), button, buttons,
                        Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, event)


def test_the_cursor_line_is_dragged_with_the_mouse(shown, demo_trace: Trace) -> None:
    from PySide6.QtCore import QEvent, QPointF, Qt

    from inspector.ui.panels.timeline import TimelinePanel

    cursor, make = shown
    panel = make(TimelinePanel, demo_trace)
    panel.resize(900, 400)
    cursor.set(demo_trace.requests[10].event)
    QApplication.processEvents()
    view = panel.plot_widget
    vb = panel.plot.getViewBox()
    line = panel.cursor_line.line

    def at(x: float) -> QPointF:
        (_, _), (y0, y1) = vb.viewRange()
        return view.mapFromScene(vb.mapViewToScene(QPointF(x, (y0 + y1) / 2))).toPointF()

    start = at(line.value()) + QPointF(2, 0)  # a couple of pixels off the line still grabs it
    target = at(40.0)
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    vp = view.viewport()
    _mouse(vp, QEvent.Type.MouseMove, start, none)
    assert line.pen().width() == 3, "hovering the line thickens it"
    _mouse(vp, QEvent.Type.MouseButtonPress, start, left)
    for i in range(1, 6):
        time.sleep(0.02)  # pyqtgraph drops mouse moves that come faster than its rate limit
        _mouse(vp, QEvent.Type.MouseMove, start + (target - start) * (i / 5), left)
    _mouse(vp, QEvent.Type.MouseButtonRelease, target, none)
    QApplication.processEvents()
    assert cursor.index == demo_trace.requests[40].event, "the drag moved the cursor to the request under the mouse"
    assert line.value() == pytest.approx(panel._fig.cursor_x(cursor.index))


def test_a_cold_start_is_named_once() -> None:
    from inspector.trace.model import CacheInfo
    from inspector.ui.panels.cache import reason_words

    text = reason_words(CacheInfo(reason_kind="cold", reason="cold start: first request; wrote 300 tokens"))
    assert text.lower().count("cold start") == 1 and "wrote 300 tokens" in text
    ttl = reason_words(CacheInfo(reason_kind="ttl", reason="TTL lapsed: 400 s since last use > 300 s"))
    assert ttl.startswith("Simulated cache: The cache entry expired") and "400 s" in ttl, "the simulator's, said so"


def test_the_cache_line_adds_up_to_the_prompt_the_engine_was_told(demo_trace: Trace) -> None:
    import re

    from inspector.ui.panels.cache import request_summary

    for req in demo_trace.requests[:20]:
        figures = [int(n.replace(",", "")) for n in re.findall(r"(?:· |read |written |uncached )([\d,]+)", request_summary(req))]
        total, read, written, uncached = figures[:4]
        assert "(simulated usage)" in request_summary(req), "a replay's usage is the host's, and says so"
        assert total == req.usage["prompt_tokens"] and read + written + uncached == total
        blocks = req.cache.read + req.cache.write + req.cache.uncached
        if total > blocks:  # the strip shows message blocks only: the line says what else there is
            assert f"incl. {total - blocks:,} for reply priming/tools, outside the blocks" in request_summary(req)


def test_the_cache_mini_plots_keep_their_ticks_apart(shown, demo_trace: Trace) -> None:
    from inspector.ui.panels.cache import CachePanel

    _, make = shown
    panel = make(CachePanel, demo_trace, width=700, height=520)
    for plot in (panel.hit_plot, panel.tok_plot, panel.cost_plot):
        axis = plot.getAxis("left")
        lo, hi = plot.getViewBox().viewRange()[1]
        labelled = [v for _spacing, values in axis.tickValues(lo, hi, plot.getViewBox().height()) for v in values]
        assert 1 <= len(labelled) <= 4, labelled
        assert plot.getViewBox().height() >= 40


def test_a_one_request_trace_shows_its_point(shown) -> None:
    from inspector.ui.panels.timeline import TimelinePanel
    from inspector.ui.synthetic import build_trace

    _, make = shown
    panel = make(TimelinePanel, build_trace(requests=1), width=500, height=240)
    assert panel.curves["tiktoken"].opts["symbol"] == "o"  # a lone point is a dot, not an invisible line
    more = make(TimelinePanel, build_trace(requests=5), width=500, height=240)
    assert more.curves["tiktoken"].opts["symbol"] is None


def test_an_empty_timeline_names_nothing(shown) -> None:
    from inspector.ui.panels.timeline import TimelinePanel

    _, make = shown
    panel = make(TimelinePanel, None)
    assert panel.legend.items == []


def test_a_short_timeline_gives_its_legend_row_to_the_data(shown, demo_trace: Trace) -> None:
    from inspector.ui.panels.timeline import TimelinePanel

    _, make = shown
    panel = make(TimelinePanel, demo_trace, width=600, height=140)
    QApplication.processEvents()
    assert not panel.legend.isVisible() and panel.legend.maximumHeight() == 0
    panel.resize(600, 400)
    QApplication.processEvents()
    assert panel.legend.isVisible() and panel.legend.maximumHeight() > 0


def test_run_labels_in_plot_legends_are_text_not_markup(qapp) -> None:
    import pyqtgraph as pg

    from inspector.ui import plots

    class View:
        runs = [0]

        @staticmethod
        def label(run: int) -> str:
            return '<img src="/etc/passwd"><b>run</b>'

        @staticmethod
        def color(run: int) -> str:
            return "#1e88e5"

    plot = pg.PlotItem()
    legend = plot.addLegend()
    (item,) = plots.overlay_runs(plot, View(), [np.arange(3, dtype=np.float64)], legend=legend)
    assert item.name() == "&lt;img src=&quot;/etc/passwd&quot;&gt;&lt;b&gt;run&lt;/b&gt;"


def test_a_legend_wraps_onto_more_rows_in_a_narrow_plot(qapp) -> None:
    import pyqtgraph as pg

    from inspector.ui import plots

    plot = pg.PlotItem()
    legend = plots.legend_above(plot, columns=4)
    for name in ("compressor", "lcm", "recall"):
        plots.curve(plot, "#1e88e5", name)
    wide = max(s.width() + lab.item.boundingRect().width() for s, lab in legend.items) + 13
    legend.fit(400, wide * 3 + 5)
    assert legend.columnCount == 3, "room for all three in one row"
    legend.fit(400, wide * 1.5)
    assert legend.columnCount == 1, "never past the plot's edge"
    legend.fit(60, wide * 3 + 5)
    assert not legend.isVisible(), "a short plot keeps its height for the data"


def test_counters_show_where_in_the_engine_a_fault_happened_on_a_line_that_keeps_file_and_line(
        shown, faulty_trace: Trace) -> None:
    from inspector.ui.panels.counters import CountersPanel

    cursor, make = shown
    panel = make(CountersPanel, faulty_trace, width=340)
    k = next(ev.index for ev in faulty_trace.events if ev.fault is not None and ev.fault.where)
    where = faulty_trace.events[k].fault.where
    cursor.set(k)
    QApplication.processEvents()
    assert "Fault at this event" in panel.alert.text()
    assert panel.fault_where.text() == f"at {where}"
    assert panel.fault_where.isVisible()
    drawn, cut = panel.fault_where._fitted(panel.fault_where.width() - 8)
    tail = where.rsplit("/", 1)[-1]  # file:line in function
    assert drawn[0].endswith(tail)
    if cut:
        assert where in panel.fault_where.toolTip()
    quiet = next(ev.index for ev in faulty_trace.events if ev.fault is None)
    cursor.set(quiet)
    assert panel.fault_where.text() == ""


def _comparison(*named: tuple[str, Trace]):  # noqa: ANN202 - a CompareView
    from inspector.compare.runs import Comparison, RunResult, RunSpec
    from inspector.ui.compare import CompareView

    return CompareView(Comparison(runs=[RunResult(spec=RunSpec(name, (), name), trace=t) for name, t in named]))


def test_comparison_counters_show_the_fault_of_a_run_at_the_cursor(shown, faulty_trace: Trace,
                                                                  demo_trace: Trace) -> None:
    from inspector.ui.panels.counters import CountersPanel

    cursor, make = shown
    panel = make(CountersPanel, None, width=400)
    view = _comparison(("faulty", faulty_trace), ("calm", demo_trace))
    panel.set_comparison(view)
    cursor.set_trace(view.primary_trace)
    k = next(ev.index for ev in faulty_trace.events if ev.fault is not None and ev.fault.where)
    cursor.set(k)
    QApplication.processEvents()
    assert f"Fault at faulty event {k}" in panel.alert.text()
    assert panel.fault_where.text() == f"at {faulty_trace.events[k].fault.where}"
    assert panel.alert.isVisible() and panel.fault_where.isVisible()
    quiet = next(ev.index for ev in faulty_trace.events if ev.fault is None and ev.kind == tm.EV_TURN)
    cursor.set(quiet)
    assert panel.alert.text() == "" and panel.fault_where.text() == ""


@pytest.mark.parametrize("width", [300, 330, 420])
def test_comparison_counter_columns_fit_the_panel_and_never_paint_over_each_other(
        shown, demo_trace: Trace, width: int) -> None:
    from inspector.ui.panels.counters import CountersPanel

    cursor, make = shown
    panel = make(CountersPanel, None, width=width)
    names = ("compressor-with-a-long-name", "lcm", "recall")
    view = _comparison(*((name, demo_trace) for name in names))
    panel.set_comparison(view)
    cursor.set_trace(view.primary_trace)
    panel.resize(max(width, panel.minimumSizeHint().width()), 500)
    cursor.set(len(demo_trace) - 1)
    QApplication.processEvents()
    box = panel.compare_box
    assert box.geometry().right() <= panel.width()
    grid = panel.compare_grid
    rows: dict[int, list] = {}
    for i in range(grid.count()):
        r, c, _rs, cs = grid.getItemPosition(i)
        if cs == 1:
            rows.setdefault(r, []).append((c, grid.itemAt(i).widget()))
    for r, cells in rows.items():
        cells.sort(key=lambda cell: cell[0])
        for (_c, left), (_d, right) in zip(cells, cells[1:]):
            assert left.geometry().right() < right.geometry().left(), f"row {r}: {left.text()!r} under {right.text()!r}"
        assert cells[-1][1].geometry().right() < box.width()
        for _c, cell in cells:
            if r > 0:  # a figure is never cut
                assert cell.fontMetrics().horizontalAdvance(cell.text()) <= cell.width() - 8, cell.text()
    head = rows[0][1][1]
    assert head.text() == names[0]
    drawn, cut = head._fitted(head.width())
    if cut:
        assert drawn[0].endswith("…") and names[0] in head.toolTip()
