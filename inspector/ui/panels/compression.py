"""Compression timeline: the compressions the host committed, as a step plot on the request axis.

The staircase counts committed compressions (not the engine's ``compression_count``, which some
engines raise on calls that kept nothing).

Each compression is a dot at the step; hovering it gives the before/after token figures and
clicking it jumps to the compress event. Faulted (discarded) compressions are red crosses and
compress calls that made no progress are hollow dots: neither steps the count, which is exactly
what Hermes does with them. The header counts what the replay summary counts: committed ones.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QGraphicsItem, QVBoxLayout, QWidget

from inspector.trace.model import Trace
from inspector.ui import plots, theme
from inspector.ui.compare import CompareAware
from inspector.ui.cursor import Cursor
from inspector.ui.derive import Compression, TraceFigures, committed_counts, figures, step_points
from inspector.ui.panels.base import Panel


def describe(c: Compression) -> str:
    """Hover text of one compression (numbers only: safe as a tooltip)."""
    u = c.unit
    if c.faulted:
        return f"compress at event {c.event}: FAULTED, discarded\nbefore {c.before_tokens:,} {u} in {c.before_messages} msgs"
    if not c.committed:
        return (f"compress at event {c.event}: no progress, transcript unchanged\n"
                f"before {c.before_tokens:,} {u} in {c.before_messages} msgs")
    saved = c.before_tokens - c.after_tokens
    pct = (saved / c.before_tokens) if c.before_tokens else 0.0
    return (
        f"compress at event {c.event} (#{c.count_after})\n"
        f"before {c.before_tokens:,} {u} in {c.before_messages} msgs\n"
        f"after  {c.after_tokens:,} {u} in {c.after_messages} msgs\n"
        f"saved  {saved:,} {u} ({pct:.0%})"
    )


def describe_point(label: str, p: dict) -> str:
    """Hover text of one run's compress call in comparison mode (the host's rough figures)."""
    head = f"{label}: compress at event {p['event']} (turn {p['turn']})"
    if p["faulted"]:
        return f"{head}\nFAULTED, discarded"
    if not p["committed"]:
        return f"{head}\nno progress, transcript unchanged"
    text = f"{head} (#{p['compression_count']})"
    if p["tokens_before"] is not None and p["tokens_after"] is not None:
        text += f"\nbefore {p['tokens_before']:,} → after {p['tokens_after']:,} rough tok"
    if p["count_before"] is not None and p["count_after"] is not None:
        text += f"\nmessages {p['count_before']} → {p['count_after']}"
    return text


class CompressionPanel(CompareAware, Panel):
    panel_id = "compression"
    title = "Compression timeline"
    area = Qt.DockWidgetArea.TopDockWidgetArea

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.readout = theme.readout_label(1)
        self.plot_widget = plots.make_plot_widget("committed")
        self.plot = self.plot_widget.getPlotItem()
        self.step = plots.curve(self.plot, theme.COMPRESS)
        self.dots = plots.Scatter(
            size=8,
            pen=pg.mkPen("white", width=1),
            hoverable=True,
            hoverSize=12,
            tip=lambda x, y, data: data,
        )
        # drawn from a pixmap when the cursor line moves over the dots (they change only per trace)
        self.dots.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.plot.addItem(self.dots)
        self.cursor_line = plots.CursorLine(self.plot, self._jump_to_x)
        plots.connect_click(self.plot_widget, self.plot, self._clicked, with_y=True)
        self._fig: TraceFigures | None = None
        self._summary = ""
        self.legend = plots.legend_above(self.plot, columns=4)
        plots.integer_ticks(self.plot.getAxis("bottom"))
        plots.integer_ticks(self.plot.getAxis("left"))  # compressions come in whole numbers
        self.run_items: list[pg.GraphicsObject] = []  # comparison overlays
        self._run_counts: list = []
        self._run_afters: list[list[float]] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(2)
        layout.addWidget(self.readout)
        layout.addWidget(self.plot_widget, 1)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        """A strip of a plot is enough (the step count and its dots): in a small window the token
        timeline above gets the height, not this."""
        return QSize(200, 96)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.legend.fit(self.plot_widget.height(), self.plot_widget.width())

    def x_view(self) -> pg.ViewBox:
        return self.plot.getViewBox()

    def render_trace(self, trace: Trace | None) -> None:
        self._fig = None
        plots.remove_items(self.plot, self.run_items, self.legend)
        if self.compare is not None and trace is not None:
            self._render_compare()
            return
        if trace is None or not trace.requests:
            self.step.setData([], [])
            self.dots.setData([])
            self.cursor_line.set_x(None)
            self.readout.setText("No provider requests in this trace" if trace is not None else "No trace loaded")
            return
        fig = figures(trace)
        self._fig = fig
        # the count only changes at compressions: draw its change points, not one vertex per request
        steps, after = committed_counts([(c.x, c.committed) for c in fig.compressions], fig.n)
        plots.set_xy(self.step, *step_points(fig.x, steps))
        hollow = pg.mkBrush(0, 0, 0, 0)
        spots = [
            {
                "pos": (c.x, y),
                "data": describe(c),
                "brush": pg.mkBrush(theme.FAULT) if c.faulted else pg.mkBrush(theme.COMPRESS) if c.committed else hollow,
                "pen": pg.mkPen("white" if c.faulted or c.committed else theme.COMPRESS, width=1),
                "symbol": "x" if c.faulted else "o",
            }
            for c, y in zip(fig.compressions, after)
        ]
        self.dots.setData(spots)
        top = max(1.0, float(steps.max()) if fig.n else 1.0)
        self.plot.setYRange(-0.2, top + 0.6, padding=0)
        self.plot.setXRange(-0.5, fig.n - 0.5, padding=0.01)
        n_ok = sum(1 for c in fig.compressions if c.committed)
        n_bad = sum(1 for c in fig.compressions if c.faulted)
        n_idle = len(fig.compressions) - n_ok - n_bad
        self._summary = (f"{n_ok} compression{'s' * (n_ok != 1)} committed" + (f", {n_bad} faulted" if n_bad else "")
                         + (f", {n_idle} compress call{'s' * (n_idle != 1)} made no progress" if n_idle else ""))

    def _render_compare(self) -> None:
        """compression_count of every run as a staircase in its colour, a dot per committed compression."""
        view = self.compare
        assert view is not None
        self.step.setData([], [])
        self.dots.setData([])
        calls = view.compress_calls()
        counts, afters = [], []
        for run in range(len(calls)):
            steps, after = committed_counts([(p["x"], p["committed"]) for p in calls[run]], view.row_count)
            counts.append(steps if run in view.runs else np.full(view.row_count, np.nan))
            afters.append(after)
        self._run_counts = counts
        self._run_afters = afters
        self.run_items = plots.overlay_runs(self.plot, view, counts, legend=self.legend, step=True)
        self.legend.fit(self.plot_widget.height(), self.plot_widget.width())
        spots = []
        hollow = pg.mkBrush(0, 0, 0, 0)
        for run, points in enumerate(calls):
            if run not in view.runs:
                continue
            colour = view.color(run)
            for p, y in zip(points, afters[run]):
                # on the run's staircase of committed compressions (hollow or a cross where the
                # call changed nothing, as in single-run mode)
                spots.append({"pos": (p["x"], y), "data": describe_point(view.label(run), p),
                              "brush": pg.mkBrush(colour) if p["committed"] else hollow,
                              "pen": pg.mkPen("white" if p["committed"] else colour, width=1),
                              "symbol": "x" if p["faulted"] else "o"})
        self.dots.setData(spots)
        top = max([float(np.nanmax(c)) for c in counts if np.isfinite(c).any()] or [1.0])
        self.plot.setYRange(-0.2, max(1.0, top) + 0.6, padding=0)
        self.plot.setXRange(-0.5, max(1, view.row_count) - 0.5, padding=0.01)
        self._summary = " · ".join(f"{view.label(r)}: {len(view.compressions()[r])}" for r in view.runs)

    def render_cursor(self, k: int) -> None:
        if self.compare is not None:
            if self._trace is not None and len(self._trace):
                row = self.compare.row_at(k)
                self.cursor_line.set_x(None if row is None else float(row))
                self.readout.setText(f"Compressions committed — {self._summary}")
            return
        fig = self._fig
        if fig is None or self._trace is None:
            return
        self.cursor_line.set_x(fig.cursor_x(k))
        text = self._summary
        c = fig.last_committed_before(k)
        if c is not None:
            text += f" · last before cursor: event {c.event}, {c.before_tokens:,} → {c.after_tokens:,} {c.unit}"
        self.readout.setText(text)

    def _clicked(self, x: float, y: float | None = None) -> None:
        """A click near a compression dot selects that compress event (of whichever run's dot it is,
        the one at the clicked height where runs share an x), elsewhere the request."""
        span = max(1.0, (self.plot.getViewBox().viewRange()[0][1] - self.plot.getViewBox().viewRange()[0][0]) / 150)
        if self.compare is not None:
            afters = self._run_afters
            if not self._jump_to_marker(x, span, y, lambda run, i, _p: afters[run][i]):
                self._jump_to_x(x)
            return
        fig = self._fig
        if fig is None:
            return
        near = min(fig.compressions, key=lambda c: abs(c.x - x), default=None)
        if near is not None and abs(near.x - x) <= span:
            self.jump_requested.emit(near.event)
        else:
            self._jump_to_x(x)
