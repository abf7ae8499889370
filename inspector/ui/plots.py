"""pyqtgraph building blocks shared by the plot panels.

All request-axis plots look and behave the same: white background, x = request index as
float64, one curve per series with a 1-px pen, clip-to-view and peak downsampling so 10,000
points cost what the screen can show, a red cursor line that can be dragged, and a click that
jumps the cursor to the nearest request.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPixmapCache
from PySide6.QtWidgets import QGraphicsItem, QMenu, QWidget

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
    if y_label:
        item.setLabel("left", y_label, color=theme.PLOT_FG)
    # one left-axis width everywhere, so request axes of stacked panels line up on screen
    item.getAxis("left").setWidth(LEFT_AXIS_WIDTH)
    item.getViewBox().setMouseEnabled(x=True, y=False)
    item.getViewBox().setDefaultPadding(0.02)


def curve(plot: pg.PlotItem, colour: str, name: str | None = None, *, dashed: bool = False) -> pg.PlotDataItem:
    """One series: a single PlotDataItem with a 1-px pen."""
    pen = pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine)
    item = pg.PlotDataItem(pen=pen, name=name, connect="finite")
    item.setClipToView(True)
    item.setDownsampling(auto=True, method="peak")
    # Painted once into a pixmap and blitted while only the cursor line moves over it.
    item.curve.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    plot.addItem(item)
    return item


def set_xy(item: pg.PlotDataItem, x: np.ndarray, y: np.ndarray) -> None:
    item.setData(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))


class _CursorLineItem(pg.InfiniteLine):
    """An InfiniteLine whose moves never make its ViewBox recompute auto-range.

    pyqtgraph tells the ViewBox an item's bounds changed whenever the item moves, even one
    added with ``ignoreBounds``; the ViewBox then recomputes its auto-range from every curve
    before the next paint and repaints the whole plot area instead of the two thin strips the
    line left and entered. The cursor line never counts towards the range, so there is
    nothing to recompute.
    """

    def informViewBoundsChanged(self) -> None:  # noqa: N802 - pyqtgraph override
        return


class CursorLine:
    """The red, draggable cursor line; dragging reports request positions, never event indices."""

    def __init__(self, plot: pg.PlotItem, on_drag: Callable[[float], None]) -> None:
        self.line = _CursorLineItem(
            pos=0,
            angle=90,
            movable=True,
            pen=pg.mkPen(theme.CURSOR, width=1),
            hoverPen=pg.mkPen(theme.CURSOR, width=3),
        )
        self.line.setZValue(100)
        plot.addItem(self.line, ignoreBounds=True)
        self._on_drag = on_drag
        self._setting = False
        self.line.sigPositionChanged.connect(self._moved)

    def set_x(self, x: float | None) -> None:
        if x is None:
            self.line.setVisible(False)
            return
        self.line.setVisible(True)
        if self.line.value() != x:
            self._setting = True
            try:
                self.line.setValue(x)
            finally:
                self._setting = False

    def _moved(self, _line: object) -> None:
        if not self._setting:
            self._on_drag(float(self.line.value()))


def connect_click(plot_widget: pg.PlotWidget, plot: pg.PlotItem, on_click: Callable[[float], None]) -> None:
    """Left click in the plot area → ``on_click(x)`` in data coordinates."""

    def clicked(event) -> None:  # noqa: ANN001 - pyqtgraph MouseClickEvent
        if event.button() != Qt.MouseButton.LeftButton or event.double():
            return
        vb = plot.getViewBox()
        if not vb.sceneBoundingRect().contains(event.scenePos()):
            return
        point = vb.mapSceneToView(event.scenePos())
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
        name = view.label(run) + suffix if legend is not None else None
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
