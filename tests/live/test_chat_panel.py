"""The chat panel through pytest-qt, against the fake endpoint and the real SDK."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from inspector.live.session import LiveSession  # noqa: E402
from inspector.trace.model import Trace  # noqa: E402
from inspector.ui.cursor import Cursor  # noqa: E402
from inspector.ui.panels.chat import ChatPanel  # noqa: E402
from tests.live.fake_openai import Fail, Reply  # noqa: E402
from tests.live.helpers import NotesEngine, live_config  # noqa: E402

TOOL_CALL = {"id": "call_1", "name": "read_note", "arguments": '{"key": "deadline"}'}


@pytest.fixture
def panel(qtbot, server, secret_key):
    session = LiveSession(NotesEngine(), live_config(server.base_url), system_prompt="Be brief.")
    cursor = Cursor()
    widget = ChatPanel(cursor, session=session)
    qtbot.addWidget(widget)
    widget.show()
    yield widget
    assert widget.shutdown(5000)
    session.close()


def wait_idle(qtbot, panel: ChatPanel) -> None:
    qtbot.waitUntil(lambda: not panel.busy, timeout=10_000)


def test_type_send_stream_and_trace_updated(qtbot, panel, server):
    server.add(Reply("Streaming <b>plain</b> text back to you.", chunk_size=3, chunk_delay=0.01,
                     prompt_tokens=90, cached_tokens=32))
    assert "fake-model" in panel.endpoint_label.text() and "set" in panel.endpoint_label.text()
    deltas: list[str] = []
    panel.reply_delta.connect(deltas.append)
    qtbot.keyClicks(panel.input, "hello panel")
    with qtbot.waitSignal(panel.trace_updated, timeout=10_000) as blocker:
        qtbot.mouseClick(panel.send_button, Qt.MouseButton.LeftButton)
        assert panel.busy and panel.cancel_button.isEnabled() and not panel.send_button.isEnabled()
    trace = blocker.args[0]
    wait_idle(qtbot, panel)
    assert isinstance(trace, Trace) and len(trace.requests) == 1
    assert trace.requests[0].usage["cache_read_tokens"] == 32
    text = panel.view.toPlainText()
    assert "You: hello panel" in text
    assert "Assistant: Streaming <b>plain</b> text back to you." in text  # shown, not interpreted
    assert len(deltas) > 3  # arrived in pieces through the signal
    assert panel.input.toPlainText() == ""
    assert panel.status_label.text() == "Ready."
    assert panel.send_button.isEnabled() and not panel.cancel_button.isEnabled()


def test_tool_round_emits_an_update_per_request(qtbot, panel, server):
    server.add(Reply("", tool_calls=[TOOL_CALL]), Reply("Friday."))
    updates: list[Trace] = []
    panel.trace_updated.connect(updates.append)
    assert panel.send_text("deadline?")
    wait_idle(qtbot, panel)
    qtbot.waitUntil(lambda: len(updates) == 2, timeout=5000)
    assert [len(t.requests) for t in updates] == [1, 2]
    text = panel.view.toPlainText()
    assert "[tool call: read_note]" in text and text.rstrip().endswith("Friday.")


def test_error_is_shown_and_conversation_kept(qtbot, panel, server):
    server.add(Fail(400, "model not found"), Reply("works now"))
    panel.send_text("first")
    wait_idle(qtbot, panel)
    assert "Error (bad_request)" in panel.status_label.text() and "model not found" in panel.status_label.text()
    assert "[error: bad_request]" in panel.view.toPlainText()
    panel.send_text("second")
    wait_idle(qtbot, panel)
    assert "works now" in panel.view.toPlainText()
    assert [m["content"] for m in panel.session.history if m["role"] == "user"] == ["first", "second"]


def test_cancel_button_stops_the_stream(qtbot, panel, server):
    server.add(Reply("token " * 300, chunk_size=6, chunk_delay=0.03))
    panel.send_text("long")
    qtbot.waitUntil(lambda: "token" in panel.view.toPlainText(), timeout=10_000)
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, panel)
    assert "[cancelled]" in panel.view.toPlainText()
    assert panel.status_label.text().startswith("Cancelled")


def test_save_transcript_and_compress_command(qtbot, panel, server, tmp_path, secret_key):
    server.add(Reply("one"), Reply("two"))
    for text in ("a", "b"):
        panel.send_text(text)
        wait_idle(qtbot, panel)
    panel.send_text("/compress the deadline")
    wait_idle(qtbot, panel)
    assert "[/compress: compression committed]" in panel.view.toPlainText()
    saved = panel.save_transcript(tmp_path / "chat.jsonl")
    assert saved is not None and saved.exists()
    body = saved.read_text(encoding="utf-8")
    assert '"content":"two"' in body and secret_key not in body


def test_lazy_session_factory(qtbot, server, secret_key):
    config = live_config(server.base_url)
    server.add(Reply("made lazily"))
    made: list[LiveSession] = []

    def factory() -> LiveSession:
        made.append(LiveSession(NotesEngine(), config))
        return made[-1]

    widget = ChatPanel(Cursor())
    qtbot.addWidget(widget)
    assert not widget.send_button.isEnabled()
    assert widget.send_text("hi") is False  # nothing configured yet
    from inspector.live.responder import LiveSettings

    widget.set_session_factory(factory, LiveSettings.from_config(config))
    assert widget.send_button.isEnabled() and server.base_url in widget.endpoint_label.text()
    widget.send_text("hi")
    qtbot.waitUntil(lambda: not widget.busy, timeout=10_000)
    assert widget.session is made[0] and "made lazily" in widget.view.toPlainText()
    assert widget.shutdown(5000)
    assert made[0]._closed  # the panel made it, so the panel closed it (on_session_end ran)
    assert made[0].trace.events[-1].kind == "on_session_end"


def test_a_hostile_engine_in_a_worker_is_a_fault_and_the_window_stays_responsive(qtbot, server, chat_plugins,
                                                                                secret_key):
    """The chat's engine runs in a worker (the window's way); it freezes in C, then exits the process:
    each ends its turn as a fault on screen while the event loop keeps turning, and the chat goes on."""
    from PySide6.QtCore import QTimer

    from inspector.live.responder import LiveSettings
    from inspector.live.worker_chat import WorkerChat
    from tests.live.chat_engines import EXIT_TOKENS, FREEZE_TOKENS

    config = live_config(server.base_url)
    config["inspector"]["hook_timeout_seconds"] = 1
    made: list[WorkerChat] = []

    def factory() -> WorkerChat:
        made.append(WorkerChat("live_hostile", config, plugin_dirs=[chat_plugins]))
        return made[-1]

    widget = ChatPanel(Cursor())
    qtbot.addWidget(widget)
    widget.resize(520, 560)
    widget.show()
    widget.set_session_factory(factory, LiveSettings.from_config(config))
    ticks = {"n": 0}
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.__setitem__("n", ticks["n"] + 1))
    timer.start(50)
    server.add(Reply("Hello from a worker.", chunk_size=4), Reply("stuck", prompt_tokens=FREEZE_TOKENS),
               Reply("Back, in a new worker."), Reply("gone", prompt_tokens=EXIT_TOKENS), Reply("And again."))
    for text in ("hello", "freeze now"):
        assert widget.send_text(text)
        before = ticks["n"]
        qtbot.waitUntil(lambda: not widget.busy, timeout=30_000)
    assert ticks["n"] - before > 20, "the event loop kept running while the engine was frozen"
    assert "[engine fault: its worker was ended; the next message starts a new one]" in widget.view.toPlainText()
    assert widget.status_label.text().startswith("Engine fault:") and "update_from_response" in widget.status_label.text()
    if os.environ.get("INSPECTOR_SHOT_DIR"):
        widget.grab().save(os.path.join(os.environ["INSPECTOR_SHOT_DIR"], "chat_frozen.png"))
    for text in ("are you there?", "exit now", "last one"):
        assert widget.send_text(text)
        qtbot.waitUntil(lambda: not widget.busy, timeout=30_000)
    text = widget.view.toPlainText()
    assert "Back, in a new worker." in text and text.rstrip().endswith("And again.")
    assert "exit status 3" in " ".join(made[0].faults)
    assert made[0].workers_started == 3 and secret_key not in text
    if os.environ.get("INSPECTOR_SHOT_DIR"):
        widget.grab().save(os.path.join(os.environ["INSPECTOR_SHOT_DIR"], "chat_fault.png"))
    timer.stop()
    assert widget.shutdown(10_000)
    assert made[0].trace is not None and made[0].trace.events[-1].kind == "on_session_end"


def test_a_worker_that_ends_while_the_chat_is_idle_is_shown_at_once(qtbot):
    import threading

    class IdleChat:  # the part of a WorkerChat the panel listens to
        on_idle_end = None
        settings = None

    chat = IdleChat()
    widget = ChatPanel(Cursor(), session=chat)
    qtbot.addWidget(widget)
    assert chat.on_idle_end is not None
    dead = Trace()
    with qtbot.waitSignal(widget.trace_updated, timeout=5_000) as blocker:
        threading.Thread(target=chat.on_idle_end, args=("the worker died (killed by SIGKILL)", dead)).start()
    assert blocker.args[0] is dead
    assert "worker ended while idle: the worker died (killed by SIGKILL)" in widget.view.toPlainText()
    assert "next message starts a new one" in widget.status_label.text()
