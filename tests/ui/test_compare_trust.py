"""Comparisons you can trust: navigation visits every run, a marker of any run selects that run's
event, and a run the host had to repair gets health rows and no best value."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from tests.engine_sources import DROPS_TOOLS_ENGINE
from tests.ui.compare_support import ENGINES, write_config, write_plugins, write_session


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ui_trust")
    plugins = write_plugins(root / "plugins")
    extra = plugins / "context_engine" / "ui_drops_tools"
    extra.mkdir(parents=True, exist_ok=True)
    (extra / "__init__.py").write_text(textwrap.dedent(DROPS_TOOLS_ENGINE.format(name="ui_drops_tools")),
                                      encoding="utf-8")
    return {"plugins": plugins, "session": write_session(root / "session.jsonl", turns=6),
            "config": write_config(root / "config.yaml")}


def _open(make_window, files, specs: list[str]):
    w = make_window(config_path=str(files["config"]), plugin_dirs=[str(files["plugins"])], engines=[*ENGINES, "ui_drops_tools"])
    assert w.open_path(str(files["session"]), sync_replay=True, compare=specs)
    QApplication.processEvents()
    assert w.comparison is not None, w.message_bar.text()
    return w


def _press(w, key, mod=Qt.KeyboardModifier.NoModifier) -> None:
    w.activateWindow()
    w.panels["events"].view.setFocus()
    QTest.keyClick(w.panels["events"].view, key, mod)
    QApplication.processEvents()


def test_next_compression_visits_every_run_in_row_order(make_window, files) -> None:
    w = _open(make_window, files, list(ENGINES))
    al = w.comparison.alignment
    expected = sorted((al.event_x(run, e), run, e) for run, t in enumerate(w.comparison.traces)
                      for e in t.compress_events)
    assert {run for _x, run, _e in expected} == {0, 1}, "both tail engines compress in this session"
    w.cursor.set(0)
    visited = []
    for _ in expected:
        _press(w, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
        visited.append((w.compare_view.primary, w.cursor.index))
    assert visited == [(run, e) for _x, run, e in expected], "Ctrl+→ follows every run, not only the primary"
    assert w.trace is w.comparison.traces[visited[-1][0]], "the cursor follows the run it landed in"
    _press(w, Qt.Key.Key_Left, Qt.KeyboardModifier.ControlModifier)
    assert (w.compare_view.primary, w.cursor.index) == visited[-2]
    assert w.runs_panel.primary_combo.currentData() == w.compare_view.primary


def test_a_click_on_another_runs_marker_selects_that_runs_compress(make_window, files) -> None:
    w = _open(make_window, files, list(ENGINES))
    assert w.compare_view.primary == 0
    al = w.comparison.alignment
    late = w.comparison.traces[1].compress_events[-1]
    x = al.event_x(1, late)
    compression = w.panels["compression"]
    level = compression._run_afters[1][-1]  # the height of run 1's dot on its staircase
    w.set_primary_run(2)
    compression._clicked(x + 0.1, level)
    assert (w.compare_view.primary, w.cursor.index) == (1, late), "the dot clicked, not the primary's request"
    timeline = w.panels["timeline"]
    w.set_primary_run(2)
    row = int(x)
    timeline._clicked(x + 0.1, float(timeline._run_prompt[1][row]))
    assert (w.compare_view.primary, w.cursor.index) == (1, late), "the marker under run 1's curve"


def test_a_run_the_host_repaired_gets_health_rows_and_no_star(make_window, files) -> None:
    w = _open(make_window, files, ["ui_tail", "ui_drops_tools", "ui_never"])
    runs = w.runs_panel
    w.tool_docks["runs"].raise_()
    QApplication.processEvents()
    health = runs.health
    assert health[1]["host_repairs"] > 0 and health[1]["orphan_fixes"] > 0
    assert health[0]["host_repairs"] == 0 and health[2]["host_repairs"] == 0
    heads = [runs.table.verticalHeaderItem(r).text() for r in range(runs.table.rowCount())]
    assert {"host repairs", "orphan fixes", "no-progress compresses", "overflows"} <= set(heads)
    repairs_row = heads.index("host repairs")
    assert runs.table.item(repairs_row, 1).text() == f"{health[1]['host_repairs']:,}"
    assert not [cell for cell in runs.best_cells() if cell[1] == "ui_drops_tools"], \
        "a run that needed repairs is never the best at anything"
    assert ("prompt tokens sent", "ui_tail") in runs.best_cells(), "the cheapest healthy run is"


def test_a_no_progress_compress_does_not_step_the_compressions_axis() -> None:
    from inspector.ui.derive import committed_counts

    steps, after = committed_counts([(2.5, True), (4.5, False), (5.5, False), (7.5, True)], 10)
    assert after == [1.0, 1.0, 1.0, 2.0], "calls that kept nothing sit on the count they left unchanged"
    assert list(steps) == [0, 0, 0, 1, 1, 1, 1, 1, 2, 2]
