"""Painted item views: rows drawn from the model's cells, looking as the stock views drew them.

The views replace only the painting of rows, so these tests read pixels: text drawn literally,
the selected row highlighted, cell backgrounds and alignment honoured, laid-out texts reused,
and in the tree each row's icon placed where the stock view puts its cell.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex
from PySide6.QtGui import QBrush, QColor, QFont, QImage
from PySide6.QtWidgets import QApplication

from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.painted_views import PaintedTable, cell_offsets
from inspector.ui.panels.events import EventsPanel

_OFFSETS = cell_offsets(2)


class TwoColumns(QAbstractTableModel):
    """Rows of (text, text) with optional background, foreground, alignment and font per cell."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        super().__init__()
        self.rows = rows

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 2

    def row_cells(self, row: int) -> tuple[Any, ...]:
        return self.rows[row]

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> Any:
        offset = _OFFSETS.get(role)
        return None if offset is None else self.rows[index.row()][offset + index.column()]


def _row(a: str, b: str, *, bg: QBrush | None = None, align: int | None = None, font: QFont | None = None) -> tuple:
    return (a, b, bg, bg, None, None, align, None, font, None)  # alignment and font: the first column


@pytest.fixture
def table(qapp) -> Iterator:  # noqa: ANN001
    made: list[PaintedTable] = []

    def make(rows: list[tuple]) -> PaintedTable:
        view = PaintedTable()
        view.setModel(TwoColumns(rows))
        view.verticalHeader().setVisible(False)
        view.verticalHeader().setDefaultSectionSize(20)
        view.horizontalHeader().resizeSection(0, 200)
        view.horizontalHeader().resizeSection(1, 200)
        view.resize(440, 200)
        view.show()
        QApplication.processEvents()
        made.append(view)
        return view

    yield make
    for view in made:
        view.close()
        view.deleteLater()


def _ink(image: QImage, x0: int, x1: int, y0: int, y1: int) -> list[int]:
    """Columns in the box holding a pixel unlike the row's background (taken at its top right corner)."""
    bg = image.pixelColor(image.width() - 1, y0).rgb()
    return [x for x in range(x0, x1) if any(image.pixelColor(x, y).rgb() != bg for y in range(y0, y1))]


def _cell_box(view: PaintedTable, row: int, col: int) -> tuple[int, int, int, int]:
    y = view.rowViewportPosition(row)
    x = view.columnViewportPosition(col)
    return x, x + view.columnWidth(col), y, y + view.rowHeight(row)


def test_markup_is_drawn_as_the_characters_it_is(table) -> None:  # noqa: ANN001
    view = table([_row("<b>ab</b>", ""), _row("ab", "")])
    image = view.viewport().grab().toImage()
    literal = _ink(image, *_cell_box(view, 0, 0))
    plain = _ink(image, *_cell_box(view, 1, 0))
    assert view.shown_text(0, 0) == "<b>ab</b>"
    assert plain and len(literal) > 2 * len(plain), "the tags are painted as text, not applied"


def test_selected_row_is_highlighted_and_backgrounds_are_painted(table) -> None:  # noqa: ANN001
    green = QBrush(QColor("#00ff00"))
    view = table([_row("a", "b", bg=green), _row("c", "d", bg=green), _row("e", "f")])
    view.selectRow(1)
    QApplication.processEvents()
    image = view.viewport().grab().toImage()
    highlight = view.palette().color(view.palette().ColorRole.Highlight)
    x0, x1, y0, _ = _cell_box(view, 0, 1)
    assert image.pixelColor(x1 - 3, y0 + 2) == QColor("#00ff00")
    x0, x1, y0, _ = _cell_box(view, 1, 1)
    assert image.pixelColor(x1 - 3, y0 + 2) == highlight, "the selection covers the cell's own background"
    x0, x1, y0, _ = _cell_box(view, 2, 1)
    assert image.pixelColor(x1 - 3, y0 + 2) != QColor("#00ff00")


def test_alignment_and_cutting_follow_the_column(table) -> None:  # noqa: ANN001
    right = theme.ALIGN_RIGHT
    long = "word " * 80
    view = table([_row("12", "x", align=right), _row(long, "y")])
    image = view.viewport().grab().toImage()
    x0, x1, y0, y1 = _cell_box(view, 0, 0)
    ink = _ink(image, x0, x1, y0, y1)
    assert ink and ink[0] > x0 + 150 and ink[-1] >= x1 - 12, "right-aligned text ends at the right edge"
    shown = view.shown_text(1, 0)
    assert shown.endswith("…") and long.startswith(shown[:-1])
    x0, x1, y0, y1 = _cell_box(view, 1, 0)
    assert _ink(image, x1 - 3, x1, y0, y1) == [], "a cut text ends inside its column, before the margin"
    view.horizontalHeader().resizeSection(0, 320)
    assert len(view.shown_text(1, 0)) > len(shown)


def test_laid_out_texts_are_reused_and_a_font_change_starts_over(table) -> None:  # noqa: ANN001
    view = table([_row(f"row {i}", "same") for i in range(6)])
    cache = view._rows._texts
    view.viewport().repaint()
    laid_out = dict(cache)
    view.viewport().repaint()
    assert cache == laid_out and all(cache[k][0] is laid_out[k][0] for k in cache)
    bigger = QFont(view.font())
    bigger.setPointSize(bigger.pointSize() + 6)
    view.setFont(bigger)
    assert not cache, "texts laid out in the old font are dropped"
    view.viewport().repaint()
    assert cache


def test_italic_cells_use_their_font(table) -> None:  # noqa: ANN001
    italic = QFont()
    italic.setItalic(True)
    view = table([_row("same words", "", font=italic), _row("same words", "")])
    assert {k[1] for k in (*view._rows._texts, *view._rows._once)} == {0, id(italic)}  # painted once or more


def test_event_tree_rows_sit_where_the_stock_view_puts_them(shown, demo_trace: Trace) -> None:  # noqa: ANN001
    cursor, make = shown
    panel = make(EventsPanel, demo_trace, 500, 600)
    cursor.set(demo_trace.requests[3].event + 1)
    QApplication.processEvents()
    view, model = panel.view, panel.model
    image = view.viewport().grab().toImage()
    margin = view.style().pixelMetric(view.style().PixelMetric.PM_FocusFrameHMargin, None, view) + 1
    rows = 0
    index = view.indexAt(view.viewport().rect().topLeft())
    depths = set()
    while index.isValid() and view.visualRect(index).bottom() < view.viewport().height():
        rect = view.visualRect(index)
        ink = _ink(image, rect.left(), rect.left() + 24, rect.top() + 2, rect.bottom() - 2)
        assert ink and abs(ink[0] - (rect.left() + margin)) <= 2, f"icon of row {model.event_of(index)}"
        if not model.children_of(model.event_of(index)):
            assert _ink(image, rect.left() - 14, rect.left(), rect.top() + 2, rect.bottom() - 2) == [], \
                "no branch arrow before a row without children"
        else:
            assert _ink(image, rect.left() - 14, rect.left(), rect.top() + 2, rect.bottom() - 2), "an expand arrow"
        depths.add(model.depth_at(index))
        rows += 1
        index = view.indexBelow(index)
    assert rows > 10 and depths >= {0, 1, 2}
    selected = view.visualRect(view.currentIndex())
    highlight = view.palette().color(view.palette().ColorRole.Highlight)
    assert image.pixelColor(view.viewport().width() - 3, selected.top() + 2) == highlight


def _tree_images(view) -> tuple[QImage, QImage, int]:  # noqa: ANN001 - PaintedTree
    """The viewport as the tree's own row loop paints it, as ``drawTree`` + ``drawRow`` paint it, and
    how many rows the second way drew (none are drawn that way by the first).

    A text is drawn directly the first time and from its laid-out copy after that, which can
    differ by a pixel's shade: both are grabbed after a first paint."""
    view.viewport().grab()
    calls: list[int] = []
    original = view.drawRow

    def counted(*args) -> None:  # noqa: ANN002
        calls.append(1)
        original(*args)

    view.drawRow = counted
    own = view.viewport().grab().toImage()
    assert calls == [], "the rows were painted by the tree's own loop, not row by row from drawTree"
    view._paint_rows = lambda event: False  # the stock path
    stock = view.viewport().grab().toImage()
    del view._paint_rows
    del view.drawRow
    return own, stock, len(calls)


def test_event_tree_paints_exactly_what_the_stock_row_path_painted(shown, demo_trace: Trace) -> None:  # noqa: ANN001
    cursor, make = shown
    panel = make(EventsPanel, demo_trace, 500, 600)
    view, model = panel.view, panel.model
    for k in (demo_trace.requests[3].event + 1, demo_trace.requests[20].event, 0):
        cursor.set(k)
        QApplication.processEvents()
        own, stock, drawn = _tree_images(view)
        assert drawn > 10 and own == stock, f"cursor at {k}"
    # a selected row with children: its arrow on the highlight
    turn = model.top_level()[5]
    cursor.set(turn)
    QApplication.processEvents()
    assert model.children_of(model.event_of(view.currentIndex()))
    own, stock, _ = _tree_images(view)
    assert own == stock
    # collapsed turns and a filtered (flat) list
    view.collapseAll()
    QApplication.processEvents()
    own, stock, _ = _tree_images(view)
    assert own == stock
    panel.filter_edit.setText("select")
    panel.apply_filter()
    QApplication.processEvents()
    assert model.is_flat
    own, stock, _ = _tree_images(view)
    assert own == stock


def test_a_list_shorter_than_the_view_and_other_styles_take_the_stock_path(shown, lifecycle_only_trace: Trace) -> None:  # noqa: ANN001
    cursor, make = shown
    panel = make(EventsPanel, lifecycle_only_trace, 500, 600)
    view = panel.view
    assert view.model().rowCount() * 30 < view.viewport().height()
    calls: list[int] = []
    original = view.drawRow
    view.drawRow = lambda *args: (calls.append(1), original(*args))
    view.viewport().grab()
    assert calls, "the empty space below the last row is painted by drawTree"
    del view.drawRow
    from PySide6.QtWidgets import QStyleFactory

    style = QStyleFactory.create("Windows")
    view.setStyle(style)
    panel.resize(500, 60)  # rows now fill the view
    QApplication.processEvents()
    calls.clear()
    view.drawRow = lambda *args: (calls.append(1), original(*args))
    view.viewport().grab()
    assert calls, "branch lines of other styles are drawn by drawBranches"
    del view.drawRow


def test_numbers_are_cut_exactly_as_elided_text_cuts_them(table) -> None:  # noqa: ANN001
    """Figures are measured from their glyphs' advances when they surely fit; the result must be
    what QFontMetrics.elidedText gives, at every width, in the plain, bold and italic fonts."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QFontMetrics

    view = table([_row("1", "2")])
    rows = view._rows
    numbers = ["0", "7", "42", "1.5", "-3", "+12", "999", "12,345", "1,234,567", "48,213.75", "+1,000,000", "0.0"]
    for style in ("plain", "bold", "italic"):
        font = QFont(view.font())
        font.setBold(style == "bold")
        font.setItalic(style == "italic")
        metrics = rows._metrics(font)
        assert rows._figures[id(metrics)] is not None, f"{style}: figures are measured from their advances"
        reference = QFontMetrics(font)
        for text in numbers:
            for width in range(0, reference.horizontalAdvance(text) + 12):
                expected = reference.elidedText(text, Qt.TextElideMode.ElideRight, width)
                assert rows._elided(metrics, text, width) == expected, (style, text, width)


def test_what_no_row_covers_is_background_on_screen(table, shown, lifecycle_only_trace: Trace, demo_trace: Trace) -> None:  # noqa: ANN001
    """The views fill their viewport's background themselves (only where no row does): after
    rows go away, the screen shows the background there, as a full repaint draws it."""
    from PySide6.QtGui import QColor as Colour

    def on_screen(widget) -> QImage:  # noqa: ANN001
        window = widget.window()
        origin = widget.mapTo(window, widget.rect().topLeft())
        return window.screen().grabWindow(window.winId()).toImage().copy(
            widget.rect().translated(origin))

    view = table([_row(f"row {i}", "x") for i in range(9)])
    model = view.model()
    model.beginResetModel()
    model.rows = model.rows[:2]
    model.endResetModel()
    QApplication.processEvents()
    viewport = view.viewport()
    shown_now = on_screen(viewport)
    assert shown_now == viewport.grab().toImage()
    below = view.rowViewportPosition(1) + view.rowHeight(1) + 5
    assert shown_now.pixelColor(100, below) == viewport.palette().color(viewport.backgroundRole())
    assert shown_now.pixelColor(100, below) != Colour("#000000")

    cursor, make = shown
    panel = make(EventsPanel, demo_trace, 500, 600)  # a long list: rows cover the list
    cursor.set_trace(lifecycle_only_trace)  # a short one: the stock rows and the background below
    QApplication.processEvents()
    tree_viewport = panel.view.viewport()
    assert on_screen(tree_viewport) == tree_viewport.grab().toImage()
