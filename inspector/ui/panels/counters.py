"""Token counters: the engine's token attributes at the cursor, with the change per request.

These are the numbers Hermes' gates read (``last_prompt_tokens`` against ``threshold_tokens``),
so the panel makes "over threshold" and "this event faulted" impossible to miss.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QGridLayout, QSizePolicy, QVBoxLayout, QWidget

from inspector.trace import model as tm
from inspector.trace.model import Trace
from inspector.trace.run_facts import fed_kind
from inspector.trace.summary import is_committed_compression
from inspector.ui import theme
from inspector.ui.compare import CompareAware
from inspector.ui.cursor import Cursor
from inspector.ui.explain import usage_kind
from inspector.ui.panels.base import Panel

ROWS = (
    ("last_prompt_tokens", "Prompt tokens"),
    ("last_completion_tokens", "Completion tokens"),
    ("last_total_tokens", "Total tokens"),
    ("threshold_tokens", "Threshold"),
    ("context_length", "Context length"),
    ("compression_count", "Compressions"),
)
# what each row is (inspector.ui.explain's vocabulary): the engine's own attributes after the event
ROW_TIPS = {
    "last_prompt_tokens": "the engine's last_prompt_tokens after this event: the prompt tokens of the usage "
                          "update_from_response was given (simulated in a replay, provider-reported live), "
                          "or what the host wrote there for a gate — not a count of the request at the cursor",
    "last_completion_tokens": "the engine's last_completion_tokens (from the same usage)",
    "last_total_tokens": "the engine's last_total_tokens (from the same usage)",
    "threshold_tokens": "the engine's threshold_tokens: what its should_compress compares with "
                        "(Decision panel: how it was derived)",
    "context_length": "the engine's context_length (the window it believes it has)",
    "compression_count": "the engine's own compression_count (an engine may count calls that kept nothing)",
}
# the widest figure a comparison column must show whole (a run name may be cut, a figure never)
COMPARE_VALUE_WIDEST = "99,999,999"


class UsageBar(QWidget):
    """Context usage as a filled bar with a caption; painted directly (QProgressBar with a style
    sheet costs milliseconds per update, and this changes on every step)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ratio = 0.0
        self.caption = "usage –"
        self.colour = QColor("#43a047")
        self.setFixedHeight(self.fontMetrics().lineSpacing() + 8)

    def set_usage(self, ratio: float, caption: str, colour: str) -> None:
        if (ratio, caption, colour) != (self.ratio, self.caption, self.colour.name()):
            self.ratio, self.caption, self.colour = ratio, caption, QColor(colour)
            self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        p = QPainter(self)
        rect = self.rect().adjusted(0, 0, -1, -1)
        p.fillRect(rect, QColor("#eceff1"))
        filled = QRectF(rect)
        filled.setWidth(rect.width() * max(0.0, min(1.0, self.ratio)))
        p.fillRect(filled, self.colour)
        p.setPen(QColor("#b0bec5"))
        p.drawRect(rect)
        p.setPen(QColor("#263238"))
        p.drawText(rect, Qt.AlignmentFlag.AlignCenter, self.caption)
        p.end()


def _label(text: str = "", *, bold: bool = False, align_right: bool = False, widest: str = "",
           whole: bool = True) -> theme.TextLine:
    """A counter cell: painted text, so updating it on every step never re-lays out the window.

    At least as wide as ``widest`` (and as ``text`` when ``whole``), filling its grid cell: a
    cell of fixed width narrower than its column was placed past the column's edge and painted
    over by its neighbour. Text that does not fit ends in "…" with the whole of it in the tooltip.
    """
    label = theme.TextLine(1, bold=bold, align=Qt.AlignmentFlag.AlignRight if align_right else Qt.AlignmentFlag.AlignLeft)
    metrics = label.fontMetrics()  # the cell's own (bold) font: a header is as wide as its text
    needed = metrics.horizontalAdvance(widest or "0")
    if whole:
        needed = max(needed, metrics.horizontalAdvance(text))
    label.setMinimumWidth(needed + 8)
    label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
    label.setText(text)
    return label


def _retention_text(trace: Trace, k: int) -> str:
    """Facts retained by the last compaction before event ``k``, and at the end of the run."""
    from inspector.quality.analysis import cached_analysis, retention_before

    analysis = cached_analysis(trace)
    if analysis is None:
        return ""
    last = retention_before(analysis, k)
    run = f"{analysis.run_retention:.1%} run"
    if last is None:
        return f"Facts retained: no compaction yet · {run}"
    return f"Facts retained: {last[1]:.1%} last compaction · {run}"


class CountersPanel(CompareAware, Panel):
    panel_id = "counters"
    title = "Token counters"
    area = Qt.DockWidgetArea.RightDockWidgetArea

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.where = theme.readout_label(2)
        grid = QGridLayout()
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(3)
        value_w, delta_w = "-1 (reset)  99,999,999", "+99,999,999"
        grid.addWidget(_label("", bold=True), 0, 0)
        grid.addWidget(_label("value", bold=True, align_right=True, widest="9,999,999"), 0, 1)
        grid.addWidget(_label("Δ request", bold=True, align_right=True, widest=delta_w), 0, 2)
        self.values: dict[str, theme.TextLine] = {}
        self.deltas: dict[str, theme.TextLine] = {}
        for row, (name, text) in enumerate(ROWS, start=1):
            key = _label(text, widest="Completion tokens")
            key.setToolTip(ROW_TIPS.get(name, name))
            grid.addWidget(key, row, 0)
            self.values[name] = _label("–", bold=True, align_right=True, widest=value_w[:10])
            self.deltas[name] = _label("", align_right=True, widest=delta_w)
            grid.addWidget(self.values[name], row, 1)
            grid.addWidget(self.deltas[name], row, 2)
        grid.setColumnStretch(0, 1)
        self.usage_bar = UsageBar()
        # always present (empty when there is nothing to say) so showing an alert moves nothing;
        # shared by both modes. The fault's place in the engine gets a line of its own, elided at
        # the start of the path so the file name, line and function always show.
        self.alert = theme.readout_label(2)
        self.fault_where = theme.TextLine(1, elide=Qt.TextElideMode.ElideLeft)

        self.single_box = QWidget()
        single = QVBoxLayout(self.single_box)
        single.setContentsMargins(0, 0, 0, 0)
        single.addWidget(self.where)
        single.addLayout(grid)
        single.addWidget(self.usage_bar)
        self.retention = theme.readout_label(1)  # facts retained (inspector.quality), when already measured
        single.addWidget(self.retention)
        # which Hermes the host played and how usage was fed (the Run tab has the whole of it), per run
        self.run_line = theme.readout_label(3)
        # comparison mode: one column per run (value, and the delta to the first run), built per comparison
        self.compare_box = QWidget()
        self.compare_box.hide()
        self.compare_grid = QGridLayout(self.compare_box)
        self.compare_grid.setContentsMargins(0, 0, 0, 0)
        self.compare_grid.setHorizontalSpacing(8)
        self.compare_grid.setVerticalSpacing(3)
        self.compare_where = theme.readout_label(1)
        self.run_cells: dict[tuple[int, str], tuple[theme.TextLine, theme.TextLine]] = {}

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addWidget(self.single_box)
        layout.addWidget(self.compare_where)
        layout.addWidget(self.compare_box)
        layout.addWidget(self.run_line)
        layout.addWidget(self.alert)
        layout.addWidget(self.fault_where)
        layout.addStretch(1)
        self.compare_where.hide()

    def _build_compare_grid(self) -> None:
        """One column per run; each attribute takes two grid rows: the value, then its delta to run 1.

        Stacking the delta under the value keeps three or four runs inside a narrow dock.
        """
        view = self.compare
        while self.compare_grid.count():
            item = self.compare_grid.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        for col in range(self.compare_grid.columnCount()):
            self.compare_grid.setColumnStretch(col, 0)
        self.run_cells = {}
        if view is None:
            return
        self.compare_grid.addWidget(_label("", bold=True, widest="Compressions"), 0, 0)
        for col, run in enumerate(view.runs):
            # as wide as its figures: a longer run name ends in "…" (the whole of it in the tooltip)
            head = _label(view.label(run), bold=True, align_right=True, widest=COMPARE_VALUE_WIDEST, whole=False)
            head.set_colours(view.color(run))
            head.setToolTip(theme.plain_tooltip(view.label(run)))
            self.compare_grid.addWidget(head, 0, 1 + col)
        for i, (name, text) in enumerate(ROWS):
            row = 1 + 2 * i
            key = _label(text, widest="Completion tokens")
            key.setToolTip(name)
            self.compare_grid.addWidget(key, row, 0)
            for col, run in enumerate(view.runs):
                value = _label("–", bold=True, align_right=True, widest=COMPARE_VALUE_WIDEST)
                delta = _label("", align_right=True, widest="Δ -999,999")
                self.compare_grid.addWidget(value, row, 1 + col)
                self.compare_grid.addWidget(delta, row + 1, 1 + col)
                self.run_cells[(run, name)] = (value, delta)
        for col in range(1 + len(view.runs)):
            self.compare_grid.setColumnStretch(col, 1)
        note = theme.TextLine(2)
        note.setText(f"Second line: Δ vs {view.label(view.runs[0])}. Each run at the same hook of this row; "
                     "grey: no request at this row (the value in force).")
        note.set_colours("#78909c")
        self.compare_grid.addWidget(note, 1 + 2 * len(ROWS), 0, 1, 1 + len(view.runs))

    def _render_compare_cursor(self, k: int) -> None:
        from inspector.compare import counters_at

        view = self.compare
        assert view is not None
        row = view.row_at(k)
        self.compare_where.setText(f"Primary {view.label(view.primary)} event {k} · {view.describe_row(row)}")
        states = counters_at(view.comparison, row if row is not None else 0, at=(view.primary, k))
        faults: list[tuple[str, tm.Fault]] = []
        for run in view.runs:
            state = states[run] if run < len(states) else None
            trace = view.trace(run)
            if state is not None and trace is not None:
                fault = trace.events[state["event"]].fault
                if fault is not None:
                    faults.append((f"{view.label(run)} event {state['event']}", fault))
        self._show_alerts(faults, [])
        for run in view.runs:
            state = states[run] if run < len(states) else None
            for name, _text in ROWS:
                value_cell, delta_cell = self.run_cells[(run, name)]
                if state is None:
                    value_cell.setText("–")
                    delta_cell.setText("")
                    continue
                value = state.get(name, 0)
                text = f"{value} (reset)" if value < 0 else theme.fmt_int(value)
                value_cell.setText(text)
                # grey: the run sent nothing at this row; the value is the one in force from its last request
                value_cell.set_colours(None if state.get("exact", True) else "#9e9e9e")
                value_cell.setToolTip("" if state.get("exact", True) else
                                      "This run sent no request at this row: the value in force from its last request")
                d = (state.get("delta") or {}).get(name)
                if run == view.runs[0] or d is None or value < 0:
                    delta_cell.setText("")
                else:
                    delta_cell.setText("Δ " + theme.fmt_delta(d))
                    delta_cell.set_colours("#2e7d32" if d < 0 else ("#c62828" if d > 0 else "#9e9e9e"))

    def render_trace(self, trace: Trace | None) -> None:
        comparing = self.compare is not None and trace is not None
        self.single_box.setVisible(not comparing)
        self.compare_box.setVisible(comparing)
        self.compare_where.setVisible(comparing)
        if comparing:
            self._build_compare_grid()
        else:
            self._build_compare_grid_clear()
        self._show_run_line(trace)
        if trace is None or not len(trace):
            for name in self.values:
                self.values[name].setText("–")
                self.deltas[name].setText("")
            self.where.setText("No trace loaded" if trace is None else "The trace has no events")
            self.usage_bar.set_usage(0.0, "usage –", "#43a047")
            self.retention.setText("")
            self._show_alerts([], [])

    def _show_run_line(self, trace: Trace | None) -> None:
        from inspector.trace.run_facts import WARN, brief

        if trace is None:
            self.run_line.setText("")
            return
        view = self.compare
        runs = [(view.label(r), view.trace(r)) for r in view.runs] if view is not None else [("", trace)]
        facts = [(label, brief(t)) for label, t in runs if t is not None]
        self.run_line.setText("\n".join(f"{label}: {fact.text}" if label else f"Run: {fact.text}" for label, fact in facts))
        self.run_line.set_colours(theme.FAULT if any(f.level == WARN for _l, f in facts) else "#546e7a")

    def _build_compare_grid_clear(self) -> None:
        if self.run_cells:
            saved, self.compare = self.compare, None
            self._build_compare_grid()
            self.compare = saved

    def render_cursor(self, k: int) -> None:
        trace = self._trace
        if trace is None or not len(trace):
            return
        if self.compare is not None:
            self._render_compare_cursor(k)
            return
        state = trace.state_at(k)
        req = trace.request_at(k)
        ev = trace.events[k]
        base: dict[str, int] | None = None
        if req is not None and req.event > 0:
            base = trace.state_at(req.event - 1)
        where = f"Event {k} · {ev.kind}"
        if ev.turn is not None:
            where += f" · turn {ev.turn}"
        if req is not None and ev.turn is not None and req.turn != ev.turn:
            # a turn's start, its preflight: the figures are still the last turn's last call's
            where += f" · figures of request #{req.index} (turn {req.turn}): this turn has sent nothing yet"
        elif req is not None:
            where += f" · request #{req.index}"
        where += f" · {fed_kind(trace, req.index if req is not None else None, usage_kind(trace))} usage"
        self.where.setText(where)
        for name, _text in ROWS:
            value = state.get(name, 0)
            if value < 0:
                # Hermes' -1 sentinel: reset by a compression, known again after the next response
                self.values[name].setText(f"{value} (reset)")
                self.values[name].setToolTip("-1 is the sentinel an engine sets after compressing; "
                                             "the next provider response sets the real figure")
                self.deltas[name].setText("")
                continue
            self.values[name].setText(theme.fmt_int(value))
            self.values[name].setToolTip("")
            if base is not None and base.get(name, 0) >= 0:
                d = value - base.get(name, 0)
                self.deltas[name].setText(theme.fmt_delta(d))
                self.deltas[name].set_colours("#2e7d32" if d < 0 else ("#c62828" if d > 0 else "#9e9e9e"))
            else:
                self.deltas[name].setText("")
        prompt, threshold, ctx = state["last_prompt_tokens"], state["threshold_tokens"], state["context_length"]
        over = threshold > 0 and prompt >= threshold
        colour = theme.FAULT if over else None
        self.values["last_prompt_tokens"].set_colours(colour)
        self.values["threshold_tokens"].set_colours(colour)
        ratio = prompt / ctx if ctx and prompt >= 0 else 0.0
        if prompt < 0:
            caption = "usage unknown until the next response"
        else:
            caption = f"usage {ratio:.1%} of context" + (" · over threshold" if over else "")
        chunk = theme.FAULT if over else ("#fb8c00" if threshold and prompt >= 0.8 * threshold else "#66bb6a")
        self.usage_bar.set_usage(ratio, caption, chunk)
        self.retention.setText(_retention_text(trace, k))
        notes = [f"Over threshold: {prompt:,} ≥ {threshold:,} tokens"] if over else []
        sent = req.tokens.get("tiktoken") if req is not None else None
        window = trace.state_at(req.event)["context_length"] if req is not None else 0
        overflow = isinstance(sent, int) and window and sent > window
        if overflow:
            notes.insert(0, f"Over the window: request #{req.index} sent {sent:,} tok > the {window:,}-token window "
                            "(a provider rejects it)")
        if is_committed_compression(ev):
            notes.append("Compression at this event")
        elif ev.kind == tm.EV_COMPRESS and ev.fault is None:
            # Hermes kept the transcript as it was: not a compression (the header and summary agree)
            unchanged = isinstance(ev.result, dict) and ev.result.get("unchanged")
            notes.append("Compress: no progress, transcript unchanged" if unchanged
                         else "Compress aborted: transcript unchanged")
        self._show_alerts([("this event", ev.fault)] if ev.fault is not None else [], notes,
                          colour=theme.FAULT if over or overflow else theme.COMPRESS)

    def _show_alerts(self, faults: list[tuple[str, tm.Fault]], notes: list[str], colour: str = theme.COMPRESS) -> None:
        """The alert box (faults first, then ``notes``) and the first fault's file and line under it."""
        alerts = [f"Fault at {who} — {fault.kind}: {fault.message}" for who, fault in faults] + notes
        self.alert.setText("\n".join(alerts))
        self.alert.set_colours("white", (theme.FAULT if faults else colour) if alerts else None)
        where = next((fault.where for _who, fault in faults if fault.where), None)
        self.fault_where.setText(f"at {where}" if where else "")
        self.fault_where.set_colours("white", theme.FAULT if where else None)
