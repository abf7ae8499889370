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
from inspector.ui.geometry import GeometryFirewall


class _LayoutRequests(QObject):
    """Counts LayoutRequest events delivered to one widget, and says where the last ones came from."""

    def __init__(self, target: QObject) -> None:
        super().__init__()
        self.target = target
        self.count = 0
        self.last = time.perf_counter()
        self.recent: list[str] = []  # the layout requests anywhere just before one reached the target

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.LayoutRequest:
            chain, o = [], obj
            while o is not None and len(chain) < 4:
                chain.append(f"{type(o).__name__}:{o.objectName()}")
                o = o.parent()
            self.recent = [*self.recent[-6:], " < ".join(chain)]
            if obj is self.target:
                self.count += 1
                self.last = time.perf_counter()
        return False

    def __str__(self) -> str:
        return f"the main window re-laid out {self.count} times; the requests before: " + "; ".join(self.recent)


def _idle(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        QApplication.processEvents()
        time.sleep(0.01)


def _settled(window) -> None:  # noqa: ANN001 - MainWindow
    """Background jobs the trace started (the message lifetimes) deliver, then the window goes quiet.

    Quiet is 0.3 s without a main-window layout pass, waited for up to 10 s: a loaded machine
    delivers a result's last layout passes late, and a layout loop never goes quiet, so the
    measurement that follows still sees it.
    """
    end = time.perf_counter() + 60
    while window.jobs.running() and time.perf_counter() < end:
        QApplication.processEvents()
        time.sleep(0.01)
    watch = _LayoutRequests(window)
    QApplication.instance().installEventFilter(watch)
    try:
        end = time.perf_counter() + 10
        while time.perf_counter() - watch.last < 0.3 and time.perf_counter() < end:
            _idle(0.05)
    finally:
        QApplication.instance().removeEventFilter(watch)


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
    assert watch.count == 0, str(watch)


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
    assert watch.count == 0, f"while idle, {watch}"
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
    assert watch.count == 0, str(watch)
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
