"""A filling header section: the widths a Stretch section would have, without its repaints."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import QApplication, QHeaderView, QTreeView

from inspector.trace.model import Trace
from inspector.ui.fill_section import FillSection
from inspector.ui.panels.events import EventsPanel


def _tree(fill: bool) -> QTreeView:
    view = QTreeView()
    view.setModel(QStandardItemModel(3, 4, view))
    header = view.header()
    header.setStretchLastSection(False)
    for col, width in ((1, 60), (2, 56), (3, 40)):
        header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(col, width)
    if fill:
        FillSection(header, 0)
    else:
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    view.resize(400, 200)
    view.show()
    return view


def _sizes(view: QTreeView) -> list[int]:
    QApplication.processEvents()
    header = view.header()
    return [header.sectionSize(c) for c in range(header.count())]


def test_the_section_is_as_wide_as_a_stretch_section_would_be(qapp) -> None:  # noqa: ANN001
    filled, stretched = _tree(True), _tree(False)
    try:
        assert _sizes(filled) == _sizes(stretched)
        for width in (640, 250, 120, 60, 400):  # wider, narrower, then no room left
            filled.resize(width, 200)
            stretched.resize(width, 200)
            assert _sizes(filled) == _sizes(stretched), f"at {width} px"
        for view in (filled, stretched):  # the user widens a column
            view.header().resizeSection(1, 130)
        assert _sizes(filled) == _sizes(stretched)
        fill = filled.header().findChild(FillSection)
        for view in (filled, stretched):  # hiding signals nothing: the one who hides refits
            view.header().hideSection(2)
        fill.fit()
        assert _sizes(filled)[0] == _sizes(stretched)[0]
        for view in (filled, stretched):
            view.header().showSection(2)
        fill.fit()
        assert _sizes(filled) == _sizes(stretched)
    finally:
        for view in (filled, stretched):
            view.close()
            view.deleteLater()


class _Paints(QObject):
    def __init__(self, watched: QObject) -> None:
        super().__init__()
        self.watched, self.count = watched, 0

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if obj is self.watched and event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def test_expanding_a_turn_leaves_the_event_list_header_alone(shown, demo_trace: Trace) -> None:  # noqa: ANN001
    cursor, make = shown
    panel = make(EventsPanel, demo_trace, 500, 600)
    view, model = panel.view, panel.model
    header = view.header()
    assert header.sectionSize(0) == header.viewport().width() - header.sectionSize(1) - header.sectionSize(2)
    paints = _Paints(header.viewport())
    QApplication.instance().installEventFilter(paints)
    try:
        turn = model.index_for_event(model.top_level()[-2])
        assert not view.isExpanded(turn)
        view.expand(turn)
        QApplication.processEvents()
        assert view.isExpanded(turn) and paints.count == 0
    finally:
        QApplication.instance().removeEventFilter(paints)
