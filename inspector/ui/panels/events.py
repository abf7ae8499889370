"""Event list: the navigator. Turns → provider requests → hook events, with filters.

Selecting a row moves the cursor; the cursor moving selects (and reveals) the row. The text
filter and the quick filters turn the tree into a flat list of matching events.

Stepping must not repaint the whole list: a full repaint of the visible rows costs several
times what a step that only moves the selection does. Two things used to force full
repaints: scrolling by one row on every step once the cursor reached the edge, and expanding
each new turn as the cursor entered it. So the list scrolls only when the cursor row gets
within a row of the edge, and then centres it (the next half page of steps scrolls nothing),
and turns are expanded in batches around the cursor.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.cursor import Cursor
from inspector.ui.event_model import QUICK_FILTERS, EventTreeModel
from inspector.ui.fill_section import FillSection
from inspector.ui.painted_views import PaintedTree
from inspector.ui.panels.base import Panel

#: top-level rows expanded on each side of the cursor's turn when stepping enters a collapsed one
#: (about ten events per turn: one expand-and-repaint per ~60 steps instead of one per ~10)
EXPAND_AROUND = 6
#: a cursor move longer than this (events) is a jump: only the target's turn is expanded, since
#: each expansion costs ~0.2 ms in QTreeView and a jump repaints the whole list anyway
STEP_SPAN = 64
#: labels lower-cased for the text filter per idle tick (~15 ms): a long trace is ready to filter
#: a few seconds after it opens, and the window stays responsive meanwhile
WARM_SLICE = 2000


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
        # Not the first focus when the window opens: the arrow keys must step the cursor at once.
        self.filter_edit.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
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
        # elides rather than widening the dock (a small window must still fit the events column)
        self.count_label = theme.TextLine(1, align=Qt.AlignmentFlag.AlignRight)
        self.count_label.setMinimumWidth(self.count_label.fontMetrics().horizontalAdvance("0,000 events"))
        quick_row.addStretch(1)

        self.view = PaintedTree()
        self.view.setModel(self.model)
        self.view.setUniformRowHeights(True)
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setExpandsOnDoubleClick(True)
        self.view.setAllColumnsShowFocus(True)
        # opaque: moving it then repaints the scroll bar only, not the dock beneath it
        self.view.verticalScrollBar().setAutoFillBackground(True)
        header = self.view.header()
        header.setStretchLastSection(False)
        for col, width in ((1, 60), (2, 56)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(col, width)
        # the label column takes the rest, as a Stretch section would, without repainting the
        # header on every expansion (fill_section)
        self._fill = FillSection(header, 0)
        self.view.selectionModel().currentChanged.connect(self._on_current_changed)

        self._filter_timer = QTimer(self)
        self._filter_timer.setSingleShot(True)
        self._filter_timer.setInterval(150)
        self._filter_timer.timeout.connect(self.apply_filter)
        self._warm_timer = QTimer(self)  # prepares the text filter in idle time, a slice per tick
        self._warm_timer.setInterval(0)
        self._warm_timer.timeout.connect(self._warm_step)
        self.filter_edit.textChanged.connect(self._schedule_filter)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)
        filter_row = QHBoxLayout()  # the count beside the filter: the buttons' row alone sets the width
        filter_row.setContentsMargins(0, 0, 0, 0)
        filter_row.addWidget(self.filter_edit, 3)
        filter_row.addWidget(self.count_label, 1)
        layout.addLayout(filter_row)
        layout.addLayout(quick_row)
        layout.addWidget(self.view, 1)
        self._syncing = False
        self._last_selected: int | None = None

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
        self._last_selected = None
        self.model.set_trace(trace)
        if self.filter_edit.text() or any(b.isChecked() for b in self.quick.values()):
            self.apply_filter()
        self._update_count()
        if trace is not None and len(trace) > WARM_SLICE:
            self._warm_timer.start()
        else:
            self._warm_timer.stop()

    def _warm_step(self) -> None:
        if self.model.warm_filter_text(WARM_SLICE):
            self._warm_timer.stop()

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
            if not index.isValid():
                sel.clearSelection()
                return
            stepping = self._last_selected is not None and abs(k - self._last_selected) <= STEP_SPAN
            self._last_selected = k
            if sel.currentIndex() == index and sel.isSelected(index):
                # the view moved there itself (a click, its own arrow keys): it already shows it
                self.view.scrollTo(index, QAbstractItemView.ScrollHint.EnsureVisible)
                return
            self._reveal(index, EXPAND_AROUND if stepping else 0)
            # before setCurrentIndex, whose own scrollTo would otherwise scroll by one row first
            self._keep_in_view(index)
            sel.setCurrentIndex(
                index,
                QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
            )
        finally:
            self._syncing = False

    def _keep_in_view(self, index: QModelIndex) -> None:
        """Scroll only when the row is not visible with a row to spare, and then centre it.

        Scrolling repaints the list; ``EnsureVisible`` at the edge scrolls on every step.
        """
        rect = self.view.visualRect(index)
        margin = rect.height()
        if rect.isValid() and rect.top() >= margin and rect.bottom() < self.view.viewport().height() - margin:
            return
        self.view.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)

    def _reveal(self, index: QModelIndex, around: int) -> None:
        """Expand the ancestors of ``index``, and every turn within ``around`` rows of its own.

        Each expansion re-lays out and repaints the whole list, so when stepping, expanding the
        next turns (and all their requests) in one batch costs one repaint per ``around`` turns
        instead of one per turn, in either direction. The expansions' repaints are merged into the
        next paint of the rows; pausing updates around them would also repaint the list's frame,
        its header and the panel behind it, as re-enabling updates repaints every child.
        """
        parent = index.parent()
        chain = []
        while parent.isValid():
            chain.append(parent)
            parent = parent.parent()
        if not chain or all(self.view.isExpanded(p) for p in chain):
            return
        top = chain[-1]
        model, view = self.model, self.view
        nodes = model.top_level()
        lo, hi = max(0, top.row() - around), min(len(nodes), top.row() + around + 1)
        for p in chain:
            view.expand(p)
        for node in nodes[lo:hi]:
            kids = model.children_of(node)
            if not kids:
                continue
            view.expand(model.index_for_event(node))  # a no-op when already expanded
            for child in kids:
                if model.children_of(child):
                    view.expand(model.index_for_event(child))

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._syncing:
            return
        k = self.model.event_of(current)
        if k is not None:
            self.jump_requested.emit(k)

    def selected_event(self) -> int | None:
        return self.model.event_of(self.view.currentIndex())
