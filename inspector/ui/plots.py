"""pyqtgraph building blocks shared by the plot panels.

All request-axis plots look and behave the same: white background, x = request index as
float64, one curve per series with a 1-px pen, clip-to-view and peak downsampling so 10,000
points cost what the screen can show, a red cursor line that can be dragged, and a click that
jumps the cursor to the nearest request.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainterPath, QPen, QPixmapCache
from PySide6.QtWidgets import QGraphicsItem, QGraphicsLineItem, QMenu, QWidget

from inspector.ui import theme

# Curves are cached as device-size pixmaps (see ``curve``); Qt's default 10 MB pixmap cache
# holds one full-window curve, so raise it or every cursor move re-strokes every curve.
PIXMAP_CACHE_KB = 256 * 1024
LEFT_AXIS_WIDTH = 78


def make_plot_widget(y_label: str = "", *, height: int | None = None) -> pg.PlotWidget:
    """A PlotWidget in the inspector's style; menus off (they are top-level widgets that leak)."""
    if QPixmapCache.cacheLimit() < PIXMAP_CACHE_KB:
        QPixmapCache.setCacheLimit(PIXMAP_CACHE_KB)
    widget = pg.PlotWidget(background=theme.PLOT_BG)
    style_plot_item(widget.getPlotItem(), y_label)
    adopt_menus(widget.getPlotItem(), widget)
    if height is not None:
        widget.setMinimumHeight(height)
    return widget


def adopt_menus(item: pg.PlotItem, owner: QWidget) -> None:
    """Give pyqtgraph's parentless context menus an owner so they die with the panel.

    PlotItem and ViewBox build their QMenus without a parent; they would stay alive as
    top-level widgets after the window closes (the leak test catches exactly this).
    """
    for menu in (getattr(item, "ctrlMenu", None), getattr(item.getViewBox(), "menu", None)):
        if isinstance(menu, QMenu) and menu.parent() is None:
            menu.setParent(owner, menu.windowFlags())


def style_plot_item(item: pg.PlotItem, y_label: str = "") -> None:
    """Axis colours, grid, performance options, and no context menu."""
    item.setMenuEnabled(False)
    item.hideButtons()
    item.showGrid(x=False, y=False)  # grid lines belong to the axes: any cursor move would repaint them
    item.setClipToView(True)
    item.setDownsampling(auto=True, mode="peak")
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen(theme.PLOT_FG, width=1))
        axis.setTextPen(pg.mkPen(theme.PLOT_FG))
        # Ticks reach into the plot area, so every cursor move re-plays an axis's whole drawing
        # (clipped to a thin strip); a pixmap blit is cheaper. A range change still redraws it.
        axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    # one left-axis width everywhere, so request axes of stacked panels line up on screen
    item.getAxis("left").setWidth(LEFT_AXIS_WIDTH)
    if y_label:
        fit_axis_label(item.getAxis("left"), y_label)
    item.getViewBox().setMouseEnabled(x=True, y=False)
    item.getViewBox().setDefaultPadding(0.02)


def fit_axis_label(axis: pg.AxisItem, label: str) -> None:
    """Label a vertical axis with as much of ``label`` as its height shows whole.

    A short plot (the token timeline at 1024 × 640 is some 80 px high) cut "prompt tokens" to
    "prompt toke": the label shrinks to its last word ("tokens"), and is hidden when even that
    does not fit (the panel's readout above the plot says what is plotted).
    """
    words = label.split()
    choices = list(dict.fromkeys([label, words[-1]] if words else [label]))
    shown: list[str | None] = [None]

    def refit() -> None:
        room = axis.geometry().height() - 6
        metrics = QFontMetrics(axis.label.font())
        text = next((c for c in choices if metrics.horizontalAdvance(c) <= room), None)
        if text == shown[0]:
            return
        shown[0] = text
        if text is not None:
            axis.setLabel(text, color=theme.PLOT_FG)
        axis.showLabel(text is not None)

    axis.setLabel(label, color=theme.PLOT_FG)
    shown[0] = label
    axis.geometryChanged.connect(refit)


_LEGEND_ROW_HEIGHT = 20  # pyqtgraph's legend sample is 20 px square
_LEGEND_MIN_PLOT_HEIGHT = 130  # below this a legend row takes too much of the data area


class HeaderLegend(pg.LegendItem):
    """A legend laid out in the plot's title row: above the data, so it never hides a curve,
    the threshold or the peaks before a compression (a legend inside the view always covers some)."""

    def updateSize(self) -> None:  # noqa: N802 - pyqtgraph override
        # The grid layout places this item; report the size instead of setting a geometry.
        height = width = 0.0
        for row in range(self.layout.rowCount()):
            row_height = col_width = 0.0
            for col in range(self.layout.columnCount()):
                item = self.layout.itemAt(row, col)
                if item:
                    col_width += item.width() + 3
                    row_height = max(row_height, item.height())
            width = max(width, col_width)
            if col_width:  # a label not laid out yet reports no height; a legend row is a sample high
                row_height = max(row_height, _LEGEND_ROW_HEIGHT)
            height += row_height
        height = height if self.isVisible() else 0
        self.setMinimumHeight(height)
        self.setMaximumHeight(height)
        self.setPreferredWidth(width)
        self.updateGeometry()

    def fit(self, plot_height: float, plot_width: float | None = None) -> None:
        """Shown only where the plot has room for it: on a short plot the data matters more
        (the readout above names the series). In a narrow plot the entries wrap onto more rows
        instead of running past the edge."""
        if plot_width is not None and self.items:
            # the text's own width: a laid-out label stretches to its column
            widest = max(sample.width() + label.item.boundingRect().width() + 13 for sample, label in self.items)
            columns = max(1, min(len(self.items), int(plot_width // max(widest, 1.0))))
            if columns != self.columnCount:
                self.setColumnCount(columns)
        rows = -(-len(self.items) // max(1, self.columnCount)) if self.items else 0
        # a legend taller than a third of the plot leaves too little of the data (the readout names them)
        show = plot_height >= _LEGEND_MIN_PLOT_HEIGHT and rows * _LEGEND_ROW_HEIGHT <= plot_height / 3
        if show != self.isVisible():
            self.setVisible(show)
        self.updateSize()


def legend_above(plot: pg.PlotItem, columns: int = 4) -> pg.LegendItem:
    """The plot's legend, in a row of its own above the view box (items named on ``addItem`` join it)."""
    legend = HeaderLegend(offset=None, labelTextColor=theme.PLOT_FG, colCount=columns, horSpacing=10, verSpacing=0,
                          labelTextSize="8pt")
    legend.layout.setContentsMargins(2, 0, 2, 0)  # the style's default margins push the items into the plot
    plot.layout.removeItem(plot.titleLabel)
    plot.titleLabel.hide()
    plot.layout.addItem(legend, 0, 1)
    plot.layout.setRowMinimumHeight(0, 0)
    plot.layout.setRowMaximumHeight(0, 10_000)
    legend.setParentItem(plot)
    plot.legend = legend
    return legend


def integer_ticks(axis: pg.AxisItem) -> None:
    """Whole-number ticks with no SI prefix: a request or compression count is never 0.5 or x0.001."""
    axis.enableAutoSIPrefix(False)
    axis.tickSpacing = _integer_spacing.__get__(axis)  # type: ignore[method-assign]


def sparse_ticks(axis: pg.AxisItem, most: int = 3) -> None:
    """At most ``most`` labelled ticks: a short plot's axis otherwise prints its labels over each other."""
    axis.setStyle(maxTickLevel=0)
    axis.tickSpacing = _sparse_spacing.__get__(axis)  # type: ignore[method-assign]
    axis._most_ticks = most  # type: ignore[attr-defined]


def _sparse_spacing(axis: pg.AxisItem, minVal: float, maxVal: float, size: float) -> list[tuple[float, float]]:  # noqa: N803
    levels = pg.AxisItem.tickSpacing(axis, minVal, maxVal, size)
    if not levels or maxVal <= minVal:
        return levels
    spacing, offset = levels[0]
    while spacing > 0 and (maxVal - minVal) / spacing > axis._most_ticks:
        spacing *= 2 if str(spacing)[0] in "15" else 2.5  # 1, 2, 5, 10 … stays a round number
    return [(spacing, offset)]


def _integer_spacing(axis: pg.AxisItem, minVal: float, maxVal: float, size: float) -> list[tuple[float, float]]:  # noqa: N803
    levels = pg.AxisItem.tickSpacing(axis, minVal, maxVal, size)
    whole = [(max(1.0, float(round(spacing))), offset) for spacing, offset in levels if spacing >= 1]
    return whole or [(1.0, 0.0)]


def curve(plot: pg.PlotItem, colour: str, name: str | None = None, *, dashed: bool = False,
          dotted: bool = False) -> pg.PlotDataItem:
    """One series: a single PlotDataItem with a 1-px pen (dashed: limits; dotted: estimates)."""
    style = Qt.PenStyle.DashLine if dashed else (Qt.PenStyle.DotLine if dotted else Qt.PenStyle.SolidLine)
    pen = pg.mkPen(colour, width=1, style=style)
    item = pg.PlotDataItem(pen=pen, name=name, connect="finite")
    item.setClipToView(True)
    item.setDownsampling(auto=True, method="peak")
    # Painted once into a pixmap and blitted while only the cursor line moves over it.
    item.curve.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    plot.addItem(item)
    return item


def recorded_pen(colour: str = theme.RECORDED) -> QPen:
    """The pen of a figure the provider recorded: a wide translucent band drawn under the estimates
    (give the item a z below 0), so where the two agree the estimate runs inside the band and where
    they differ both show."""
    c = QColor(colour)
    c.setAlpha(110)
    return pg.mkPen(c, width=5)


def set_xy(item: pg.PlotDataItem, x: np.ndarray, y: np.ndarray) -> None:
    """Replace a series' points; a lone point gets a dot (a one-point line draws nothing)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    lone = int(np.isfinite(y).sum()) == 1
    if lone or item.opts.get("symbol") is not None:
        pen = item.opts.get("pen")
        colour = pen.color() if hasattr(pen, "color") else theme.PLOT_FG
        item.setSymbol("o" if lone else None)
        item.setSymbolSize(6)
        item.setSymbolBrush(colour)
        item.setSymbolPen(colour)
    item.setData(x, y)


class _CursorLineItem(QGraphicsLineItem):
    """A vertical line at x = ``value()``, stroked by Qt itself and grabbable a few pixels either side.

    ``pg.InfiniteLine`` recomputes its bounds in Python on every move and paints in Python,
    which cost about 0.3 ms per plot per cursor step over five plots. This item only moves
    (``setPos``); its height and grab width follow the view's range, which changes on a zoom
    or pan, not on a step. It takes part in pyqtgraph's hover and drag events, never in the
    view's auto-range.
    """

    GRAB_PX = 4  # pixels either side of the line that still grab it

    def __init__(self, view_box: pg.ViewBox, on_moved: Callable[[float], None]) -> None:
        super().__init__()
        self._vb = view_box
        self._on_moved = on_moved
        self._pen = pg.mkPen(theme.CURSOR, width=1)
        self._hover_pen = pg.mkPen(theme.CURSOR, width=3)
        self.setPen(self._pen)
        self._bounds = QRectF()
        self._drag_offset: float | None = None
        view_box.sigRangeChanged.connect(self._fit)
        view_box.sigResized.connect(self._fit)

    def _fit(self, *_: object) -> None:
        """Span the visible y range (and a margin), and grab GRAB_PX pixels either side."""
        (x0, x1), (y0, y1) = self._vb.viewRange()
        margin = (y1 - y0) or 1.0
        px = self._vb.viewPixelSize()[0] if self._vb.width() > 0 else 0.0
        self.prepareGeometryChange()
        half = max(self.GRAB_PX * px, 1e-9 * ((x1 - x0) or 1.0))  # never empty: Qt skips empty bounds
        self._bounds = QRectF(-half, y0 - margin, 2 * half, (y1 - y0) + 2 * margin)
        self.setLine(QLineF(0.0, y0 - margin, 0.0, y1 + margin))

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        return self._bounds  # holds the line and its widest pen (QGraphicsLineItem's own asks shape())

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        path.addRect(self.boundingRect())
        return path

    def value(self) -> float:
        return self.pos().x()

    def setValue(self, x: float) -> None:  # noqa: N802 - pyqtgraph's name for it
        """Do what dragging the line to x does: tell the owner, who moves the cursor and so the line.

        The line therefore always sits where the cursor is, snapping from request to request
        under the mouse.
        """
        self._on_moved(x)

    def move_to(self, x: float) -> None:
        """Move the line without telling anyone (the cursor moved it)."""
        if self._bounds.isNull():
            self._fit()
        if self.pos().x() != x:
            self.setPos(x, 0.0)

    # pyqtgraph's scene delivers these to items that define them
    def hoverEvent(self, ev) -> None:  # noqa: ANN001, N802 - pyqtgraph HoverEvent
        hovering = not ev.isExit() and ev.acceptDrags(Qt.MouseButton.LeftButton)
        self.setPen(self._hover_pen if hovering else self._pen)

    def mouseDragEvent(self, ev) -> None:  # noqa: ANN001, N802 - pyqtgraph MouseDragEvent
        if ev.button() != Qt.MouseButton.LeftButton:
            return
        ev.accept()
        if ev.isStart():
            self._drag_offset = self.pos().x() - self.mapToParent(ev.buttonDownPos()).x()
        if self._drag_offset is None:
            return
        self.setValue(self._drag_offset + self.mapToParent(ev.pos()).x())
        if ev.isFinish():
            self._drag_offset = None


class CursorLine:
    """The red, draggable cursor line; dragging reports request positions, never event indices."""

    def __init__(self, plot: pg.PlotItem, on_drag: Callable[[float], None]) -> None:
        self.line = _CursorLineItem(plot.getViewBox(), on_drag)
        self.line.setZValue(100)
        plot.addItem(self.line, ignoreBounds=True)

    def set_x(self, x: float | None) -> None:
        if x is None:
            self.line.setVisible(False)
            return
        self.line.setVisible(True)
        self.line.move_to(x)


def connect_click(plot_widget: pg.PlotWidget, plot: pg.PlotItem, on_click: Callable[..., None], *,
                  with_y: bool = False) -> None:
    """Left click in the plot area → ``on_click(x)`` (``on_click(x, y)`` ``with_y``) in data coordinates."""

    def clicked(event) -> None:  # noqa: ANN001 - pyqtgraph MouseClickEvent
        if event.button() != Qt.MouseButton.LeftButton or event.double():
            return
        vb = plot.getViewBox()
        if not vb.sceneBoundingRect().contains(event.scenePos()):
            return
        point = vb.mapSceneToView(event.scenePos())
        if with_y:
            on_click(float(point.x()), float(point.y()))
        else:
            on_click(float(point.x()))

    plot_widget.scene().sigMouseClicked.connect(clicked)


def vertical_markers(
    plot: pg.PlotItem, xs: list[float], colour: str, *, y_span: tuple[float, float] = (0.0, 1.0), max_lines: int = 64
) -> list[pg.GraphicsObject]:
    """Event markers: a few InfiniteLines, or one pair-connected curve when there are many."""
    pen = pg.mkPen(colour, width=1, style=Qt.PenStyle.DotLine)
    if len(xs) <= max_lines:
        items: list[pg.GraphicsObject] = []
        for x in xs:
            line = pg.InfiniteLine(pos=x, angle=90, movable=False, pen=pen)
            plot.addItem(line, ignoreBounds=True)
            items.append(line)
        return items
    # Many markers: one curve of vertical segments over the data's y span (y never pans).
    x = np.repeat(np.asarray(xs, dtype=np.float64), 2)
    y = np.tile(np.asarray(y_span, dtype=np.float64), len(xs))
    item = pg.PlotCurveItem(x, y, pen=pen, connect="pairs")
    item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    plot.addItem(item, ignoreBounds=True)
    return [item]


def overlay_runs(plot: pg.PlotItem, view, arrays: list[np.ndarray], *, legend: pg.LegendItem | None = None,  # noqa: ANN001
                 dashed: bool = False, step: bool = False, suffix: str = "") -> list[pg.PlotDataItem]:
    """One curve per run of a comparison, in the run's colour, x = alignment row.

    ``view`` is a :class:`inspector.ui.compare.CompareView`; runs without a trace get no curve.
    ``step`` draws a piecewise-constant state (gaps carried forward) as a staircase.
    """
    from inspector.ui.compare import forward_fill

    items: list[pg.PlotDataItem] = []
    for run in view.runs:
        y = arrays[run]
        x = np.arange(y.shape[0], dtype=np.float64)
        # pyqtgraph renders legend names as rich text: a run's label is the user's (or a file's) text
        name = html.escape(view.label(run) + suffix) if legend is not None else None
        item = curve(plot, view.color(run), name, dashed=dashed)
        if step:
            filled = forward_fill(y)
            ok = np.isfinite(filled)
            if ok.any():
                xs, ys = _steps(x[ok], filled[ok])
                set_xy(item, xs, ys)
        else:
            set_xy(item, x, y)
        items.append(item)
    return items


def _steps(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A staircase through (x, y) with only the change points as vertices."""
    change = np.flatnonzero(np.diff(y) != 0) + 1
    xs = [x[0] - 0.5]
    ys = [y[0]]
    for i in change:
        edge = x[i] - 0.5
        xs += [edge, edge]
        ys += [ys[-1], y[i]]
    xs.append(x[-1] + 0.5)
    ys.append(ys[-1])
    return np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)


def remove_items(plot: pg.PlotItem, items: list, legend: pg.LegendItem | None = None) -> None:  # noqa: ANN001
    """Take overlay items (and their legend entries) off a plot."""
    for item in items:
        plot.removeItem(item)
        if legend is not None:
            legend.removeItem(item)
    items.clear()


class Scatter(pg.ScatterPlotItem):
    """A ``pg.ScatterPlotItem`` whose bounding rect is worked out once per change, not per repaint.

    Qt asks every item under a repainted area for its bounding rect, and each cursor move repaints
    two strips of every plot (where the cursor line was, where it is). pyqtgraph's scatter works
    its rect out afresh each time: its data bounds plus its largest symbol's size in pixels, from
    the view's transform (about 40 us a call, nine calls a random jump). The rect is kept until
    the geometry changes: pyqtgraph calls ``prepareGeometryChange`` when the data changes and
    ``viewTransformChanged`` when the view's transform does, and the data bounds and the largest
    symbol (which pyqtgraph can reset without either) are part of the kept rect's key.
    """

    _kept: tuple[tuple[object, object, float], QRectF] | None = None

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        kept = self._kept
        x_bounds, y_bounds = self.bounds
        if kept is not None and x_bounds is not None and y_bounds is not None \
                and kept[0] == (x_bounds, y_bounds, self._maxSpotPxWidth):
            return QRectF(kept[1])
        rect = super().boundingRect()
        x_bounds, y_bounds = self.bounds
        self._kept = ((x_bounds, y_bounds, self._maxSpotPxWidth), QRectF(rect))
        return rect

    def prepareGeometryChange(self) -> None:  # noqa: N802 - Qt override
        self._kept = None
        super().prepareGeometryChange()

    def viewTransformChanged(self) -> None:  # noqa: N802 - pyqtgraph override
        self._kept = None
        super().viewTransformChanged()


def gate_points(plot: pg.PlotItem, x: np.ndarray, y: np.ndarray, fired: np.ndarray, colour: str,
                name: str | None = None, *, legend: bool = True) -> list[pg.ScatterPlotItem]:
    """What each should_compress call tested: hollow dots where it said no, filled triangles where
    it said compress. The gate's own figure, which is often not the request's sent count."""
    items: list[pg.ScatterPlotItem] = []
    for mask, symbol, size, brush, label in ((~fired, "o", 5, None, "gate: no"),
                                            (fired, "t1", 9, colour, "gate: compress")):
        if not mask.any():
            continue
        item = Scatter(x[mask], y[mask], symbol=symbol, size=size, pen=pg.mkPen(colour, width=1),
                                  brush=pg.mkBrush(brush) if brush else pg.mkBrush(0, 0, 0, 0),
                                  name=html.escape(f"{name} · {label}" if name else label) if legend else None)
        # drawn once into a pixmap: the cursor line moves over the points on every step
        item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        plot.addItem(item)
        items.append(item)
    return items


def fit_y(plot: pg.PlotItem, arrays: list[np.ndarray], *, floor: float = 1.0) -> None:
    """Fit y to the data (0 to its highest finite value plus 8 %), not to a far larger limit line:
    a 2,000-token session under a 128,000-token window would otherwise be a flat line at 0."""
    top = max([float(np.nanmax(a)) for a in arrays if a.size and np.isfinite(a).any()] or [floor])
    plot.disableAutoRange(axis="y")
    plot.setYRange(0, max(floor, top) * 1.08, padding=0)
