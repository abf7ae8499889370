"""The Corpus view: a batch's results as a grid, one row per session, one column per engine × setting.

Each cell shows the figure chosen above the grid (tokens sent by default) and, beside the first
column's, the change against it, so the sessions where an engine does worse stand out. Opening a
cell (double-click or Enter) shows that session × engine: its saved trace when the batch kept
one (``--save-traces``), else the session replayed with that engine under the window's config
(the message bar says the setting is not applied).

The grid reads the batch's result store read-only (:func:`inspector.batch.store.read_results`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

# (result field, label, lower is better)
FIGURES = (("tokens_sent", "tokens sent", True), ("cost", "cost (USD)", True), ("cache_read", "cached tokens read", False),
           ("compressions", "compactions", True), ("requests", "requests", None), ("faults", "faults", True))
WORSE, BETTER, FAILED = QColor("#f6d5d5"), QColor("#d8f0dc"), QColor("#eeeeee")
ROLE_RESULT = Qt.ItemDataRole.UserRole


def corpus_grid(results: list[dict[str, Any]]) -> tuple[list[str], list[tuple[str, str]], dict[tuple[str, str, str], dict]]:
    """(sessions, columns as (engine, setting), {(session, engine, setting): result}), in first-seen order."""
    sessions: dict[str, None] = {}
    columns: dict[tuple[str, str], None] = {}
    cells: dict[tuple[str, str, str], dict] = {}
    for r in results:
        sessions.setdefault(r["session"], None)
        columns.setdefault((r["engine"], r["setting"]), None)
        cells[(r["session"], r["engine"], r["setting"])] = r
    return list(sessions), list(columns), cells


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.4f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


class CorpusDialog(QDialog):
    """The grid of one batch result folder; ``open_cell(result)`` shows that session × engine."""

    def __init__(self, results: list[dict[str, Any]], source: str, open_cell: Callable[[dict[str, Any]], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Corpus")
        self.resize(1100, 560)
        self.results = results
        self.open_cell = open_cell
        self.sessions, self.columns, self.cells = corpus_grid(results)
        about = QLabel(f"{len(self.sessions)} sessions × {len(self.columns)} engine/setting columns, from {source}; "
                       "open a cell to see that run")
        about.setTextFormat(Qt.TextFormat.PlainText)
        self.figure = QComboBox()
        for field, label, _ in FIGURES:
            self.figure.addItem(label, field)
        self.figure.currentIndexChanged.connect(lambda _i: self.fill())
        top = QHBoxLayout()
        top.addWidget(about, 1)
        top.addWidget(QLabel("figure:"))
        top.addWidget(self.figure)
        self.table = QTableWidget(len(self.sessions), len(self.columns))
        self.table.setHorizontalHeaderLabels([f"{e}\n{s}" for e, s in self.columns])
        self.table.setVerticalHeaderLabels([os.path.basename(s.split("#")[0]) + (f"#{s.split('#', 1)[1][:12]}" if "#" in s else "")
                                            for s in self.sessions])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.cellActivated.connect(self._activated)
        self.table.cellDoubleClicked.connect(self._activated)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        self.fill()

    def fill(self) -> None:
        field = self.figure.currentData() or "tokens_sent"
        lower = next(b for f, _, b in FIGURES if f == field)
        for row, session in enumerate(self.sessions):
            base = self.cells.get((session, *self.columns[0])) if self.columns else None
            base_value = base.get(field) if base and base.get("error") is None else None
            vh = self.table.verticalHeaderItem(row)
            if vh is not None:
                vh.setToolTip(session)
            for col, (engine, setting) in enumerate(self.columns):
                result = self.cells.get((session, engine, setting))
                item = QTableWidgetItem()
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if result is None:
                    item.setText("")
                elif result.get("error") is not None:
                    item.setText("failed")
                    item.setBackground(QBrush(FAILED))
                    item.setToolTip(str(result["error"]))
                else:
                    value = result.get(field)
                    text = _fmt(value)
                    if col and isinstance(value, (int, float)) and isinstance(base_value, (int, float)) and base_value:
                        change = (value - base_value) / base_value
                        text += f"  ({change * 100:+.1f}%)"
                        if lower is not None and abs(change) > 0.005:
                            item.setBackground(QBrush(BETTER if (change < 0) == lower else WORSE))
                    if result.get("stopped"):
                        text += "  stopped"
                        item.setToolTip(str(result["stopped"]))
                    item.setText(text)
                item.setData(ROLE_RESULT, result)
                self.table.setItem(row, col, item)
        self.table.resizeColumnsToContents()

    def _activated(self, row: int, col: int) -> None:
        item = self.table.item(row, col)
        result = item.data(ROLE_RESULT) if item is not None else None
        if result:
            self.open_cell(result)
