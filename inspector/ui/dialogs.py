"""Small modal dialogs: pick a session from a Hermes state.db, edit a bookmark.

The window calls these through replaceable attributes (``window.pick_session`` …) so tests can
answer them without a modal event loop.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.trace.model import Mark
from inspector.ui.loaders import summary_row

DELETE = "delete"


class SessionPickerDialog(QDialog):
    """Lists the sessions of a state.db; the chosen id is :meth:`selected_id`."""

    COLUMNS = ("id", "title", "model", "started", "messages", "calls")

    def __init__(self, summaries: list[Any], path: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Choose a session")
        self.resize(820, 420)
        label = QLabel(f"{len(summaries)} sessions in {path} (opened read-only)")
        label.setTextFormat(Qt.TextFormat.PlainText)
        self.table = QTableWidget(len(summaries), len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(list(self.COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for row, summary in enumerate(summaries):
            values = summary_row(summary)
            for col, name in enumerate(self.COLUMNS):
                self.table.setItem(row, col, QTableWidgetItem(values[name]))
        if summaries:
            self.table.selectRow(0)
        self.table.cellDoubleClicked.connect(lambda *_: self.accept())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(label)
        layout.addWidget(self.table, 1)
        layout.addWidget(buttons)

    def selected_id(self) -> str | None:
        row = self.table.currentRow()
        item = self.table.item(row, 0) if row >= 0 else None
        return item.text() if item is not None else None


def pick_session(parent: QWidget, summaries: list[Any], path: str) -> str | None:
    """Modal picker; None when cancelled."""
    dialog = SessionPickerDialog(summaries, path, parent)
    try:
        return dialog.selected_id() if dialog.exec() == QDialog.DialogCode.Accepted else None
    finally:
        dialog.deleteLater()


class BookmarkDialog(QDialog):
    """Label + note for the mark at an event; existing marks can be deleted."""

    def __init__(self, event: int, mark: Mark | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Bookmark event {event}")
        self.deleted = False
        self.label_edit = QLineEdit(mark.label if mark else "")
        self.label_edit.setPlaceholderText("short label")
        self.note_edit = QPlainTextEdit(mark.note if mark else "")
        self.note_edit.setPlaceholderText("note (saved in the trace file)")
        form = QFormLayout()
        form.addRow("Label", self.label_edit)
        form.addRow("Note", self.note_edit)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        if mark is not None:
            delete = buttons.addButton("Delete", QDialogButtonBox.ButtonRole.DestructiveRole)
            delete.clicked.connect(self._delete)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)

    def _delete(self) -> None:
        self.deleted = True
        self.accept()


def edit_bookmark(parent: QWidget, event: int, mark: Mark | None) -> tuple[str, str] | str | None:
    """(label, note), :data:`DELETE`, or None when cancelled."""
    dialog = BookmarkDialog(event, mark, parent)
    try:
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        if dialog.deleted:
            return DELETE
        return dialog.label_edit.text().strip(), dialog.note_edit.toPlainText().strip()
    finally:
        dialog.deleteLater()
