"""The window's tool docks: live chat (fake OpenAI server), follow (a writer process), engine doctor."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from inspector.trace.model import Trace
from tests.live.fake_openai import FakeOpenAI, Reply
from tests.live.helpers import TEST_KEY_ENV
from tests.ui.compare_support import write_config, write_plugins

WRITER = Path(__file__).resolve().parents[1] / "live" / "writer.py"


@pytest.fixture
def server():
    srv = FakeOpenAI(max_seconds=60).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_view_menu_toggles_the_tool_docks(window) -> None:
    titles = {a.text() for a in window.menuBar().actions()}
    assert {"&Live", "&View", "&Replay"} <= titles
    for key in ("chat", "follow", "doctor"):
        dock = window.tool_docks[key]
        assert not dock.isVisible()
        dock.toggleViewAction().trigger()
        QApplication.processEvents()
        assert dock.isVisible()
    assert window.tool_docks["runs"].isVisible()
    window.tile_all()  # tiling shows every panel and keeps the tool docks the user opened
    QApplication.processEvents()
    assert window.tool_docks["chat"].isVisible()
    window.reset_layout()
    QApplication.processEvents()
    assert not window.tool_docks["chat"].isVisible()


def test_new_chat_session_drives_the_window(qtbot, make_window, server, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(TEST_KEY_ENV, "sk-ui-test-key")
    config = write_config(tmp_path / "config.yaml", inspector={
        "cache_profile": "openai",
        "live": {"base_url": server.base_url, "model": "fake-model", "api_key_env": TEST_KEY_ENV, "timeout": 5,
                 "max_attempts": 2, "retry_base_delay": 0.05}})
    w = make_window(config_path=str(config))
    server.add(Reply("Hello <b>from</b> the fake model.", prompt_tokens=120, cached_tokens=64), Reply("Second."))
    w.act["new_chat"].trigger()
    QApplication.processEvents()
    chat = w.chat_panel
    assert w.tool_docks["chat"].isVisible()
    assert "fake-model" in chat.endpoint_label.text()
    with qtbot.waitSignal(chat.trace_updated, timeout=15_000):
        assert chat.send_text("hi there")
    qtbot.waitUntil(lambda: not chat.busy, timeout=15_000)
    QApplication.processEvents()
    trace = w.trace
    assert isinstance(trace, Trace) and trace.meta.get("mode") == "live"
    assert len(trace.requests) == 1 and trace.requests[0].usage["cache_read_tokens"] == 64
    assert w.cursor.index == len(trace) - 1  # follows the conversation's end
    assert w.panels["timeline"].trace is trace and w.panels["events"].trace is trace
    assert "Hello <b>from</b> the fake model." in chat.view.toPlainText()  # plain text, not HTML
    chat.send_text("again")
    qtbot.waitUntil(lambda: not chat.busy, timeout=15_000)
    QApplication.processEvents()
    assert len(w.trace.requests) == 2
    # a new chat starts from scratch
    assert w.new_chat_session()
    assert chat.session is None and chat.view.toPlainText() == ""


def test_new_chat_without_endpoint_says_what_to_configure(window) -> None:
    assert window.new_chat_session()
    assert "No live endpoint configured" in window.message_bar.text()


def test_follow_dock_replays_a_growing_jsonl(qtbot, make_window, tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.yaml", inspector={"cache_profile": "openai"})
    w = make_window(config_path=str(config))
    target, result = tmp_path / "live.jsonl", tmp_path / "result.json"
    follow = w.follow_panel
    follow.interval.setValue(0.1)
    follow.settle.setValue(0.5)  # the writer's lines carry no end-of-turn mark: the last turn settles
    proc = subprocess.Popen([sys.executable, str(WRITER), "jsonl", str(target), "3", "0.3", str(result)])
    try:
        w.act["follow"].trigger()
        assert w.tool_docks["follow"].isVisible()
        assert follow.start(str(target), "compressor")
        assert not follow.interval.isEnabled() and not follow.settle.isEnabled()  # it keeps what it started with
        seen: list[int] = []
        follow.trace_updated.connect(lambda t: seen.append(len(t.requests)))
        qtbot.waitUntil(lambda: proc.poll() is not None and follow.played >= 3, timeout=40_000)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
    assert seen == sorted(seen) and len(set(seen)) >= 2, seen  # turns arrived while the writer wrote
    assert w.trace is not None and w.trace.meta.get("mode") == "follow"
    assert sum(1 for r in w.trace.requests) == 6  # 3 turns × (tool call, answer)
    assert 2 in [e.turn for e in w.trace.events if "settle period 0.5 s" in (e.note or "")]
    follow.stop()
    qtbot.waitUntil(lambda: not follow.running, timeout=15_000)
    QApplication.processEvents()
    assert w.trace.events[-1].kind == "on_session_end"
    assert "Stopped after 3 turns" in follow.status_label.text()


def test_the_settle_period_follows_a_longer_poll_interval_until_the_user_sets_it(window) -> None:
    follow = window.follow_panel
    follow.interval.setValue(30.0)
    assert follow.settle.value() == 60.0  # as the command line: at least two polls
    follow.settle.setValue(5.0)
    follow.interval.setValue(40.0)
    assert follow.settle.value() == 5.0  # the user's own value is kept


def test_follow_without_source_and_bad_engine(qtbot, window, tmp_path: Path) -> None:
    follow = window.follow_panel
    assert not follow.start()
    assert "Choose a source" in follow.status_label.text()
    target = tmp_path / "x.jsonl"
    target.write_text("", encoding="utf-8")
    assert follow.start(str(target), "no_such_engine_anywhere")
    qtbot.waitUntil(lambda: not follow.running, timeout=15_000)
    assert follow.status_label.text().startswith("Follow failed:")


def test_doctor_panel_lists_findings(qtbot, window) -> None:
    window.panels["engine"].doctor_button.click()  # no trace: the replay bar's engine (compressor)
    doctor = window.doctor_panel
    assert window.tool_docks["doctor"].isVisible()
    qtbot.waitUntil(lambda: doctor.report is not None, timeout=60_000)
    statuses = [doctor.tree.topLevelItem(i).text(0) for i in range(doctor.tree.topLevelItemCount())]
    assert statuses and "PASS" in statuses and "FAIL" not in statuses
    checks = [doctor.tree.topLevelItem(i).text(1) for i in range(doctor.tree.topLevelItemCount())]
    assert "load" in checks and any(c.startswith("hook:") for c in checks)
    assert doctor.summary.text().startswith("compressor") and "0 failed" in doctor.summary.text()


def test_doctor_reports_a_broken_engine_as_fail(qtbot, make_window, tmp_path: Path) -> None:
    plugins = write_plugins(tmp_path / "plugins")
    w = make_window(plugin_dirs=[str(plugins)])
    assert w.run_doctor("ui_broken")
    qtbot.waitUntil(lambda: w.doctor_panel.report is not None, timeout=60_000)
    top = w.doctor_panel.tree.topLevelItem(0)
    assert top.text(0) == "FAIL" and top.text(1) == "load"
    assert "ui_broken refuses to import" in (top.text(2) + "".join(top.child(i).text(2) for i in range(top.childCount())))


def test_doctor_failure_inside_the_doctor_is_a_finding(qtbot, window, monkeypatch) -> None:
    import inspector.worker.commands as commands  # the doctor runs in a worker; this is the window's side of it

    def boom(*_a, **_k):
        raise RuntimeError("doctor exploded <b>here</b>")

    monkeypatch.setattr(commands, "doctor_in_worker", boom)
    assert window.run_doctor("compressor")
    qtbot.waitUntil(lambda: window.doctor_panel.report is not None, timeout=10_000)
    top = window.doctor_panel.tree.topLevelItem(0)
    assert top.text(0) == "FAIL" and "doctor exploded <b>here</b>" in top.text(2)


def test_a_live_chat_engine_that_freezes_is_a_fault_in_the_window(qtbot, make_window, server, tmp_path: Path,
                                                                  monkeypatch) -> None:
    """The window's chat runs its engine in a worker: frozen in C, it becomes a fault on the timeline and the
    chat's status, the window answers meanwhile, and the next message goes on in a new worker."""
    from PySide6.QtCore import QTimer

    from tests.live.chat_engines import FREEZE_TOKENS, write_chat_plugins

    monkeypatch.setenv(TEST_KEY_ENV, "sk-ui-test-key-frozen")
    plugins = write_chat_plugins(tmp_path / "plugins")
    config = write_config(tmp_path / "config.yaml", inspector={
        "cache_profile": "openai", "hook_timeout_seconds": 1,
        "live": {"base_url": server.base_url, "model": "fake-model", "api_key_env": TEST_KEY_ENV, "timeout": 5,
                 "max_attempts": 2, "retry_base_delay": 0.05}})
    w = make_window(config_path=str(config), plugin_dirs=[str(plugins)])
    w.replay_bar.engine_combo.setCurrentText("live_hostile")
    server.add(Reply("Before the freeze.", prompt_tokens=150), Reply("stuck", prompt_tokens=FREEZE_TOKENS),
               Reply("After the freeze, in a new worker.", prompt_tokens=180))
    assert w.new_chat_session()
    chat = w.chat_panel
    ticks = {"n": 0}
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.__setitem__("n", ticks["n"] + 1))
    timer.start(50)
    assert chat.send_text("hello")
    qtbot.waitUntil(lambda: not chat.busy, timeout=30_000)
    before = ticks["n"]
    assert chat.send_text("freeze now")
    qtbot.waitUntil(lambda: not chat.busy, timeout=30_000)
    timer.stop()
    assert ticks["n"] - before > 20, "the window's event loop kept running while the engine was frozen"
    assert chat.status_label.text().startswith("Engine fault:")
    faults = [e for e in w.trace.events if e.fault is not None]
    assert faults and faults[-1].fault.kind == "timeout" and "live_hostile" in faults[-1].fault.where
    assert w.trace.meta["worker"]["isolation"] in ("bubblewrap", "process")
    if os.environ.get("INSPECTOR_SHOT_DIR"):
        w.grab().save(os.path.join(os.environ["INSPECTOR_SHOT_DIR"], "window_chat_fault.png"))
    with qtbot.waitSignal(chat.trace_updated, timeout=30_000):
        assert chat.send_text("still there?")
    qtbot.waitUntil(lambda: not chat.busy, timeout=30_000)
    assert chat.view.toPlainText().rstrip().endswith("After the freeze, in a new worker.")
    assert chat.session.workers_started == 2
