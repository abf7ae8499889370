"""A container that keeps a child's geometry updates from re-laying out the main window."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QWidget


class GeometryFirewall(QWidget):
    """Holds one child sized to its own rectangle, without a layout, so the child's geometry updates stop here.

    ``QTabWidget`` calls ``updateGeometry()`` on every resize. Inside a dock that invalidates
    every layout up to the main window, whose re-fit moves the dock separators a few pixels,
    which resizes the tab widget again: after opening a trace the whole window was re-laid out
    and repainted ~14 times a second for about six seconds while the docks drifted, and cursor
    steps in that window cost 40-100 ms more. ``setTabText`` does the same (the Lifetime panel's
    "Lost facts (N)" re-laid out the main window when the analysis arrived). A widget with no
    layout swallows the request.
    """

    def __init__(self, child: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._child = child
        child.setParent(self)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return self._child.sizeHint()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return self._child.minimumSizeHint()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._child.setGeometry(self.rect())
