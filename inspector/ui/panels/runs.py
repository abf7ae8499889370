"""Runs: the comparison as a whole (summary table, best values marked) and run A vs run B at the cursor.

The table answers "which engine did better over the whole session" and the runs diff answers
"what did they send differently at this moment": the request run A sent at the cursor's
alignment row against the one run B sent, diffed by message key, so the shared prefix (the
cache prefix both runs have in common) shows as one fold and the differences stand out.

In single-trace mode the panel only says how to start a comparison.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.compare import SummaryTable, diff_runs, summary_table
from inspector.compare.health import HEALTH_ROWS, best_marks, run_health
from inspector.compare.table import RETENTION_KEY, format_delta, format_value
from inspector.trace import diff as tdiff
from inspector.trace.counts import summary_row_kind, summary_row_tip
from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.compare import CompareAware
from inspector.ui.cursor import Cursor
from inspector.ui.panels.base import Panel
from inspector.ui.panels.diff import DiffRowsModel

BEST_MARK = " ★"
BEST_BG = "#e6f4ea"
NO_COMPARISON = ("No comparison open. Replay → Compare engines… replays the open session with 2–4 engines "
                 "(or configs); File → Open also reads a saved comparison.")


class RunsDiffModel(DiffRowsModel):
    """The diff rows with run A / run B headings instead of before / after."""

    HEADERS = ("#", "run A", "", "#", "run B")


class RunsPanel(CompareAware, Panel):
    panel_id = "runs"
    title = "Runs"
    area = Qt.DockWidgetArea.BottomDockWidgetArea

    #: the user picked another primary run (the one the event list and the cursor follow)
    primary_requested = Signal(int)

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.notice = QLabel(NO_COMPARISON)
        self.notice.setTextFormat(Qt.TextFormat.PlainText)
        self.notice.setWordWrap(True)

        self.primary_combo = QComboBox()
        self.primary_combo.setToolTip("The run whose events the event list and the cursor step through")
        self.primary_combo.currentIndexChanged.connect(self._primary_picked)
        self.table = QTableWidget(0, 0)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.a_combo = QComboBox()
        self.b_combo = QComboBox()
        for combo in (self.a_combo, self.b_combo):
            combo.currentIndexChanged.connect(lambda _i: self._pair_changed())
        self.diff_header = theme.readout_label(2)
        self.diff_header.set_colours("#263238", "#eceff1")
        self.diff_model = RunsDiffModel(self)
        self.diff_view = QTableView()
        self.diff_view.setModel(self.diff_model)
        self.diff_view.verticalHeader().setVisible(False)
        self.diff_view.verticalHeader().setDefaultSectionSize(20)
        self.diff_view.setWordWrap(False)
        self.diff_view.setShowGrid(False)
        self.diff_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        h = self.diff_view.horizontalHeader()
        for col, width in ((0, 40), (2, 64), (3, 40)):
            h.setSectionResizeMode(col, QHeaderView.ResizeMode.Fixed)
            h.resizeSection(col, width)
        h.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        h.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.diff_view.doubleClicked.connect(lambda idx: self.diff_model.unfold(idx.row()))

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(_plain("Cursor follows:"))
        top.addWidget(self.primary_combo)
        top.addStretch(1)
        pick = QHBoxLayout()
        pick.setContentsMargins(0, 0, 0, 0)
        pick.addWidget(_plain("Runs diff at the cursor — run A:"))
        pick.addWidget(self.a_combo)
        pick.addWidget(_plain("vs run B:"))
        pick.addWidget(self.b_combo)
        pick.addStretch(1)
        diff_box = QWidget()
        dl = QVBoxLayout(diff_box)
        dl.setContentsMargins(0, 0, 0, 0)
        dl.setSpacing(2)
        dl.addLayout(pick)
        dl.addWidget(self.diff_header)
        dl.addWidget(self.diff_view, 1)
        table_box = QWidget()
        tl = QVBoxLayout(table_box)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.setSpacing(2)
        tl.addLayout(top)
        tl.addWidget(self.table, 1)
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(table_box)
        self.split.addWidget(diff_box)
        self.split.setStretchFactor(0, 1)
        self.split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.notice)
        layout.addWidget(self.split, 1)
        self.split.hide()
        self.summary: SummaryTable | None = None
        self.health: list[dict[str, int] | None] = []
        self._best: dict[str, list[bool]] = {}
        self._summaries: dict[int, SummaryTable] = {}
        self._shown: tuple[int | None, int, int] | None = None
        self._bold = QFont(self.table.font())
        self._bold.setBold(True)

    # -- trace / comparison --------------------------------------------------------------------------
    def render_trace(self, trace: Trace | None) -> None:
        view = self.compare if trace is not None else None
        self.notice.setVisible(view is None)
        if view is not None and not self.split.isVisible():
            # room for the whole summary table first; the runs diff gets the rest
            rows_h = (len(summary_table_rows()) + len(HEALTH_ROWS) + 1) * 21 + 40
            self.split.setSizes([rows_h, max(120, self.height() - rows_h)])
        self.split.setVisible(view is not None)
        self._shown = None
        self.diff_model.clear_previews()  # a new comparison: let the old runs' messages go
        self.diff_model.set_diff(None, {})
        if view is None:
            self.summary = None
            self.table.clear()
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            return
        key = id(view.comparison)
        if key not in self._summaries:
            self._summaries = {key: summary_table(view.comparison)}  # one comparison at a time
        self.summary = self._summaries[key]
        self._fill_table(self.summary)
        for combo, default in ((self.primary_combo, view.primary), (self.a_combo, view.runs[0]),
                               (self.b_combo, view.runs[1] if len(view.runs) > 1 else view.runs[0])):
            combo.blockSignals(True)
            current = combo.currentData() if combo is not self.primary_combo else None
            combo.clear()
            for run in view.runs:
                combo.addItem(view.label(run), run)
            chosen = current if current in view.runs else default
            combo.setCurrentIndex(view.runs.index(chosen))
            combo.blockSignals(False)

    def _fill_table(self, table: SummaryTable) -> None:
        """Rows = figures, columns = runs; the best value of a ranked row is bold on green with a star."""
        view = self.compare
        assert view is not None
        self.table.clear()
        self.table.setColumnCount(len(table.labels))
        traces = view.comparison.traces
        health = [run_health(t) if t is not None else None for t in traces]
        self.health = health
        # no star for a run the host had to repair or that overflowed the window: it only looks cheap
        stars = best_marks(table, health)
        health_rows = [key for key, _label, _tip in HEALTH_ROWS if key != "faults"]
        self.table.setRowCount(len(table.rows) + len(health_rows) + 1)
        for col, label in enumerate(table.labels):
            head = QTableWidgetItem(label)
            head.setForeground(QBrush(QColor(view.color(col))))
            head.setFont(self._bold)
            self.table.setHorizontalHeaderItem(col, head)
        best_bg = QBrush(QColor(BEST_BG))
        self._best = {}
        for r, row in enumerate(table.rows):
            kind = summary_row_kind(row.key, traces)
            head = QTableWidgetItem(f"{row.label} ({kind})" if kind else row.label)
            head.setToolTip(summary_row_tip(row.key))
            self.table.setVerticalHeaderItem(r, head)
            deltas = row.deltas
            marks = stars[row.key]
            self._best[row.label] = marks
            for col, value in enumerate(row.values):
                text = format_value(row.key, value)
                if col > 0 and deltas[col] is not None:
                    text += (f" ({deltas[col] * 100:+.1f} pt)" if row.key in ("hit_rate", RETENTION_KEY)
                             else f" ({format_delta(row.key, deltas[col])})")
                best = bool(marks and marks[col])
                item = QTableWidgetItem(text + (BEST_MARK if best else ""))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if best:
                    item.setBackground(best_bg)
                    item.setFont(self._bold)
                    item.setToolTip("Best value in this row")
                self.table.setItem(r, col, item)
        tips = {key: tip for key, _label, tip in HEALTH_ROWS}
        labels = {key: label for key, label, _tip in HEALTH_ROWS}
        bad = QBrush(QColor(theme.FAULT))
        for i, key in enumerate(health_rows):
            r = len(table.rows) + 1 + i  # under the status row
            head = QTableWidgetItem(labels[key])
            head.setToolTip(tips[key])
            self.table.setVerticalHeaderItem(r, head)
            for col, h in enumerate(health):
                value = h[key] if h is not None else None
                item = QTableWidgetItem("–" if value is None else f"{value:,}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if value:
                    item.setForeground(bad)
                    item.setFont(self._bold)
                    if key != "no_progress":
                        item.setToolTip(f"{tips[key]}: no best value is marked for this run")
                self.table.setItem(r, col, item)
        status_row = len(table.rows)
        self.table.setVerticalHeaderItem(status_row, QTableWidgetItem("status"))
        for col, (status, error) in enumerate(zip(table.status, table.errors)):
            item = QTableWidgetItem(status if not error else f"{status}: {error}")
            item.setToolTip(theme.plain_tooltip(error or status))
            if status != "ok":
                item.setForeground(QBrush(QColor(theme.FAULT)))
            self.table.setItem(status_row, col, item)

    def best_cells(self) -> list[tuple[str, str]]:
        """(row label, run label) of every marked cell (for tests and the status bar)."""
        out = []
        if self.summary is None:
            return out
        for row in self.summary.rows:
            for col, best in enumerate(self._best.get(row.label, [])):
                if best:
                    out.append((row.label, self.summary.labels[col]))
        return out

    # -- cursor ----------------------------------------------------------------------------------------
    def render_cursor(self, k: int) -> None:
        view = self.compare
        if view is None or self._trace is None or not len(self._trace):
            return
        row = view.row_at(k)
        a, b = self.a_combo.currentData(), self.b_combo.currentData()
        if a is None or b is None:
            return
        key = (row, int(a), int(b))
        if key == self._shown:
            return
        self._shown = key
        self._show_pair(row, int(a), int(b))

    def _show_pair(self, row: int | None, a: int, b: int) -> None:
        view = self.compare
        assert view is not None
        where = view.describe_row(row)
        if row is None:
            self.diff_model.set_diff(None, {})
            self.diff_header.setText(f"{where}: nothing to compare yet")
            return
        diff = diff_runs(view.comparison, row, a, b)
        if diff is None:
            missing = [view.label(r) for r in (a, b) if view.alignment.request(r, row) is None]
            self.diff_model.set_diff(None, {})
            self.diff_header.setText(f"{where.capitalize()}: {', '.join(missing)} sent no request here")
            return
        tokens = self._tokens(diff, a, b)
        self.diff_model.set_diff(diff, tokens)
        st = tdiff.stats(diff, lambda m: tokens.get(id(m), 0))
        ra, rb = view.alignment.request(a, row), view.alignment.request(b, row)
        assert ra is not None and rb is not None
        same = "identical messages" if diff.identical else (
            f"{st['messages_before']} → {st['messages_after']} messages · only in A {st['dropped']} · "
            f"only in B {st['added']} · changed {st.get('changed', 0)} · shared prefix {st['common_prefix']} msgs")
        tools_a, tools_b = int(ra.tokens.get("tools", 0)), int(rb.tokens.get("tools", 0))
        if tools_a != tools_b:  # the tool schemas are sent too, but are not messages: say so
            same += f" · tool schemas differ ({tools_a:,} → {tools_b:,} tok, not shown in the diff)"
        self.diff_header.setText(
            f"{where.capitalize()}: {view.label(a)} request #{ra.index} ({_tok(st, 'before')}, messages only) vs "
            f"{view.label(b)} request #{rb.index} ({_tok(st, 'after')}, messages only)\n{same}")
        first = self.diff_model.first_interesting_row()
        if first >= 0:
            self.diff_view.scrollTo(self.diff_model.index(first, 0), QAbstractItemView.ScrollHint.PositionAtTop)

    def _tokens(self, diff: tdiff.MessageDiff, a: int, b: int) -> dict[int, int]:
        """Token count per message object (the model keys its cells by ``id(message)``)."""
        view = self.compare
        assert view is not None
        out: dict[int, int] = {}
        for run, msgs, keys in ((a, diff.before, diff.keys_before), (b, diff.after, diff.keys_after)):
            trace = view.trace(run)
            if trace is None:
                continue
            for msg, key in zip(msgs, keys):
                out[id(msg)] = trace.message_tokens(key)
        return out

    def _pair_changed(self) -> None:
        self._shown = None
        if self.on_screen():
            self.refresh()
        else:
            self._stale = True

    def _primary_picked(self, index: int) -> None:
        run = self.primary_combo.itemData(index)
        if run is not None and self.compare is not None and run != self.compare.primary:
            self.primary_requested.emit(int(run))


def summary_table_rows() -> list:
    """The rows every summary table has (for sizing before the table is computed)."""
    from inspector.trace.summary import SUMMARY_ROWS

    return [*SUMMARY_ROWS, (RETENTION_KEY, "", "high")]  # and the quality row summary_table adds beside cost


def _plain(text: str) -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def _tok(st: dict[str, Any], name: str) -> str:
    v = st.get(f"tokens_{name}")
    return f"{v:,} tok" if isinstance(v, int) else "? tok"
