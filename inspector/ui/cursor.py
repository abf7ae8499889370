"""The single cursor: an event index into the current trace.

Every way of moving through a trace (event list, plot clicks, keyboard, bookmarks) ends in
:meth:`Cursor.set`; every panel listens to :attr:`Cursor.changed`. No panel keeps its own
notion of "now", so they can never disagree about which event is selected.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from inspector.trace.model import Trace


class Cursor(QObject):
    """Owns the trace being inspected and the selected event index within it."""

    changed = Signal(int)
    trace_changed = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._trace: Trace | None = None
        self._index = 0

    @property
    def trace(self) -> Trace | None:
        return self._trace

    @property
    def index(self) -> int:
        return self._index

    def set_trace(self, trace: Trace | None, index: int = 0) -> None:
        """Replace the trace; panels rebuild once, then the cursor lands on ``index``.

        The trace answers its own queries (it builds its lookup arrays on first use), so this
        does not call ``finish()`` again: on a 50,000-event trace that costs ~100 ms.
        """
        self._trace = trace
        self._index = trace.clamp(index) if trace is not None else 0
        self.trace_changed.emit(trace)
        self.changed.emit(self._index)

    def set(self, k: int | None) -> bool:
        """Move to event ``k`` (clamped). Returns False when nothing moved (no trace, same spot, None)."""
        if k is None or self._trace is None or not len(self._trace):
            return False
        k = self._trace.clamp(int(k))
        if k == self._index:
            return False
        self._index = k
        self.changed.emit(k)
        return True

    # -- navigation (each returns whether the cursor moved) ---------------------------------
    def step(self, delta: int) -> bool:
        return self.set(self._index + delta)

    def home(self) -> bool:
        return self.set(0)

    def end(self) -> bool:
        return self._trace is not None and self.set(len(self._trace) - 1)

    def next_turn(self) -> bool:
        return self._trace is not None and self.set(self._trace.next_turn(self._index))

    def prev_turn(self) -> bool:
        """Start of the current turn, or of the previous one when already at a turn start."""
        return self._trace is not None and self.set(self._trace.prev_turn(self._index))

    def next_compression(self) -> bool:
        return self._trace is not None and self.set(self._trace.next_compression(self._index))

    def prev_compression(self) -> bool:
        return self._trace is not None and self.set(self._trace.prev_compression(self._index))

    def next_cache_miss(self) -> bool:
        return self._trace is not None and self.set(self._trace.next_cache_miss(self._index))

    def prev_cache_miss(self) -> bool:
        return self._trace is not None and self.set(self._trace.prev_cache_miss(self._index))

    def next_fault(self) -> bool:
        return self._trace is not None and self.set(self._trace.next_fault(self._index))

    def prev_fault(self) -> bool:
        return self._trace is not None and self.set(self._trace.prev_fault(self._index))

    def next_bookmark(self) -> bool:
        return self._trace is not None and self.set(self._trace.next_mark(self._index))

    def prev_bookmark(self) -> bool:
        return self._trace is not None and self.set(self._trace.prev_mark(self._index))

    def go_to_turn(self, turn: int) -> bool:
        return self._trace is not None and self.set(self._trace.turn_event(turn))
