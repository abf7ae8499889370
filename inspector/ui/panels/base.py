"""The interface every panel implements, and the behaviour they all share.

A panel is a thin view over ``(trace, cursor)``: the window calls :meth:`Panel.set_trace` when
a trace is opened and :meth:`Panel.set_cursor` whenever the single cursor moves. A panel never
stores its own "current event"; when it wants to move the cursor (a click on a plot, a row in a
list) it emits :attr:`Panel.jump_requested` and waits to be told where the cursor went.

Panels that are off screen skip their work and catch up, from the cursor itself, when they are
shown: with eight panels that is the difference between a 5 ms and a 40 ms step. Off screen
means hidden (a closed dock) or covered: Qt 6 keeps a dock that is a background tab *visible*,
only moved out of the window, so :meth:`Panel.on_screen` asks for the part of the panel the
window actually shows, and the window calls :meth:`Panel.catch_up` when a dock's tab comes
forward (``QDockWidget.visibilityChanged``).
"""

from __future__ import annotations

from typing import ClassVar

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import QWidget

from inspector.trace.model import Trace
from inspector.ui.cursor import Cursor
from inspector.ui.jobs import JobRunner


class Panel(QWidget):
    """Base class: subclasses set the class attributes and override the ``render_*`` methods."""

    panel_id: ClassVar[str] = ""
    title: ClassVar[str] = ""
    #: where the default layout puts the dock: the window arranges the core panels itself and puts
    #: every other panel here (or beside ``tab_with``), so a panel added to PANEL_CLASSES just appears
    area: ClassVar[Qt.DockWidgetArea] = Qt.DockWidgetArea.RightDockWidgetArea
    #: the panel whose dock this one joins as a tab in the default layout (None: its own place in ``area``)
    tab_with: ClassVar[str | None] = None
    #: the window's job runner, for work too slow for a cursor step (None outside a window: done in place)
    jobs: JobRunner | None = None

    #: the panel asks the window to move the cursor to this event index
    jump_requested = Signal(int)
    #: in a comparison: the panel asks for event ``event`` of run ``run`` (a click on that run's marker)
    run_jump_requested = Signal(int, int)

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"panel_{self.panel_id}")
        # Opaque (the window colour, as the dock behind it): when a transparent child such as a
        # button or label changes, Qt then repaints from the panel down, not the dock's frame too.
        self.setAutoFillBackground(True)
        self.cursor = cursor
        self._trace: Trace | None = None
        self._stale = True
        #: the event index this panel last drew (a render record for tests, not a source of truth)
        self.rendered_cursor: int | None = None

    @property
    def trace(self) -> Trace | None:
        return self._trace

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        """What the panel's layout needs, but never below a usable 200×120."""
        return super().minimumSizeHint().expandedTo(QSize(200, 120))

    # -- called by the window -----------------------------------------------------------------
    def set_trace(self, trace: Trace | None) -> None:
        """A new trace: rebuild whatever depends on the whole trace (plots, trees)."""
        self._trace = trace
        self.rendered_cursor = None
        self.render_trace(trace)
        self._stale = True
        if self.on_screen():
            self._render_now(self.cursor.index)

    def set_cursor(self, k: int) -> None:
        """The cursor moved to event ``k``: redraw now if on screen, else when next shown."""
        if self.on_screen():
            self._render_now(k)
        else:
            self._stale = True

    def on_screen(self) -> bool:
        """Whether any of the panel shows: visible, and not in a background tab or a zero-sized dock.

        ``isVisible()`` alone is not enough: a tabified dock that is not the current tab stays
        visible in Qt 6 (it is moved out of the window), and its visible region is empty.
        """
        return self.isVisible() and not self.visibleRegion().isEmpty()

    def catch_up(self) -> None:
        """Render at the cursor if a move was skipped while the panel was off screen (its tab came forward)."""
        if self._stale and self.on_screen():
            self._render_now(self.cursor.index)

    def refresh(self) -> None:
        """Redraw at the cursor regardless of visibility (exports and screenshots)."""
        self._render_now(self.cursor.index)

    def on_marks_changed(self) -> None:
        """Bookmarks changed; panels that show them override this."""

    def x_view(self):  # noqa: ANN201 - a pyqtgraph ViewBox or None
        """The ViewBox on the request axis, if any; the window links them so panels share x."""
        return None

    # -- for subclasses -------------------------------------------------------------------------
    def render_trace(self, trace: Trace | None) -> None:
        """Rebuild trace-wide content. Called once per trace."""

    def render_cursor(self, k: int) -> None:
        """Show the state at event ``k``. Must be cheap: it runs on every cursor step."""

    def _render_now(self, k: int) -> None:
        self._stale = False
        if self._trace is not None and len(self._trace):
            k = self._trace.clamp(k)
        self.render_cursor(k)
        self.rendered_cursor = k

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self.catch_up()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        if self._stale:  # a dock squeezed to nothing and opened again: it shows once more
            self.catch_up()
