"""Context: what fills the window at the cursor — system prompt, tool schemas, hidden prefix,
summaries, history, the incoming message — against the free space and the reserve above the
compaction threshold, in tokens (:mod:`inspector.ui.composition`). In a comparison, one bar and
one column per run, each at that run's event of the row.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.compare import CompareAware
from inspector.ui.composition import FREE, PARTS, RESERVE, Composition, composition, request_for_cursor
from inspector.ui.cursor import Cursor
from inspector.ui.panels.base import Panel

COLOURS = {
    "system prompt": "#5c6bc0",
    "tool schemas": "#8d6e63",
    "hidden prefix": "#78909c",
    "summaries": "#ab47bc",
    "history": "#26a69a",
    "incoming message": "#ffa726",
    FREE: "#eceff1",
    RESERVE: "#ffcdd2",
}


class CompositionBar(QWidget):
    """One request's parts as a stacked bar over the whole window, the threshold as a line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.comp: Composition | None = None
        self.caption = ""
        self.setMinimumHeight(self.fontMetrics().lineSpacing() + 10)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(300, self.fontMetrics().lineSpacing() + 10)

    def set_composition(self, comp: Composition | None, caption: str) -> None:
        self.comp, self.caption = comp, caption
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        p = QPainter(self)
        rect = QRectF(self.rect().adjusted(0, 0, -1, -1))
        p.fillRect(rect, QColor(COLOURS[FREE]))
        comp = self.comp
        if comp is not None and comp.context_length > 0:
            scale = rect.width() / max(comp.context_length, comp.used)
            x = rect.left()
            for name in PARTS:
                w = comp.parts[name] * scale
                if w > 0:
                    p.fillRect(QRectF(x, rect.top(), w, rect.height()), QColor(COLOURS[name]))
                    x += w
            if comp.threshold:
                left = rect.left() + comp.threshold * scale
                p.fillRect(QRectF(max(left, x), rect.top(), rect.right() - max(left, x), rect.height()),
                           QColor(COLOURS[RESERVE]))
                p.setPen(QColor(theme.THRESHOLD))
                p.drawLine(int(left), int(rect.top()), int(left), int(rect.bottom()))
        p.setPen(QColor("#b0bec5"))
        p.drawRect(rect)
        p.setPen(QColor("#263238"))
        p.drawText(rect.adjusted(4, 0, -4, 0), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, self.caption)
        p.end()


class ContextPanel(CompareAware, Panel):
    panel_id = "context"
    title = "Context"
    area = Qt.DockWidgetArea.BottomDockWidgetArea
    tab_with = "diff"

    ROWS = (*PARTS, "total sent", FREE, RESERVE, "context length")

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.where = theme.readout_label(1)
        self.bars_box = QVBoxLayout()
        self.bars_box.setSpacing(2)
        self.bars: list[CompositionBar] = []
        self.table = QTableWidget(len(self.ROWS), 1)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setVerticalHeaderLabels(list(self.ROWS))
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().lineSpacing() + 4)
        for row, name in enumerate(self.ROWS):
            head = self.table.verticalHeaderItem(row)
            if name in COLOURS and head is not None:
                head.setForeground(QColor(COLOURS[name]).darker(140))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addWidget(self.where)
        layout.addLayout(self.bars_box)
        layout.addWidget(self.table, 1)
        self._runs: list[tuple[str, Trace]] = []
        self._memo: dict[tuple[int, int | None, bool], Composition | None] = {}

    def _set_columns(self, labels: list[str]) -> None:
        while len(self.bars) < len(labels):
            bar = CompositionBar()
            self.bars.append(bar)
            self.bars_box.addWidget(bar)
        for i, bar in enumerate(self.bars):
            bar.setVisible(i < len(labels))
        self.table.setColumnCount(max(1, len(labels)))
        self.table.setHorizontalHeaderLabels(labels or ["tokens"])
        for row in range(len(self.ROWS)):
            for col in range(self.table.columnCount()):
                item = QTableWidgetItem("–")
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, col, item)

    def render_trace(self, trace: Trace | None) -> None:
        self._memo.clear()
        if self.compare is not None and trace is not None:
            view = self.compare
            self._runs = [(view.label(r), view.trace(r)) for r in view.runs if view.trace(r) is not None]  # type: ignore[misc]
        else:
            self._runs = [("tokens", trace)] if trace is not None else []
        self._set_columns([label for label, _ in self._runs])

    def render_cursor(self, k: int) -> None:
        trace = self._trace
        if trace is None or not len(trace):
            self.where.setText("No trace loaded" if trace is None else "Empty trace")
            return
        events = self.compare.events_at(k) if self.compare is not None else {0: k}
        runs = self.compare.runs if self.compare is not None else [0]
        where = ""
        for col, (run, (label, run_trace)) in enumerate(zip(runs, self._runs)):
            event = events.get(run)
            comp = self._composition(run_trace, event) if event is not None else None
            if col == 0 or (self.compare is not None and run == self.compare.primary):
                where = ("Before the first provider request" if comp is None else
                         f"Request #{comp.request}" + (" (being prepared at this event)" if comp.prepared else "")
                         + " · tokenizer counts of what is sent")
            self._fill(col, comp)
            caption = "–" if comp is None else (
                f"{label + ': ' if self.compare is not None else ''}{comp.used:,} of {comp.context_length:,} tok"
                + (f" · threshold {comp.threshold:,}" if comp.threshold else ""))
            self.bars[col].set_composition(comp, caption)
        self.where.setText(where)

    def _composition(self, trace: Trace, k: int) -> Composition | None:
        """Memoised per request: stepping through one request's hooks costs a dict lookup."""
        req, prepared = request_for_cursor(trace, k)
        key = (id(trace), None if req is None else req.index, prepared)
        if key not in self._memo:
            if len(self._memo) > 512:
                self._memo.clear()
            self._memo[key] = composition(trace, k)
        return self._memo[key]

    def _fill(self, col: int, comp: Composition | None) -> None:
        values: dict[str, str] = {}
        if comp is not None:
            total = comp.context_length or 1
            for name, n in comp.rows():
                values[name] = f"{n:,}  ({n / total:.0%})"
            values["total sent"] = f"{comp.used:,}  ({comp.used / total:.0%})"
            values["context length"] = f"{comp.context_length:,}"
            if comp.free < 0:
                values[FREE] = f"{comp.free:,}  (over the threshold)"
        for row, name in enumerate(self.ROWS):
            item = self.table.item(row, col)
            text = values.get(name, "–")
            if item is not None and item.text() != text:
                item.setText(text)
