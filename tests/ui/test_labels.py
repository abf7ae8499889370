"""Every count says what it is: sent, messages only, provider-reported, simulated; and a request
over the window is called out where its figures are shown."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from inspector.trace.model import Trace
from inspector.ui.synthetic import build_trace


def test_the_event_tree_says_a_request_count_is_what_was_sent(demo_trace: Trace) -> None:
    from inspector.ui.derive import event_label

    req = demo_trace.requests[4]
    label = event_label(demo_trace, demo_trace.events[req.event])
    assert f"{req.tokens['tiktoken']:,} tok sent" in label


def test_the_counters_say_whose_figures_they_show(shown, demo_trace: Trace) -> None:
    from inspector.ui.panels.counters import ROW_TIPS, CountersPanel

    cursor, make = shown
    panel = make(CountersPanel, demo_trace)
    turn = next(e for e in demo_trace.events if e.kind == "turn" and e.turn == 3)
    cursor.set(turn.index)
    text = panel.where.text()
    assert "simulated usage" in text and "this turn has sent nothing yet" in text, \
        "at a turn's start the figures are the previous request's, and it says so"
    assert "update_from_response" in ROW_TIPS["last_prompt_tokens"]


def test_the_cache_line_says_its_usage_is_simulated_and_so_is_the_strip(shown, demo_trace: Trace) -> None:
    from inspector.ui.panels.cache import CachePanel

    cursor, make = shown
    panel = make(CachePanel, demo_trace, height=700)
    cursor.set(demo_trace.requests[6].event)
    assert "(simulated usage)" in panel.header.text() and panel.reason.text().startswith("Simulated cache:")


def test_a_request_over_the_window_is_called_out(shown) -> None:
    from inspector.ui.panels.counters import CountersPanel
    from inspector.ui.panels.timeline import TimelinePanel

    trace = build_trace(12, context_length=600, seed=11)
    over = next(r for r in trace.requests if r.tokens["tiktoken"] > trace.state_at(r.event)["context_length"])
    cursor, make = shown
    counters = make(CountersPanel, trace)
    timeline = make(TimelinePanel, trace)
    cursor.set(over.event)
    QApplication.processEvents()
    assert "Over the window" in counters.alert.text()
    assert "OVER THE WINDOW" in timeline.readout.text()
    assert any(item.name() == "over the window" for item in timeline.gate_items)


def test_a_small_session_fills_the_plot_instead_of_a_flat_line_at_zero(shown) -> None:
    from inspector.ui.panels.timeline import TimelinePanel

    trace = build_trace(8, context_length=1_000_000, seed=2)
    cursor, make = shown
    panel = make(TimelinePanel, trace)
    cursor.set(trace.requests[-1].event)
    top = panel.plot.getViewBox().viewRange()[1][1]
    sent = max(r.tokens.get("tiktoken", 0) for r in trace.requests)
    threshold = max(trace.state_at(r.event)["threshold_tokens"] for r in trace.requests)
    assert threshold > 10 * sent, "a session far below its threshold"
    assert top < 2 * sent, "y fits the data, not the threshold or the million-token window"
    assert "threshold" in panel.readout.text(), "the limits are still named"
