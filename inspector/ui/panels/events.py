"""Event list: the navigator. Turns → provider requests → hook events, with filters.

Selecting a row moves the cursor; the cursor moving selects (and reveals) the row. The text
filter and the quick filters turn the tree into a flat list of matching events.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QToolButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from inspector.trace.model import Trace
from inspector.ui.cursor import Cursor
from inspector.ui.event_model import QUICK_FILTERS, EventTreeModel
from inspector.ui.panels.base import Panel


class EventsPanel(Panel):
    panel_id = "events"
    title = "Events"
    area = Qt.DockWidgetArea.LeftDockWidgetArea

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.model = EventTreeModel(self)
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter events (text, kind, event #)…")
        self.filter_edit.setClearButtonEnabled(True)
        self.quick: dict[str, QToolButton] = {}
        quick_row = QHBoxLayout()
        quick_row.setContentsMargins(0, 0, 0, 0)
        quick_row.setSpacing(4)
        for name in QUICK_FILTERS:
            btn = QToolButton()
            btn.setText(name.capitalize())
            btn.setCheckable(True)
            btn.setToolTip(f"Show only {name}")
            btn.toggled.connect(self._schedule_filter)
            self.quick[name] = btn
            quick_row.addWidget(btn)
        quick_row.addStretch(1)
        self.count_label = QLabel()
        self.count_label.setTextFormat(Qt.TextFormat.PlainText)
        self.count_label.setMinimumWidth(self.count_label.fontMetrics().horizontalAdvance("000,000 of 000,000 "))
        quick_row.addWidget(self.count_label)

        self.view = QTreeView()
        self.view.setModel(self.model)
        self.view.setUniformRowHeights(True)
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setExpandsOnDoubleClick(True)
        self.view.setAllColumnsShowFocus(True)
        header = self.view.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col, width in ((1, 60), (2, 56)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(col, width)
        self.view.selectionModel().currentChanged.connect(self._on_current_changed)

        self._filter_timer = QTimer(self)
        self._filter_timer.setSingleShot(True)
        self._filter_timer.setInterval(150)
        self._filter_timer.timeout.connect(self.apply_filter)
        self.filter_edit.textChanged.connect(self._schedule_filter)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)
        layout.addWidget(self.filter_edit)
        layout.addLayout(quick_row)
        layout.addWidget(self.view, 1)
        self._syncing = False

    # -- filter ---------------------------------------------------------------------------------
    def _schedule_filter(self, *_: object) -> None:
        self._filter_timer.start()

    def apply_filter(self) -> None:
        """Apply the text and quick filters now (the edit debounces to this)."""
        self._filter_timer.stop()
        quick = {name for name, btn in self.quick.items() if btn.isChecked()}
        self.model.set_filter(self.filter_edit.text(), quick)
        self._update_count()
        self._select(self.cursor.index)

    def set_quick_filter(self, name: str, on: bool) -> None:
        self.quick[name].setChecked(on)
        self.apply_filter()

    def _update_count(self) -> None:
        if self._trace is None:
            self.count_label.setText("")
        elif self.model.is_flat:
            self.count_label.setText(f"{self.model.match_count:,} of {len(self._trace):,}")
        else:
            self.count_label.setText(f"{len(self._trace):,} events")

    # -- panel interface --------------------------------------------------------------------------
    def render_trace(self, trace: Trace | None) -> None:
        self.model.set_trace(trace)
        if self.filter_edit.text() or any(b.isChecked() for b in self.quick.values()):
            self.apply_filter()
        self._update_count()

    def render_cursor(self, k: int) -> None:
        self._select(k)

    def on_marks_changed(self) -> None:
        self.model.marks_changed()
        if self.quick["bookmarks"].isChecked():
            self.apply_filter()

    def _select(self, k: int) -> None:
        index = self.model.index_for_event(k)
        self._syncing = True
        try:
            sel = self.view.selectionModel()
            if index.isValid():
                self._reveal(index)
                sel.setCurrentIndex(
                    index,
                    QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
                )
                self.view.scrollTo(index, QAbstractItemView.ScrollHint.EnsureVisible)
            else:
                sel.clearSelection()
        finally:
            self._syncing = False

    def _reveal(self, index: QModelIndex) -> None:
        """Expand the ancestors of ``index``; entering a turn expands all its requests at once.

        Every expand re-lays out and repaints the whole list, so doing it once per turn instead
        of once per request halves the cost of stepping through a long session.
        """
        parent = index.parent()
        chain = []
        while parent.isValid():
            chain.append(parent)
            parent = parent.parent()
        if not chain or all(self.view.isExpanded(p) for p in chain):
            return
        turn = chain[-1]
        self.view.setUpdatesEnabled(False)
        try:
            for p in chain:
                self.view.expand(p)
            turn_event = self.model.event_of(turn)
            for child in self.model.children_of(turn_event) if turn_event is not None else ():
                if self.model.children_of(child):
                    self.view.expand(self.model.index_for_event(child))
        finally:
            self.view.setUpdatesEnabled(True)

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._syncing:
            return
        k = self.model.event_of(current)
        if k is not None:
            self.jump_requested.emit(k)

    def selected_event(self) -> int | None:
        return self.model.event_of(self.view.currentIndex())
