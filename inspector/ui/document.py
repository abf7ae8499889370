"""What the window has open, as a Qt-free document the window observes.

The source (a transcript, a state.db session, a saved trace or comparison), where Save writes,
the session a replay needs, the comparison and its file, the bookmarks and whether anything is
unsaved: one object owns them, and every change to them goes through it and is announced to its
observers (the window redraws its title and the panels their marks). RenderDoc's capture
context and napari's evented models keep the same split: the document is the state, the window
builds and wires views over it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspector.trace.model import Mark, Trace

#: what changed, as observers are told: the open source or file names, the bookmarks, the
#: unsaved flag
SOURCE, MARKS, MODIFIED = "source", "marks", "modified"

Observer = Callable[[str], None]


class Document:
    """The open trace's provenance, its bookmarks and its unsaved state."""

    def __init__(self) -> None:
        self.trace: Trace | None = None
        self.source_path: str | None = None  # what was opened (trace, session, db#id)
        self.trace_path: str | None = None  # where Save writes without asking (a trace file)
        self.bundle_run: int | None = None  # which run of a comparison bundle the trace is
        self.session: Any = None  # the transcript a replay or comparison needs
        self.comparison: Any = None  # inspector.compare.Comparison while comparing runs
        self.comparison_path: str | None = None  # where the comparison was opened from / saved to
        self._modified = False
        self._observers: list[Observer] = []

    # -- observing ---------------------------------------------------------------------------------
    def subscribe(self, observer: Observer) -> None:
        self._observers.append(observer)

    def _changed(self, what: str) -> None:
        for observer in list(self._observers):
            observer(what)

    # -- state -------------------------------------------------------------------------------------
    @property
    def modified(self) -> bool:
        return self._modified

    @modified.setter
    def modified(self, value: bool) -> None:
        if bool(value) != self._modified:
            self._modified = bool(value)
            self._changed(MODIFIED)

    def opened(self, *, trace: Trace | None = None, source: str | None = None, **paths: Any) -> None:
        """A new trace (or comparison) is shown: nothing of it is unsaved yet.

        ``paths`` sets any of ``trace_path``, ``bundle_run``, ``session``, ``comparison``,
        ``comparison_path``; ``source`` replaces the source when given.
        """
        self.trace = trace
        if source is not None:
            self.source_path = source
        for name, value in paths.items():
            if name not in ("trace_path", "bundle_run", "session", "comparison", "comparison_path"):
                raise TypeError(f"Document.opened() got an unexpected field {name!r}")
            setattr(self, name, value)
        self._modified = False
        self._changed(SOURCE)

    def saved(self, path: str, *, comparison: bool = False) -> None:
        """Written to ``path``: nothing is unsaved, and Save writes there from now on."""
        if comparison:
            if self.source_path is not None and self.source_path == self.comparison_path:
                self.source_path = path  # a saved comparison saved under a new name is now that file
            self.comparison_path = path
        else:
            self.trace_path = path
        self._modified = False
        self._changed(SOURCE)

    @property
    def name(self) -> str:
        """The source's file name ('' when nothing was opened from a file)."""
        return Path(self.source_path.split("#")[0]).name if self.source_path else ""

    # -- bookmarks (saved inside the trace) ----------------------------------------------------------
    def mark_at(self, k: int) -> Mark | None:
        trace = self.trace
        return next((m for m in trace.marks if m.event == k), None) if trace is not None else None

    def set_bookmark(self, k: int, label: str, note: str = "") -> Mark:
        """Add or update the mark at event ``k``."""
        trace = self.trace
        if trace is None:
            raise ValueError("no trace open")
        mark = self.mark_at(k)
        if mark is None:
            mark = Mark(event=k, label=label, note=note)
            trace.marks.append(mark)
            trace.marks.sort(key=lambda m: m.event)
        else:
            mark.label, mark.note = label, note
        self._marks_changed()
        return mark

    def delete_bookmark(self, k: int) -> bool:
        trace = self.trace
        if trace is None:
            return False
        before = len(trace.marks)
        trace.marks[:] = [m for m in trace.marks if m.event != k]
        if len(trace.marks) == before:
            return False
        self._marks_changed()
        return True

    def _marks_changed(self) -> None:
        self._modified = True
        self._changed(MARKS)
