"""The window settles after opening: no layout loop re-fitting the docks while nothing happens.

A ``QTabWidget`` in the Request panel used to call ``updateGeometry()`` on every resize; inside a
dock that re-laid out the main window, which moved the dock separators a few pixels, which
resized the tab widget again. For about six seconds after opening, the whole window was
re-laid out and repainted ~14 times a second while the docks drifted, and cursor steps in that
window cost 40-100 ms more. These tests pin the fix (and catch any panel that reintroduces it).
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication

from inspector.trace.model import Trace
from inspector.ui.panels.request import GeometryFirewall


class _LayoutRequests(QObject):
    """Counts LayoutRequest events delivered to one widget."""

    def __init__(self, target: QObject) -> None:
        super().__init__()
        self.target = target
        self.count = 0

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if obj is self.target and event.type() == QEvent.Type.LayoutRequest:
            self.count += 1
        return False


def _idle(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        QApplication.processEvents()
        time.sleep(0.01)


def _settled(window) -> None:  # noqa: ANN001 - MainWindow
    """Background jobs the trace started (the message lifetimes) finish, then the first layout passes."""
    end = time.perf_counter() + 60
    while window.jobs.running() and time.perf_counter() < end:
        QApplication.processEvents()
        time.sleep(0.01)
    _idle(0.3)


def _dock_sizes(window) -> dict[str, tuple[int, int]]:  # noqa: ANN001 - MainWindow
    return {name: (p.width(), p.height()) for name, p in window.panels.items()}


def test_request_tabs_resizing_never_relayouts_the_main_window(window, demo_trace: Trace) -> None:
    """What QTabWidget does on every resize must stop inside the Request panel."""
    window.tile_all()
    window.set_trace(demo_trace)
    _settled(window)
    tabs = window.panels["request"].tabs
    watch = _LayoutRequests(window)
    QApplication.instance().installEventFilter(watch)
    try:
        for width in (300, 260, 300):
            tabs.updateGeometry()
            tabs.resize(width, tabs.height())
            QApplication.processEvents()
    finally:
        QApplication.instance().removeEventFilter(watch)
    assert watch.count == 0, f"the main window re-laid out {watch.count} times"


def test_window_settles_after_opening_a_trace(window, demo_trace: Trace) -> None:
    window.tile_all()
    window.set_trace(demo_trace)
    _settled(window)
    watch = _LayoutRequests(window)
    QApplication.instance().installEventFilter(watch)
    try:
        sizes = _dock_sizes(window)
        _idle(0.5)
    finally:
        QApplication.instance().removeEventFilter(watch)
    assert watch.count == 0, f"the main window re-laid out {watch.count} times while idle"
    assert _dock_sizes(window) == sizes, "docks drifted while nothing happened"


def test_cursor_steps_do_not_relayout_the_window(window, demo_trace: Trace) -> None:
    window.tile_all()
    window.set_trace(demo_trace)
    _settled(window)
    sizes = _dock_sizes(window)
    watch = _LayoutRequests(window)
    QApplication.instance().installEventFilter(watch)
    try:
        for _ in range(40):
            window.cursor.step(1)
            QApplication.processEvents()
    finally:
        QApplication.instance().removeEventFilter(watch)
    assert watch.count == 0
    assert _dock_sizes(window) == sizes


def test_geometry_firewall_sizes_its_child_and_reports_its_hints(qapp) -> None:  # noqa: ANN001
    from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

    outer = QWidget()
    tabs = QTabWidget()
    tabs.addTab(QWidget(), "one")
    box = GeometryFirewall(tabs)
    QVBoxLayout(outer).addWidget(box)
    outer.resize(300, 200)
    outer.show()
    QApplication.processEvents()
    assert tabs.parentWidget() is box
    assert tabs.geometry() == box.rect()
    assert box.minimumSizeHint() == tabs.minimumSizeHint()
    watch = _LayoutRequests(outer)
    qapp.installEventFilter(watch)
    try:
        tabs.updateGeometry()  # what QTabWidget does on every resize
        QApplication.processEvents()
    finally:
        qapp.removeEventFilter(watch)
    assert watch.count == 0, "the child's geometry update went past the firewall"
    outer.close()
    outer.deleteLater()
