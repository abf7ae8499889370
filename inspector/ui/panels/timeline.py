"""Token timeline: prompt tokens per request against the threshold and the context length.

One curve per figure the trace has (each tokenizer, the rough estimate, our count in the
provider's units where the usage was calibrated, and the prompt tokens the provider reported for
the agent's own request, recorded in the transcript), the threshold as a step line that moves
when ``update_model`` changes it, the engine's compressions as dotted vertical markers and the
transcript's own compactions (where the original agent compacted) as dashed ones, and the
figure every ``should_compress`` call tested as a point (a triangle where it fired): the gate's figure is often not the sent count, and the points show what it compared. A
request over the context window is drawn as a red cross and named in the readout. y fits the
data, the threshold and the gates; the context length is drawn when it is within reach. The red line is the cursor: drag it or click anywhere to move to that request.
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QGraphicsItem, QVBoxLayout, QWidget

from inspector.trace.model import Request, Trace
from inspector.ui import plots, theme
from inspector.ui.compare import CompareAware
from inspector.ui.cursor import Cursor
from inspector.ui.derive import (
    TraceFigures,
    TranscriptCompaction,
    calibrated_prompt,
    figures,
    step_points,
    transcript_compactions,
)
from inspector.ui.panels.base import Panel

# every count says what it is (inspector.ui.explain): the tokenizer's and Hermes' rough count of what was sent
_SERIES_NAMES = {"tiktoken": "sent · tokenizer", "rough": "sent · rough", "rough_chars": "sent · rough"}
CALIBRATED_NAME = "sent · calibrated"  # the fitted head + ratio × the tokenizer count
RECORDED_NAME = "recorded (provider)"  # prompt tokens the transcript recorded
ENGINE_COMPACTION_NAME = "engine compacted"
TRANSCRIPT_COMPACTION_NAME = "transcript compacted"  # where the original agent compacted


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
        self.gate_items: list[pg.GraphicsObject] = []
        self.cursor_line = plots.CursorLine(self.plot, self._dragged)
        plots.connect_click(self.plot_widget, self.plot, self._clicked, with_y=True)
        self._fig: TraceFigures | None = None
        self.run_items: list[pg.GraphicsObject] = []  # comparison overlays (one curve per run)
        self._run_prompt: list[np.ndarray] = []
        self._run_recorded: list[np.ndarray] = []
        self._calibrated: np.ndarray | None = None
        self._transcript: list[TranscriptCompaction] = []
        self.marker_keys: list[pg.PlotDataItem] = []  # legend entries for the marker kinds (not plotted)

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
        plots.remove_items(self.plot, self.gate_items, self.legend)
        self.gate_items = []
        plots.remove_items(self.plot, self.run_items, self.legend)
        for item in self.marker_keys:
            self.legend.removeItem(item)
        self.marker_keys = []
        self._fig = None
        self._calibrated = None
        self._transcript = []
        self._run_recorded = []
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
                label = f"sent · {tokenizer}"
            item = plots.curve(self.plot, next(colours, theme.NOTE), html.escape(label), dotted=key.startswith("rough"))
            plots.set_xy(item, fig.x, y)
            self.curves[key] = item
        calibrated = calibrated_prompt(trace, fig)
        self._calibrated = calibrated
        if calibrated is not None:  # what the host counts for the window check, in the provider's units
            item = plots.curve(self.plot, theme.SERIES[0], html.escape(CALIBRATED_NAME), dashed=True)
            plots.set_xy(item, fig.x, calibrated)
            self.curves["calibrated"] = item
        if np.isfinite(fig.recorded).any():
            item = plots.curve(self.plot, theme.RECORDED, html.escape(RECORDED_NAME))
            item.setPen(plots.recorded_pen())
            item.setZValue(-1)  # a band under the estimates: where they agree they run inside it
            plots.set_xy(item, fig.x, fig.recorded)
            self.curves["recorded"] = item
        # the token series first, then threshold and context length (a legend fills free slots,
        # so it is rebuilt rather than edited)
        self.gate_items = plots.gate_points(self.plot, fig.gate_x, fig.gate_y, fig.gate_fired, theme.COMPRESS)
        sent = calibrated if calibrated is not None else fig.prompt.get("tiktoken")
        over = np.zeros(0, dtype=bool) if sent is None else (fig.context_length > 0) & (sent > fig.context_length)
        if over.any():
            item = plots.Scatter(fig.x[over], sent[over], symbol="x", size=11, pen=pg.mkPen(theme.FAULT, width=2),
                                      brush=pg.mkBrush(theme.FAULT), name="over the window")
            item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            self.plot.addItem(item)
            self.gate_items.append(item)
        top = float(np.nanmax([np.nanmax(fig.context_length) if fig.n else 0, 1.0]))
        ok = [c.x for c in fig.compressions if c.committed]
        bad = [c.x for c in fig.compressions if c.faulted]
        self.markers = plots.vertical_markers(self.plot, ok, theme.COMPRESS, y_span=(0, top))
        self.markers += plots.vertical_markers(self.plot, bad, theme.FAULT, y_span=(0, top))
        self._transcript = transcript_compactions(trace)
        self.markers += transcript_markers(self.plot, [c.x for c in self._transcript], y_span=(0, top))
        self.legend.clear()
        for item in [*self.curves.values(), *self.gate_items, self.threshold, self.context]:
            self.legend.addItem(item, item.name())
        self.marker_keys = marker_legend(self.legend, engine=bool(ok), transcript=bool(self._transcript))
        self.legend.fit(self.plot_widget.height(), self.plot_widget.width())
        plots.set_xy(self.threshold, *step_points(fig.x, fig.threshold))
        plots.set_xy(self.context, *step_points(fig.x, fig.context_length))
        self.plot.setXRange(-0.5, fig.n - 0.5, padding=0.01)
        extra = [calibrated] if calibrated is not None else []
        self._fit_y([*fig.prompt.values(), *extra, fig.recorded, fig.gate_y], [fig.threshold, fig.context_length])

    def _fit_y(self, data: list[np.ndarray], limits: list[np.ndarray]) -> None:
        """y to the data; a limit line (threshold, context length) joins when it is within twice the
        data's top (the readout names it either way), so a small session is not a flat line at 0."""
        arrays = [a for a in data if a.size]
        top = max([float(np.nanmax(a)) for a in arrays if np.isfinite(a).any()] or [1.0])
        near = [a for a in limits if a.size and np.isfinite(a).any() and float(np.nanmax(a)) < 2 * top]
        plots.fit_y(self.plot, arrays + near)

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
        thresholds = view.series("threshold_tokens")
        self.run_items += plots.overlay_runs(self.plot, view, thresholds, dashed=True, step=True)
        gate_y = []
        for run in view.runs:
            gx, gy, fired = _gates_on_rows(view, run)
            gate_y.append(gy)
            # named once (in the first run's colour): the legend says what a point is, the colour whose
            items = plots.gate_points(self.plot, gx, gy, fired, view.color(run), legend=run == view.runs[0])
            self.run_items += items
        # each run's requests as the transcript recorded them (the same call where the run sent the agent's request)
        self._run_recorded = view.series(_recorded_prompt, "recorded_prompt")
        if any(np.isfinite(a).any() for a in self._run_recorded):
            recorded = plots.overlay_runs(self.plot, view, self._run_recorded, legend=self.legend,
                                          suffix=" · recorded (transcript)")
            for run, item in zip(view.runs, recorded):
                item.setPen(plots.recorded_pen(view.color(run)))
                item.setZValue(-1)
            self.run_items += recorded
        top = max([float(np.nanmax(a)) for a in self._run_prompt if np.isfinite(a).any()] or [1.0])
        for run, points in enumerate(view.compressions()):
            if run in view.runs and points:
                self.run_items += plots.vertical_markers(self.plot, [p["x"] for p in points], view.color(run),
                                                         y_span=(0, top))
        primary = view.primary_trace
        self._transcript = transcript_compactions(primary)
        xs = [view.alignment.event_x(view.primary, c.event) for c in self._transcript]
        self.run_items += transcript_markers(self.plot, [x for x in xs if np.isfinite(x)], y_span=(0, top))
        self.marker_keys = marker_legend(self.legend, engine=any(view.compressions()), transcript=bool(self._transcript))
        self.legend.fit(self.plot_widget.height(), self.plot_widget.width())
        self.plot.setXRange(-0.5, max(1, view.row_count) - 0.5, padding=0.01)
        self._fit_y([*self._run_prompt, *self._run_recorded, *gate_y], list(thresholds))
        self.plot.setLabel("bottom", "aligned request (turn, call) · lines: the prompt tokens each engine was given "
                           "(usage); bands: recorded; points: what each gate tested", color=theme.PLOT_FG)

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
            recorded = self._run_recorded[run][row] if self._run_recorded else float("nan")
            if np.isfinite(recorded):
                text += f", recorded {int(recorded):,}"
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
        if self._calibrated is not None:
            parts.append(f"calibrated {int(self._calibrated[r]):,}")
        if np.isfinite(fig.recorded[r]):
            parts.append(f"recorded (transcript) {int(fig.recorded[r]):,}")
        fed = _fed_at(trace, r)
        if fed:
            parts.append(fed)
        parts.append(f"threshold {int(fig.threshold[r]):,}")
        parts.append(f"context {int(fig.context_length[r]):,}")
        sent = self._calibrated if self._calibrated is not None else fig.prompt.get("tiktoken")
        if sent is not None and fig.context_length[r] and sent[r] > fig.context_length[r]:
            parts.insert(1, f"OVER THE WINDOW by {int(sent[r] - fig.context_length[r]):,}")
        gate = _gate_at(trace, k)
        if gate is not None:
            parts.append(gate)
        marker = next((c for c in self._transcript if c.event == k), None)
        if marker is not None:
            parts.append(f"the transcript compacted here ({marker.kind}"
                         + (f", {marker.tokens_before:,} tokens before)" if marker.tokens_before else ")"))
        self.readout.setText(" · ".join(parts))

    def _dragged(self, x: float) -> None:
        self._jump_to_x(x)

    def _clicked(self, x: float, y: float | None = None) -> None:
        """In a comparison a click on (or next to) a run's compression marker selects that run's
        compress; where runs compress at the same row, the run whose curve is nearest the click."""
        view_range = self.plot.getViewBox().viewRange()[0]
        if self.compare is not None:
            prompt = self._run_prompt

            def level(run: int, _i: int, p: dict) -> float:
                row = max(0, min(len(prompt[run]) - 1, int(np.floor(p["x"]))))
                value = prompt[run][row] if len(prompt[run]) else np.nan
                return float(value) if np.isfinite(value) else float("inf")

            if self._jump_to_marker(x, max(0.6, (view_range[1] - view_range[0]) / 200), y, level):
                return
        self._jump_to_x(x)


def _gate_at(trace: Trace, k: int) -> str | None:
    """At a should_compress call: what it tested, against what, and its answer."""
    from inspector.trace import model as tm
    from inspector.ui.explain import gate_figure

    ev = trace.events[k]
    figure = gate_figure(ev) if ev.kind == tm.EV_SHOULD else None
    if figure is None:
        return None
    site = ev.args.get("site", "") if isinstance(ev.args, dict) else ""
    return f"gate ({site}) tested {figure:,} → {str(ev.result).lower()}"


def _gates_on_rows(view, run: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # noqa: ANN001 - CompareView
    """A run's gate points with x on the alignment rows (a prepared call's row, else between rows)."""
    trace = view.trace(run)
    fig = figures(trace)
    xs = np.empty(fig.gate_x.shape[0])
    align = view.alignment
    for i, (x, k) in enumerate(zip(fig.gate_x, fig.gate_event)):
        if float(x).is_integer() and 0 <= int(x) < len(trace.requests):
            row = align.row_for(run, trace.requests[int(x)].event)
            xs[i] = float(row) if row is not None else np.nan
        else:
            xs[i] = align.event_x(run, int(k))
    return xs, fig.gate_y, fig.gate_fired



def transcript_markers(plot: pg.PlotItem, xs: list[float], *, y_span: tuple[float, float]) -> list[pg.GraphicsObject]:
    """The transcript's own compactions: dashed and heavier than the engine's dotted markers."""
    items: list[pg.GraphicsObject] = []
    pen = pg.mkPen(theme.MARKER, width=2, style=Qt.PenStyle.DashLine)
    for x in xs:
        line = pg.InfiniteLine(pos=x, angle=90, movable=False, pen=pen)
        plot.addItem(line, ignoreBounds=True)
        items.append(line)
    return items


def marker_legend(legend: pg.LegendItem, *, engine: bool, transcript: bool) -> list[pg.PlotDataItem]:
    """Legend rows for the marker kinds drawn (a line sample each; the items are never plotted).

    Only where the transcript compacted too: then two kinds of vertical line need telling apart;
    otherwise every marker is the engine's, and the legend's room goes to the data.
    """
    keys: list[pg.PlotDataItem] = []
    if not transcript:
        return keys
    for shown, name, pen in ((engine, ENGINE_COMPACTION_NAME, pg.mkPen(theme.COMPRESS, width=1, style=Qt.PenStyle.DotLine)),
                             (transcript, TRANSCRIPT_COMPACTION_NAME,
                              pg.mkPen(theme.MARKER, width=2, style=Qt.PenStyle.DashLine))):
        if shown:
            key = pg.PlotDataItem(pen=pen, name=html.escape(name))
            legend.addItem(key, key.name())
            keys.append(key)
    return keys


def _recorded_prompt(_trace: Trace, req: Request) -> float:
    return float(req.recorded.get("prompt_tokens", np.nan)) if req.recorded else np.nan


def _fed_at(trace: Trace, r: int) -> str:
    """What the engine was given as this request's prompt tokens, and from where (meta.usage_model.fed_per_request)."""
    fed = (trace.meta.get("usage_model") or {}).get("fed_per_request") or []
    if r >= len(fed) or r >= len(trace.requests):
        return ""
    prompt = (trace.requests[r].usage or {}).get("prompt_tokens")
    return f"engine fed {int(prompt):,} ({fed[r]})" if isinstance(prompt, int | float) else ""
