"""Request: exactly what the model was sent at the cursor.

A table of the messages (role, tokens, preview) with the selected message in full below, the
tool schemas sent with the request, and the raw JSON. Everything is plain text: a transcript
containing ``<b>`` or ``<script>`` is shown as those characters, never rendered.

Only the row list is rebuilt when the request changes; the full text of one message and the raw
JSON are produced on demand, so stepping through a 500-message request stays cheap.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QPlainTextEdit,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from inspector.trace.model import Request, Trace
from inspector.ui import theme
from inspector.ui.cursor import Cursor
from inspector.ui.derive import message_preview, message_text
from inspector.ui.geometry import GeometryFirewall
from inspector.ui.painted_views import PaintedTable, RowCellCache, cell_offsets
from inspector.ui.panels.base import Panel
from inspector.ui.scroll_bar import steady_scroll_bar

RAW_JSON_LIMIT = 2_000_000  # characters; beyond this the raw view is truncated (and says so)
_ROLE_COLOURS = {"system": "#6d4c41", "user": "#1565c0", "assistant": "#2e7d32", "tool": "#ef6c00"}


def format_message(msg: dict[str, Any]) -> str:
    """Full plain-text rendering of one message: text, then tool calls with their arguments."""
    out = [message_text(msg)]
    for call in msg.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        fn = call.get("function") or {}
        args = fn.get("arguments", "")
        if isinstance(args, str):
            try:
                args = json.dumps(json.loads(args), indent=2, ensure_ascii=False)
            except (ValueError, TypeError):
                pass
        else:
            args = json.dumps(args, indent=2, ensure_ascii=False, default=str)
        out.append(f"\n── tool call {call.get('id', '')}: {fn.get('name', '?')}\n{args}")
    extra = {k: v for k, v in msg.items() if k not in ("role", "content", "tool_calls")}
    if extra:
        out.append("\n── fields\n" + json.dumps(extra, indent=2, ensure_ascii=False, default=str))
    return "\n".join(out).strip("\n")


_CELL_OFFSET = cell_offsets(4)


class MessagesModel(RowCellCache, QAbstractTableModel):
    """The messages of one request, one row each.

    The whole table is repainted whenever the request changes. A row's cells for every painted
    role are built once into one flat tuple, which ``PaintedTable`` reads directly and
    ``data()`` serves from; the role, token count and one-line preview of a message are kept
    per message key: consecutive requests share almost all their messages.
    """

    HEADERS = ("#", "role", "tokens", "message")

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.keys: tuple[str, ...] = ()
        self.trace: Trace | None = None
        self.dropped: frozenset[str] = frozenset()
        self._role_brush = {r: QBrush(QColor(c)) for r, c in _ROLE_COLOURS.items()}
        self._muted = QBrush(QColor("#90a4ae"))
        self._italic = QFont()
        self._italic.setItalic(True)
        self._cells: list[tuple[Any, ...] | None] = []
        self._summary: dict[str, tuple[str, str, str]] = {}  # key → (role, tokens, preview)
        self._summary_trace: Trace | None = None

    def set_keys(self, trace: Trace | None, keys: tuple[str, ...], dropped: frozenset[str] = frozenset()) -> None:
        # A reset, not row inserts/removals: the body repaints either way (measured), and the
        # header keeps its own label model (PaintedTable), so it is not reset with this one.
        self.beginResetModel()
        if trace is not self._summary_trace:
            self._summary, self._summary_trace = {}, trace
        self.trace, self.keys, self.dropped = trace, keys, dropped
        self._cells = [None] * len(keys)
        self.endResetModel()

    def message(self, row: int) -> dict[str, Any]:
        assert self.trace is not None
        return self.trace.store.messages[self.keys[row]]

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.keys)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return len(self.HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        offset = _CELL_OFFSET.get(role)
        if offset is None or not index.isValid() or self.trace is None:
            return None
        return self.row_cells(index.row())[offset + index.column()]

    def _build_cells(self, row: int) -> tuple[Any, ...]:
        assert self.trace is not None
        key = self.keys[row]
        summary = self._summary.get(key)
        if summary is None:
            msg = self.trace.store.messages[key]
            summary = (str(msg.get("role", "?")), f"{self.trace.message_tokens(key):,}", message_preview(msg, 200))
            self._summary[key] = summary
        role, tokens, preview = summary
        right = theme.ALIGN_RIGHT
        if key in self.dropped:
            muted, italic = self._muted, self._italic
            cells = (
                str(row), role, tokens, "[not sent] " + preview,
                None, None, None, None,
                muted, muted, muted, muted,
                right, None, right, None,
                italic, italic, italic, italic,
            )
        else:
            cells = (
                str(row), role, tokens, preview,
                None, None, None, None,
                None, self._role_brush.get(role), None, None,
                right, None, right, None,
                None, None, None, None,
            )
        self._cells[row] = cells
        return cells


class RequestPanel(Panel):
    panel_id = "request"
    title = "Request"
    area = Qt.DockWidgetArea.BottomDockWidgetArea

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.header = theme.readout_label(1)  # opaque, like every TextLine
        self.show_assembled = QCheckBox("Show assembled (before select_context)")
        self.show_assembled.setToolTip("Also list the messages the engine removed in select_context, greyed out")
        self.show_assembled.toggled.connect(self._refresh_request)
        top = QHBoxLayout()
        top.addWidget(self.header, 1)
        top.addWidget(self.show_assembled)

        self.model = MessagesModel(self)
        self.table = PaintedTable()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.table.setAlternatingRowColors(True)
        h = self.table.horizontalHeader()
        for col, width in ((0, 40), (1, 72), (2, 64)):
            h.setSectionResizeMode(col, QHeaderView.ResizeMode.Fixed)
            h.resizeSection(col, width)
        h.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.table.selectionModel().currentRowChanged.connect(self._row_changed)
        self.message_text = QPlainTextEdit()
        self.message_text.setReadOnly(True)
        self.message_text.setPlaceholderText("Select a message to read it in full")
        steady_scroll_bar(self.message_text)
        for area in (self.table, self.message_text):
            # opaque: a range change then repaints the scroll bar only, not the dock beneath it
            area.verticalScrollBar().setAutoFillBackground(True)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self.message_text)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)

        self.tools_text = QPlainTextEdit()
        self.tools_text.setReadOnly(True)
        self.raw_text = QPlainTextEdit()
        self.raw_text.setReadOnly(True)
        self.raw_text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        mono = QFont("monospace")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        for edit in (self.tools_text, self.raw_text):
            edit.setFont(mono)
        self.tabs = QTabWidget()
        self.tabs.addTab(split, "Messages")
        self.tabs.addTab(self.tools_text, "Tool schemas")
        self.tabs.addTab(self.raw_text, "Raw JSON")
        self.tabs.currentChanged.connect(lambda _i: self._fill_lazy_tab())

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(GeometryFirewall(self.tabs), 1)
        self._request: Request | None = None
        self._lazy_for: tuple[int, int] | None = None  # (request index, tab) already filled

    def render_trace(self, trace: Trace | None) -> None:
        self._request = None
        self._lazy_for = None
        self.model.set_keys(trace, ())
        self.message_text.setPlainText("")
        self.tools_text.setPlainText("")
        self.raw_text.setPlainText("")
        self.header.setText("No trace loaded" if trace is None else "")

    def render_cursor(self, k: int) -> None:
        trace = self._trace
        if trace is None or not len(trace):
            self.header.setText("No trace loaded" if trace is None else "The trace has no events")
            return
        req = trace.request_at(k)
        if req is self._request and req is not None:
            return
        self._request = req
        self._refresh_request()

    def _refresh_request(self) -> None:
        trace, req = self._trace, self._request
        self._lazy_for = None
        if trace is None or req is None:
            self.model.set_keys(trace, ())
            self.header.setText("No provider request at or before the cursor")
            self.message_text.setPlainText("")
            self._fill_lazy_tab()
            return
        selected = trace.store.get_list(req.selected)
        if self.show_assembled.isChecked() and req.assembled != req.selected:
            assembled = trace.store.get_list(req.assembled)
            sent = set(selected)
            dropped = frozenset(k for k in assembled if k not in sent)
            keys = assembled + tuple(k for k in selected if k not in set(assembled))
            self.model.set_keys(trace, keys, dropped)
        else:
            self.model.set_keys(trace, selected)
        self.table.doItemsLayout()  # now, so a scroll bar that comes or goes does not cost a second paint
        theme.settle_scroll_bars(self.table)
        tok = req.tokens.get("tiktoken")
        parts = [f"Request #{req.index} · turn {req.turn} · call {req.call}", f"{len(selected)} messages"]
        if tok is not None:
            parts.append(f"{tok:,} tok")
        if req.tokens.get("tools"):
            parts.append(f"tools {req.tokens['tools']:,} tok")
        if req.selected_by_engine or req.assembled != req.selected:
            parts.append("selected by the engine")
        self.header.setText(" · ".join(parts))
        if self.model.rowCount():
            last = self.model.rowCount() - 1
            self.table.selectRow(last)  # fills the message text through _row_changed
            self.table.scrollToBottom()
        else:
            self.message_text.setPlainText("")
        self._fill_lazy_tab()

    def _row_changed(self, current: QModelIndex, _prev: QModelIndex) -> None:
        if not current.isValid() or self._trace is None:
            return
        row = current.row()
        key = self.model.keys[row]
        msg = self.model.message(row)
        head = f"#{row} · {msg.get('role', '?')} · {self._trace.message_tokens(key):,} tok · key {key}"
        if key in self.model.dropped:
            head += " · removed by select_context (not sent)"
        self.message_text.setPlainText(head + "\n\n" + format_message(msg))
        theme.settle_scroll_bars(self.message_text)

    def tool_schemas(self) -> list[dict[str, Any]]:
        trace, req = self._trace, self._request
        if trace is None:
            return []
        if req is not None and req.tools is not None and 0 <= req.tools < len(trace.store.lists):
            return trace.store.materialise(req.tools)
        return list(trace.tool_schemas)

    def raw_json(self) -> str:
        """The request as the provider would receive it (messages + tools), as JSON text."""
        trace, req = self._trace, self._request
        if trace is None or req is None:
            return ""
        body = {"messages": trace.request_messages(req), "tools": self.tool_schemas()}
        text = json.dumps(body, indent=2, ensure_ascii=False, default=str)
        if len(text) > RAW_JSON_LIMIT:
            text = text[:RAW_JSON_LIMIT] + f"\n… truncated ({len(text):,} characters in total)"
        return text

    def _fill_lazy_tab(self) -> None:
        tab = self.tabs.currentIndex()
        req_index = self._request.index if self._request is not None else -1
        if tab == 0 or self._lazy_for == (req_index, tab):
            return
        self._lazy_for = (req_index, tab)
        if tab == 1:
            schemas = self.tool_schemas()
            self.tools_text.setPlainText(
                json.dumps(schemas, indent=2, ensure_ascii=False, default=str) if schemas else "No tool schemas sent"
            )
        elif tab == 2:
            self.raw_text.setPlainText(self.raw_json() or "No request at the cursor")

