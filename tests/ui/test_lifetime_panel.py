"""The lifetime panel: the selected message's strip, the session chart, lost facts that jump."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from inspector.config import load_config
from inspector.host.replay import replay
from inspector.quality import lifetime as lt
from inspector.ui.panels.lifetime import LifetimePanel

from ..host.conftest import NoCache
from ..quality.conftest import KeepLastTwo, url, url_session


def compacted_trace():
    class Keep(KeepLastTwo):
        keep = (url(1),)

    config = load_config(None, {"model": {"context_length": 64000}, "inspector": {"hook_timeout_seconds": 2}})
    return replay(url_session(), Keep(), config, simulator=NoCache())


def test_the_selected_message_follows_the_cursor_and_its_strip_shows_its_lifetime(shown) -> None:
    trace = compacted_trace()
    cursor, make = shown
    panel = make(LifetimePanel, trace, 1100, 500)
    cursor.set(trace.requests[2].event)
    QApplication.processEvents()
    life = panel.analysis.lifetimes
    newest = panel.selected
    assert newest is not None and life.messages[newest].sent[0] == 2  # the message request 2 added
    strip = panel.strip_image.image
    assert strip.shape[0] == len(trace.requests)
    expected = [lt.CELL_NONE] * len(trace.requests)
    for r, code in lt.life_cells(life.messages[newest], life.requests):
        expected[r] = code
    assert [int(v) for v in strip[:, 0]] == expected
    assert expected[:2] == [lt.CELL_NONE] * 2 and lt.CELL_SUMMARISED in expected  # not yet, then compacted
    assert panel.events_list.count() == len(life.messages[newest].events)
    # a mark per lifetime event on the strip: where, what, and its kind's colour and symbol
    from inspector.ui.panels.lifetime import EVENT_COLOURS, describe_event

    events = life.messages[newest].events
    marks = panel.strip_marks.data
    assert [p.data() for p in panel.strip_marks.points()] == [describe_event(e) for e in events]
    assert list(marks["x"]) == [float(e.request) for e in events] and set(marks["y"]) == {0.5}
    assert [b.color().name() for b in marks["brush"]] == [EVENT_COLOURS[e.kind] for e in events]
    assert list(marks["symbol"]) == ["t" if e.kind in (lt.SUMMARISED, lt.DROPPED) else "o" for e in events]
    chart = panel.chart_image.image
    assert chart.shape == (len(trace.requests), len(life.messages))  # requests × messages, one image


def test_a_lost_fact_selects_its_origin_message_and_jumps_to_where_it_was_first_sent(shown) -> None:
    trace = compacted_trace()
    cursor, make = shown
    panel = make(LifetimePanel, trace, 1100, 500)
    cursor.set(len(trace) - 1)
    QApplication.processEvents()
    lost = [panel.lost_list.item(i).text() for i in range(panel.lost_list.count())]
    assert any(url(0) in t for t in lost) and not any(url(1) in t for t in lost)  # url 1 is in the summary
    row = next(i for i, t in enumerate(lost) if url(0) in t)
    panel._lost_clicked(panel.lost_list.item(row))
    QApplication.processEvents()
    origin = panel.selected
    assert trace.store.messages[panel.analysis.lifetimes.messages[origin].key]["content"] == url(0)
    assert cursor.index == panel.analysis.lifetimes.messages[origin].events[0].event
    assert not panel.follow.isChecked()  # a clicked message stays selected while the cursor moves
    cursor.set(len(trace) - 1)
    QApplication.processEvents()
    assert panel.selected == origin
    panel.follow.setChecked(True)
    QApplication.processEvents()
    assert panel.selected != origin


def test_in_a_window_the_analysis_is_a_background_job_and_a_newer_trace_supersedes_it(qtbot, shown, monkeypatch) -> None:
    import threading

    from inspector.quality.analysis import analyse, cached_analysis
    from inspector.ui.jobs import JobRunner
    from inspector.ui.panels import lifetime
    from inspector.ui.synthetic import build_trace

    # never analysed (a replay analyses its own)
    first, second = build_trace(200, seed=1), build_trace(200, seed=2)
    assert cached_analysis(first) is None and cached_analysis(second) is None
    superseded = threading.Event()

    def slow_for_the_first(trace):  # noqa: ANN001, ANN202  still running when superseded, however fast the machine
        if trace is first:
            superseded.wait(20)
        return analyse(trace)

    monkeypatch.setattr(lifetime, "analyse", slow_for_the_first)
    cursor, make = shown
    jobs = JobRunner()
    LifetimePanel.jobs = jobs  # as the window sets it on every panel it makes
    try:
        panel = make(LifetimePanel, first, 1100, 500)
        key = ("lifetime", id(panel))
        job = jobs.current(key)
        assert job is not None and panel.analysis is None, "not computed on the GUI thread"
        assert panel.readout.text() == "Tracing every message's lifetime…"
        cursor.set_trace(second)  # a follow update, say: the first trace's analysis is no longer wanted
        assert job.superseded and jobs.current(key) is not job
        superseded.set()
        cursor.set(len(second) // 2)  # the cursor moves on meanwhile: nothing to draw yet, nothing blocks
        qtbot.waitUntil(lambda: panel.analysis is not None, timeout=20_000)
        assert panel._analysed_for is second and panel.analysis is cached_analysis(second)
        assert panel.chart_image.image.shape[0] == len(second.requests)
        assert panel.selected is not None  # rendered at the cursor once the analysis arrived
        third = build_trace(250, seed=3)
        cursor.set_trace(third)
        assert jobs.current(key) is not None
        panel.refresh()  # an export or a screenshot waits for the analysis rather than picture its placeholder
        assert panel.analysis is cached_analysis(third) and jobs.current(key) is None
    finally:
        superseded.set()
        LifetimePanel.jobs = None
        jobs.shutdown(5_000)


def test_selecting_message_after_message_reuses_the_strip_marks_pictures(shown) -> None:
    """The strip's scatter keeps a picture per (symbol, size, pen, brush object): marks of one kind
    share one brush, so moving through messages draws from the pictures already made."""
    trace = compacted_trace()
    cursor, make = shown
    panel = make(LifetimePanel, trace, 1100, 500)
    cursor.set(trace.requests[-1].event)
    QApplication.processEvents()
    messages = len(panel.analysis.lifetimes.messages)
    kinds = {e.kind for life in panel.analysis.lifetimes.messages for e in life.events}
    for index in range(messages):
        panel.select_message(index)
        QApplication.processEvents()
    pictures = len(panel.strip_marks.fragmentAtlas)
    assert messages > 3 and pictures <= len(kinds)
    for index in range(messages):
        panel.select_message(index)
        QApplication.processEvents()
    assert len(panel.strip_marks.fragmentAtlas) == pictures
    low, high = panel.strip.getViewBox().viewRange()[1]
    assert abs(low + 0.05) < 1e-9 and abs(high - 1.05) < 1e-9, "the strip still spans its one row"
