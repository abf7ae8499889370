"""Message lifetime: what became of each message, and which facts the run lost.

Top, the selected message's **lifetime strip** on the request axis (sent, left out, in a summary,
dropped, sent again) with a marker per lifetime event; below it the **session chart**, every
message (rows) over every request (columns), drawn as one image (binned when the session is
larger than the screen, never one item per cell). Right, the selected message's events and the
run's **lost facts**; a click on either jumps the cursor (a lost fact to its origin message).

The selected message follows the cursor — the newest message the request at the cursor sends —
until a row of the chart or a lost fact is clicked; "Follow cursor" goes back to following.
Everything comes from :func:`inspector.quality.analysis.analyse`, computed when the panel is
first shown, on the window's job runner (it is cached in the trace and saved with it).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from inspector.quality import lifetime as lt
from inspector.quality.analysis import Analysis, analyse, cached_analysis, origin_event
from inspector.quality.report import percent, probe_lines, run_line
from inspector.trace.model import Trace
from inspector.ui import plots, theme
from inspector.ui.cursor import Cursor
from inspector.ui.geometry import GeometryFirewall
from inspector.ui.panels.base import Panel

# Cell colours, by lifetime cell code (inspector.quality.lifetime.CELL_*).
CELL_COLOURS = ("#ffffff", "#a5d6a7", theme.COMPRESS, theme.FAULT, "#ffcc80", theme.SELECT)
EVENT_COLOURS = {lt.FIRST: "#2e7d32", lt.SUMMARISED: theme.COMPRESS, lt.DROPPED: theme.FAULT,
                 lt.LEFT_OUT: "#ef6c00", lt.RESTORED: theme.SELECT, lt.TOOL_RETURN: theme.TOOL,
                 lt.PRUNED: "#757575"}
ROLE_DATA = Qt.ItemDataRole.UserRole


def _lut() -> np.ndarray:
    out = np.zeros((len(CELL_COLOURS), 4), dtype=np.ubyte)
    for i, colour in enumerate(CELL_COLOURS):
        c = pg.mkColor(colour)
        out[i] = (c.red(), c.green(), c.blue(), 255)
    return out


_EVENT_BRUSHES: dict[str, QBrush] = {}


def _event_brush(kind: str) -> QBrush:
    """One brush per kind of lifetime event, kept: the strip's scatter caches each mark's picture by
    the brush object, so a new brush per mark re-rendered every mark (and grew the cache) on each
    cursor move that selected another message."""
    brush = _EVENT_BRUSHES.get(kind)
    if brush is None:
        brush = _EVENT_BRUSHES[kind] = pg.mkBrush(EVENT_COLOURS.get(kind, "#000"))
    return brush


def describe_event(e: lt.LifeEvent) -> str:
    where = f"event {e.event}" + (f", request {e.request}" if e.request is not None else "")
    what = {lt.FIRST: "first sent", lt.SUMMARISED: "summarised", lt.DROPPED: "dropped (no summary)",
            lt.LEFT_OUT: "left out of the request", lt.RESTORED: "sent again", lt.TOOL_RETURN: "returned by a tool",
            lt.PRUNED: "rewritten in place"}.get(e.kind, e.kind)
    if e.kind == lt.SUMMARISED and e.summary is not None:
        what += f" into summary #{e.summary}"
    if e.detail:
        what += f" ({e.detail})"
    return f"{where}: {what}"


def _legend() -> QWidget:
    """A swatch and a name per cell colour (fixed text: labels, never user content)."""
    box = QWidget()
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(4)
    for code, name in enumerate(lt.CELL_NAMES[1:], 1):
        swatch = QLabel()
        swatch.setFixedSize(12, 12)
        swatch.setStyleSheet(f"background:{CELL_COLOURS[code]}; border:1px solid #90a4ae")
        text = QLabel(name)
        text.setTextFormat(Qt.TextFormat.PlainText)
        row.addWidget(swatch)
        row.addWidget(text)
        row.addSpacing(8)
    row.addStretch(1)
    box.setToolTip("Rows: messages in order; columns: requests. Click a row to show that message's lifetime.")
    # never wider than the dock it is in: the window must still fit a small screen
    box.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
    return box


class LifetimePanel(Panel):
    panel_id = "lifetime"
    title = "Message lifetime"
    area = Qt.DockWidgetArea.BottomDockWidgetArea
    #: the default layout puts this panel in the tab group of that panel
    tab_with = "diff"

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.readout = theme.readout_label(2)
        self.follow = QCheckBox("Follow cursor")
        self.follow.setChecked(True)
        self.follow.toggled.connect(self._follow_toggled)

        self.strip_widget = plots.make_plot_widget("msg", height=70)
        self.strip_widget.setMaximumHeight(90)
        self.strip = self.strip_widget.getPlotItem()
        self.strip_image = pg.ImageItem()
        self.strip_image.setLookupTable(_lut())
        self.strip.addItem(self.strip_image)
        self.strip_marks = pg.ScatterPlotItem(size=9, pen=pg.mkPen("white", width=1), hoverable=True,
                                              tip=lambda x, y, data: data)
        self.strip.addItem(self.strip_marks)
        self.strip.getAxis("left").setTicks([[]])
        self.strip_cursor = plots.CursorLine(self.strip, self._jump_to_request)
        self.strip_marks.sigClicked.connect(self._mark_clicked)

        self.chart_widget = plots.make_plot_widget("message")
        self.chart = self.chart_widget.getPlotItem()
        self.chart.getViewBox().invertY(True)
        self.chart_image = pg.ImageItem()
        self.chart_image.setLookupTable(_lut())
        self.chart.addItem(self.chart_image)
        self.selected_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(theme.CURSOR, width=1, style=Qt.PenStyle.DashLine))
        self.chart.addItem(self.selected_line, ignoreBounds=True)
        self.chart_cursor = plots.CursorLine(self.chart, self._jump_to_request)
        self.chart_widget.scene().sigMouseClicked.connect(self._chart_clicked)
        self.strip.setXLink(self.chart)  # one request axis: zooming the chart zooms the strip
        self.legend = _legend()

        self.events_list = QListWidget()
        self.events_list.itemClicked.connect(self._item_jump)
        self.lost_list = QListWidget()
        self.lost_list.itemClicked.connect(self._lost_clicked)
        self.points_list = QListWidget()
        self.points_list.itemClicked.connect(self._item_jump)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.events_list, "This message")
        self.tabs.addTab(self.lost_list, "Lost facts")
        self.tabs.addTab(self.points_list, "Retention")

        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.setSpacing(2)
        top = QHBoxLayout()
        top.addWidget(self.readout, 1)
        top.addWidget(self.follow)
        lv.addLayout(top)
        lv.addWidget(self.strip_widget)
        lv.addWidget(self.chart_widget, 1)
        lv.addWidget(self.legend)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(GeometryFirewall(self.tabs))
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([600, 400])  # the lists need room for a fact or an event in words
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(split)

        self.analysis: Analysis | None = None
        self._lost_by_origin: Counter[int] = Counter()  # lost facts per origin message, counted once per analysis
        self._analysed_for: Trace | None = None
        self.selected: int | None = None
        self._steps = (1, 1)
        self._strip_y: list[float] | None = None  # the strip's y range as last set

    def x_view(self) -> pg.ViewBox:
        return self.chart.getViewBox()

    # -- trace -------------------------------------------------------------------------------
    def render_trace(self, trace: Trace | None) -> None:
        self.analysis = None
        self._analysed_for = None
        self.selected = None
        self.follow.setChecked(True)
        self.chart_image.clear()
        self.strip_image.clear()
        self.strip_marks.setData([])
        self.events_list.clear()
        self.lost_list.clear()
        self.points_list.clear()
        self.readout.setText("No trace loaded" if trace is None else "")

    def _ensure_analysis(self) -> Analysis | None:
        """The analysis, made on first need (the panel may stay hidden for a whole session).

        In a window it is made on the job runner (seconds for a long session: never on a cursor
        step); a newer trace (a follow or live update) supersedes the job of the one before.
        """
        trace = self._trace
        if trace is None or not trace.requests:
            return None
        if self._analysed_for is not trace:
            self._analysed_for = trace
            ready = cached_analysis(trace)
            if ready is None and self.jobs is not None:
                self.analysis = None
                self.readout.setText("Tracing every message's lifetime…")
                self.jobs.submit(lambda _job: analyse(trace), lambda a: self._analysed(trace, a),
                                 key=("lifetime", id(self)), name="message lifetimes")
                return None
            self._show_analysis(ready if ready is not None else analyse(trace))
        return self.analysis

    def refresh(self) -> None:
        """Exports and screenshots draw the analysis, not the note that it is on its way: wait for it."""
        job = self.jobs.current(("lifetime", id(self))) if self.jobs is not None else None
        if job is not None:
            self.jobs.wait(job, 120_000)
        super().refresh()

    def _analysed(self, trace: Trace, analysis: Analysis) -> None:
        if trace is self._trace:
            self._show_analysis(analysis)
            self.set_cursor(self.cursor.index)

    def _show_analysis(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self._draw_chart()
        self._fill_lists()

    def _draw_chart(self) -> None:
        a = self.analysis
        assert a is not None
        rows, rstep, cstep = a.lifetimes.cells(max_rows=2000, max_cols=2000)
        self._steps = (rstep, cstep)
        if rows.size == 0:
            self.chart_image.clear()
            return
        image = rows.T  # ImageItem indexes [x, y]: requests × messages
        self.chart_image.setImage(image, levels=(0, len(CELL_COLOURS) - 1), autoLevels=False)
        self.chart_image.setRect(QRectF(-0.5, -0.5, image.shape[0] * cstep, image.shape[1] * rstep))
        self.chart.setXRange(-0.5, a.lifetimes.requests - 0.5, padding=0.01)
        self.chart.setYRange(-0.5, len(a.lifetimes.messages) - 0.5, padding=0.01)

    def _fill_lists(self) -> None:
        a = self.analysis
        assert a is not None
        self.lost_list.clear()
        self._lost_by_origin = Counter(f.fact.origin for f in a.retention.end.lost)
        for f in a.lost_facts():
            item = QListWidgetItem(f"{f.fact.kind}: {theme.one_line(f.fact.text, 120)}  (message {f.fact.origin})")
            item.setData(ROLE_DATA, ("fact", f.fact.origin))
            item.setToolTip(theme.plain_tooltip(f.fact.text))
            self.lost_list.addItem(item)
        self.tabs.setTabText(1, f"Lost facts ({len(a.retention.end.lost):,})")
        self.points_list.clear()
        head = QListWidgetItem(run_line("run", a))
        head.setToolTip(theme.plain_tooltip(run_line("run", a)))
        self.points_list.addItem(head)
        for line in probe_lines(a):  # retrieval tools and graded questions, when they ran
            self.points_list.addItem(QListWidgetItem(line))
        for n, p in enumerate(a.retention.compactions, 1):
            c = p.counts()
            item = QListWidgetItem(f"compaction {n} (event {p.event}): {percent(p.retention)} of {p.total:,} facts — "
                                   f"{c['carried']:,} carried, {c['summary']:,} in a summary, {c['lost']:,} lost")
            item.setData(ROLE_DATA, ("event", p.event))
            self.points_list.addItem(item)

    # -- cursor ------------------------------------------------------------------------------
    def render_cursor(self, k: int) -> None:
        a = self._ensure_analysis()
        trace = self._trace
        if a is None or trace is None:
            self.chart_cursor.set_x(None)
            self.strip_cursor.set_x(None)
            if trace is not None and not trace.requests:
                self.readout.setText("No provider requests in this trace")
            return
        req = trace.request_at(k)
        x = float(req.index) if req is not None else None
        self.chart_cursor.set_x(x)
        self.strip_cursor.set_x(x)
        if self.follow.isChecked():
            newest = self._newest_at(req.index if req is not None else None)
            if newest != self.selected:
                self._select(newest)
        if self.selected is None:
            self.readout.setText("No session message at the cursor yet")

    def _newest_at(self, request: int | None) -> int | None:
        a, trace = self.analysis, self._trace
        if a is None or trace is None or request is None:
            return None
        forms = a.lifetimes.forms
        for key in reversed(trace.store.get_list(trace.requests[request].selected)):
            if key in forms:
                return forms[key]
        return None

    def select_message(self, index: int | None) -> None:
        """Show message ``index``'s lifetime and stop following the cursor (a click did this)."""
        self.follow.blockSignals(True)
        self.follow.setChecked(False)
        self.follow.blockSignals(False)
        self._select(index)

    def _select(self, index: int | None) -> None:
        a = self.analysis
        self.selected = index
        self.events_list.clear()
        if a is None or index is None or not (0 <= index < len(a.lifetimes.messages)):
            self.selected = None
            self.strip_image.clear()
            self.strip_marks.setData([])
            self.selected_line.setVisible(False)
            return
        life = a.lifetimes.messages[index]
        row = np.zeros((max(1, a.lifetimes.requests), 2), dtype=np.ubyte)  # two rows: pyqtgraph draws no 1-row image
        for first, end, code in lt.life_segments(life, a.lifetimes.requests):  # runs, not cells: a cursor step
            row[first:end, :] = code
        self.strip_image.setImage(row, levels=(0, len(CELL_COLOURS) - 1), autoLevels=False)
        self.strip_image.setRect(QRectF(-0.5, 0, row.shape[0], 1))
        # one array per field: pyqtgraph copies a list of spot dicts into its records field by field
        xs: list[float] = []
        texts: list[str] = []
        brushes: list[QBrush] = []
        symbols: list[str] = []
        for e in life.events:
            x = e.request if e.request is not None else self._request_of_event(e.event)
            if x is None:
                continue
            text = describe_event(e)
            xs.append(x)
            texts.append(text)
            brushes.append(_event_brush(e.kind))
            symbols.append("t" if e.kind in (lt.SUMMARISED, lt.DROPPED) else "o")
            item = QListWidgetItem(text)
            item.setData(ROLE_DATA, ("event", e.event))
            self.events_list.addItem(item)
        self.strip_marks.setData(x=xs, y=[0.5] * len(xs), data=texts, brush=brushes, symbol=symbols)
        if self._strip_y != self.strip.getViewBox().viewRange()[1]:  # set once: the strip's y never pans
            self.strip.setYRange(0, 1, padding=0.05)
            self._strip_y = self.strip.getViewBox().viewRange()[1]
        self.selected_line.setVisible(True)
        self.selected_line.setValue(index)
        lost = self._lost_by_origin.get(index, 0)
        removed = life.removed
        fate = ("still sent at the last request" if life.sent and life.sent[-1] == a.lifetimes.requests - 1 else
                describe_event(removed) if removed is not None else "not sent at the last request")
        span = f"{life.sent[0]}–{life.sent[-1]}" if life.sent else "never"
        self.readout.setText(f"message {index} ({life.role}): sent in {len(life.sent):,} of {a.lifetimes.requests:,} "
                             f"requests ({span}); {fate}; {lost} of its facts lost at the end")

    def _request_of_event(self, event: int) -> int | None:
        trace = self._trace
        if trace is None:
            return None
        req = trace.request_at(event)
        return req.index if req is not None else None

    # -- clicks ------------------------------------------------------------------------------
    def _follow_toggled(self, on: bool) -> None:
        if on:
            self._render_now(self.cursor.index)

    def _jump_to_request(self, x: float) -> None:
        trace = self._trace
        if trace is None or not trace.requests:
            return
        r = max(0, min(int(round(x)), len(trace.requests) - 1))
        self.jump_requested.emit(trace.requests[r].event)

    def _chart_clicked(self, event) -> None:  # noqa: ANN001 - pyqtgraph MouseClickEvent
        if event.button() != Qt.MouseButton.LeftButton or self.analysis is None:
            return
        vb = self.chart.getViewBox()
        if not vb.sceneBoundingRect().contains(event.scenePos()):
            return
        p = vb.mapSceneToView(event.scenePos())
        row = int(round(p.y()))
        if 0 <= row < len(self.analysis.lifetimes.messages):
            self.select_message(row)
        self._jump_to_request(p.x())

    def _mark_clicked(self, _item, points, *_args) -> None:  # noqa: ANN001 - pyqtgraph signal
        if not points or self.analysis is None or self.selected is None:
            return
        text = points[0].data()
        for e in self.analysis.lifetimes.messages[self.selected].events:
            if describe_event(e) == text:
                self.jump_requested.emit(e.event)
                return

    def _item_jump(self, item: QListWidgetItem) -> None:
        data = item.data(ROLE_DATA)
        if data and data[0] == "event" and data[1] is not None:
            self.jump_requested.emit(int(data[1]))

    def _lost_clicked(self, item: QListWidgetItem) -> None:
        """A lost fact: show its origin message and move the cursor to where it was first sent."""
        data = item.data(ROLE_DATA)
        if not data or self.analysis is None:
            return
        origin = int(data[1])
        self.select_message(origin)
        event = origin_event(self.analysis, origin)
        if event is not None:
            self.jump_requested.emit(event)
