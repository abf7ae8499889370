"""Decision: why the hook at the cursor did what it did.

Its recorded arguments and return value, and for a gate (``should_compress``, the preflight
deferral, ``should_compress_info``) or a compress call: the figure it compared, where that figure
came from, the threshold and how the threshold follows from the config and the window
(:mod:`inspector.ui.explain`). In a comparison, one section per run, at that run's event of the
row. Plain text in a read-only box (``setPlainText`` costs a fifth of ``setHtml`` on every step),
so every line can be selected and copied.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QPlainTextEdit, QVBoxLayout, QWidget

from inspector.trace.model import Trace
from inspector.ui.compare import CompareAware
from inspector.ui.cursor import Cursor
from inspector.ui.explain import Line, explain
from inspector.ui.panels.base import Panel
from inspector.ui.scroll_bar import steady_scroll_bar


def lines_text(lines: list[Line], heading: str = "") -> str:
    """Label/value rows as aligned plain text (values that wrap stay under their column)."""
    width = max((len(line.label) for line in lines), default=0) + 2
    pad = "\n" + " " * width  # a value of several lines (a traceback) stays in its column
    body = "\n".join(f"{line.label:<{width}}{line.value.replace(chr(10), pad)}" for line in lines)
    return f"{heading}\n{body}" if heading else body


class DecisionPanel(CompareAware, Panel):
    panel_id = "decision"
    title = "Decision"
    area = Qt.DockWidgetArea.BottomDockWidgetArea
    #: the dock this panel's dock joins as a tab in the default layout
    tab_with = "diff"

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.browser = QPlainTextEdit()
        self.browser.setReadOnly(True)
        self.browser.setUndoRedoEnabled(False)
        self.browser.setObjectName("decision_text")
        steady_scroll_bar(self.browser)
        self.browser.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.browser)
        self._shown = ""

    def render_trace(self, trace: Trace | None) -> None:
        self._shown = ""
        self.browser.clear()

    def text(self) -> str:
        """What the panel shows, as plain text (tests, copying)."""
        return self.browser.toPlainText()

    def render_cursor(self, k: int) -> None:
        trace = self._trace
        if trace is None or not len(trace):
            body = "No trace loaded" if trace is None else "Empty trace"
        elif self.compare is not None:
            view = self.compare
            parts = []
            row = view.row_at(k)
            for run in view.runs:
                run_trace = view.trace(run)
                # the same hook of the row in every run (its gate, its compress), not the row's request
                event = k if run == view.primary else (
                    view.event_for(run, row) if row is None else view.alignment.event_at_phase(run, row, view.primary, k))
                if run_trace is None or event is None:
                    continue
                parts.append(lines_text(explain(run_trace, event), f"[{view.label(run)}]"))
            body = "\n\n".join(parts)
        else:
            body = lines_text(explain(trace, k))
        if body != self._shown:  # the box re-lays out its text: skip it when nothing changed
            self._shown = body
            self.browser.setPlainText(body)
