"""Event list: stepping repaints little, and the cached cells say exactly what the trace says.

A full repaint of the list costs ~10 ms, so stepping must not scroll on every step (it used to,
once the cursor reached the bottom edge) nor expand a turn on every turn boundary. The cells
are built once per row and cached, so they must still match the trace and follow bookmarks.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QIcon
from PySide6.QtWidgets import QApplication

from inspector.trace import model as tm
from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.derive import event_label
from inspector.ui.event_model import EventTreeModel
from inspector.ui.panels.events import EXPAND_AROUND
from inspector.ui.synthetic import build_trace


def _row_visible(events) -> bool:  # noqa: ANN001 - EventsPanel
    rect = events.view.visualRect(events.view.currentIndex())
    return rect.isValid() and rect.top() >= 0 and rect.bottom() <= events.view.viewport().height()


def test_stepping_follows_the_cursor_and_scrolls_rarely(window) -> None:
    trace = build_trace(80, seed=5)
    window.set_trace(trace)
    events = window.panels["events"]
    bar = events.view.verticalScrollBar()
    scrolls = 0
    steps = 250
    for _ in range(steps):
        before = bar.value()
        window.cursor.step(1)
        QApplication.processEvents()
        assert events.selected_event() == window.cursor.index, "the selection follows the cursor"
        assert _row_visible(events), "the cursor row is on screen"
        scrolls += bar.value() != before
    assert 0 < scrolls < steps // 5, f"the list scrolled on {scrolls} of {steps} steps"
    for _ in range(60):  # and back
        window.cursor.step(-1)
        QApplication.processEvents()
        assert events.selected_event() == window.cursor.index
        assert _row_visible(events)


def test_turns_are_expanded_in_batches_while_stepping(window) -> None:
    trace = build_trace(120, seed=5)
    window.set_trace(trace)
    events = window.panels["events"]
    batches = 0
    expanded: list[QModelIndex] = []
    events.view.expanded.connect(expanded.append)
    for _ in range(400):
        expanded.clear()
        window.cursor.step(1)
        QApplication.processEvents()
        batches += bool(expanded)
    turns_crossed = sum(1 for ev in trace.events[:window.cursor.index + 1] if ev.kind == tm.EV_TURN)
    assert turns_crossed > 3 * EXPAND_AROUND
    assert batches <= turns_crossed // EXPAND_AROUND + 1, f"{batches} expansion passes for {turns_crossed} turns"
    # the cursor's turn and every request under it are open
    index = events.view.currentIndex()
    parent = index.parent()
    while parent.isValid():
        assert events.view.isExpanded(parent)
        parent = parent.parent()


def test_a_jump_expands_only_the_target_turn(window) -> None:
    trace = build_trace(120, seed=5)
    window.set_trace(trace)
    events = window.panels["events"]
    target = trace.requests[90].event
    window.cursor.set(target)
    QApplication.processEvents()
    assert events.selected_event() == target
    assert _row_visible(events)
    model = events.model
    top = model.top_level()
    turn_row = next(r for r, k in enumerate(top) if model.index_for_event(k) == _top_ancestor(model, target))
    neighbours = [top[r] for r in (turn_row - 1, turn_row + 1) if 0 <= r < len(top) and model.children_of(top[r])]
    assert neighbours
    assert not any(events.view.isExpanded(model.index_for_event(k)) for k in neighbours)


def _top_ancestor(model: EventTreeModel, k: int) -> QModelIndex:
    index = model.index_for_event(k)
    while index.parent().isValid():
        index = index.parent()
    return index


def _norm(value: object) -> object:
    if isinstance(value, QBrush):
        return ("brush", value.color().name())
    if isinstance(value, QFont):
        return ("font", value.bold())
    if isinstance(value, QIcon):
        return ("icon", value.isNull())
    return value


def test_cells_say_what_the_trace_says(faulty_trace: Trace) -> None:
    model = EventTreeModel()
    model.set_trace(faulty_trace)
    fault_colour = QColor(theme.FAULT).name()
    roles = Qt.ItemDataRole
    for ev in faulty_trace.events:
        k = ev.index
        cells = [model.index_for_event(k).siblingAtColumn(c) for c in range(3)]
        assert [model.data(i) for i in cells] == [
            event_label(faulty_trace, ev), str(k), f"{ev.duration * 1000:.1f}" if ev.duration else "",
        ]
        assert isinstance(model.data(cells[0], roles.DecorationRole), QIcon)
        assert model.data(cells[1], roles.DecorationRole) is None
        assert _norm(model.data(cells[0], roles.FontRole)) == (
            ("font", True) if ev.kind in (tm.EV_TURN, tm.EV_COMPRESS) else None
        )
        assert model.data(cells[0], roles.TextAlignmentRole) is None
        assert model.data(cells[2], roles.TextAlignmentRole) == theme.ALIGN_RIGHT
        assert model.data(cells[0], roles.CheckStateRole) is None
        assert model.data(cells[0], roles.BackgroundRole) is None
        fg = [_norm(model.data(i, roles.ForegroundRole)) for i in cells]
        if ev.fault is not None:
            assert fg[0] == fg[1] == fg[2] == ("brush", fault_colour)
        else:
            assert fg[0] is None and fg[1] == fg[2] == ("brush", "#78909c")
        assert f"event {k} · {ev.kind}" in model.data(cells[0], roles.ToolTipRole)
        if ev.output is not None:  # the end of what the engine wrote, escaped like the rest
            assert "engine output:" in model.data(cells[0], roles.ToolTipRole)
            assert html.escape(ev.output.splitlines()[-1]) in model.data(cells[0], roles.ToolTipRole)
    assert any(ev.fault is not None for ev in faulty_trace.events)
    assert any(ev.output is not None and ev.fault is not None for ev in faulty_trace.events)


def test_a_tooltip_keeps_the_last_lines_of_output_however_long_each_is() -> None:
    trace = build_trace(8, faults=False, seed=5)
    ev = next(e for e in trace.events if e.kind == tm.EV_RESPONSE)
    ev.output = "x" * 4000 + "\n… 123 more characters dropped (this event's limit)\n"
    model = EventTreeModel()
    model.set_trace(trace)
    tip = model.data(model.index_for_event(ev.index), Qt.ItemDataRole.ToolTipRole)
    assert "123 more characters dropped" in tip


def test_bookmarks_show_on_cached_rows(window) -> None:
    trace = build_trace(20, seed=11)
    window.set_trace(trace)
    events = window.panels["events"]
    model = events.model
    index = model.index_for_event(9)
    label = model.data(index)
    QApplication.processEvents()  # the row has been painted (cells cached) before the bookmark
    window.set_bookmark(9, "look here")
    assert model.data(index) == "★ " + label
    assert isinstance(model.data(index.siblingAtColumn(2), Qt.ItemDataRole.BackgroundRole), QBrush)
    assert "bookmark: look here" in model.data(index, Qt.ItemDataRole.ToolTipRole)
    window.delete_bookmark(9)
    assert model.data(index) == label
    assert model.data(index, Qt.ItemDataRole.BackgroundRole) is None


def test_the_text_filter_is_prepared_in_idle_time_after_a_long_trace_opens(window, qtbot) -> None:
    from inspector.ui.panels.events import WARM_SLICE

    trace = build_trace(1300, seed=9)
    assert len(trace) > 3 * WARM_SLICE
    window.set_trace(trace)
    events = window.panels["events"]
    assert events._warm_timer.isActive(), "preparation runs a slice at a time, not all at once"
    qtbot.waitUntil(lambda: not events._warm_timer.isActive(), timeout=20_000)
    assert None not in events.model._hay
    fresh = EventTreeModel()
    fresh.set_trace(trace)
    for text in ("compress", "turn 3", "request"):
        events.model.set_filter(text, frozenset())
        fresh.set_filter(text, frozenset())
        assert events.model._flat == fresh._flat, "prepared labels filter exactly like labels made on demand"


def test_a_faulted_call_s_tooltip_names_the_fault_once_and_ends_with_the_last_line_printed() -> None:
    trace = build_trace(8, faults=False, seed=5)
    ev = next(e for e in trace.events if e.kind == tm.EV_RESPONSE)
    message = "KeyError: 'usage payload " + "z" * 150 + "'"
    frames = "".join(f'  File "/site/host/layer{i}.py", line {i}, in call{i}\n    step{i}()\n' for i in range(5))
    ev.fault = tm.Fault("exception", message, "Traceback (most recent call last):\n" + frames
                        + '  File "/plugins/noisy/__init__.py", line 21, in update_from_response\n'
                        + "    raise KeyError(payload)\n" + message + "\n")
    ev.output = "".join(f"debug {i:02d} state=" + "y" * 180 + f" LAST{i:02d}\n" for i in range(11)) + "FINAL: about to fail\n"
    model = EventTreeModel()
    model.set_trace(trace)
    tip = html.unescape(model.data(model.index_for_event(ev.index), Qt.ItemDataRole.ToolTipRole))
    assert tip.endswith("FINAL: about to fail</pre></qt>")
    assert "LAST10" in tip, "each long output line keeps its end"
    assert tip.count("usage payload") == 1
    assert ev.fault.where is not None and f"at {ev.fault.where}" in tip
    assert "layer0.py" not in tip, "a few traceback lines, not all of them"


def test_a_jump_into_a_collapsed_turn_repaints_the_rows_and_scroll_bar_only(shown, demo_trace: Trace) -> None:  # noqa: ANN001
    """Expanding the target's turn must not repaint the panel, the list's frame or its column header:
    nothing in them changed (pausing updates during the expansion used to repaint all three)."""
    from PySide6.QtCore import QEvent, QObject

    from inspector.ui.panels.events import EventsPanel

    cursor, make = shown
    panel = make(EventsPanel, demo_trace, 500, 600)
    model, view = panel.model, panel.view
    nested = [ev.index for ev in demo_trace.events if model.depth_at(model.index_for_event(ev.index)) == 2]
    cursor.set(nested[3])
    QApplication.processEvents()
    target = next(k for k in reversed(nested) if not view.isExpanded(_top_ancestor(model, k)))
    painted: list[QObject] = []

    class Paints(QObject):
        def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
            if event.type() == QEvent.Type.Paint:
                painted.append(obj)
            return False

    paints = Paints()
    QApplication.instance().installEventFilter(paints)
    try:
        cursor.set(target)
        QApplication.processEvents()
    finally:
        QApplication.instance().removeEventFilter(paints)
    assert view.isExpanded(_top_ancestor(model, target)) and panel.selected_event() == target
    assert view.viewport() in painted, "the rows are painted"
    for widget, name in ((panel, "panel"), (view, "frame"), (view.header().viewport(), "header")):
        assert widget not in painted, f"the {name} was repainted"
