"""The window: keyboard navigation, the event list, bookmarks, open/save, replay, screenshots."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QScrollArea

from inspector.trace import model as tm
from inspector.trace.model import Trace
from inspector.ui.event_model import QUICK_CACHE_MISSES, QUICK_COMPRESSIONS, QUICK_FAULTS
from inspector.ui.synthetic import build_trace

ROOT = Path(__file__).resolve().parents[2]


def key(window, k: Qt.Key, mod: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier) -> None:
    """A real key press delivered to the focused event list, as a user would type it."""
    window.activateWindow()
    window.panels["events"].view.setFocus()
    QTest.keyClick(window.panels["events"].view, k, mod)
    QApplication.processEvents()


def test_window_opens_empty_with_every_panel_docked(window) -> None:
    assert set(window.panels) == {"events", "timeline", "compression", "counters", "diff", "request", "cache", "engine",
                                  "bookmarks", "decision", "context", "lifetime", "run_info"}
    for name, dock in window.docks.items():
        inner = dock.widget().widget() if isinstance(dock.widget(), QScrollArea) else dock.widget()
        assert inner is window.panels[name]
    assert window.trace is None
    assert not window.act["next"].isEnabled()


def test_keyboard_navigation(window, faulty_trace: Trace) -> None:
    t = faulty_trace
    window.set_trace(t)
    assert window.cursor.index == 0
    key(window, Qt.Key.Key_Right)
    assert window.cursor.index == 1
    key(window, Qt.Key.Key_Left)
    assert window.cursor.index == 0
    key(window, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)
    first_turn = t.next_turn(0)
    assert window.cursor.index == first_turn
    key(window, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)
    assert window.cursor.index == t.next_turn(first_turn)
    key(window, Qt.Key.Key_Left, Qt.KeyboardModifier.ShiftModifier)
    assert window.cursor.index == first_turn
    key(window, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    assert window.cursor.index == t.compress_events[0]
    key(window, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    assert window.cursor.index == t.compress_events[1]
    key(window, Qt.Key.Key_Left, Qt.KeyboardModifier.ControlModifier)
    assert window.cursor.index == t.compress_events[0]
    here = window.cursor.index
    key(window, Qt.Key.Key_F3)
    assert window.cursor.index == t.next_cache_miss(here)
    here = window.cursor.index
    key(window, Qt.Key.Key_F4)
    assert window.cursor.index == t.next_fault(here)
    assert t.events[window.cursor.index].fault is not None
    fault = window.cursor.index
    key(window, Qt.Key.Key_F3, Qt.KeyboardModifier.ShiftModifier)
    assert window.cursor.index == t.prev_cache_miss(fault) < fault
    key(window, Qt.Key.Key_End)
    key(window, Qt.Key.Key_F4, Qt.KeyboardModifier.ShiftModifier)
    assert window.cursor.index == t.fault_events[-1], "Shift+F4 goes back to the last fault"
    key(window, Qt.Key.Key_End)
    assert window.cursor.index == len(t) - 1
    key(window, Qt.Key.Key_Right)
    assert window.cursor.index == len(t) - 1, "stepping past the end stays at the end"
    key(window, Qt.Key.Key_Home)
    assert window.cursor.index == 0
    # every panel on screen drew the final position (background tabs catch up when brought forward)
    for panel in window.panels.values():
        if panel.on_screen():
            assert panel.rendered_cursor == 0


def test_go_to_turn_and_status_bar(window, demo_trace: Trace) -> None:
    window.set_trace(demo_trace)
    window.ask_turn = lambda max_turn, current: 5
    key(window, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier)
    assert window.cursor.index == demo_trace.turn_event(5)
    assert "turn 5" in window.position_label.text()


def test_event_list_selection_moves_the_cursor_and_follows_it(window, demo_trace: Trace) -> None:
    window.set_trace(demo_trace)
    events = window.panels["events"]
    k = demo_trace.requests[10].event
    window.cursor.set(k)
    assert events.selected_event() == k, "the cursor selects (and reveals) its row"
    target = demo_trace.compress_events[0]
    events.view.setCurrentIndex(events.model.index_for_event(target))
    assert window.cursor.index == target, "selecting a row moves the cursor"


def test_event_tree_places_every_event_once(demo_trace: Trace) -> None:
    from inspector.ui.event_model import EventTreeModel

    model = EventTreeModel()
    model.set_trace(demo_trace)
    seen: list[int] = []

    def walk(parent) -> None:
        for row in range(model.rowCount(parent)):
            idx = model.index(row, 0, parent)
            seen.append(model.event_of(idx))
            assert model.parent(idx) == parent
            walk(idx)

    from PySide6.QtCore import QModelIndex

    walk(QModelIndex())
    assert sorted(seen) == list(range(len(demo_trace)))
    for k in (0, 7, len(demo_trace) - 1):
        assert model.event_of(model.index_for_event(k)) == k
    # select_context prepares request r, so it is shown under r's node
    sel = next(ev for ev in demo_trace.events if ev.kind == tm.EV_SELECT)
    parent = model.parent(model.index_for_event(sel.index))
    assert model.event_of(parent) == demo_trace.requests[sel.request].event


def test_the_compressions_filter_skips_prunes_that_pruned_nothing(window) -> None:
    trace = build_trace(30, seed=5)
    idle = trace.add_event(tm.Event(index=0, kind=tm.EV_PRUNE, result={"count": 0}))
    useful = trace.add_event(tm.Event(index=0, kind=tm.EV_PRUNE, result={"count": 3}))
    trace.finish()
    window.set_trace(trace)
    events = window.panels["events"]
    events.set_quick_filter(QUICK_COMPRESSIONS, True)
    shown = [events.model.event_of(events.model.index(r, 0)) for r in range(events.model.rowCount())]
    assert useful.index in shown and idle.index not in shown
    assert set(trace.compress_events) <= set(shown)


def test_navigation_keys_in_a_table_stay_in_the_table(window, demo_trace: Trace) -> None:
    window.set_trace(demo_trace)
    window.cursor.set(40)
    window.docks["diff"].raise_()
    table = window.panels["diff"].table
    window.activateWindow()
    table.setFocus()
    QApplication.processEvents()
    for k in (Qt.Key.Key_End, Qt.Key.Key_Home, Qt.Key.Key_Right):
        QTest.keyClick(table, k)
        QApplication.processEvents()
    assert window.cursor.index == 40  # the table moved, the trace cursor did not
    key(window, Qt.Key.Key_End)  # in the event list End is still "last event"
    assert window.cursor.index == len(demo_trace) - 1


def test_reset_zoom_brings_every_request_back(window, demo_trace: Trace) -> None:
    window.set_trace(demo_trace)
    view = window.panels["timeline"].x_view()
    view.setXRange(10, 12, padding=0)
    window.act["reset_zoom"].trigger()
    lo, hi = view.viewRange()[0]
    assert lo <= 0 and hi >= len(demo_trace.requests) - 1


def test_quick_and_text_filters(window, faulty_trace: Trace) -> None:
    window.set_trace(faulty_trace)
    events = window.panels["events"]
    events.set_quick_filter(QUICK_FAULTS, True)
    shown = [events.model.event_of(events.model.index(r, 0)) for r in range(events.model.rowCount())]
    assert shown == faulty_trace.fault_events
    events.set_quick_filter(QUICK_FAULTS, False)
    events.set_quick_filter(QUICK_COMPRESSIONS, True)
    shown = [events.model.event_of(events.model.index(r, 0)) for r in range(events.model.rowCount())]
    assert shown == faulty_trace.compress_events
    events.set_quick_filter(QUICK_COMPRESSIONS, False)
    events.set_quick_filter(QUICK_CACHE_MISSES, True)
    assert events.model.rowCount() > 0
    assert all(faulty_trace.events[events.model.event_of(events.model.index(r, 0))].kind == tm.EV_REQUEST
               for r in range(events.model.rowCount()))
    events.set_quick_filter(QUICK_CACHE_MISSES, False)
    events.filter_edit.setText("KeyError")
    events.apply_filter()
    assert events.model.rowCount() >= 1
    assert "KeyError" in events.model.data(events.model.index(0, 0))
    events.filter_edit.setText("")
    events.apply_filter()
    assert not events.model.is_flat


def test_bookmarks_saved_in_the_trace_file(window, demo_trace: Trace, tmp_path: Path) -> None:
    trace = build_trace(20, seed=11)
    window.set_trace(trace)
    window.cursor.set(9)
    window.ask_bookmark = lambda k, existing: ("suspicious", "why did the prefix break here?")
    key(window, Qt.Key.Key_B, Qt.KeyboardModifier.ControlModifier)
    assert [(m.event, m.label, m.note) for m in trace.marks] == [(9, "suspicious", "why did the prefix break here?")]
    assert window.modified and window.windowTitle().startswith("*")
    assert window.panels["bookmarks"].table.rowCount() == 1
    path = tmp_path / "run.trace.json"
    window.ask_save_path = lambda suggestion: str(path)
    assert window.save()
    assert not window.modified
    window.set_trace(None)
    assert window.open_path(str(path))
    assert [(m.event, m.label, m.note) for m in window.trace.marks] == [(9, "suspicious", "why did the prefix break here?")]
    assert len(window.trace) == len(trace)
    # editing and deleting go through the same dialog
    window.cursor.set(9)
    window.ask_bookmark = lambda k, existing: "delete"
    window.bookmark_dialog()
    assert window.trace.marks == []
    assert window.save(), "Save writes back to the trace file it came from"
    from inspector.trace.io import load_trace

    assert load_trace(path).marks == []


def test_open_errors_are_shown_not_raised(window, tmp_path: Path) -> None:
    assert not window.open_path(str(tmp_path / "missing.json"))
    assert "no such file" in window.message_bar.text()
    bad = tmp_path / "bad.json"
    bad.write_text("{ this is not json", encoding="utf-8")
    assert not window.open_path(str(bad))
    assert "Could not open" in window.message_bar.text()
    newer = tmp_path / "newer.trace.json"
    newer.write_text(json.dumps({"format": "context-inspector-trace", "version": 99}), encoding="utf-8")
    assert not window.open_path(str(newer))
    assert "newer" in window.message_bar.text()
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"messages": []}), encoding="utf-8")
    assert not window.open_path(str(empty))
    assert "nothing to replay" in window.message_bar.text()
    assert window.trace is None


def test_drag_and_drop_opens_a_file(window, tmp_path: Path) -> None:
    from inspector.trace.io import save_trace

    path = tmp_path / "dropped.trace.json"
    save_trace(build_trace(10, seed=5), path)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    for _ in range(5):
        QApplication.processEvents()
    assert window.trace is not None and window.source_path == str(path)


def test_layout_is_saved_and_restored(make_window, settings, demo_trace: Trace) -> None:
    first = make_window()
    first.docks["engine"].close()
    assert not first.docks["engine"].toggleViewAction().isChecked()
    first.close()  # saves the layout
    second = make_window(restore_layout=True)
    assert not second.docks["engine"].toggleViewAction().isChecked(), "the closed dock stays closed after a restart"
    assert second.docks["timeline"].toggleViewAction().isChecked()
    second.reset_layout()
    QApplication.processEvents()
    assert second.docks["engine"].toggleViewAction().isChecked(), "Reset layout brings every panel back"


def test_recent_files(window, tmp_path: Path) -> None:
    from inspector.trace.io import save_trace

    path = tmp_path / "recent.trace.json"
    save_trace(build_trace(5, seed=2), path)
    assert window.open_path(str(path))
    assert window._recent()[0] == str(path)
    window._fill_recent_menu()
    assert any(a.text() == str(path) for a in window.recent_menu.actions())


def test_export_panel_png(window, demo_trace: Trace, tmp_path: Path) -> None:
    window.set_trace(demo_trace)
    window.cursor.set(demo_trace.compress_events[0])
    for name in ("timeline", "cache", "request"):
        out = tmp_path / f"{name}.png"
        assert window.export_panel(name, str(out))
        assert out.stat().st_size > 1000
    assert not window.export_panel("nope", str(tmp_path / "x.png"))


def test_f2_steps_through_bookmarks_in_event_order(window) -> None:
    window.set_trace(build_trace(20, seed=11))
    window.set_bookmark(15, "late")
    window.set_bookmark(4, "early")
    window.cursor.set(0)
    key(window, Qt.Key.Key_F2)
    assert window.cursor.index == 4
    key(window, Qt.Key.Key_F2)
    assert window.cursor.index == 15
    key(window, Qt.Key.Key_F2)
    assert window.cursor.index == 15, "no later bookmark: the cursor stays"
    assert "No later bookmark" in window.statusBar().currentMessage()
    key(window, Qt.Key.Key_F2, Qt.KeyboardModifier.ShiftModifier)
    assert window.cursor.index == 4
    window.delete_bookmark(4)
    key(window, Qt.Key.Key_F2, Qt.KeyboardModifier.ShiftModifier)
    assert window.cursor.index == 4, "a deleted bookmark is no longer a stop"


def test_closing_with_unsaved_bookmarks_asks_first(make_window, tmp_path: Path) -> None:
    from inspector.trace.io import load_trace

    window = make_window()
    window.set_trace(build_trace(20, seed=11))
    window.set_bookmark(9, "look here")
    asked = []
    window.ask_unsaved = lambda: asked.append(1) or "cancel"
    window.close()
    assert asked and window.isVisible()  # cancel keeps the window and the bookmark
    path = tmp_path / "kept.trace.json"
    window.ask_save_path = lambda suggestion: str(path)
    window.ask_unsaved = lambda: "save"
    window.close()
    assert not window.isVisible()
    assert [(m.event, m.label) for m in load_trace(path).marks] == [(9, "look here")]


def _tiny_session(tmp_path: Path) -> Path:
    messages = [{"role": "system", "content": "You are terse."}]
    for i in range(4):
        messages.append({"role": "user", "content": f"question {i}: what is in file_{i}.py?"})
        messages.append({"role": "assistant", "content": f"file_{i}.py defines <b>f{i}</b> & returns {i}."})
    path = tmp_path / "tiny_session.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def test_open_session_replays_on_a_worker_thread(window, qtbot, tmp_path: Path) -> None:
    session = _tiny_session(tmp_path)
    with qtbot.waitSignal(window.replay_runner.finished, timeout=60_000):
        assert window.open_path(str(session))
        assert window.replay_runner.running or window.trace is not None
    assert window.trace is not None and window.trace.turn_count == 4
    assert window.replay_bar.cancel_button.isEnabled() is False


def test_replay_errors_are_shown(window, qtbot, tmp_path: Path) -> None:
    session = _tiny_session(tmp_path)
    window.replay_bar.engine_combo.setCurrentText("no-such-engine")
    with qtbot.waitSignal(window.replay_runner.failed, timeout=60_000):
        window.open_path(str(session))
    assert "Replay failed" in window.message_bar.text()
    assert "no-such-engine" in window.message_bar.text()


def test_replay_cancel_never_crashes(window, qtbot, tmp_path: Path) -> None:
    window.session = __import__("inspector.sessions", fromlist=["load_session"]).load_session(str(_tiny_session(tmp_path)))
    with qtbot.waitSignals([window.replay_runner.running_changed], timeout=5_000):
        window.start_replay()
    window.replay_runner.cancel()
    qtbot.waitUntil(lambda: not window.replay_runner.running, timeout=60_000)
    assert window.message_bar.text() or window.trace is not None


def test_opening_a_file_during_a_replay_abandons_it_for_the_new_one(window, qtbot, tmp_path: Path) -> None:
    import time

    from inspector.ui.app import DEMO_SESSION

    small = _tiny_session(tmp_path)
    assert window.open_path(str(DEMO_SESSION))  # a long replay, on the worker
    qtbot.waitUntil(lambda: window.replay_runner.running, timeout=5_000)
    start = time.perf_counter()
    assert window.open_path(str(small))
    assert time.perf_counter() - start < 3  # the old job stops at its next turn; no freeze
    qtbot.waitUntil(lambda: not window.replay_runner.running and window.trace is not None, timeout=60_000)
    qtbot.wait(300)  # anything the abandoned job still sends must be ignored
    assert window.trace.meta["session"]["path"] == str(small) and window.trace.turn_count == 4


def test_closing_the_window_during_a_replay_returns_at_once(make_window, qtbot) -> None:
    import time

    from inspector.ui.app import DEMO_SESSION

    window = make_window()
    assert window.open_path(str(DEMO_SESSION))
    qtbot.waitUntil(lambda: window.replay_runner.running, timeout=5_000)
    start = time.perf_counter()
    assert window.replay_runner.wait(10_000)
    assert time.perf_counter() - start < 3 and not window.replay_runner.running


STUCK_ENGINE = """
import re
from agent.context_engine import ContextEngine


class Stuck(ContextEngine):
    name = "ui_stuck"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
        re.match(r"(a+)+$", "a" * 40 + "b")  # blocks for good, in C (the worker is killed)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return messages
"""


def _stuck_window(make_window, tmp_path: Path):
    engine = tmp_path / "plugins" / "context_engine" / "ui_stuck"
    engine.mkdir(parents=True)
    (engine / "__init__.py").write_text(STUCK_ENGINE, encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text("inspector:\n  hook_timeout_seconds: 0.3\n", encoding="utf-8")
    window = make_window(config_path=str(config), plugin_dirs=[str(tmp_path / "plugins")], engines=["ui_stuck"])
    window.replay_bar.engine_combo.setCurrentText("ui_stuck")
    return window


def test_cancel_abandons_a_replay_stuck_in_a_hook_and_a_new_one_can_start(make_window, qtbot, tmp_path) -> None:
    window = _stuck_window(make_window, tmp_path)
    # A long timeout: only Cancel ends this replay (its worker is killed a second after it)
    (tmp_path / "config.yaml").write_text("inspector:\n  hook_timeout_seconds: 60\n", encoding="utf-8")
    window.open_path(str(_tiny_session(tmp_path)))
    qtbot.waitUntil(lambda: window.replay_runner.running, timeout=5_000)
    qtbot.wait(3000)  # the worker started and is inside the hook, frozen in C: nothing can land
    assert window.replay_runner.running
    window.replay_bar.cancel_button.click()
    qtbot.waitUntil(lambda: not window.replay_runner.running, timeout=5_000)
    assert "Replay abandoned" in window.message_bar.text() and "update_from_response" in window.message_bar.text()
    fault = window.trace.events[window.trace.fault_events[-1]].fault
    assert fault.kind == "timeout" and "ui_stuck" in fault.traceback
    window.replay_bar.engine_combo.setCurrentText("compressor")
    with qtbot.waitSignal(window.replay_runner.finished, timeout=60_000):
        window.start_replay()
    assert window.trace.turn_count == 4 and not window.trace.fault_events


def test_a_replay_stuck_in_a_hook_is_abandoned_past_timeout_and_grace(make_window, qtbot, tmp_path) -> None:
    window = _stuck_window(make_window, tmp_path)
    window.replay_runner.abandon_grace = 0.3
    with qtbot.waitSignal(window.replay_runner.abandoned, timeout=10_000):
        window.open_path(str(_tiny_session(tmp_path)))
    assert not window.replay_runner.running and window.replay_bar.run_button.isEnabled()
    assert window.trace is not None and window.trace.meta["worker_status"] == "timeout"


def _gui_args(**kw) -> argparse.Namespace:
    base = dict(file=None, engine=[], config=None, plugin_dir=[], screenshot=None, cursor=None, panel=None, size="1200x800")
    base.update(kw)
    return argparse.Namespace(**base)


def test_run_gui_screenshot_in_process(tmp_path: Path, qapp) -> None:
    from inspector.trace.io import save_trace
    from inspector.ui.app import run_gui

    trace_path = tmp_path / "t.trace.json"
    save_trace(build_trace(30, faults=True, seed=4), trace_path)
    out = tmp_path / "window.png"
    assert run_gui(_gui_args(file=str(trace_path), screenshot=str(out), cursor=40)) == 0
    assert out.stat().st_size > 10_000
    panel_out = tmp_path / "diff.png"
    assert run_gui(_gui_args(file=str(trace_path), screenshot=str(panel_out), cursor=40, panel="diff")) == 0
    assert panel_out.stat().st_size > 1_000


def test_cli_screenshot_subprocess(tmp_path: Path) -> None:
    """The real entry point, headless, as a user on a server would run it."""
    from inspector.trace.io import save_trace

    trace_path = tmp_path / "t.trace.json"
    save_trace(build_trace(15, seed=9), trace_path)
    out = tmp_path / "cli.png"
    proc = subprocess.run(
        [sys.executable, "-m", "inspector.cli", str(trace_path), "--screenshot", str(out), "--cursor", "20",
         "--size", "1000x700"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert proc.returncode == 0, proc.stderr
    assert out.exists() and out.stat().st_size > 10_000


def test_a_one_line_message_takes_one_line(window) -> None:
    window.resize(1280, 800)
    window.show()
    window.show_message("trace.json: not valid JSON (Expecting ',' delimiter: line 1 column 30)", "error")
    QApplication.processEvents()
    line = window.message_bar.label.fontMetrics().lineSpacing()
    assert window.message_bar.label.height() < 2 * line
    window.show_message("word " * 400, "error")  # a long one wraps and grows
    QApplication.processEvents()
    assert window.message_bar.label.height() >= 2 * line


def test_save_suggestions_stay_out_of_the_app_folder(window, tmp_path: Path) -> None:
    from inspector.ui.app import DEMO_SESSION

    window.source_path = str(DEMO_SESSION)
    assert Path(window._suggest(".trace.json")).parent == Path.home()  # not inside resources/demo
    window.source_path = str(tmp_path / "mine.jsonl")
    assert Path(window._suggest(".trace.json")) == tmp_path / "mine.trace.json"


def test_a_large_saved_trace_is_read_on_a_worker(window, qtbot, tmp_path: Path, monkeypatch) -> None:
    import inspector.ui.window as window_module
    from inspector.trace.io import save_trace

    path = tmp_path / "big.trace.json"
    save_trace(build_trace(60, seed=2), path)
    monkeypatch.setattr(window_module, "ASYNC_LOAD_BYTES", 1)  # every trace counts as large here
    with qtbot.waitSignal(window.load_runner.finished, timeout=30_000):
        assert window.open_path(str(path), cursor=5)
        assert window.load_runner.running  # open_path returned before the file was read
    assert window.trace is not None and len(window.trace.requests) == 60
    assert window.trace_path == str(path) and window.cursor.index == 5
    bad = tmp_path / "bad.trace.json"
    bad.write_text('{"format": "context-inspector-trace", "version": 1, "events": 7}', encoding="utf-8")
    with qtbot.waitSignal(window.load_runner.failed, timeout=30_000):
        window.open_path(str(bad))
    assert "Could not open" in window.message_bar.text() and len(window.trace.requests) == 60  # kept


def test_a_navigation_notice_goes_once_a_move_works(window, demo_trace: Trace) -> None:
    window.set_trace(demo_trace)
    window.cursor.set(len(demo_trace) - 1)
    window.act["next"].trigger()
    assert window.statusBar().currentMessage() == "Last event"
    window.act["prev"].trigger()
    assert window.statusBar().currentMessage() == ""


def test_a_transcript_that_mentions_the_trace_format_opens_as_a_session(window, tmp_path: Path) -> None:
    path = tmp_path / "question.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in [
        {"role": "user", "content": "Why does my context-inspector-trace file fail to load?"},
        {"role": "assistant", "content": "Check its version."}]) + "\n", encoding="utf-8")
    assert window.open_path(str(path), sync_replay=True), window.message_bar.text()
    assert window.trace is not None and len(window.trace.requests) == 1


def test_images_and_saves_never_replace_the_open_session(window, tmp_path: Path) -> None:
    from inspector.ui.app import _screenshot

    session = _tiny_session(tmp_path)
    before = session.read_bytes()
    assert window.open_path(str(session), sync_replay=True)
    assert not window.grab_window(str(session)) and "one of the inputs" in window.message_bar.text()
    window.ask_save_path = lambda suggestion: str(session)
    assert not window.save_as()
    assert session.read_bytes() == before
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes", encoding="utf-8")
    assert _screenshot(None, None, str(session), str(notes), None, None, (800, 600)) == 2
    assert notes.read_text(encoding="utf-8") == "my notes", "an unknown image format never truncates a file"


def test_saving_never_replaces_the_config_or_a_file_the_inspector_did_not_write(make_window, tmp_path: Path) -> None:
    config = tmp_path / "cfg.yaml"
    config.write_text("compression:\n  threshold: 0.6\n", encoding="utf-8")
    window = make_window(config_path=str(config))
    assert window.open_path(str(_tiny_session(tmp_path)), sync_replay=True)
    foreign = tmp_path / "foreign.trace.json"
    foreign.write_text("my own notes", encoding="utf-8")
    for target in (config, foreign):
        window.ask_save_path = lambda suggestion, target=target: str(target)
        assert not window.save_as()
        assert "Not saving" in window.message_bar.text()
    assert config.read_text(encoding="utf-8").startswith("compression") and foreign.read_text() == "my own notes"


def test_the_arrow_keys_step_the_cursor_as_soon_as_the_window_opens(window) -> None:
    from PySide6.QtCore import Qt

    # Text fields take the arrow keys; the ones in the window's tab chain would get the first focus.
    for field in (window.panels["events"].filter_edit, window.replay_bar.engine_combo):
        assert field.focusPolicy() == Qt.FocusPolicy.ClickFocus, type(field).__name__


def test_a_screenshot_of_what_cannot_be_opened_fails_instead_of_picturing_an_empty_window(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-m", "inspector.cli", "--screenshot", str(tmp_path / "x.png"),
                           str(tmp_path / "missing.jsonl")], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no such file" in done.stderr
    assert not (tmp_path / "x.png").exists()


def test_the_engine_output_box_and_its_buttons_fit_the_dock_of_a_small_window(make_window, faulty_trace: Trace) -> None:
    window = make_window()
    window.resize(1024, 640)
    window.reset_layout()
    window.set_trace(faulty_trace)
    window.cursor.set(next(ev.index for ev in faulty_trace.events if ev.output is not None))
    window.docks["engine"].raise_()
    for _ in range(3):
        QApplication.processEvents()
    panel = window.panels["engine"]
    scroll = window.docks["engine"].widget()
    assert isinstance(scroll, QScrollArea)
    viewport = scroll.viewport()
    for widget in (panel.output_text, panel.next_output, panel.prev_output):
        top_left = widget.mapTo(viewport, widget.rect().topLeft())
        bottom = top_left.y() + widget.height()
        assert 0 <= top_left.y() and bottom <= viewport.height(), (type(widget).__name__, bottom, viewport.height())
    assert panel.output_text.viewport().height() >= 2 * panel.output_text.fontMetrics().lineSpacing()
