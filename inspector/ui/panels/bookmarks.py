"""Bookmarks: the marks and notes saved inside the trace, as a list to jump from.

Ctrl+B in the window adds or edits the mark at the cursor; this panel lists them in event
order, highlights the one at the cursor, and jumps on double-click.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.cursor import Cursor
from inspector.ui.panels.base import Panel


class BookmarksPanel(Panel):
    panel_id = "bookmarks"
    title = "Bookmarks"
    area = Qt.DockWidgetArea.LeftDockWidgetArea

    #: the user asked to delete the mark at this event (the window owns edits to the trace)
    delete_requested = Signal(int)

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["event", "label", "note"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.cellDoubleClicked.connect(self._jump)
        self.hint = QLabel("Ctrl+B adds a bookmark (with a note) at the cursor; they are saved in the trace file.")
        self.hint.setTextFormat(Qt.TextFormat.PlainText)
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color:#78909c")
        self.delete_button = QPushButton("Delete")
        self.delete_button.clicked.connect(self._delete)
        row = QHBoxLayout()
        row.addWidget(self.hint, 1)
        row.addWidget(self.delete_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.table, 1)
        layout.addLayout(row)
        self._events: list[int] = []

    def render_trace(self, trace: Trace | None) -> None:
        self._fill()

    def on_marks_changed(self) -> None:
        self._fill()
        self._render_now(self.cursor.index)

    def _fill(self) -> None:
        marks = sorted(self._trace.marks, key=lambda m: m.event) if self._trace is not None else []
        self._events = [m.event for m in marks]
        self.table.setRowCount(len(marks))
        for row, mark in enumerate(marks):
            for col, text in enumerate((str(mark.event), mark.label, theme.one_line(mark.note, 200))):
                item = QTableWidgetItem(text)
                if col == 2 and mark.note:
                    item.setToolTip(theme.plain_tooltip(mark.note))
                self.table.setItem(row, col, item)
        self.delete_button.setEnabled(bool(marks))

    def render_cursor(self, k: int) -> None:
        if k in self._events:
            self.table.selectRow(self._events.index(k))
        else:
            self.table.clearSelection()

    def _jump(self, row: int, _col: int) -> None:
        if 0 <= row < len(self._events):
            self.jump_requested.emit(self._events[row])

    def _delete(self) -> None:
        row = self.table.currentRow()
        if 0 <= row < len(self._events):
            self.delete_requested.emit(self._events[row])
