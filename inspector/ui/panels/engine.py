"""Engine: which engine produced this trace, how it was configured, and its status and output at the cursor.

The trace's ``meta["engine"]`` is shown as a tree whatever keys it has (name, source, version,
plugin.yaml metadata, config, files written), so the panel keeps up when the host records more.
The ``get_status()`` section and the box below the tree follow the cursor: the box shows what the
engine printed and logged during the hook call at the cursor (plain text, never HTML), with
buttons to the previous and next call that wrote anything.
"""

from __future__ import annotations

import bisect
import json
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.cursor import Cursor
from inspector.ui.derive import figures
from inspector.ui.panels.base import Panel

# Sections of meta["engine"] shown under their own heading, in this order; the rest go under "Engine".
_SECTIONS = (
    ("plugin", "Plugin metadata (plugin.yaml)"),
    ("config", "Config"),
    ("files_written", "Files written"),
)
MAX_CHILDREN = 500


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def add_value(parent: QTreeWidgetItem, key: str, value: Any, depth: int = 0) -> QTreeWidgetItem:
    """Add ``key: value`` under ``parent``; dicts and lists become subtrees (plain text only)."""
    item = QTreeWidgetItem(parent, [str(key), ""])
    if isinstance(value, dict):
        item.setText(1, f"{{{len(value)} keys}}")
        for i, (k, v) in enumerate(value.items()):
            if i >= MAX_CHILDREN:
                QTreeWidgetItem(item, ["…", f"{len(value) - MAX_CHILDREN} more"])
                break
            add_value(item, str(k), v, depth + 1)
    elif isinstance(value, list):
        item.setText(1, f"[{len(value)} items]")
        for i, v in enumerate(value[:MAX_CHILDREN]):
            add_value(item, str(i), v, depth + 1)
        if len(value) > MAX_CHILDREN:
            QTreeWidgetItem(item, ["…", f"{len(value) - MAX_CHILDREN} more"])
    else:
        text = _scalar(value)
        item.setText(1, theme.one_line(text, 300))
        if len(text) > 80 or "\n" in text:
            item.setToolTip(1, theme.plain_tooltip(text))
    return item


def _set_in_place(parent: QTreeWidgetItem, values: dict[str, Any]) -> bool:
    """Show ``values`` in ``parent``'s rows when they are flat rows for the same keys; False if they are not.

    Rebuilding the rows on every status change re-lays out the tree and repaints its header.
    """
    if parent.childCount() != len(values):
        return False
    for i, (key, value) in enumerate(values.items()):
        item = parent.child(i)
        if item.text(0) != str(key) or item.childCount() or isinstance(value, (dict, list)):
            return False
    for i, value in enumerate(values.values()):
        item, text = parent.child(i), _scalar(value)
        shown = theme.one_line(text, 300)
        if item.text(1) != shown:
            item.setText(1, shown)
            item.setToolTip(1, theme.plain_tooltip(text) if len(text) > 80 or "\n" in text else "")
    return True


class EnginePanel(Panel):
    panel_id = "engine"
    title = "Engine"
    area = Qt.DockWidgetArea.BottomDockWidgetArea

    #: the user asked for the engine doctor on this engine (the window runs it in the Doctor dock)
    doctor_requested = Signal(str)

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        self.doctor_button = QPushButton("Run doctor…")
        self.doctor_button.setToolTip("Load this engine the way Hermes would and check every hook (Doctor panel)")
        self.doctor_button.clicked.connect(self._doctor)
        self._engine_name = ""
        self.header = QLabel()
        self.header.setTextFormat(Qt.TextFormat.PlainText)
        self.header.setWordWrap(True)
        font = self.header.font()
        font.setPointSizeF(font.pointSizeF() * 1.15)
        font.setBold(True)
        self.header.setFont(font)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["key", "value"])
        self.tree.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.tree.header().resizeSection(0, 220)
        self.tree.setAlternatingRowColors(True)
        self.tree.setUniformRowHeights(True)
        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(self.header, 1)
        head.addWidget(self.doctor_button, 0, Qt.AlignmentFlag.AlignTop)

        self.output_title = theme.readout_label()  # changes on every step: must not re-lay out the window
        self.prev_output = QPushButton("◀ Previous")
        self.next_output = QPushButton("Next ▶")
        self.prev_output.setToolTip("The previous hook call that printed or logged something")
        self.next_output.setToolTip("The next hook call that printed or logged something")
        self.prev_output.clicked.connect(lambda: self._jump_output(-1))
        self.next_output.clicked.connect(lambda: self._jump_output(+1))
        self.output_text = QPlainTextEdit()
        self.output_text.setReadOnly(True)
        self.output_text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        mono = QFont("monospace")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.output_text.setFont(mono)
        self.output_text.setPlaceholderText("Nothing printed or logged during this hook call")
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.output_title, 1)
        bar.addWidget(self.prev_output)
        bar.addWidget(self.next_output)
        output_box = QWidget()
        box = QVBoxLayout(output_box)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addLayout(bar)
        box.addWidget(self.output_text, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.tree)
        split.addWidget(output_box)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(head)
        layout.addWidget(split, 1)
        self._with_output: list[int] = []  # events whose hook call wrote something, in order
        self._output_shown: tuple[int, str | None] | None = None
        self._text_shown = ""
        self.status_item: QTreeWidgetItem | None = None
        self._status_shown: object = None
        self._bold = QFont(self.tree.font())
        self._bold.setBold(True)

    def _section(self, title: str) -> QTreeWidgetItem:
        item = QTreeWidgetItem(self.tree, [title, ""])
        item.setFont(0, self._bold)
        item.setFirstColumnSpanned(True)
        return item

    def render_trace(self, trace: Trace | None) -> None:
        self.tree.clear()
        self.status_item = None
        self._status_shown = object()
        self._engine_name = ""
        self._with_output = [ev.index for ev in trace.events if ev.output is not None] if trace is not None else []
        self._output_shown = None
        self._show_output(None, None)
        if trace is None:
            self.header.setText("No trace loaded")
            return
        engine = trace.meta.get("engine") or {}
        if not isinstance(engine, dict):
            engine = {"name": engine}
        name = engine.get("name", "unknown engine")
        self._engine_name = str(name) if name != "unknown engine" else ""
        version = engine.get("version")
        source = engine.get("source")
        label = str(trace.meta.get("label") or "")
        self.header.setText((f"[{label}] " if label and label != name else "") + f"{name}"
                            + (f" {version}" if version else "") + (f" · {source}" if source else ""))
        top = self._section("Engine")
        for key, value in engine.items():
            if key not in dict(_SECTIONS):
                add_value(top, key, value)
        top.setExpanded(True)
        for key, title in _SECTIONS:
            if key in engine:
                sec = self._section(title)
                value = engine[key]
                if isinstance(value, dict):
                    for k, v in value.items():
                        add_value(sec, k, v)
                elif isinstance(value, list):
                    for i, v in enumerate(value):
                        add_value(sec, str(i), v)
                else:
                    add_value(sec, key, value)
                sec.setExpanded(True)
        tools = self._section(f"Tool schemas ({len(trace.tool_schemas)})")
        for schema in trace.tool_schemas:
            fn = schema.get("function", schema) if isinstance(schema, dict) else {}
            add_value(tools, str(fn.get("name", "?")) if isinstance(fn, dict) else "?", schema)
        tools.setExpanded(True)
        self.status_item = self._section("get_status() at the cursor")
        self.status_item.setExpanded(True)
        rest = {k: v for k, v in trace.meta.items() if k != "engine"}
        if rest:
            sec = self._section("Trace")
            for k, v in rest.items():
                add_value(sec, k, v)

    def _doctor(self) -> None:
        self.doctor_requested.emit(self._engine_name)

    def _jump_output(self, step: int) -> None:
        k = self.cursor.index
        events = self._with_output
        if step > 0:
            pos = bisect.bisect_right(events, k)
            target = events[pos] if pos < len(events) else None
        else:
            pos = bisect.bisect_left(events, k)
            target = events[pos - 1] if pos > 0 else None
        if target is not None:
            self.jump_requested.emit(target)

    def _show_output(self, k: int | None, kind: str | None, output: str | None = None) -> None:
        if self._output_shown == (k, output):
            return
        self._output_shown = (k, output)
        events = self._with_output
        if k is None:
            title = "Engine output"
        elif output is None:
            title = f"Nothing printed or logged at event {k} ({kind})"
        else:
            lines = output.count("\n") + (not output.endswith("\n"))
            title = f"Printed and logged at event {k} ({kind}): {lines:,} line{'s' if lines != 1 else ''}"
        if events:
            title += f" · {len(events):,} hook call{'s' if len(events) != 1 else ''} in this trace wrote something"
        elif k is not None:
            title += " · none in this trace"
        self.output_title.setText(title)
        if (output or "") != self._text_shown:  # most events wrote nothing: the box stays as it is
            self._text_shown = output or ""
            self.output_text.setPlainText(self._text_shown)
        self.prev_output.setEnabled(k is not None and bool(events) and events[0] < k)
        self.next_output.setEnabled(k is not None and bool(events) and events[-1] > k)

    def render_cursor(self, k: int) -> None:
        trace = self._trace
        if trace is None or self.status_item is None:
            return
        if len(trace):
            ev = trace.events[k]
            self._show_output(k, ev.kind, ev.output)
        status = figures(trace).status_at(trace, k) if len(trace) else None
        # Equal, not the same object: a replay's statuses are read as new dicts (inspector.trace.packed).
        if status == self._status_shown and repr(status) == repr(self._status_shown):
            return
        self._status_shown = status
        if status is not None and _set_in_place(self.status_item, status):
            return
        self.status_item.takeChildren()
        if status is None:
            QTreeWidgetItem(self.status_item, ["(no status recorded yet)", ""])
        else:
            for key, value in status.items():
                add_value(self.status_item, key, value)
        self.status_item.setExpanded(True)
