"""Run: what each run was — the Hermes its host played, the engine that really ran, the settings
taken from the transcript, how usage was fed and calibrated — and how its simulated cache compares
with what the provider recorded.

The words are :mod:`inspector.trace.run_facts`' (the HTML report says the same); facts that call
for attention (a fallback to Hermes' built-in compressor, a shadowed engine, a calibration
warning, an accuracy outside what a calibrated replay is held to) are in the fault colour. In a
comparison there is one section per run, under its label and in its colour. Trace-wide: nothing
here follows the cursor.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from inspector.trace.model import Trace
from inspector.trace.run_facts import WARN, Fact, cache_facts, run_facts
from inspector.ui import theme
from inspector.ui.compare import CompareAware
from inspector.ui.cursor import Cursor
from inspector.ui.panels.base import Panel


class RunInfoPanel(CompareAware, Panel):
    panel_id = "run_info"
    title = "Run"
    area = Qt.DockWidgetArea.BottomDockWidgetArea
    tab_with = "diff"

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["", ""])
        self.tree.setHeaderHidden(True)
        self.tree.setWordWrap(True)
        self.tree.setUniformRowHeights(False)
        self.tree.setRootIsDecorated(False)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.tree)

    def render_trace(self, trace: Trace | None) -> None:
        self.tree.clear()
        if trace is None:
            QTreeWidgetItem(self.tree, ["No trace loaded", ""])
            return
        view = self.compare
        if view is None:
            self._add_run(str(trace.meta.get("label") or "this run"), None, trace)
            return
        for run in view.runs:
            run_trace = view.trace(run)
            if run_trace is not None:
                self._add_run(view.label(run), view.color(run), run_trace)

    def _add_run(self, label: str, colour: str | None, trace: Trace) -> None:
        head = QTreeWidgetItem(self.tree, [label, _mode(trace)])
        font = head.font(0)
        font.setBold(True)
        head.setFont(0, font)
        if colour:
            head.setForeground(0, QBrush(QColor(colour)))
        head.setFirstColumnSpanned(False)
        for fact in run_facts(trace):
            self._add_fact(head, fact)
        cache = cache_facts(trace)
        if cache:
            section = QTreeWidgetItem(head, ["cache vs recorded", "the provider's figures from the transcript beside "
                                             "the simulator's (the requests that are the agent's own are compared)"])
            section.setFont(0, font)
            for fact in cache:
                self._add_fact(head, fact)
        else:
            self._add_fact(head, Fact("cache vs recorded", "no recorded usage: the simulator's figures cannot be "
                                                           "checked against the provider's"))
        head.setExpanded(True)

    def _add_fact(self, parent: QTreeWidgetItem, fact: Fact) -> None:
        item = QTreeWidgetItem(parent, [fact.label, fact.text])
        item.setToolTip(1, theme.plain_tooltip(fact.text))  # plain text: paths and names are the user's
        if fact.level == WARN:
            for col in (0, 1):
                item.setForeground(col, QBrush(QColor(theme.FAULT)))


def _mode(trace: Trace) -> str:
    return f"{trace.meta.get('mode') or 'replay'} · {trace.meta.get('tokenizer') or '?'} tokenizer"
