"""A header section that takes the width the other sections leave, as ``QHeaderView.Stretch`` does,
without the header re-fitting (and repainting) itself each time its view lays out rows.

A header with a Stretch section recomputes every section and repaints whenever its view updates
its geometry, which a tree does on every expansion: in the event list a random jump expands the
target's turn, so the column header repainted (about 0.2 ms) on most jumps though nothing in it
changed. Here the section is Fixed and given the same width Stretch would give it (the header's
width less the other visible sections, each within the header's minimum and maximum section
size), whenever that room changes: the header is resized, another section is resized, or the
columns change. Hiding or showing a section signals nothing, so whoever does it calls ``fit()``
(the event list never does). When there is no room left the section keeps its width, as a Stretch
section does.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QHeaderView


class FillSection(QObject):
    """Keeps ``section`` of ``header`` as wide as a lone Stretch section would be (owned by the header)."""

    def __init__(self, header: QHeaderView, section: int = 0) -> None:
        super().__init__(header)
        self._header = header
        self._section = section
        header.setSectionResizeMode(section, QHeaderView.ResizeMode.Fixed)
        header.viewport().installEventFilter(self)
        header.sectionResized.connect(self._resized)
        header.sectionCountChanged.connect(lambda *_: self.fit())
        self.fit()

    def fit(self) -> None:
        """Give the section the room the other sections leave (nothing when they leave none)."""
        header = self._header
        if self._section >= header.count():
            return
        least, most = header.minimumSectionSize(), header.maximumSectionSize()
        room = header.viewport().width()
        for logical in range(header.count()):
            if logical != self._section and not header.isSectionHidden(logical):
                room -= min(max(header.sectionSize(logical), least), most)
        if room > 0:
            width = max(room, least)
            if header.sectionSize(self._section) != width:
                header.resizeSection(self._section, width)

    def _resized(self, logical: int, _old: int, _new: int) -> None:
        if logical != self._section:
            self.fit()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Resize:
            self.fit()
        return False
