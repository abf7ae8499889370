"""Item views that paint their rows in Python from prebuilt cells and glyphs laid out once.

A stock ``QTableView`` or ``QTreeView`` paints a cell by asking the model for each role (one
call from C++ into Python per role per cell) and then laying its text out afresh with the
style, on every paint. The request and diff tables repaint whole on every new request and the
event list repaints a few rows on every step, which cost about 6 ms of a cursor step. These
views keep everything else of their Qt base (header, selection, keyboard, mouse, tooltips,
scrolling, the tree's branches and expansion) and replace only the painting of rows: the model
hands over a row's cells as one tuple (``RowCells``), and each text is laid out once into a
``QStaticText`` (as plain text, never rich text), cut to its column with an ellipsis, and kept
for the next paint. Consecutive requests share almost all their messages, so most paints only
place glyphs.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QPointF,
    QRect,
    Qt,
)
from PySide6.QtGui import (
    QBrush,
    QFont,
    QFontMetrics,
    QIcon,
    QPainter,
    QPaintEvent,
    QPalette,
    QPixmap,
    QStandardItemModel,
    QStaticText,
)
from PySide6.QtWidgets import QAbstractItemView, QStyle, QStyleOptionViewItem, QTableView, QTreeView, QWidget

from inspector.ui.figures import FIGURES, figure_advances, fits_whole, rounded_width
from inspector.ui.scroll_bar import ThumbScrollBar, thumb_scroll_bars

_RIGHT = Qt.AlignmentFlag.AlignRight.value
_HCENTER = Qt.AlignmentFlag.AlignHCenter.value
_ROLES = (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.BackgroundRole, Qt.ItemDataRole.ForegroundRole,
          Qt.ItemDataRole.TextAlignmentRole, Qt.ItemDataRole.FontRole, Qt.ItemDataRole.DecorationRole)


def cell_offsets(columns: int, icons: bool = False) -> dict[int, int]:
    """Item role → where that role's run of cells starts in a row's cells.

    A row's cells are one flat tuple of runs of ``columns`` values each: display texts,
    backgrounds (QBrush or None), foregrounds (QBrush or None), alignments (int flags or None:
    left), fonts (QFont or None: the view's), and with ``icons`` decorations (QIcon or None).
    Models serve ``data()`` from the same tuple, so the painted rows and the model agree.
    """
    return {role.value: i * columns for i, role in enumerate(_ROLES[: 6 if icons else 5])}


class RowCellCache:
    """For a ``PaintedTable``'s model: ``row_cells`` built by ``_build_cells`` on a row's first paint, then kept.

    The model resets ``_cells`` to ``[None] * rows`` whenever its rows change.
    """

    _cells: list[tuple[Any, ...] | None]

    def _build_cells(self, row: int) -> tuple[Any, ...]:
        raise NotImplementedError

    def row_cells(self, row: int) -> tuple[Any, ...]:
        """The row's cells, laid out as ``cell_offsets`` says."""
        cells = self._cells[row]
        return cells if cells is not None else self._build_cells(row)


class _RowPainter:
    """Paints one row's cells, keeping each text laid out (and cut to its width) for the next paint.

    A text is laid out as a ``QStaticText`` the second time it is painted: the first time it is
    cut and drawn directly, which costs about half as much, and most texts a random jump brings
    into view are painted once (the rows a step keeps in view are painted again and again).
    """

    LIMIT = 8192  # laid-out texts kept before the cache starts over

    def __init__(self, view: QWidget) -> None:
        self.view = view
        self._texts: dict[tuple[str, int, int], tuple[QStaticText, float]] = {}
        self._once: dict[tuple[str, int, int], str] = {}  # texts painted once, as cut to their width
        self._fonts: dict[int, tuple[QFont, int]] = {}  # id → (font kept alive, line height)
        self._metric_cache: dict[int, QFontMetrics] = {}  # id of a font in _fonts → its metrics
        self._narrowest: dict[int, tuple[int, int]] = {}  # id of metrics → its narrowest and widest glyph advance
        self._figures: dict[int, dict[str, float] | None] = {}  # id of metrics in _metric_cache → FIGURES' advances
        self._pixmaps: dict[tuple[int, int, bool], QPixmap] = {}
        self.margin = 0
        self.forget()

    def forget(self) -> None:
        """Lay everything out again (the view's font or style changed)."""
        self._texts.clear()
        self._once.clear()
        self._fonts.clear()
        self._pixmaps.clear()
        self._metric_cache.clear()
        self._narrowest.clear()
        self._figures.clear()
        view = self.view
        self.margin = view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1

    def _font(self, font: QFont | None) -> tuple[QFont, int]:
        key = 0 if font is None else id(font)
        found = self._fonts.get(key)
        if found is None:
            chosen = font if font is not None else self.view.font()
            found = self._fonts[key] = (chosen, QFontMetrics(chosen).height())
        return found

    def _metrics(self, font: QFont) -> QFontMetrics:
        key = id(font)
        found = self._metric_cache.get(key)
        if found is None:
            found = self._metric_cache[key] = QFontMetrics(font)
            self._figures[id(found)] = figure_advances(font)
        return found

    def laid_out(self, text: str, font: QFont | None, width: int) -> tuple[QStaticText, float]:
        """``text`` in ``font`` as drawn in ``width`` pixels (with an ellipsis if it is cut), and its width."""
        key = (text, 0 if font is None else id(font), width)
        found = self._texts.get(key)
        if found is None:
            chosen = self._font(font)[0]
            cut = self._once.pop(key, None)
            text = cut if cut is not None else self._elided(self._metrics(chosen), text, max(width, 0))
            static = QStaticText(text)
            static.setTextFormat(Qt.TextFormat.PlainText)
            static.prepare(font=chosen)
            if len(self._texts) >= self.LIMIT:
                self._texts.clear()
            found = self._texts[key] = (static, static.size().width())
        return found

    def _elided(self, metrics: QFontMetrics, text: str, width: int) -> str:
        """``text`` cut with an ellipsis to ``width`` px, as ``elidedText`` cuts it, at a cost bounded by the width.

        One call: elidedText measures the text and returns it whole when it fits (most event
        labels do not fit their column, so measuring first cost a second pass over each). Its
        cost grows with the text's length, so a long text is first cut to what could ever show
        (``width`` over the narrowest glyph's advance): when even that cut does not fit, eliding
        it keeps the same prefix as eliding the whole text would. A short ASCII text that fits even
        in the font's widest glyphs is not measured at all, nor a number that fits with a pixel to
        spare by its glyphs' advances (:mod:`inspector.ui.figures`).
        """
        elide = Qt.TextElideMode.ElideRight
        key = id(metrics)
        bounds = self._narrowest.get(key)
        if bounds is None:
            narrowest = max(1, min(metrics.horizontalAdvance(c) for c in " .,:;'|!il"))
            bounds = self._narrowest[key] = (narrowest, metrics.maxWidth())
        narrowest, widest = bounds
        if len(text) * widest <= width and text.isascii():  # fits whatever its glyphs (all in this font)
            return text
        if fits_whole(text, self._figures.get(key), width):  # a number, measured from its glyphs' advances
            return text
        limit = width // narrowest + 2
        if len(text) > limit:
            head = text[:limit]
            cut = metrics.elidedText(head, elide, width)
            if cut != head:
                return cut
        return metrics.elidedText(text, elide, width)

    def _pixmap(self, icon: QIcon, size: int, selected: bool) -> QPixmap:
        key = (icon.cacheKey(), size, selected)
        pixmap = self._pixmaps.get(key)
        if pixmap is None:
            mode = QIcon.Mode.Selected if selected else QIcon.Mode.Normal
            pixmap = self._pixmaps[key] = icon.pixmap(size, size, mode)
        return pixmap

    def paint(self, painter: QPainter, cells: tuple[Any, ...], columns: list[tuple[int, int]], y: int, height: int,
              selected: bool, pens: tuple[Any, Any], first_indent: int = 0, icons: bool = False,
              icon_size: int = 16) -> None:
        """Draw a row's cell backgrounds (unless selected), icons and texts; the row background is the caller's."""
        n = len(columns)
        margin = self.margin
        if not selected:
            for c in range(n):
                bg = cells[n + c]
                if bg is not None:
                    x, w = columns[c]
                    if c == 0:
                        x, w = x + first_indent, w - first_indent
                    painter.fillRect(x, y, w, height, bg)
        text_pen, highlighted_pen = pens
        current: Any = False
        for c in range(n):
            x, w = columns[c]
            if c == 0:
                x, w = x + first_indent, w - first_indent
            left = x + margin
            if icons:
                icon = cells[5 * n + c]
                if icon is not None:
                    painter.drawPixmap(left, y + (height - icon_size) // 2, self._pixmap(icon, icon_size, selected))
                    left += icon_size + 2 * margin
            text = cells[c]
            if not text:
                continue
            font = cells[4 * n + c]
            room = x + w - margin - left
            key = (text, 0 if font is None else id(font), room)
            found = self._texts.get(key)
            once = None
            chosen_font, line_height = self._font(font)
            if found is None and key not in self._once:  # first time: cut it and draw it directly
                metrics = self._metrics(chosen_font)
                once = self._once[key] = self._elided(metrics, text, max(room, 0))
                if len(self._once) >= self.LIMIT:
                    self._once.clear()
            elif found is None:
                found = self.laid_out(text, font, room)  # painted again: worth laying out
            if font is not current:
                painter.setFont(chosen_font)
                current = font
            fg = cells[2 * n + c]
            painter.setPen(highlighted_pen if selected else text_pen if fg is None else fg.color())
            align = cells[3 * n + c] or 0
            if once is not None:
                if not align & (_RIGHT | _HCENTER):
                    advance = 0.0
                else:  # a figure's width from its advances (right-aligned numbers fill whole columns)
                    figures = self._figures.get(id(metrics))
                    advance = (rounded_width(once, figures) if figures is not None and not once.strip(FIGURES)
                               else metrics.horizontalAdvance(once))
            else:
                assert found is not None
                advance = found[1]
            if align & _RIGHT:
                tx = x + w - margin - advance
            elif align & _HCENTER:
                tx = left + (room - advance) / 2
            else:
                tx = left
            top = y + (height - line_height) / 2
            if once is not None:
                painter.drawText(QPointF(tx, top + metrics.ascent()), once)
            else:
                painter.drawStaticText(QPointF(tx, top), found[0])


def _brushes(view: QWidget) -> tuple[QBrush, QBrush, QBrush, tuple[Any, Any]]:
    """Base, alternate, highlight brushes and (text, highlighted text) colours, as the style would pick them."""
    palette = view.palette()
    group = QPalette.ColorGroup.Active if view.isActiveWindow() else QPalette.ColorGroup.Inactive
    base = palette.brush(group, QPalette.ColorRole.Base)
    alternate = palette.brush(group, QPalette.ColorRole.AlternateBase)
    return (base, alternate, palette.brush(group, QPalette.ColorRole.Highlight),
            (palette.color(group, QPalette.ColorRole.Text), palette.color(group, QPalette.ColorRole.HighlightedText)))


def _paint_own_background(view: QAbstractItemView) -> None:
    """The view's viewport stops filling its background before each paint: its rows cover it.

    Qt fills the repainted area with the viewport's background and the rows then fill it again
    (each row its base, alternate or highlight colour): in the event list that is the whole
    viewport twice per random jump. The paint events fill what no row covers themselves
    (``_fill_background``), with the brush Qt would have used.
    """
    viewport = view.viewport()
    viewport.setAutoFillBackground(False)
    viewport.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)


def _fill_background(painter: QPainter, viewport: QWidget, rect: QRect) -> None:
    """Fill ``rect`` of ``viewport`` as its background fill would have (its palette, its role)."""
    painter.fillRect(rect, viewport.palette().brush(viewport.backgroundRole()))


class _RelayOut:
    """Drops the laid-out texts when the view's font or style changes (they were laid out for the old)."""

    _rows: _RowPainter

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._rows.forget()
        super().changeEvent(event)  # type: ignore[misc]


class PaintedTable(_RelayOut, QTableView):
    """``QTableView`` whose model offers ``row_cells(row)``; rows painted from cached laid-out texts."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setShowGrid(False)
        self.setWordWrap(False)
        self._rows = _RowPainter(self)
        thumb_scroll_bars(self)
        _paint_own_background(self)

    def setModel(self, model: QAbstractItemModel | None) -> None:  # noqa: N802 - Qt override
        """Show ``model``; its column labels go to a model of the header's own.

        A reset of the table's model (a new request) otherwise resets and repaints the header
        too, two or three times per step, though its labels never change. So the model's
        columns must stay the same while it is shown: set it again if they change.
        """
        super().setModel(model)
        if model is None:
            return
        labels = QStandardItemModel(0, model.columnCount(), self)
        labels.setHorizontalHeaderLabels(
            [str(model.headerData(c, Qt.Orientation.Horizontal) or "") for c in range(model.columnCount())]
        )
        self.horizontalHeader().setModel(labels)

    def shown_text(self, row: int, column: int) -> str:
        """The text painted in a cell: the model's, or as much of it as fits followed by '…'."""
        model = self.model()
        cells = model.row_cells(row)  # type: ignore[attr-defined]
        font = cells[4 * model.columnCount() + column]
        width = self.columnWidth(column) - 2 * self._rows.margin
        return self._rows.laid_out(cells[column], font, width)[0].text()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        model = self.model()
        row_cells = getattr(model, "row_cells", None)
        area = event.rect()
        viewport = self.viewport()
        if row_cells is None:
            painter = QPainter(viewport)
            _fill_background(painter, viewport, area)
            painter.end()
            super().paintEvent(event)
            return
        first = self.rowAt(area.top())
        rows = model.rowCount() if model is not None else 0
        if rows == 0 or first < 0:
            painter = QPainter(viewport)
            _fill_background(painter, viewport, area)
            painter.end()
            return
        last = self.rowAt(area.bottom())
        last = rows - 1 if last < 0 else last
        header = self.horizontalHeader()
        columns = [(header.sectionViewportPosition(c), header.sectionSize(c)) for c in range(model.columnCount())]
        base, alternate, highlight, pens = _brushes(self)
        if not self.alternatingRowColors():
            alternate = base
        selection = self.selectionModel()
        selected = {i.row() for i in selection.selectedIndexes()} if selection is not None else set()
        width = viewport.width()
        painter = QPainter(viewport)
        end = area.top()
        for row in range(first, last + 1):
            y, height = self.rowViewportPosition(row), self.rowHeight(row)
            chosen = row in selected
            painter.fillRect(0, y, width, height, highlight if chosen else alternate if row % 2 else base)
            self._rows.paint(painter, row_cells(row), columns, y, height, chosen, pens)
            end = y + height
        if end <= area.bottom():  # below the last row
            _fill_background(painter, viewport, QRect(area.left(), end, area.width(), area.bottom() + 1 - end))
        painter.end()


class PaintedTree(_RelayOut, QTreeView):
    """``QTreeView`` whose model offers ``cells_at(index)`` and ``depth_at(index)``; rows painted from cached texts.

    Rows must all be one height (``setUniformRowHeights``): that is how a row's place in the
    list, and so its alternating colour, is known without asking the view.

    The rows are painted in one Python loop (``_paint_rows``) rather than by ``QTreeView.drawTree``
    calling ``drawRow`` per row: that path asks the model for each row's parent several times
    (for its visual rect, whether it is hidden, its selection and its branches) and converts a
    style option per row, which cost about as much as painting the row's texts. Under Fusion, the
    app's style, the branch area of a row without children is blank, so only rows with children
    draw their expand arrow (``drawPrimitive``, as ``drawBranches`` would). Any other style, an
    animated expansion, or a list shorter than the painted area goes through the stock path.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setUniformRowHeights(True)
        self._rows = _RowPainter(self)
        self._frame: tuple[Any, ...] | None = None  # brushes and columns for the paint in progress
        thumb_scroll_bars(self)
        _paint_own_background(self)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        header = self.header()
        columns = [(header.sectionViewportPosition(c), header.sectionSize(c)) for c in range(header.count())]
        per_pixel = self.verticalScrollMode() == QAbstractItemView.ScrollMode.ScrollPerPixel
        self._frame = (*_brushes(self), columns, self.viewport().width(), self._icon_size(),
                       self.verticalScrollBar().value(), per_pixel)
        try:
            if not self._paint_rows(event):
                viewport = self.viewport()
                painter = QPainter(viewport)
                _fill_background(painter, viewport, event.rect())  # what the stock rows leave
                painter.end()
                super().paintEvent(event)
        finally:
            self._frame = None

    def scrollContentsBy(self, dx: int, dy: int) -> None:  # noqa: N802 - Qt override
        """Scroll as QTreeView does, without its repaint of the whole vertical scroll bar.

        On a scroll longer than a page (every random jump) QTreeView repaints all of the bar as well
        as the rows, though the bar (a ThumbScrollBar) has already asked for its thumb's old and new
        places, which is all that changed on it.
        """
        bar = self.verticalScrollBar()
        quiet = isinstance(bar, ThumbScrollBar) and bar.updatesEnabled()
        if quiet:  # the attribute alone, not setUpdatesEnabled, which repaints the bar when it re-enables
            bar.setAttribute(Qt.WidgetAttribute.WA_UpdatesDisabled, True)
        try:
            super().scrollContentsBy(dx, dy)
        finally:
            if quiet:
                bar.setAttribute(Qt.WidgetAttribute.WA_UpdatesDisabled, False)

    def _icon_size(self) -> int:
        size = self.iconSize()
        if size.isValid():
            return size.height()
        return self.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize, None, self)

    def _paint_rows(self, event: QPaintEvent) -> bool:
        """Paint the rows under ``event``'s region as ``drawTree`` would; False (nothing painted) when it must."""
        model = self.model()
        if (getattr(model, "cells_at", None) is None or self.isAnimated()
                or self.style().name().lower() != "fusion"):
            return False
        # each rect of the region, widened to whole rows, with the first row it shows
        areas: list[tuple[QModelIndex, int]] = []
        for rect in event.region():
            first = self._row_at(rect.top())
            if first is None or self._row_at(rect.bottom()) is None:
                return False  # rows end above the area's bottom: the stock path paints what lies below
            areas.append((first, rect.bottom()))
        if not areas:
            return True
        base, alternate, highlight, pens, columns, width, icon_size, scrolled, per_pixel = self._frame  # type: ignore[misc]
        selection = self.selectionModel()
        selected = {(i.row(), i.internalId()) for i in selection.selectedIndexes() if i.column() == 0}
        alternating = self.alternatingRowColors()
        step = self.indentation()
        root = 1 if self.rootIsDecorated() else 0
        x0 = columns[0][0] if columns else 0
        cells_at, depth_at, has_children = model.cells_at, model.depth_at, model.hasChildren
        rows, below, expanded = self._rows, self.indexBelow, self.isExpanded
        style, arrow = self.style(), QStyle.PrimitiveElement.PE_IndicatorBranch
        branch, arrow_states = self._branch_option()
        painted: set[int] = set()
        painter = QPainter(self.viewport())
        try:
            for first, bottom in areas:
                rect = self.visualRect(first)
                y, height = rect.y(), max(1, rect.height())
                index = first
                while y <= bottom and index.isValid():
                    if y not in painted:
                        painted.add(y)
                        chosen = (index.row(), index.internalId()) in selected
                        visual = (scrolled + y) // height if per_pixel else scrolled + y // height
                        alt = alternating and visual % 2 == 1
                        painter.fillRect(0, y, width, height, highlight if chosen else alternate if alt else base)
                        indent = step * (depth_at(index) + root)
                        if indent and has_children(index):
                            branch.rect = QRect(x0 + indent - step, y, step, height)
                            branch.state = arrow_states[chosen * 2 + expanded(index)]
                            style.drawPrimitive(arrow, branch, painter, self)
                        rows.paint(painter, cells_at(index), columns, y, height, chosen, pens, indent, True, icon_size)
                    y += height
                    index = below(index)
        finally:
            painter.end()
        return True

    def _row_at(self, y: int) -> QModelIndex | None:
        """The column-0 index of the row at viewport height ``y``, or None below the last row."""
        index = self.indexAt(QPoint(0, y))
        if not index.isValid():
            return None
        return index if index.column() == 0 else index.siblingAtColumn(0)

    def _branch_option(self) -> tuple[QStyleOptionViewItem, list[QStyle.StateFlag]]:
        """The style option ``drawBranches`` draws a row's expand arrow with, and its state for each
        (selected, expanded) pair (index ``2 * selected + expanded``): flag arithmetic on Qt enums
        costs microseconds in Python, so it is done once per paint."""
        option = QStyleOptionViewItem()
        self.initViewItemOption(option)
        flags = QStyle.StateFlag
        state = flags.State_Item | flags.State_Children
        if self.isEnabled():
            state |= flags.State_Enabled
        if self.hasFocus():
            state |= flags.State_HasFocus
        if self.window().isActiveWindow():
            state |= flags.State_Active
        states = [state, state | flags.State_Open, state | flags.State_Selected,
                  state | flags.State_Selected | flags.State_Open]
        return option, states

    def drawRow(self, painter: QPainter, option: QStyleOptionViewItem,  # noqa: N802 - Qt override
                index: QModelIndex | QPersistentModelIndex) -> None:
        model = self.model()
        cells_at = getattr(model, "cells_at", None)
        if cells_at is None or self._frame is None:
            super().drawRow(painter, option, index)
            return
        base, alternate, highlight, pens, columns, width, icon_size, scrolled, per_pixel = self._frame
        rect = option.rect
        y, height = rect.y(), max(1, rect.height())
        chosen = self.selectionModel().isSelected(index)
        # the row's place in the list, which alternates the colours (rows are all one height)
        visual = (scrolled + y) // height if per_pixel else scrolled + y // height
        alt = visual % 2 == 1 and self.alternatingRowColors()
        painter.fillRect(0, y, width, height, highlight if chosen else alternate if alt else base)
        indent = self.indentation() * (model.depth_at(index) + (1 if self.rootIsDecorated() else 0))
        if indent:
            x0 = columns[0][0]
            self.drawBranches(painter, QRect(x0, y, indent, height), index)
        self._rows.paint(painter, cells_at(index), columns, y, height, chosen, pens, indent, True, icon_size)
