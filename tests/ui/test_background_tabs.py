"""Panels in a background dock tab skip cursor moves and catch up when their tab comes forward.

Qt 6 keeps a tabified dock that is not the current tab ``isVisible()`` (it only moves it out of
the window), so "hidden" has to mean "nothing of it on screen". The tiled layout, the one the UI
benchmark measures, must have no background tabs at all.
"""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from inspector.trace.model import Trace
from inspector.ui.explain import explain
from inspector.ui.panels.decision import lines_text


def _on_screen(window) -> set[str]:  # noqa: ANN001 - MainWindow
    return {name for name, panel in window.panels.items() if panel.isVisible() and not panel.visibleRegion().isEmpty()}


def test_a_panel_behind_another_tab_does_not_render_on_a_cursor_move(window, demo_trace: Trace) -> None:
    window.reset_layout()  # the default: Decision is a tab behind Diff
    window.set_trace(demo_trace)
    QApplication.processEvents()
    assert window.tabifiedDockWidgets(window.docks["decision"]), "the default layout tabs Decision"
    decision = window.panels["decision"]
    assert decision.isVisible() and not decision.on_screen(), "a background tab: visible to Qt, yet not on screen"
    before = decision.rendered_cursor
    before_text = decision.text()
    k = len(demo_trace) // 2
    window.cursor.set(k)
    QApplication.processEvents()
    assert window.panels["diff"].rendered_cursor == k, "the tab in front follows the cursor"
    assert decision.rendered_cursor == before != k, "the tab behind it does no work"
    assert decision.text() == before_text


def test_bringing_a_background_tab_forward_shows_the_state_at_the_cursor(window, demo_trace: Trace) -> None:
    window.reset_layout()
    window.set_trace(demo_trace)
    QApplication.processEvents()
    k = next(i for i in range(len(demo_trace) // 2, len(demo_trace)) if demo_trace.events[i].kind == "should_compress")
    window.cursor.set(k)
    QApplication.processEvents()
    decision = window.panels["decision"]
    assert decision.rendered_cursor != k
    window.docks["decision"].raise_()
    QApplication.processEvents()
    assert decision.on_screen()
    assert decision.rendered_cursor == k
    assert decision.text() == lines_text(explain(demo_trace, k)), "it shows the hook at the cursor"
    assert not window.panels["diff"].on_screen(), "and the tab it covered now waits in turn"
    window.cursor.set(k + 1)
    QApplication.processEvents()
    assert window.panels["diff"].rendered_cursor == k
    window.docks["diff"].raise_()
    QApplication.processEvents()
    assert window.panels["diff"].rendered_cursor == k + 1


def test_tiling_puts_every_panel_on_screen(window, demo_trace: Trace) -> None:
    window.resize(1600, 1000)
    window.tile_all()
    window.set_trace(demo_trace)
    QApplication.processEvents()
    assert _on_screen(window) == set(window.panels), "tiled: no panel is a background tab"
    panel_docks = set(window.docks.values())
    assert not any(panel_docks & set(window.tabifiedDockWidgets(dock)) for dock in panel_docks), "no panel tabs"
    k = len(demo_trace) // 2
    window.cursor.set(k)
    QApplication.processEvents()
    assert {name: panel.rendered_cursor for name, panel in window.panels.items()} == dict.fromkeys(window.panels, k)


def test_resetting_after_tiling_tabs_the_panels_again(window, demo_trace: Trace) -> None:
    window.tile_all()
    window.reset_layout()
    window.set_trace(demo_trace)
    QApplication.processEvents()
    assert {"decision", "context", "lifetime", "run_info"} <= set(window.panels) - _on_screen(window)


def test_tiling_a_window_too_small_for_every_panel_keeps_the_declared_tabs(window, demo_trace: Trace) -> None:
    window.resize(1024, 640)
    QApplication.processEvents()
    window.tile_all()
    window.set_trace(demo_trace)
    QApplication.processEvents()
    assert window.height() == 640, "the window does not grow past its height to make room"
    assert window.tabifiedDockWidgets(window.docks["decision"]), "Decision is a tab again, as it declares"
    assert {"diff", "request", "cache", "engine", "counters"} <= _on_screen(window), "the tiled panels still show"
