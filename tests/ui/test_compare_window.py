"""Comparison mode in the window: real runs of tiny engines over a hand-made session.

Checks lockstep (one cursor, every run at the same alignment row), one overlaid curve per run,
per-run counters with deltas to the first run, the runs diff, save/reopen, the HTML report,
``--engine A --engine B`` and the demo comparison, and that single-trace mode comes back intact.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtWidgets import QApplication

from inspector.compare import aligned_series, counters_at, diff_runs, load_comparison
from inspector.trace.model import Trace
from inspector.ui import theme
from tests.ui.compare_support import ENGINES, write_config, write_plugins, write_session


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ui_compare")
    return {
        "plugins": write_plugins(root / "plugins"),
        "session": write_session(root / "session.jsonl", turns=6, hostile="<script>alert(1)</script>"),
        "config": write_config(root / "config.yaml"),
    }


@pytest.fixture
def cwindow(make_window, files):
    """A window with the test engines available and the session open (no replay yet)."""
    window = make_window(config_path=str(files["config"]), plugin_dirs=[str(files["plugins"])], engines=ENGINES)
    return window


def open_comparison(window, files, specs=None) -> None:
    assert window.open_path(str(files["session"]), sync_replay=True, compare=specs or list(ENGINES))
    QApplication.processEvents()
    assert window.comparison is not None, window.message_bar.text()


def _curves(items: list, names: list[str]) -> list[pg.PlotDataItem]:
    return [i for i in items if isinstance(i, pg.PlotDataItem) and i.name() in names]


def test_comparison_overlays_one_curve_per_run(cwindow, files) -> None:
    w = cwindow
    open_comparison(w, files)
    comp = w.comparison
    assert [r.status for r in comp.runs] == ["ok", "ok", "ok"]
    labels = comp.labels
    assert "compare ui_tail vs ui_tail_late vs ui_never" in w.windowTitle()
    # timeline: one named curve per run, y = the run's prompt tokens at each alignment row
    timeline = w.panels["timeline"]
    curves = _curves(timeline.run_items, labels)
    assert [c.name() for c in curves] == labels
    expected = aligned_series(comp, "prompt_tokens")
    for curve, series in zip(curves, expected):
        x, y = curve.getData()
        assert np.array_equal(x, np.arange(len(series), dtype=float))
        assert np.allclose(y, np.asarray(series), equal_nan=True)
        assert curve.opts["pen"].color().name() == theme.QColor(w.compare_view.color(labels.index(curve.name()))).name()
    legend_names = [label.text for _sample, label in timeline.legend.items]
    assert legend_names[:len(labels)] == labels
    assert set(legend_names[len(labels):]) <= {"gate: no", "gate: compress"}, "then what a gate point is, once"
    # compression timeline and cache plots overlay the runs the same way
    assert [c.name() for c in _curves(w.panels["compression"].run_items, labels)] == labels
    cache = w.panels["cache"]
    assert [c.name() for c in _curves(cache.run_items, labels)] == labels
    assert len([i for i in cache.run_items if isinstance(i, pg.PlotDataItem)]) == 3 * 3  # hit %, read tok, cost
    # the runs really differ: the early compactor compressed more often than the one that never does
    counts = [len(p) for p in w.compare_view.compressions()]
    assert counts[0] > counts[1] >= counts[2] == 0


def test_lockstep_cursor_counters_and_cache_strips(cwindow, files) -> None:
    w = cwindow
    open_comparison(w, files)
    view = w.compare_view
    al = w.comparison.alignment
    checked = 0
    for row in range(0, len(al.rows), 2):
        k = al.event_for(view.primary, row)
        w.cursor.set(k)
        QApplication.processEvents()
        assert view.row_at(w.cursor.index) == row
        events = w.row_events()
        for run in view.runs:
            assert events[run] == al.event_for(run, row) if run != view.primary else events[run] == k
        # every plot's cursor line sits on the row
        assert w.panels["timeline"].cursor_line.line.value() == row
        assert w.panels["compression"].cursor_line.line.value() == row
        # cache: each run's strip shows that run's request at this row
        cache = w.panels["cache"]
        cache.refresh()
        for run, box in cache.run_views.items():
            idx = al.index[row][run]
            if idx is not None:
                assert box.header.text().startswith(f"Request #{idx} ")
        # counters: each run's value, and its delta to run 1
        counters = w.panels["counters"]
        counters.refresh()
        states = counters_at(w.comparison, row, at=(view.primary, k))
        for run in view.runs:
            value, delta = counters.run_cells[(run, "last_prompt_tokens")]
            v = states[run]["last_prompt_tokens"]
            assert value.text() == (f"{v} (reset)" if v < 0 else f"{v:,}")
            d = states[run]["delta"]["last_prompt_tokens"]
            if run != view.runs[0] and d is not None and v >= 0:
                assert delta.text() == "Δ " + theme.fmt_delta(d)
        checked += 1
    assert checked >= 5
    # keyboard-style stepping moves every run with the primary
    w.cursor.end()
    assert view.row_at(w.cursor.index) == len(al.rows) - 1


def test_a_comparison_fits_a_small_laptop_screen_and_keeps_the_status_readout_inside(cwindow, files) -> None:
    w = cwindow
    open_comparison(w, files)
    w.resize(1024, 640)
    w.reset_layout()
    QApplication.processEvents()
    hint = w.minimumSizeHint()
    assert hint.width() <= 1024 and hint.height() <= 640, hint
    assert w.size().width() == 1024 and w.size().height() == 640
    label = w.position_label
    assert label.isVisible() and label.geometry().right() <= w.statusBar().width()
    # every run's column is still on screen in the counters (the dock scrolls vertically only)
    counters = w.panels["counters"]
    for (run, _name), (value, _delta) in counters.run_cells.items():
        right = value.mapTo(counters, value.rect().topRight()).x()
        assert right <= counters.parentWidget().width(), run


def test_runs_panel_table_and_runs_diff(cwindow, files) -> None:
    w = cwindow
    open_comparison(w, files)
    runs = w.runs_panel
    w.tool_docks["runs"].raise_()
    QApplication.processEvents()
    table = runs.summary
    assert table is not None and table.labels == w.comparison.labels
    # the best value of each ranked row is marked (bold + star) and only there
    for r, row in enumerate(table.rows):
        for col in range(len(table.labels)):
            text = runs.table.item(r, col).text()
            assert text.endswith("★") == bool(row.best[col]), (row.key, col, text)
    assert ("prompt tokens sent", "ui_tail") in runs.best_cells()
    # runs diff at a row after the early engine compacted: A = ui_tail, B = ui_never
    al = w.comparison.alignment
    row = len(al.rows) - 1
    w.cursor.set(al.event_for(w.compare_view.primary, row))
    runs.a_combo.setCurrentIndex(0)
    runs.b_combo.setCurrentIndex(2)
    runs.refresh()
    expected = diff_runs(w.comparison, row, 0, 2)
    assert expected is not None and not expected.identical
    shown = runs.diff_model.diff
    assert shown is not None
    assert [(op.kind, op.before_range, op.after_range) for op in shown.ops] == \
        [(op.kind, op.before_range, op.after_range) for op in expected.ops]
    header = runs.diff_header.text()
    assert "ui_tail request" in header and "ui_never request" in header
    assert "tool schemas" not in header
    other = al.request(2, row)
    # an engine that adds a tool (a new dict: a request's figures read as one, held packed)
    other.tokens = {**other.tokens, "tools": int(other.tokens.get("tools", 0)) + 192}
    runs.b_combo.setCurrentIndex(1)
    runs.b_combo.setCurrentIndex(2)  # the user picks the pair again
    assert "tool schemas differ" in runs.diff_header.text()  # not in the message diff, but said
    # the diff panel lists every run side by side and details the picked one
    diff = w.panels["diff"]
    diff.refresh()
    assert diff.runs_table.rowCount() == 3
    assert all(diff.runs_table.item(i, 2).text() for i in range(3))
    diff.run_combo.setCurrentIndex(2)
    assert diff.header.text().startswith("[ui_never]")


def test_primary_run_switch_keeps_the_row(cwindow, files) -> None:
    w = cwindow
    open_comparison(w, files)
    al = w.comparison.alignment
    row = len(al.rows) // 2
    w.cursor.set(al.event_for(0, row))
    w.runs_panel.primary_combo.setCurrentIndex(2)  # the user picks ui_never
    assert w.compare_view.primary == 2
    assert w.trace is w.comparison.traces[2]
    assert w.compare_view.row_at(w.cursor.index) == row
    assert w.panels["events"].trace is w.comparison.traces[2]
    # a click on a plot moves the cursor to that row of the (new) primary run
    w.panels["timeline"]._clicked(3.2)
    assert w.compare_view.row_at(w.cursor.index) == 3


def test_primary_run_switch_keeps_the_hook_within_the_row(cwindow, files) -> None:
    w = cwindow
    open_comparison(w, files)
    al, trace = w.comparison.alignment, w.comparison.traces[0]
    row = len(al.rows) // 2
    request = al.event_for(0, row)
    response = next(j for j in range(request + 1, len(trace)) if trace.events[j].kind == "update_from_response")
    w.cursor.set(response)
    w.runs_panel.primary_combo.setCurrentIndex(1)
    k = w.cursor.index
    assert w.compare_view.row_at(k) == row
    assert w.trace.events[k].kind == "update_from_response", "not moved back to the row's request marker"


def test_save_reopen_and_html_report(cwindow, make_window, files, tmp_path: Path) -> None:
    w = cwindow
    open_comparison(w, files)
    bundle = tmp_path / "cmp.comparison.json.gz"
    w.ask_comparison_path = lambda suggestion: str(bundle)
    w.save_comparison_dialog()
    assert bundle.exists() and w.comparison_path == str(bundle)
    saved = load_comparison(bundle)
    assert saved.labels == w.comparison.labels
    report = tmp_path / "report.html"
    w.ask_html_path = lambda suggestion: str(report)
    w.export_html_dialog()
    html = report.read_text(encoding="utf-8")
    assert all(label in html for label in w.comparison.labels)
    assert "<script" not in html.lower() and "&lt;script&gt;" in html  # transcript text escaped, never active
    other = make_window(config_path=str(files["config"]), plugin_dirs=[str(files["plugins"])])
    assert other.open_path(str(bundle))
    assert other.comparison is not None and other.comparison.labels == w.comparison.labels
    assert len(other.comparison.alignment.rows) == len(w.comparison.alignment.rows)
    assert [len(p) for p in other.compare_view.compressions()] == [len(p) for p in w.compare_view.compressions()]
    assert other.act["save_comparison"].isEnabled()
    moved = tmp_path / "renamed.comparison.json.gz"
    other.ask_comparison_path = lambda suggestion: str(moved)
    other.save_comparison_dialog()
    assert "renamed.comparison.json.gz" in other.windowTitle(), "the title names the file it was saved as"
    other.ask_comparison_path = lambda suggestion: pytest.fail("Ctrl+S after a save asks for no path")
    assert other.save() and other.comparison_path == str(moved)


def test_saving_in_a_comparison_saves_every_run(cwindow, files, tmp_path: Path) -> None:
    w = cwindow
    open_comparison(w, files)
    asked = []
    w.ask_save_path = lambda suggestion: asked.append("trace") or None
    w.ask_comparison_path = lambda suggestion: asked.append("comparison") or str(tmp_path / "all.comparison.json.gz")
    assert w.save()
    assert asked == ["comparison"] and (tmp_path / "all.comparison.json.gz").exists()


def test_single_trace_mode_comes_back(cwindow, files, demo_trace: Trace) -> None:
    w = cwindow
    open_comparison(w, files)
    w.tool_docks["runs"].raise_()
    QApplication.processEvents()
    w.set_trace(demo_trace)
    QApplication.processEvents()
    assert not w.docks["diff"].visibleRegion().isEmpty()  # the empty Runs tab gives way to the diff
    assert w.comparison is None and w.compare_view is None
    assert all(getattr(p, "compare", None) is None for p in w.trace_panels())
    assert w.panels["timeline"].run_items == [] and w.panels["timeline"].curves
    assert w.panels["counters"].single_box.isVisible() and not w.panels["counters"].compare_box.isVisible()
    assert w.panels["cache"].run_views == {}
    assert not w.act["save_comparison"].isEnabled()
    assert w.runs_panel.notice.isVisible()


def test_compare_dialog_runs_on_a_worker_with_progress(qtbot, cwindow, files) -> None:
    w = cwindow
    assert w.open_path(str(files["session"]), sync_replay=True)
    assert w.comparison is None
    asked: list[list[str]] = []

    def answer(engines: list[str]) -> list[str]:
        asked.append(engines)
        return ["ui_tail", "ui_never:compression.threshold=0.6"]

    w.ask_compare_specs = answer
    progress: list[tuple[int, int]] = []
    w.compare_runner.progress.connect(lambda d, t, _text: progress.append((d, t)))
    w.compare_dialog()
    assert w.compare_runner.running
    qtbot.waitUntil(lambda: not w.compare_runner.running, timeout=30_000)
    QApplication.processEvents()
    assert asked and "ui_tail" in asked[0]
    assert w.comparison is not None and w.comparison.labels == ["ui_tail", "ui_never[threshold=0.6]"]
    assert progress and progress[-1][0] == progress[-1][1]
    assert "done" in w.replay_bar.progress.format()


def test_compare_rejects_bad_specs_and_needs_a_session(cwindow, files) -> None:
    w = cwindow
    assert not w.start_comparison(["ui_tail", "ui_never"])  # no session yet
    assert "Open a session first" in w.message_bar.text()
    w.open_path(str(files["session"]), sync_replay=True)
    assert not w.start_comparison(["ui_tail"])
    assert "2 to 4 runs" in w.message_bar.text()
    assert not w.start_comparison(["ui_tail", "ui_never:nonsense"])
    assert "key=value" in w.message_bar.text()


def test_a_failed_run_is_reported_and_the_others_compared(cwindow, files) -> None:
    w = cwindow
    open_comparison(w, files, ["ui_tail", "ui_broken", "ui_never"])
    assert w.compare_view.runs == [0, 2]
    assert "ui_broken: load_failed" in w.message_bar.text()
    assert _curves(w.panels["timeline"].run_items, w.comparison.labels)[-1].name() == "ui_never"
    status = w.runs_panel.table.item(len(w.runs_panel.summary.rows), 1).text()
    assert status.startswith("load_failed")


def _args(**kw) -> argparse.Namespace:
    base = dict(file=None, engine=[], config=None, plugin_dir=[], screenshot=None, cursor=None, panel=None,
                size="1200x800")
    base.update(kw)
    return argparse.Namespace(**base)


def test_engine_options_open_a_comparison(monkeypatch, files, tmp_path: Path, qapp) -> None:
    from inspector.ui import app as app_mod
    from inspector.ui.window import MainWindow

    seen: list = []
    real_grab = MainWindow.grab_window

    def grab(self, path: str) -> bool:
        seen.append((self.comparison.labels if self.comparison is not None else None, self.windowTitle()))
        return real_grab(self, path)

    monkeypatch.setattr(MainWindow, "grab_window", grab)
    out = tmp_path / "cmp.png"
    code = app_mod.run_gui(_args(file=str(files["session"]), engine=["ui_tail", "ui_never"],
                                 plugin_dir=[str(files["plugins"])], config=str(files["config"]),
                                 screenshot=str(out)))
    assert code == 0 and out.exists()
    assert seen and seen[0][0] == ["ui_tail", "ui_never"]


def test_demo_is_a_comparison_of_the_configured_engines(monkeypatch, files, tmp_path: Path, qapp) -> None:
    from inspector.ui import app as app_mod
    from inspector.ui.window import MainWindow

    assert app_mod.demo_engines(str(app_mod.PROJECT_CONFIG)) == ["compressor", "lcm", "recall"]
    # the real demo engines over a short session (the bundled one takes seconds per engine)
    short = write_session(tmp_path / "short_demo.jsonl", turns=3)
    monkeypatch.setattr(app_mod, "DEMO_SESSION", short)
    seen: list = []
    real_grab = MainWindow.grab_window

    def grab(self, path: str) -> bool:
        seen.append([r.status for r in self.comparison.runs] if self.comparison is not None else None)
        seen.append(self.comparison.labels if self.comparison is not None else None)
        return real_grab(self, path)

    monkeypatch.setattr(MainWindow, "grab_window", grab)
    out = tmp_path / "demo.png"
    assert app_mod.run_gui(_args(screenshot=str(out))) == 0
    assert seen == [["ok", "ok", "ok"], ["compressor", "lcm", "recall"]]


def test_demo_window_shows_before_the_comparison_finishes(qtbot, make_window, tmp_path: Path) -> None:
    """`make run`: the window is up at once; the three replays run on the worker with progress."""
    from inspector.ui.app import PROJECT_CONFIG, demo_engines

    short = write_session(tmp_path / "short.jsonl", turns=3)
    w = make_window(config_path=str(PROJECT_CONFIG))
    assert w.isVisible()
    assert w.open_path(str(short), compare=demo_engines(str(PROJECT_CONFIG)))
    assert w.compare_runner.running and w.comparison is None  # returned before the replays ran
    qtbot.waitUntil(lambda: w.comparison is not None, timeout=60_000)
    assert w.comparison.labels == ["compressor", "lcm", "recall"]


def test_cancel_keeps_partial_runs_or_reports(qtbot, cwindow, files) -> None:
    w = cwindow
    w.open_path(str(files["session"]), sync_replay=True)
    assert w.start_comparison(list(ENGINES))
    w.replay_bar.cancel_button.click()
    qtbot.waitUntil(lambda: not w.compare_runner.running, timeout=30_000)
    text = w.message_bar.text().lower()
    # Whatever the timing, the user sees what is left and why: the partial runs (a comparison, or
    # the single trace when only one run got anywhere) with a "cancelled" message, or all runs if
    # they finished before the cancel landed, or a failure message when no run produced a trace.
    if w.compare_runner.cancelled:
        assert "cancelled" in text or "failed" in text
        assert w.comparison is not None or w.trace is not None or "failed" in text
    else:
        assert w.comparison is not None


def test_compare_dialog_builds_specs_and_validates(qapp) -> None:
    from inspector.ui.compare import NONE_ENTRY, CompareDialog

    dialog = CompareDialog(["compressor", "lcm", "recall"], ["compressor", "lcm:compression.threshold=0.6"])
    try:
        assert dialog.specs() == ["compressor", "lcm:compression.threshold=0.6"]
        dialog.engine_boxes[2].setCurrentText("recall")
        assert dialog.specs()[-1] == "recall"
        dialog.engine_boxes[1].setCurrentText(NONE_ENTRY)
        dialog.engine_boxes[2].setCurrentText(NONE_ENTRY)
        dialog._accept()
        assert "2 to 4 runs" in dialog.error.text() and dialog.result() == 0
        dialog.engine_boxes[1].setCurrentText("lcm")
        dialog.override_edits[1].setText("not a pair")
        dialog._accept()
        assert "key=value" in dialog.error.text()
    finally:
        dialog.deleteLater()
