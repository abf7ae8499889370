"""Layout that holds: the plots take what a resize adds or removes, presets and compact mode, and a
panel goes where it declares."""

from __future__ import annotations

import time
from typing import ClassVar

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from inspector.trace.model import Trace
from inspector.ui.panels.base import Panel


def _settle(seconds: float = 0.3, most: float = 3.0) -> None:
    """Let the window finish laying out (QMainWindow applies a resize over several passes, and
    the hold waits for them): until nothing moved for ``seconds``, on a busy machine too."""
    start = last_change = time.perf_counter()
    seen = None
    while time.perf_counter() - last_change < seconds and time.perf_counter() - start < most:
        QApplication.processEvents()
        time.sleep(0.01)
        now = tuple((w.width(), w.height()) for w in QApplication.topLevelWidgets() if w.isVisible())
        docks = tuple((d.width(), d.height()) for w in QApplication.topLevelWidgets()
                      for d in getattr(w, "docks", {}).values())
        if (now, docks) != seen:
            seen, last_change = (now, docks), time.perf_counter()


def _sizes(w) -> dict[str, int]:  # noqa: ANN001 - MainWindow
    d = w.docks
    return {"events": d["events"].width(), "counters": d["counters"].width(), "timeline_w": d["timeline"].width(),
            "timeline_h": d["timeline"].height(), "compression": d["compression"].height(), "diff": d["diff"].height()}


def _close(a: dict[str, int], b: dict[str, int], px: int = 8) -> bool:
    """Equal within a few pixels (Qt's dock separators and scroll-bar minimums move sizes by that)."""
    return a.keys() == b.keys() and all(abs(a[k] - b[k]) <= px for k in a)


def test_growing_the_window_widens_the_plots_not_the_event_list(window, demo_trace: Trace) -> None:
    window.resize(1280, 720)
    _settle()
    window.reset_layout()
    window.set_trace(demo_trace)
    _settle()
    small = _sizes(window)
    window.resize(1920, 1080)
    _settle()
    big = _sizes(window)
    # (within a few pixels: a dock's minimum width moves with its scroll bar)
    assert abs(big["events"] - small["events"]) <= 8 and big["counters"] == small["counters"], \
        "side docks hold their width"
    assert big["timeline_w"] - small["timeline_w"] >= 600, "the token timeline takes the extra width"
    assert big["timeline_h"] > small["timeline_h"] and big["compression"] == small["compression"]
    window.resize(1280, 720)
    _settle()
    assert _close(_sizes(window), small), "shrinking back gives the same layout"
    window.resize(1920, 1080)
    _settle()
    assert _close(_sizes(window), big), "and growing again too (grow-shrink-grow)"


def test_a_dragged_side_dock_keeps_the_width_the_user_gave_it(window, demo_trace: Trace) -> None:
    window.resize(1280, 800)
    _settle()
    window.reset_layout()
    _settle()
    d = window.docks
    # what a separator drag ends in: the docks resized while the mouse button is down
    from unittest import mock

    with mock.patch("inspector.ui.layout.QApplication.mouseButtons", return_value=Qt.MouseButton.LeftButton):
        window.resizeDocks([d["events"], d["timeline"], d["counters"]], [420, 480, 330], Qt.Orientation.Horizontal)
        _settle()
    dragged = d["events"].width()
    window.resize(1700, 900)
    _settle()
    assert abs(d["events"].width() - dragged) <= 8, "the dragged width is kept, not the default"


def test_the_small_screen_preset_is_compact(window) -> None:
    window.apply_preset("1024x640")
    _settle()
    d = window.docks
    assert window.compact and window.act["compact"].isChecked()
    assert d["counters"] in window.tabifiedDockWidgets(d["diff"]), "the counters join the detail tabs"
    assert d["bookmarks"] in window.tabifiedDockWidgets(d["events"])
    assert d["timeline"].width() >= 450, "the plots get the width the counters gave up"
    window.apply_preset("1280x800")
    _settle()
    assert not window.compact and d["counters"] not in window.tabifiedDockWidgets(d["diff"])
    assert (window.width(), window.height()) == (1280, 800)


class _RightPanel(Panel):
    panel_id = "right_probe"
    title = "Right probe"
    area = Qt.DockWidgetArea.RightDockWidgetArea


class _TabPanel(Panel):
    panel_id = "tab_probe"
    title = "Tab probe"
    area = Qt.DockWidgetArea.BottomDockWidgetArea
    tab_with: ClassVar[str | None] = "diff"


@pytest.fixture
def probe_window(make_window, monkeypatch):
    import inspector.ui.window as window_module

    monkeypatch.setattr(window_module, "PANEL_CLASSES", (*window_module.PANEL_CLASSES, _RightPanel, _TabPanel))
    return make_window()


def test_a_panel_added_to_the_list_goes_where_it_declares(probe_window) -> None:
    w = probe_window
    assert w.dockWidgetArea(w.docks["right_probe"]) == Qt.DockWidgetArea.RightDockWidgetArea
    assert w.docks["tab_probe"] in w.tabifiedDockWidgets(w.docks["diff"])
    assert w.docks["right_probe"].isVisible()


def test_in_compact_mode_too_the_event_list_stays_narrow_when_the_window_grows(window, demo_trace: Trace) -> None:
    window.resize(1024, 640)
    _settle()
    window.reset_layout()
    window.set_trace(demo_trace)
    _settle()
    assert window.compact, "a window this narrow starts compact"
    small = window.docks["events"].width()
    for size in ((1920, 1080), (1024, 640), (1920, 1080)):
        window.resize(*size)
        _settle()
        events, timeline = window.docks["events"].width(), window.docks["timeline"].width()
        assert events <= small + 40 and timeline > events, (size, events, timeline)


def test_leaving_compact_mode_leaves_no_stale_tab_bar(window) -> None:
    from PySide6.QtWidgets import QTabBar

    window.set_compact(True)
    _settle()
    window.set_compact(False)
    _settle()
    d = window.docks
    assert not window.tabifiedDockWidgets(d["events"]), "events and bookmarks are split again"
    titles = {dock.windowTitle() for dock in (d["events"], d["bookmarks"])}
    stale = [bar for bar in window.findChildren(QTabBar) if bar.isVisible()
             and {bar.tabText(i) for i in range(bar.count())} == titles]
    assert not stale, "no tab bar for a tab group that no longer exists"


def test_a_vertical_axis_label_shrinks_to_what_its_height_shows_whole(qapp) -> None:  # noqa: ANN001
    from PySide6.QtGui import QFontMetrics

    from inspector.ui import plots

    widget = plots.make_plot_widget("prompt tokens")
    axis = widget.getPlotItem().getAxis("left")
    widget.show()
    shown = {}
    for height in (400, 90, 40, 400):
        widget.resize(500, height)
        _settle(0.1, 1.0)
        label = axis.label.toPlainText().strip() if axis.label.isVisible() else None
        if label is not None:  # whatever is shown fits the axis whole
            assert QFontMetrics(axis.label.font()).horizontalAdvance(label) <= axis.geometry().height()
        shown[height] = label
    assert shown[400] == "prompt tokens"
    assert shown[90] == "tokens"
    assert shown[40] is None
    widget.close()
    widget.deleteLater()
