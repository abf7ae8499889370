"""Token counters: the engine's token attributes at the cursor, with the change per request.

These are the numbers Hermes' gates read (``last_prompt_tokens`` against ``threshold_tokens``),
so the panel makes "over threshold" and "this event faulted" impossible to miss.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QGridLayout, QVBoxLayout, QWidget

from inspector.trace import model as tm
from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.cursor import Cursor
from inspector.ui.panels.base import Panel

ROWS = (
    ("last_prompt_tokens", "Prompt tokens"),
    ("last_completion_tokens", "Completion tokens"),
    ("last_total_tokens", "Total tokens"),
    ("threshold_tokens", "Threshold"),
    ("context_length", "Context length"),
    ("compression_count", "Compressions"),
)


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


def _label(text: str = "", *, bold: bool = False, align_right: bool = False, widest: str = "") -> theme.TextLine:
    """A counter cell: painted text, so updating it on every step never re-lays out the window."""
    label = theme.TextLine(1, bold=bold, align=Qt.AlignmentFlag.AlignRight if align_right else Qt.AlignmentFlag.AlignLeft)
    label.setFixedWidth(label.fontMetrics().horizontalAdvance(widest or text or "0") + 8)
    label.setText(text)
    return label


class CountersPanel(Panel):
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
            key.setToolTip(name)
            grid.addWidget(key, row, 0)
            self.values[name] = _label("–", bold=True, align_right=True, widest=value_w[:10])
            self.deltas[name] = _label("", align_right=True, widest=delta_w)
            grid.addWidget(self.values[name], row, 1)
            grid.addWidget(self.deltas[name], row, 2)
        grid.setColumnStretch(0, 1)
        self.usage_bar = UsageBar()
        # always present (empty when there is nothing to say) so showing an alert moves nothing
        self.alert = theme.readout_label(2)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addWidget(self.where)
        layout.addLayout(grid)
        layout.addWidget(self.usage_bar)
        layout.addWidget(self.alert)
        layout.addStretch(1)

    def render_trace(self, trace: Trace | None) -> None:
        if trace is None or not len(trace):
            for name in self.values:
                self.values[name].setText("–")
                self.deltas[name].setText("")
            self.where.setText("No trace loaded" if trace is None else "The trace has no events")
            self.usage_bar.set_usage(0.0, "usage –", "#43a047")
            self.alert.setText("")
            self.alert.set_colours()

    def render_cursor(self, k: int) -> None:
        trace = self._trace
        if trace is None or not len(trace):
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
        if req is not None:
            where += f" · request #{req.index}"
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
        alerts = []
        if ev.fault is not None:
            alerts.append(f"Fault at this event — {ev.fault.kind}: {ev.fault.message}")
        if over:
            alerts.append(f"Over threshold: {prompt:,} ≥ {threshold:,} tokens")
        if ev.kind == tm.EV_COMPRESS and ev.fault is None:
            alerts.append("Compression at this event")
        self.alert.setText("\n".join(alerts))
        colour = theme.FAULT if (ev.fault is not None or over) else theme.COMPRESS
        self.alert.set_colours("white", colour if alerts else None)
