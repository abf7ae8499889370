"""Token timeline: prompt tokens per request against the threshold and the context length.

One curve per figure the trace has (each tokenizer, the rough estimate, recorded usage), the
threshold as a step line that moves when ``update_model`` changes it, compressions as vertical
markers. The red line is the cursor: drag it or click anywhere to move to that request.
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QVBoxLayout, QWidget

from inspector.trace.model import Trace
from inspector.ui import plots, theme
from inspector.ui.compare import CompareAware
from inspector.ui.cursor import Cursor
from inspector.ui.derive import TraceFigures, figures, step_points
from inspector.ui.panels.base import Panel

_SERIES_NAMES = {"tiktoken": "tokenizer", "rough": "rough estimate", "rough_chars": "rough estimate"}


class TimelinePanel(CompareAware, Panel):
    panel_id = "timeline"
    title = "Token timeline"
    area = Qt.DockWidgetArea.TopDockWidgetArea

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.readout = theme.readout_label(2)
        self.plot_widget = plots.make_plot_widget("prompt tokens")
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setLabel("bottom", "request", color=theme.PLOT_FG)
        self.legend = plots.legend_above(self.plot, columns=3)
        plots.integer_ticks(self.plot.getAxis("bottom"))
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.threshold = plots.curve(self.plot, theme.THRESHOLD, "threshold", dashed=True)
        self.context = plots.curve(self.plot, theme.CONTEXT, "context length", dashed=True)
        self.markers: list[pg.GraphicsObject] = []
        self.cursor_line = plots.CursorLine(self.plot, self._dragged)
        plots.connect_click(self.plot_widget, self.plot, self._clicked)
        self._fig: TraceFigures | None = None
        self.run_items: list[pg.GraphicsObject] = []  # comparison overlays (one curve per run)
        self._run_prompt: list[np.ndarray] = []

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(2)
        layout.addWidget(self.readout)
        layout.addWidget(self.plot_widget, 1)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.legend.fit(self.plot_widget.height(), self.plot_widget.width())

    def x_view(self) -> pg.ViewBox:
        return self.plot.getViewBox()

    # -- trace ------------------------------------------------------------------------------------
    def render_trace(self, trace: Trace | None) -> None:
        for item in self.curves.values():
            self.plot.removeItem(item)
            self.legend.removeItem(item)
        self.curves.clear()
        for item in self.markers:
            self.plot.removeItem(item)
        self.markers = []
        plots.remove_items(self.plot, self.run_items, self.legend)
        self._fig = None
        if self.compare is not None and trace is not None:
            self._render_compare()
            return
        self.plot.setLabel("bottom", "request", color=theme.PLOT_FG)
        if trace is None or not trace.requests:
            self.threshold.setData([], [])
            self.context.setData([], [])
            self.legend.clear()  # nothing drawn, nothing to name
            self.readout.setText("No provider requests in this trace" if trace is not None else "No trace loaded")
            self.cursor_line.set_x(None)
            return
        fig = figures(trace)
        self._fig = fig
        tokenizer = str(trace.meta.get("tokenizer") or "")
        colours = iter(theme.SERIES)
        for key, y in fig.prompt.items():
            if not np.isfinite(y).any():
                continue
            label = _SERIES_NAMES.get(key, key)
            if key == "tiktoken" and tokenizer:
                label = f"tokenizer ({tokenizer})"
            item = plots.curve(self.plot, next(colours, theme.NOTE), html.escape(label), dotted=key.startswith("rough"))
            plots.set_xy(item, fig.x, y)
            self.curves[key] = item
        if np.isfinite(fig.recorded).any():
            item = plots.curve(self.plot, next(colours, theme.NOTE), "recorded usage")
            plots.set_xy(item, fig.x, fig.recorded)
            self.curves["recorded"] = item
        # the token series first, then threshold and context length (a legend fills free slots,
        # so it is rebuilt rather than edited)
        self.legend.clear()
        for item in [*self.curves.values(), self.threshold, self.context]:
            self.legend.addItem(item, item.name())
        self.legend.fit(self.plot_widget.height(), self.plot_widget.width())
        plots.set_xy(self.threshold, *step_points(fig.x, fig.threshold))
        plots.set_xy(self.context, *step_points(fig.x, fig.context_length))
        top = float(np.nanmax([np.nanmax(fig.context_length) if fig.n else 0, 1.0]))
        ok = [c.x for c in fig.compressions if c.committed]
        bad = [c.x for c in fig.compressions if c.faulted]
        self.markers = plots.vertical_markers(self.plot, ok, theme.COMPRESS, y_span=(0, top))
        self.markers += plots.vertical_markers(self.plot, bad, theme.FAULT, y_span=(0, top))
        self.plot.setXRange(-0.5, fig.n - 0.5, padding=0.01)
        self.plot.enableAutoRange(axis="y")

    def _render_compare(self) -> None:
        """Overlay: prompt tokens of every run on the alignment rows, thresholds dashed, one colour per run."""
        view = self.compare
        assert view is not None
        for item in (self.threshold, self.context):
            item.setData([], [])
            self.legend.removeItem(item)
        self._run_prompt = view.series("prompt_tokens")
        self.run_items = plots.overlay_runs(self.plot, view, self._run_prompt, legend=self.legend)
        self.legend.fit(self.plot_widget.height(), self.plot_widget.width())
        self.run_items += plots.overlay_runs(self.plot, view, view.series("threshold_tokens"), dashed=True, step=True)
        top = max([float(np.nanmax(a)) for a in self._run_prompt if np.isfinite(a).any()] or [1.0])
        for run, points in enumerate(view.compressions()):
            if run in view.runs and points:
                self.run_items += plots.vertical_markers(self.plot, [p["x"] for p in points], view.color(run),
                                                         y_span=(0, top))
        self.plot.setXRange(-0.5, max(1, view.row_count) - 0.5, padding=0.01)
        self.plot.enableAutoRange(axis="y")
        self.plot.setLabel("bottom", "aligned request (turn, call)", color=theme.PLOT_FG)

    def _render_compare_cursor(self, k: int) -> None:
        view = self.compare
        assert view is not None
        row = view.row_at(k)
        self.cursor_line.set_x(None if row is None else float(row))
        if row is None:
            self.readout.setText(f"Event {k}: before the first provider request")
            return
        parts = [view.describe_row(row).capitalize()]
        first = self._run_prompt[view.runs[0]][row] if self._run_prompt else float("nan")
        for run in view.runs:
            y = self._run_prompt[run][row]
            if not np.isfinite(y):
                parts.append(f"{view.label(run)} –")
                continue
            text = f"{view.label(run)} {int(y):,}"
            if run != view.runs[0] and np.isfinite(first):
                text += f" ({int(y - first):+,})"
            parts.append(text)
        self.readout.setText(" · ".join(parts))

    # -- cursor -----------------------------------------------------------------------------------
    def render_cursor(self, k: int) -> None:
        if self.compare is not None:
            if self._trace is not None and len(self._trace):
                self._render_compare_cursor(k)
            return
        fig = self._fig
        trace = self._trace
        if fig is None or trace is None:
            return
        x = fig.cursor_x(k)
        self.cursor_line.set_x(x)
        r = int(fig.event_request[k]) if fig.event_request.shape[0] else -1
        if r < 0:
            self.readout.setText(f"Event {k}: before the first provider request")
            return
        parts = [f"Request #{r}"]
        for key, y in fig.prompt.items():
            if np.isfinite(y[r]):
                parts.append(f"{_SERIES_NAMES.get(key, key)} {int(y[r]):,}")
        if np.isfinite(fig.recorded[r]):
            parts.append(f"recorded {int(fig.recorded[r]):,}")
        parts.append(f"threshold {int(fig.threshold[r]):,}")
        parts.append(f"context {int(fig.context_length[r]):,}")
        self.readout.setText(" · ".join(parts))

    def _dragged(self, x: float) -> None:
        self._jump_to_x(x)

    def _clicked(self, x: float) -> None:
        self._jump_to_x(x)
