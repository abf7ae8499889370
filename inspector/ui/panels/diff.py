"""Diff: what an engine did to the conversation, message by message.

At a ``select_context``, ``compress`` or ``prune`` event the panel compares the list the engine
received with the one it returned; anywhere else it compares the request at the cursor with the
previous request. The rows are aligned by the keyed diff (``inspector.trace.diff``): removed,
added, changed (with word highlights below), summarised N→1; long unchanged runs are folded.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from inspector.trace import diff as tdiff
from inspector.trace import model as tm
from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.compare import CompareAware
from inspector.ui.cursor import Cursor
from inspector.ui.derive import event_lists, message_preview
from inspector.ui.painted_views import PaintedTable, RowCellCache, cell_offsets
from inspector.ui.panels.base import Panel
from inspector.ui.scroll_bar import steady_scroll_bar

EMPTY_LIST = -1  # stands for "no messages" (before the first request); never a real list id
FOLD_KEEP = 2  # unchanged rows shown on each side of a fold
FOLD_MIN = 7  # unchanged runs at least this long are folded

_OP_GLYPH = {"equal": "=", "removed": "−", "added": "+", "changed": "~", "summarised": "Σ", "fold": "⋯"}
_OP_BG = {
    "removed": theme.DIFF_REMOVED,
    "added": theme.DIFF_ADDED,
    "changed": theme.DIFF_CHANGED,
    "summarised": theme.DIFF_SUMMARISED,
    "fold": "#eceff1",
}


@dataclass
class Row:
    """One aligned row: message ``left`` of before and/or ``right`` of after (-1 = none)."""

    kind: str
    left: int = -1
    right: int = -1
    fold: tuple[int, int, int] | None = None  # (op index, first row, last row) for a fold row
    note: str = ""


@dataclass
class Comparison:
    """What is being compared at the cursor, and its diff (cached per pair of lists)."""

    title: str
    before: int | None
    after: int | None
    diff: tdiff.MessageDiff | None
    stats: dict[str, Any] | None


# Roles the table paints with → offset of that role's five cells in a row's cells (``cell_offsets``);
# the tooltip is built only on hover.
_CELL_OFFSET = cell_offsets(5)
_NO_CELLS: tuple[Any, ...] = ("",) * 5 + (None,) * 20
_NO_FONTS: tuple[None, ...] = (None,) * 5
_ALIGNS = (theme.ALIGN_CENTER, None, theme.ALIGN_CENTER, theme.ALIGN_CENTER, None)


class DiffRowsModel(RowCellCache, QAbstractTableModel):
    """Rows of a MessageDiff for a QTableView; long unchanged runs folded until double-clicked.

    The table is repainted whenever the compared pair changes (every new request). A row's
    cells for every painted role are built once into one flat tuple, which ``PaintedTable``
    reads directly and ``data()`` serves from; each message's one-line preview is kept by
    message key: consecutive requests share almost all their messages.
    """

    HEADERS = ("#", "before", "", "#", "after")

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.diff: tdiff.MessageDiff | None = None
        self.tokens: dict[int, int] = {}
        self.rows: list[Row] = []
        self._unfolded: set[int] = set()
        self._brushes = {k: QBrush(QColor(v)) for k, v in _OP_BG.items()}
        self._muted = QBrush(QColor("#78909c"))
        self._cells: list[tuple[Any, ...] | None] = []  # per row, built on first paint
        # message key → one-line preview. Keys are content hashes, so a kept preview is never stale;
        # the panel clears this with each new trace only so old messages are not kept alive.
        self._previews: dict[str, str] = {}

    def clear_previews(self) -> None:
        """Drop the kept previews (a new trace is loaded)."""
        self._previews = {}

    def set_diff(self, diff: tdiff.MessageDiff | None, tokens: dict[int, int]) -> None:
        self.beginResetModel()
        self.diff = diff
        self.tokens = tokens
        self._unfolded = set()
        self._rebuild()
        self.endResetModel()

    def unfold(self, row: int) -> None:
        if 0 <= row < len(self.rows) and self.rows[row].fold is not None:
            self.beginResetModel()
            self._unfolded.add(self.rows[row].fold[0])  # type: ignore[index]
            self._rebuild()
            self.endResetModel()

    def _rebuild(self) -> None:
        rows: list[Row] = []
        diff = self.diff
        if diff is None:
            self.rows = rows
            return
        for n, op in enumerate(diff.ops):
            b0, b1 = op.before_range
            a0, a1 = op.after_range
            if op.kind == "equal":
                length = b1 - b0
                if length >= FOLD_MIN and n not in self._unfolded:
                    for d in range(FOLD_KEEP):
                        rows.append(Row("equal", b0 + d, a0 + d))
                    hidden = length - 2 * FOLD_KEEP
                    tok = sum(self.tokens.get(id(m), 0) for m in diff.before[b0 + FOLD_KEEP : b1 - FOLD_KEEP])
                    rows.append(Row("fold", fold=(n, b0 + FOLD_KEEP, b1 - FOLD_KEEP),
                                    note=f"{hidden} unchanged messages ({tok:,} tok) — double-click to show"))
                    for d in range(length - FOLD_KEEP, length):
                        rows.append(Row("equal", b0 + d, a0 + d))
                else:
                    rows.extend(Row("equal", b0 + d, a0 + d) for d in range(length))
            elif op.kind == "removed":
                rows.extend(Row("removed", i, -1) for i in range(b0, b1))
            elif op.kind == "added":
                rows.extend(Row("added", -1, j) for j in range(a0, a1))
            elif op.kind == "changed":
                rows.append(Row("changed", b0, a0))
            else:  # summarised: N before rows, the summary message(s) beside the first ones
                span = max(b1 - b0, a1 - a0)
                for d in range(span):
                    note = f"{op.summarised_from or (b1 - b0)} → {a1 - a0}" if d == 0 else ""
                    rows.append(Row("summarised", b0 + d if b0 + d < b1 else -1, a0 + d if a0 + d < a1 else -1, note=note))
        self.rows = rows
        self._cells = [None] * len(rows)

    def first_interesting_row(self) -> int:
        return next((i for i, r in enumerate(self.rows) if r.kind not in ("equal", "fold")), -1)

    # -- Qt -------------------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return len(self.HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[section]
        return None

    def _cell(self, msg: dict[str, Any], key: str) -> str:
        """A message's before/after cell text: role, tokens and a one-line preview."""
        preview = self._previews.get(key)
        if preview is None:
            preview = message_preview(msg, 140)
            self._previews[key] = preview
        tok = self.tokens.get(id(msg), 0)
        return f"{msg.get('role', '?')} · {tok:,} tok · {preview}"

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        offset = _CELL_OFFSET.get(role)
        if offset is None:
            if role == theme.ROLE_TOOLTIP and index.isValid() and self.diff is not None:
                return self._tooltip(index.row(), index.column())
            return None
        if not index.isValid() or self.diff is None:
            return None
        return self.row_cells(index.row())[offset + index.column()]

    def display_texts(self, n: int) -> tuple[str, str, str, str, str]:
        """Row n's five cell texts in full (the table cuts the before/after ones to their column)."""
        diff = self.diff
        if diff is None or not 0 <= n < len(self.rows):
            return ("", "", "", "", "")
        row = self.rows[n]
        if row.kind == "fold":
            return ("", row.note, _OP_GLYPH["fold"], "", "")
        glyph = _OP_GLYPH.get(row.kind, "?")
        return (
            str(row.left) if row.left >= 0 else "",
            self._cell(diff.before[row.left], diff.keys_before[row.left]) if row.left >= 0 else "",
            f"{glyph} {row.note}" if row.kind == "summarised" and row.note else glyph,
            str(row.right) if row.right >= 0 else "",
            self._cell(diff.after[row.right], diff.keys_after[row.right]) if row.right >= 0 else "",
        )

    def _build_cells(self, n: int) -> tuple[Any, ...]:
        if self.diff is None or not 0 <= n < len(self.rows):
            return _NO_CELLS
        kind = self.rows[n].kind
        d0, d1, d2, d3, d4 = self.display_texts(n)
        bg = self._brushes.get(kind)
        muted = self._muted
        fg = (muted,) * 5 if kind in ("equal", "fold") else (muted, None, None, muted, None)
        cells = (d0, d1, d2, d3, d4, bg, bg, bg, bg, bg, *fg, *_ALIGNS, *_NO_FONTS)
        self._cells[n] = cells
        return cells

    def _tooltip(self, n: int, col: int) -> str | None:
        """The full message text of a before/after cell, shown literally (built only on hover)."""
        diff = self.diff
        if diff is None or col not in (1, 4) or not 0 <= n < len(self.rows):
            return None
        row = self.rows[n]
        idx = row.left if col == 1 else row.right
        if row.kind == "fold" or idx < 0:
            return None
        msgs = diff.before if col == 1 else diff.after
        return theme.plain_tooltip(tdiff.message_text(msgs[idx]))


def _normalise(text: str) -> str:
    """Qt documents use one character per line break; keep offsets in step with the text."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")


def _u16(text: str) -> int:
    """Length in UTF-16 code units: what QTextCursor positions count."""
    return len(text.encode("utf-16-le")) // 2


class DiffPanel(CompareAware, Panel):
    panel_id = "diff"
    title = "Diff"
    area = Qt.DockWidgetArea.BottomDockWidgetArea

    CACHE_SIZE = 32

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.header = theme.readout_label(3)
        self.header.set_colours("#263238", "#eceff1")
        self.model = DiffRowsModel(self)
        self.table = PaintedTable()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(20)
        h = self.table.horizontalHeader()
        for col, width in ((0, 40), (2, 64), (3, 40)):
            h.setSectionResizeMode(col, QHeaderView.ResizeMode.Fixed)
            h.resizeSection(col, width)
        h.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        h.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.table.selectionModel().currentRowChanged.connect(self._row_changed)
        self.table.doubleClicked.connect(lambda idx: self.model.unfold(idx.row()))

        self.before_text = QPlainTextEdit()
        self.after_text = QPlainTextEdit()
        for edit, name in ((self.before_text, "before"), (self.after_text, "after")):
            edit.setReadOnly(True)
            edit.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
            edit.setPlaceholderText(f"Select a row to see the message {name}")
            steady_scroll_bar(edit)
        for area in (self.table, self.before_text, self.after_text):
            # opaque: a range change then repaints the scroll bar only, not the dock beneath it
            area.verticalScrollBar().setAutoFillBackground(True)
        detail = QSplitter(Qt.Orientation.Horizontal)
        detail.addWidget(self.before_text)
        detail.addWidget(self.after_text)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)

        # comparison mode: every run's diff at the cursor side by side (one row each), and a run picker
        self.compare_box = QWidget()
        self.run_combo = QComboBox()
        self.run_combo.setToolTip("Whose diff the table below shows")
        self.run_combo.currentIndexChanged.connect(self._run_picked)
        self.runs_table = QTableWidget(0, 3)
        self.runs_table.setHorizontalHeaderLabels(["run", "compared at the cursor", "what the engine changed"])
        self.runs_table.verticalHeader().setVisible(False)
        self.runs_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.runs_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.runs_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.runs_table.setWordWrap(False)
        rh = self.runs_table.horizontalHeader()
        rh.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        rh.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        rh.resizeSection(1, 300)
        rh.setStretchLastSection(True)
        self.runs_table.verticalHeader().setDefaultSectionSize(20)
        self.runs_table.cellClicked.connect(lambda r, _c: self._pick_row(r))
        picker = QHBoxLayout()
        picker.setContentsMargins(0, 0, 0, 0)
        shows = QLabel("Detail below for run:")
        shows.setTextFormat(Qt.TextFormat.PlainText)
        picker.addWidget(shows)
        picker.addWidget(self.run_combo)
        picker.addStretch(1)
        box = QVBoxLayout(self.compare_box)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addWidget(self.runs_table)
        box.addLayout(picker)
        self.compare_box.hide()
        self._subject_run: int | None = None

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)
        layout.addWidget(self.compare_box)
        layout.addWidget(self.header)
        layout.addWidget(split, 1)

        self._cache: OrderedDict[tuple[int, int, int], tuple[tdiff.MessageDiff, dict[int, int], dict[str, Any]]] = OrderedDict()
        self._shown: tuple[int | None, int | None] | None = None
        self.comparison: Comparison | None = None
        self._fmt_del = QTextCharFormat()
        self._fmt_del.setBackground(QColor(theme.DIFF_WORD_REMOVED))
        self._fmt_ins = QTextCharFormat()
        self._fmt_ins.setBackground(QColor(theme.DIFF_WORD_ADDED))

    # -- what to compare --------------------------------------------------------------------------
    def render_trace(self, trace: Trace | None) -> None:
        self._cache.clear()
        self._shown = None
        self.comparison = None
        self.model.clear_previews()
        self.model.set_diff(None, {})
        self._clear_detail()
        self.header.setText("No trace loaded" if trace is None else "")
        view = self.compare if trace is not None else None
        self.compare_box.setVisible(view is not None)
        self.run_combo.blockSignals(True)
        self.run_combo.clear()
        self.runs_table.setRowCount(0)
        self._subject_run = None
        if view is not None:
            for run in view.runs:
                self.run_combo.addItem(view.label(run), run)
            self._subject_run = view.primary
            self.run_combo.setCurrentIndex(view.runs.index(view.primary))
            self.runs_table.setRowCount(len(view.runs))
            for i, run in enumerate(view.runs):
                item = QTableWidgetItem(view.label(run))
                item.setForeground(QBrush(QColor("white")))
                item.setBackground(QBrush(QColor(view.color(run))))
                self.runs_table.setItem(i, 0, item)
                self.runs_table.setItem(i, 1, QTableWidgetItem(""))
                self.runs_table.setItem(i, 2, QTableWidgetItem(""))
            self.runs_table.setFixedHeight(24 + 21 * len(view.runs))
        self.run_combo.blockSignals(False)

    def _subject(self) -> Trace | None:
        """The trace the detail table diffs: the picked run when comparing, else the trace."""
        if self.compare is not None and self._subject_run is not None:
            return self.compare.trace(self._subject_run)
        return self._trace

    def _run_picked(self, index: int) -> None:
        run = self.run_combo.itemData(index)
        if run is None or run == self._subject_run:
            return
        self._subject_run = int(run)
        self._shown = None
        self.refresh()

    def _pick_row(self, row: int) -> None:
        if 0 <= row < self.run_combo.count():
            self.run_combo.setCurrentIndex(row)

    def pair_at(self, k: int, trace: Trace | None = None) -> tuple[str, int | None, int | None]:
        """(title, before list, after list) compared at event k (of ``trace``, default the panel's)."""
        trace = trace if trace is not None else self._trace
        assert trace is not None
        ev = trace.events[k]
        note = ""
        if ev.kind in (tm.EV_SELECT, tm.EV_COMPRESS, tm.EV_PRUNE):
            before, after = event_lists(ev)
            fault = ""
            if ev.fault is not None:
                at = f" at {ev.fault.where}" if ev.fault.where else ""
                fault = f"{ev.kind} at event {k} FAULTED ({ev.fault.kind}: {ev.fault.message}{at})"
            # A recorded result is what went on (a mutated input Hermes sends, say), fault or not;
            # the host's own repairs of it are in the event's note.
            repaired = f" · {ev.note}" if ev.note and after is not None else ""
            if before is not None and after is not None:
                what = "what went on" if ev.fault is not None else "what it returned"
                head = f"{fault}. " if fault else ""
                return f"{head}{ev.kind} at event {k}: what the engine received → {what}{repaired}", before, after
            if before is not None and ev.kind == tm.EV_SELECT:  # Hermes sends the request as assembled
                if fault:
                    return f"{fault}; its result was discarded. The request went out as assembled", before, before
                return f"select_context at event {k} returned None: the request went out as assembled", before, before
            if fault:
                note = f"{fault}; its result was discarded. "
        req = trace.request_at(k)
        if req is None:
            return note + "No provider request yet at this event", None, None
        if req.index == 0:
            return note + f"Request #{req.index}: the first request (everything is new)", EMPTY_LIST, req.selected
        prev = trace.requests[req.index - 1]
        return note + f"Request #{req.index} compared with request #{prev.index}", prev.selected, req.selected

    def _compute(self, before: int, after: int, trace: Trace | None = None
                 ) -> tuple[tdiff.MessageDiff, dict[int, int], dict[str, Any]]:
        trace = trace if trace is not None else self._trace
        assert trace is not None
        key = (id(trace), before, after)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        store = trace.store
        kb = store.get_list(before) if before != EMPTY_LIST else ()
        ka = store.get_list(after) if after != EMPTY_LIST else ()
        mb = [store.messages[k] for k in kb]
        ma = [store.messages[k] for k in ka]
        tokens = {id(store.messages[k]): trace.message_tokens(k) for k in (*kb, *ka)}
        diff = tdiff.diff_messages(mb, ma, keys_before=kb, keys_after=ka)
        st = tdiff.stats(diff, lambda m: tokens.get(id(m), 0))
        result = (diff, tokens, st)
        self._cache[key] = result
        if len(self._cache) > self.CACHE_SIZE * max(1, len(self.compare.runs) if self.compare else 1):
            self._cache.popitem(last=False)
        return result

    def _render_runs(self, k: int) -> int | None:
        """Fill the side-by-side table; returns the subject run's event at the cursor."""
        view = self.compare
        assert view is not None
        events = view.events_at(k)
        for i, run in enumerate(view.runs):
            trace, k_run = view.trace(run), events.get(run)
            if trace is None or k_run is None or not len(trace):
                self.runs_table.item(i, 1).setText("no events")
                self.runs_table.item(i, 2).setText("")
                continue
            title, before, after = self.pair_at(k_run, trace)
            ev = trace.events[k_run]
            short = f"{ev.kind} (faulted)" if ev.fault is not None else title.split(":")[0]
            self.runs_table.item(i, 1).setText(f"event {k_run}: {short}")
            self.runs_table.item(i, 1).setToolTip(theme.plain_tooltip(title))
            if before is None or after is None:
                self.runs_table.item(i, 2).setText("")
                continue
            _diff, _tokens, st = self._compute(before, after, trace)
            text = self.summary(st)
            self.runs_table.item(i, 2).setText(text)
            self.runs_table.item(i, 2).setToolTip(theme.plain_tooltip(text.replace(" · ", "\n")))
        subject = self._subject_run if self._subject_run is not None else view.primary
        return events.get(subject)

    def render_cursor(self, k: int) -> None:
        trace = self._trace
        if trace is None or not len(trace):
            self.header.setText("No trace loaded" if trace is None else "The trace has no events")
            return
        if self.compare is not None:
            k_subject = self._render_runs(k)
            trace = self._subject()
            if trace is None or k_subject is None or not len(trace):
                return
            k = trace.clamp(k_subject)
            label = self.compare.label(self._subject_run if self._subject_run is not None else self.compare.primary)
            title, before, after = self.pair_at(k, trace)
            title = f"[{label}] {title}"
        else:
            title, before, after = self.pair_at(k)
        if (before, after) == self._shown and self.comparison is not None and self.comparison.title == title:
            return
        self._shown = (before, after)
        if before is None or after is None:
            self.comparison = Comparison(title, before, after, None, None)
            self.model.set_diff(None, {})
            self._clear_detail()
            self.header.setText(title)
            return
        diff, tokens, st = self._compute(before, after, trace)
        self.comparison = Comparison(title, before, after, diff, st)
        self.model.set_diff(diff, tokens)
        # Lay the rows out now rather than from Qt's deferred layout, so the scroll bar appears or
        # goes before the first paint instead of resizing the table and painting it twice.
        self.table.doItemsLayout()
        theme.settle_scroll_bars(self.table)
        self.header.setText(title + "\n" + self.summary(st))
        first = self.model.first_interesting_row()
        if first >= 0:
            self.table.selectRow(first)  # the reset cleared the current row: this fills the detail
            self.table.scrollTo(self.model.index(first, 0), QAbstractItemView.ScrollHint.PositionAtCenter)
        else:
            self._clear_detail()

    @staticmethod
    def summary(st: dict[str, Any]) -> str:
        """The header's figures: messages and tokens dropped, added, changed and kept."""

        def t(name: str) -> str:
            v = st.get(f"tokens_{name}")
            return f"{v:,} tok" if isinstance(v, int) else "? tok"

        parts = [
            # the tokenizer's count of the messages (tool schemas not included: the Request panel has them)
            f"{st['messages_before']} → {st['messages_after']} messages ({t('before')} → {t('after')}, messages only)",
            f"dropped {st['dropped']} ({t('dropped')})",
            f"added {st['added']} ({t('added')})",
        ]
        if st.get("changed"):
            parts.append(f"changed {st['changed']} ({st.get('tokens_changed_before', 0):,} → {st.get('tokens_changed_after', 0):,} tok)")
        if st.get("summarised"):
            parts.append(f"summarised {st['summarised']} into {st['summaries']}")
        parts.append(f"kept {st['kept']} ({t('kept')})")
        parts.append(f"common prefix {st['common_prefix']} msgs")
        return " · ".join(parts)

    # -- detail -----------------------------------------------------------------------------------
    def _clear_detail(self) -> None:
        self.before_text.setPlainText("")
        self.after_text.setPlainText("")

    def _row_changed(self, current: QModelIndex, _prev: QModelIndex) -> None:
        diff = self.model.diff
        if diff is None or not current.isValid():
            return
        row = self.model.rows[current.row()]
        if row.kind == "fold":
            self.before_text.setPlainText(row.note)
            self.after_text.setPlainText(row.note)
            return
        left = diff.before[row.left] if row.left >= 0 else None
        right = diff.after[row.right] if row.right >= 0 else None
        lh, lt = self._detail_text(left, row.left, "before")
        rh, rt = self._detail_text(right, row.right, "after")
        self.before_text.setPlainText(lh + lt)
        self.after_text.setPlainText(rh + rt)
        theme.settle_scroll_bars(self.before_text)
        theme.settle_scroll_bars(self.after_text)
        if row.kind == "changed" and left is not None and right is not None:
            self._highlight(lt, rt, _u16(lh), _u16(rh))

    def _detail_text(self, msg: dict[str, Any] | None, idx: int, side: str) -> tuple[str, str]:
        if msg is None:
            return f"(no message {side})", ""
        tok = self.model.tokens.get(id(msg), 0)
        head = f"#{idx} · {msg.get('role', '?')} · {tok:,} tok"
        if msg.get("tool_call_id"):
            head += f" · tool_call_id {msg['tool_call_id']}"
        return head + "\n\n", _normalise(tdiff.message_text(msg))

    def _highlight(self, a: str, b: str, a_off: int, b_off: int) -> None:
        """Word-level highlights from :func:`refine_text` as extra selections (plain text stays plain)."""
        sel_a: list[QTextEdit.ExtraSelection] = []
        sel_b: list[QTextEdit.ExtraSelection] = []
        pa, pb = a_off, b_off
        for tag, ta, tb in tdiff.refine_text(a, b):
            la, lb = _u16(ta), _u16(tb)
            if tag in ("delete", "replace") and la:
                sel_a.append(self._selection(self.before_text, pa, la, self._fmt_del))
            if tag in ("insert", "replace") and lb:
                sel_b.append(self._selection(self.after_text, pb, lb, self._fmt_ins))
            pa += la
            pb += lb
        self.before_text.setExtraSelections(sel_a)
        self.after_text.setExtraSelections(sel_b)

    @staticmethod
    def _selection(edit: QPlainTextEdit, start: int, length: int, fmt: QTextCharFormat) -> QTextEdit.ExtraSelection:
        sel = QTextEdit.ExtraSelection()
        cur = QTextCursor(edit.document())
        cur.setPosition(start)
        cur.setPosition(start + length, QTextCursor.MoveMode.KeepAnchor)
        sel.cursor = cur  # type: ignore[attr-defined]
        sel.format = fmt  # type: ignore[attr-defined]
        return sel
