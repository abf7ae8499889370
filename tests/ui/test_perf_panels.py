"""Diff, request, cache and plot panels: what their speed-ups keep exactly as it was.

The diff table builds each row's cells once and keeps previews by message key; both message
tables paint texts laid out once and cut to their column; the cache strip builds hover labels
only when read; the cursor line no longer makes a plot recompute its range. These tests check
the cells against the diff, the painted texts against the model's, the labels against the
request, and that a diff is computed once per pair of lists and a plot's range is left alone.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QApplication, QStyle

from inspector.trace import diff as tdiff
from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.derive import message_preview
from inspector.ui.panels.cache import CachePanel, strip_args
from inspector.ui.panels.diff import DiffPanel, DiffRowsModel
from inspector.ui.panels.request import RequestPanel
from inspector.ui.panels.timeline import TimelinePanel

ROLES = (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.BackgroundRole, Qt.ItemDataRole.ForegroundRole,
         Qt.ItemDataRole.TextAlignmentRole, Qt.ItemDataRole.FontRole, Qt.ItemDataRole.DecorationRole)


def _same_cut(shown_text: str, full: str) -> bool:
    """A displayed cell is the full text, or a prefix of it ended by an ellipsis."""
    return shown_text == full or (shown_text.endswith("…") and full.startswith(shown_text[:-1]))


def test_diff_cells_match_the_diff_at_every_request(shown, demo_trace: Trace) -> None:
    cursor, make = shown
    panel = make(DiffPanel, demo_trace)
    model = panel.model
    checked = 0
    for k in range(0, len(demo_trace), 3):
        cursor.set(k)
        QApplication.processEvents()
        diff = model.diff
        if diff is None:
            continue
        fresh = DiffRowsModel()  # same rows, nothing cached, no eliding
        fresh.set_diff(diff, model.tokens)
        assert [r.kind for r in fresh.rows] == [r.kind for r in model.rows]
        for row, r in enumerate(model.rows):
            for col in range(model.columnCount()):
                index, other = model.index(row, col), fresh.index(row, col)
                for role in ROLES[1:]:
                    assert model.data(index, role) == other.model().data(other, role), (k, row, col, role)
                full = fresh.data(other)
                assert full == model.display_texts(row)[col]
                assert _same_cut(model.data(index), full), (k, row, col)
            for col, side, idx, keys in ((1, diff.before, r.left, diff.keys_before), (4, diff.after, r.right, diff.keys_after)):
                if r.kind != "fold" and idx >= 0:
                    msg = side[idx]
                    expected = f"{msg.get('role', '?')} · {model.tokens.get(id(msg), 0):,} tok · {message_preview(msg, 140)}"
                    assert model.display_texts(row)[col] == expected
                    assert keys[idx] in model._previews
            checked += 1
    assert checked > 20


def test_diff_is_computed_once_per_pair_of_lists(shown, demo_trace: Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    cursor, make = shown
    panel = make(DiffPanel, demo_trace)
    calls: list[int] = []
    real = tdiff.diff_messages

    def counting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(tdiff, "diff_messages", counting)
    panel.render_trace(demo_trace)  # start with an empty cache
    pairs: set[tuple[int | None, int | None]] = set()
    for k in range(len(demo_trace)):
        cursor.set(k)
        title, before, after = panel.pair_at(k)
        if before is not None and after is not None:
            pairs.add((before, after))
    assert 0 < len(calls) <= len(pairs), "one diff per pair of lists, none for steps within a request"


def _check_shown_texts(panel) -> int:  # noqa: ANN001 - a panel with a PaintedTable and its model
    """Every cell shows the model's text, cut with an ellipsis only where the whole text does not fit."""
    table, model = panel.table, panel.model
    metrics = table.fontMetrics()
    checked = 0
    for row in range(model.rowCount()):
        for col in range(model.columnCount()):
            full = model.data(model.index(row, col)) or ""
            if not full or model.data(model.index(row, col), Qt.ItemDataRole.FontRole) is not None:
                continue
            shown = table.shown_text(row, col)
            room = table.columnWidth(col) - 2 * (table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin) + 1)
            assert _same_cut(shown, full), (row, col, shown, full)
            assert (shown == full) == (metrics.horizontalAdvance(full) <= room), (row, col)
            assert metrics.horizontalAdvance(shown) <= max(room, metrics.horizontalAdvance("…"))
            checked += 1
    return checked


@pytest.mark.parametrize("width", [520, 900, 1500])
def test_cells_show_their_text_cut_only_at_the_column_edge(shown, demo_trace: Trace, width: int) -> None:
    cursor, make = shown
    diff_panel = make(DiffPanel, demo_trace, width)
    request_panel = make(RequestPanel, demo_trace, width)
    cells = 0
    for req in demo_trace.requests[::4]:
        cursor.set(req.event)
        QApplication.processEvents()
        for panel in (diff_panel, request_panel):
            cells += _check_shown_texts(panel)
    assert cells > 200


def test_cut_texts_follow_a_column_resize(shown, demo_trace: Trace) -> None:
    cursor, make = shown
    panel = make(RequestPanel, demo_trace, 1400)
    cursor.set(demo_trace.requests[10].event)
    QApplication.processEvents()
    rows = range(panel.model.rowCount())
    wide = [panel.table.shown_text(r, 3) for r in rows]
    panel.resize(600, 500)
    QApplication.processEvents()
    narrow = [panel.table.shown_text(r, 3) for r in rows]
    assert narrow != wide and sum(map(len, narrow)) < sum(map(len, wide))
    assert _check_shown_texts(panel) > 0


def test_cache_strip_labels_match_the_request(demo_trace: Trace) -> None:
    for req in demo_trace.requests[::5]:
        blocks, labels, _read, _write, _brk = strip_args(demo_trace, req)
        keys = demo_trace.store.get_list(req.selected)
        offset = len(blocks) - len(keys)
        expected = []
        for i in range(len(blocks)):
            j = i - offset
            if 0 <= j < len(keys):
                msg = demo_trace.store.messages[keys[j]]
                expected.append(f"message {j} · {msg.get('role', '?')}: {message_preview(msg, 100)}")
            else:
                expected.append("tools / system block")
        assert len(labels) == len(blocks)
        assert list(labels) == expected
        assert labels[-1] == expected[-1] and labels[1:3] == expected[1:3]
        with pytest.raises(IndexError):
            labels[len(blocks)]


def test_moving_the_cursor_line_leaves_the_plot_range_alone(shown, demo_trace: Trace) -> None:
    cursor, make = shown
    panels = [make(TimelinePanel, demo_trace), make(CachePanel, demo_trace)]
    views = [panels[0].plot.getViewBox()] + [p.getViewBox() for p in (panels[1].hit_plot, panels[1].tok_plot,
                                                                        panels[1].cost_plot)]
    told: list[object] = []
    for vb in views:
        vb.itemBoundsChanged = told.append  # type: ignore[method-assign]
    ranges = [vb.viewRange() for vb in views]
    for req in demo_trace.requests[5:15]:
        cursor.set(req.event)
        QApplication.processEvents()
    assert panels[0].cursor_line.line.value() == pytest.approx(panels[0]._fig.cursor_x(cursor.index))
    assert told == [], "the cursor line is outside the range: moving it must not ask for a new one"
    assert [vb.viewRange() for vb in views] == ranges


class _PaintCounter(QObject):
    def __init__(self, target: QObject) -> None:
        super().__init__()
        self.target = target
        self.count = 0

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if obj is self.target and event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def test_diff_table_paints_once_when_its_scroll_bar_comes_or_goes(shown, demo_trace: Trace) -> None:
    cursor, make = shown
    panel = make(DiffPanel, demo_trace, 700, 330)
    bar = panel.table.verticalScrollBar()
    counter = _PaintCounter(panel.table.viewport())
    QApplication.instance().installEventFilter(counter)
    toggles = 0
    try:
        for k in range(len(demo_trace)):
            was = bar.isVisible()
            counter.count = 0
            cursor.set(k)
            QApplication.processEvents()
            if bar.isVisible() != was:
                toggles += 1
                assert counter.count == 1, f"event {k}: the table was painted {counter.count} times"
    finally:
        QApplication.instance().removeEventFilter(counter)
    assert toggles > 0, "the scroll bar came and went at least once"


def test_text_lines_and_panels_are_opaque(shown, demo_trace: Trace) -> None:
    _cursor, make = shown
    panel = make(DiffPanel, demo_trace)
    assert panel.autoFillBackground() and panel.header.autoFillBackground()
    assert theme.TextLine(parent=panel).autoFillBackground()
