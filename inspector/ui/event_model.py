"""The event list as a Qt item model: turns → provider requests → hook events.

Every node is one event (a turn node is its ``turn`` marker, a request node its ``request``
marker), so mapping the cursor to a row and back is an array lookup. The tree shape is built
once per trace in O(events) with plain lists; labels, icons and tooltips are produced only for
the rows a view asks about, which is what lets 10,000 requests (≈50,000 events) open at once.

With a text or quick filter active the model switches to a flat list of the matching events:
filtering a deep tree recursively is slow and hides where the hits are, while a flat result
list reads like search results and still moves the same cursor.

Painting is where the time goes. The first time a row is painted its cells for every role are
built into one flat tuple, which ``PaintedTree`` paints from in one call per row; ``data()``
serves the same tuple to anything else that asks (tooltips, accessibility, tests).
"""

from __future__ import annotations

import bisect
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QFont

from inspector.trace import model as tm
from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.derive import event_label, is_cache_miss
from inspector.ui.explain import explain, prepares
from inspector.ui.painted_views import cell_offsets

TOOLTIP_TRACEBACK_LINES = 3  # the end of a fault's traceback, under the engine's file and line
TOOLTIP_OUTPUT_LINES = 8  # the end of what the engine printed and logged during the call
TOOLTIP_LINE_CHARS = 100  # each line shortened, so a few long lines cannot crowd out the rest
COLUMNS = ("Event", "#", "ms")  # the turn is the tree level; a column for it would only cost repaints
_ROOT = -1

QUICK_COMPRESSIONS = "compressions"
QUICK_CACHE_MISSES = "cache misses"
QUICK_FAULTS = "faults"
QUICK_BOOKMARKS = "bookmarks"
QUICK_FILTERS = (QUICK_COMPRESSIONS, QUICK_CACHE_MISSES, QUICK_FAULTS, QUICK_BOOKMARKS)

AnyIndex = QModelIndex | QPersistentModelIndex

# Roles a view paints with → offset of that role's three cells in a row's cells (``cell_offsets``);
# CheckStateRole and the rest get None.
_CELL_OFFSET = cell_offsets(len(COLUMNS), icons=True)
# flags() is not overridden: Qt's default (enabled and selectable) is what rows need, and a
# Python override costs a call per painted row.
_BOLD_KINDS = frozenset({tm.EV_TURN, tm.EV_COMPRESS})


def _preparing_owner(events: list[tm.Event]) -> dict[int, int]:
    """{event index: index of the request marker it prepares}, for the events that prepare one."""
    owner: dict[int, int] = {}
    gap_start = 0  # first event after the last request marker or turn start
    first_preparing = -1
    for ev in events:
        kind = ev.kind
        if kind == tm.EV_REQUEST:
            if first_preparing >= 0:
                for i in range(first_preparing, ev.index):
                    if events[i].kind != tm.EV_TURN_COMPLETE:
                        owner[i] = ev.index
            gap_start, first_preparing = ev.index + 1, -1
        elif kind == tm.EV_TURN:
            gap_start, first_preparing = ev.index + 1, -1
        elif first_preparing < 0 and prepares(ev):
            first_preparing = max(gap_start, ev.index)
    return owner


def _pruned(ev: tm.Event) -> bool:
    """A prune that removed something (most calls prune nothing and would drown the compressions)."""
    if ev.kind != tm.EV_PRUNE:
        return False
    count = ev.result.get("count") if isinstance(ev.result, dict) else None
    return ev.fault is not None or (isinstance(count, int) and count > 0) or "$list" in (ev.result or {})


class EventTreeModel(QAbstractItemModel):
    """Read-only tree (or flat filtered list) over a trace's events."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._trace: Trace | None = None
        self._parent: list[int] = []
        self._row: list[int] = []
        self._children: dict[int, list[int]] = {_ROOT: []}
        self._labels: list[str | None] = []
        self._hay: list[str | None] = []  # lower-cased labels, for the text filter
        self._warm_from = 0  # labels below this index are already in _hay
        self._cells: list[tuple[Any, ...] | None] = []  # per event, built on first paint
        self._flat: list[int] | None = None
        self._marked: dict[int, tm.Mark] = {}
        self._bold = QFont()
        self._bold.setBold(True)
        self._fault_brush = QBrush(QColor(theme.FAULT))
        self._mark_brush = QBrush(QColor("#fff3c4"))
        self._muted_brush = QBrush(QColor("#78909c"))

    # -- building -------------------------------------------------------------------------
    def set_trace(self, trace: Trace | None) -> None:
        self.beginResetModel()
        self._trace = trace
        self._flat = None
        self._build()
        self._refresh_marks()
        self.endResetModel()

    def _build(self) -> None:
        trace = self._trace
        events = trace.events if trace is not None else []
        m = len(events)
        parent = [_ROOT] * m
        row = [0] * m
        children: dict[int, list[int]] = {_ROOT: []}
        self._labels = [None] * m
        self._hay = [None] * m
        self._warm_from = 0
        self._cells = [None] * m
        if trace is None:
            self._parent, self._row, self._children = parent, row, children
            return
        placed = [False] * m
        # where the next turn starts after each event (a request node never spans two turns)
        next_turn_at = [m] * m
        upcoming = m
        for ev in reversed(events):
            next_turn_at[ev.index] = upcoming
            if ev.kind == tm.EV_TURN:
                upcoming = ev.index
        owner = _preparing_owner(events)
        root_kids = children[_ROOT]
        ev_turn, ev_request, ev_turn_complete = tm.EV_TURN, tm.EV_REQUEST, tm.EV_TURN_COMPLETE

        def attach(k: int, p: int) -> None:
            siblings = root_kids if p == _ROOT else children.setdefault(p, [])
            parent[k] = p
            row[k] = len(siblings)
            siblings.append(k)
            placed[k] = True

        cur_turn = _ROOT
        cur_req = _ROOT
        requests = trace.requests
        n_requests = len(requests)
        for ev in events:
            k = ev.index
            kind = ev.kind
            if placed[k]:
                if kind == ev_request:
                    cur_req = k
                continue
            if kind == ev_turn:
                attach(k, _ROOT)
                cur_turn, cur_req = k, _ROOT
            elif kind == ev_request:
                attach(k, cur_turn)
                cur_req = k
            elif ev.turn is None and ev.request is None:
                attach(k, _ROOT)  # session lifecycle outside any turn
            elif kind == ev_turn_complete:
                attach(k, cur_turn)
            else:
                target = cur_req if cur_req != _ROOT else cur_turn
                # A hook that prepares request r (the gates, select_context, a compress before
                # the call) comes before r's marker: show it under r, placing r's node where
                # its first event is.
                marker = owner.get(k, -1)
                r = ev.request
                if marker < 0 and r is not None and 0 <= r < n_requests:
                    marker = requests[r].event
                if k < marker < next_turn_at[k] and not placed[marker] and events[marker].kind == ev_request:
                    attach(marker, cur_turn)
                    cur_req = marker
                    target = marker
                elif marker > k and placed[marker]:
                    target = marker
                attach(k, target)
        self._parent, self._row, self._children = parent, row, children

    def _refresh_marks(self) -> None:
        self._marked = {mk.event: mk for mk in self._trace.marks} if self._trace is not None else {}
        self._cells = [None] * len(self._cells)  # the star and the background come from the marks

    def marks_changed(self) -> None:
        """Bookmarks were added or edited: repaint rows (and re-filter when filtering by them)."""
        self._refresh_marks()
        if self.rowCount() and self._trace is not None:
            self.dataChanged.emit(self.index(0, 0), self.index(self.rowCount() - 1, len(COLUMNS) - 1))

    # -- filtering ------------------------------------------------------------------------
    def label(self, k: int) -> str:
        cached = self._labels[k]
        if cached is None:
            assert self._trace is not None
            cached = event_label(self._trace, self._trace.events[k])
            self._labels[k] = cached
        return cached

    def warm_filter_text(self, budget: int) -> bool:
        """Lower-case up to ``budget`` more labels for the text filter; True once all are done.

        Called from idle time after a trace opens, so the first filter on a long trace does not
        pay for every label at once (about a second per 150,000 events).
        """
        hay = self._hay
        start = self._warm_from
        end = min(len(hay), start + budget)
        label = self.label
        for k in range(start, end):
            if hay[k] is None:
                hay[k] = label(k).lower()
        self._warm_from = end
        return end >= len(hay)

    def set_filter(self, text: str, quick: set[str] | frozenset[str]) -> None:
        """Flat list of events matching ``text`` (case-insensitive) and any of the quick filters."""
        text = text.strip().lower()
        self.beginResetModel()
        if (not text and not quick) or self._trace is None:
            self._flat = None
        else:
            trace = self._trace
            marked = self._marked
            out: list[int] = []
            for ev in trace.events:
                if quick:
                    hit = (
                        (QUICK_COMPRESSIONS in quick and (ev.kind == tm.EV_COMPRESS or _pruned(ev)))
                        or (QUICK_FAULTS in quick and ev.fault is not None)
                        or (QUICK_CACHE_MISSES in quick and is_cache_miss(trace, ev))
                        or (QUICK_BOOKMARKS in quick and ev.index in marked)
                    )
                    if not hit:
                        continue
                if text:
                    mark = marked.get(ev.index)
                    hay = self._hay[ev.index]
                    if hay is None:  # lower-cased once per trace: typing re-filters every event
                        hay = self._hay[ev.index] = self.label(ev.index).lower()
                    if text not in hay and text != str(ev.index) and not (
                        mark is not None and text in (mark.label + " " + mark.note).lower()
                    ):
                        continue
                out.append(ev.index)
            self._flat = out
        self.endResetModel()

    @property
    def is_flat(self) -> bool:
        return self._flat is not None

    @property
    def match_count(self) -> int:
        return len(self._flat) if self._flat is not None else len(self._parent)

    # -- event ↔ index ----------------------------------------------------------------------
    def index_for_event(self, k: int) -> QModelIndex:
        if self._trace is None or not (0 <= k < len(self._parent)):
            return QModelIndex()
        if self._flat is not None:
            pos = bisect.bisect_left(self._flat, k)
            if pos < len(self._flat) and self._flat[pos] == k:
                return self.createIndex(pos, 0, k)
            return QModelIndex()
        return self.createIndex(self._row[k], 0, k)

    @staticmethod
    def event_of(index: AnyIndex) -> int | None:
        return int(index.internalId()) if index.isValid() else None

    # -- QAbstractItemModel -----------------------------------------------------------------
    def index(self, row: int, column: int, parent: AnyIndex = QModelIndex()) -> QModelIndex:  # noqa: B008
        if self._trace is None or column < 0 or column >= len(COLUMNS) or row < 0:
            return QModelIndex()
        if self._flat is not None:
            if parent.isValid() or row >= len(self._flat):
                return QModelIndex()
            return self.createIndex(row, column, self._flat[row])
        p = parent.internalId() if parent.isValid() else _ROOT
        kids = self._children.get(p)
        if kids is None or row >= len(kids):
            return QModelIndex()
        return self.createIndex(row, column, kids[row])

    def children_of(self, k: int) -> list[int]:
        """Event indices shown directly under event k's node (tree mode)."""
        return self._children.get(k, [])

    def top_level(self) -> list[int]:
        """Event indices of the top-level nodes (turns, and lifecycle events outside turns), in row order."""
        return self._children[_ROOT]

    def parent(self, index: AnyIndex = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        if self._flat is not None or not index.isValid():
            return QModelIndex()
        p = self._parent[index.internalId()]
        if p < 0:
            return QModelIndex()
        return self.createIndex(self._row[p], 0, p)

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        if self._trace is None:
            return 0
        if self._flat is not None:
            return 0 if parent.isValid() else len(self._flat)
        if parent.isValid():
            if parent.column() != 0:
                return 0
            return len(self._children.get(int(parent.internalId()), ()))
        return len(self._children[_ROOT])

    def hasChildren(self, parent: AnyIndex = QModelIndex()) -> bool:  # noqa: B008
        # asked for every painted row: one dict lookup (only nodes with children have a list)
        if not parent.isValid():
            return self.rowCount() > 0
        if self._flat is not None or parent.column() != 0:
            return False
        return parent.internalId() in self._children

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        return len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        offset = _CELL_OFFSET.get(role)
        if offset is None:
            if role == theme.ROLE_TOOLTIP and index.isValid() and index.column() == 0 and self._trace is not None:
                return self._tooltip(index.internalId())
            return None
        if not index.isValid() or self._trace is None:
            return None
        k = index.internalId()
        cells = self._cells[k]
        if cells is None:
            cells = self._build_cells(k)
        return cells[offset + index.column()]

    def cells_at(self, index: AnyIndex) -> tuple[Any, ...]:
        """Every painted role of the row's three cells (see ``cell_offsets``), for ``PaintedTree``."""
        k = index.internalId()
        cells = self._cells[k]
        return cells if cells is not None else self._build_cells(k)

    def depth_at(self, index: AnyIndex) -> int:
        """How many nodes the row is nested under (0 at the top level and in a filtered list)."""
        if self._flat is not None:
            return 0
        depth, p = 0, self._parent[index.internalId()]
        while p >= 0:
            depth, p = depth + 1, self._parent[p]
        return depth

    def _build_cells(self, k: int) -> tuple[Any, ...]:
        assert self._trace is not None
        ev = self._trace.events[k]
        label = self.label(k)
        marked = k in self._marked
        faulted = ev.fault is not None
        fg = self._fault_brush if faulted else None
        fg_side = self._fault_brush if faulted else self._muted_brush
        bg = self._mark_brush if marked else None
        cells = (
            ("★ " + label) if marked else label, str(k), f"{ev.duration * 1000:.1f}" if ev.duration else "",
            bg, bg, bg,
            fg, fg_side, fg_side,
            None, theme.ALIGN_RIGHT, theme.ALIGN_RIGHT,
            self._bold if ev.kind in _BOLD_KINDS else None, None, None,
            theme.kind_icon(ev.kind, faulted), None, None,
        )
        self._cells[k] = cells
        return cells

    def _tooltip(self, k: int) -> str:
        """The event, its fault's place in the engine, then the end of what it printed.

        The label already carries the fault message, so the traceback part drops its repeat. When
        everything does not fit the tooltip's limit the top is shortened, never the end: the last
        thing the engine printed is what an author looks for.
        """
        assert self._trace is not None
        ev = self._trace.events[k]
        head = [f"event {k} · {ev.kind}", _short(self.label(k), 2 * TOOLTIP_LINE_CHARS)]
        # the call's arguments, return value and, for a gate, what it compared (the Decision panel)
        head += [_short(f"{line.label}: {line.value}", 2 * TOOLTIP_LINE_CHARS)
                 for line in explain(self._trace, k)[1:] if line.label not in ("fault", "at", "note", "traceback")]
        if ev.fault is not None:
            where = ev.fault.where
            if where:
                head.append(f"at {where}")
            tb = (ev.fault.traceback or "").rstrip()
            message = ev.fault.message.strip()
            if message and tb.endswith(message):  # Python's last line repeats the message
                tb = tb[:-len(message)].rstrip()
            lines = [line for line in tb.splitlines() if line.strip(" ^~")]  # not 3.11's carets
            if lines:
                head.append("\n".join(_short(line, TOOLTIP_LINE_CHARS) for line in lines[-TOOLTIP_TRACEBACK_LINES:]))
        tail: list[str] = []
        if ev.output is not None:  # its end: what the engine said last (all of it in the Engine panel)
            lines = ev.output.rstrip("\n").splitlines()
            tail.append("engine output" + (f" (last {TOOLTIP_OUTPUT_LINES} of {len(lines)} lines)"
                                           if len(lines) > TOOLTIP_OUTPUT_LINES else "") + ":")
            tail.append("\n".join(_short(line, TOOLTIP_LINE_CHARS, keep_end=True) for line in lines[-TOOLTIP_OUTPUT_LINES:]))
        mark = self._marked.get(k)
        if mark is not None:
            tail.append(_short(f"bookmark: {mark.label}\n{mark.note}".rstrip(), 2 * TOOLTIP_LINE_CHARS))
        end = "\n".join(tail)
        room = theme.TOOLTIP_LIMIT - len(end) - 1
        top = "\n".join(head)
        if len(top) > room:
            top = top[:max(0, room - 2)] + " …"
        return theme.plain_tooltip("\n".join([top, end]) if end else top)


def _short(line: str, limit: int, *, keep_end: bool = False) -> str:
    """``line`` cut to about ``limit`` characters; ``keep_end`` keeps its end too (a log line's figures)."""
    if len(line) <= limit:
        return line
    return line[:limit * 2 // 3] + " … " + line[-(limit // 3):] if keep_end else line[:limit] + " …"
