"""Workflow: a session picker for every multi-session source, FILE#N from File → Open, and a save
prompt before a live chat is discarded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication


def _trajectory(path: Path, n: int = 3) -> Path:
    """A Hermes/ShareGPT trajectory file: one conversation per line."""
    lines = []
    for i in range(n):
        lines.append(json.dumps({"conversations": [
            {"from": "system", "value": "You are a helpful agent."},
            {"from": "human", "value": f"Question number {i}: what is {i} + {i}?"},
            {"from": "gpt", "value": f"It is {2 * i}."},
        ]}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_trajectory_file_asks_which_session_to_open(window, tmp_path: Path) -> None:
    path = _trajectory(tmp_path / "runs.jsonl")
    asked: list[tuple[int, str]] = []

    def pick(summaries: list[Any], source: str) -> str:
        asked.append((len(summaries), source))
        return str(summaries[2].id)

    window.pick_session = pick
    assert window.open_path(str(path), sync_replay=True)
    assert asked == [(3, str(path))], "the picker lists every conversation of the file"
    assert window.source_path == f"{path}#3"
    assert "Question number 2" in json.dumps(window.trace.store.messages, ensure_ascii=False)


def test_cancelling_the_picker_opens_nothing(window, tmp_path: Path) -> None:
    path = _trajectory(tmp_path / "runs.jsonl")
    window.pick_session = lambda summaries, source: None
    assert not window.open_path(str(path), sync_replay=True)
    assert window.trace is None


def test_file_open_accepts_a_session_spec(window, tmp_path: Path) -> None:
    path = _trajectory(tmp_path / "runs.jsonl")
    window.pick_session = lambda summaries, source: (_ for _ in ()).throw(AssertionError("no question: #2 says which"))
    window.ask_open_path = lambda: f"{path}#2"
    window.open_dialog()
    QApplication.processEvents()
    window.replay_runner.wait(20_000)
    QApplication.processEvents()
    assert window.source_path == f"{path}#2", window.message_bar.text()


def test_a_single_session_transcript_opens_without_a_question(window, tmp_path: Path) -> None:
    path = _trajectory(tmp_path / "one.jsonl", n=1)
    window.pick_session = lambda summaries, source: (_ for _ in ()).throw(AssertionError("asked for one session"))
    assert window.open_path(str(path), sync_replay=True)
    assert window.trace is not None


class _FakeChatSession:
    def __init__(self) -> None:
        self.saved: list[str] = []
        self.settings = None

    def save_transcript(self, path: str) -> str:
        self.saved.append(path)
        Path(path).write_text("{}\n", encoding="utf-8")
        return path

    def close(self) -> None:
        pass


def test_quitting_during_a_live_chat_asks_to_save_it(make_window, tmp_path: Path, monkeypatch) -> None:
    w = make_window()
    chat = w.chat_panel
    session = _FakeChatSession()
    chat.set_session(session)
    chat.unsaved = True  # a message was sent in this chat
    answers = iter(["cancel", "save"])
    asked: list[str] = []

    def ask() -> str:
        asked.append("asked")
        return next(answers)

    w.ask_unsaved_chat = ask
    target = tmp_path / "chat.jsonl"
    monkeypatch.setattr("inspector.ui.panels.chat.QFileDialog.getSaveFileName", lambda *a, **k: (str(target), ""))
    assert not w.close(), "Cancel keeps the window open"
    assert w.isVisible() and not session.saved
    assert w.close(), "Save writes the transcript, then the window closes"
    assert session.saved == [str(target)] and target.exists()
    assert asked == ["asked", "asked"]


def test_a_saved_or_empty_chat_closes_without_a_question(make_window) -> None:
    w = make_window()
    w.ask_unsaved_chat = lambda: (_ for _ in ()).throw(AssertionError("nothing to save"))
    w.chat_panel.set_session(_FakeChatSession())
    assert w.close()


def test_settings_are_saved_as_a_config_the_command_line_reads(window, tmp_path: Path) -> None:
    import yaml

    from inspector.config import load_config

    original = tmp_path / "config.yaml"
    original.write_text("model:\n  default: claude-opus-4-5\ncompression:\n  protect_last_n: 12\n"
                        "my_plugin:\n  depth: 3\n", encoding="utf-8")
    before = original.read_text(encoding="utf-8")
    window.replay_bar.set_config(str(original))
    seen: dict = {}

    def edit(values: dict) -> dict:
        seen.update(values)
        return {**values, "compression.threshold": 0.6, "model.context_length": 64_000,
                "inspector.live.base_url": "http://localhost:8080/v1", "compression.protect_last_n": 8}

    target = tmp_path / "tuned.yaml"
    window.ask_settings = edit
    window.ask_settings_path = lambda suggestion: str(target)
    assert window.settings_dialog(), window.message_bar.text()
    assert seen["compression.protect_last_n"] == 12 and seen["model.default"] == "claude-opus-4-5", \
        "the form starts from the config the replay uses, the engine's keys included"
    assert original.read_text(encoding="utf-8") == before, "the config it read is never rewritten"
    config = load_config(target)  # what `context-inspector --config tuned.yaml` reads
    assert config["compression"]["threshold"] == 0.6 and config["model"]["context_length"] == 64_000
    assert config["compression"]["protect_last_n"] == 8 and config["inspector"]["live"]["base_url"].endswith("/v1")
    assert yaml.safe_load(target.read_text(encoding="utf-8"))["my_plugin"] == {"depth": 3}, "other keys kept"
    assert window.replay_bar.config_path == str(target), "the next replay uses the new file"


def test_settings_never_overwrite_the_config_they_were_read_from(window, tmp_path: Path) -> None:
    original = tmp_path / "config.yaml"
    original.write_text("compression:\n  threshold: 0.7\n", encoding="utf-8")
    window.replay_bar.set_config(str(original))
    window.ask_settings = lambda values: {**values, "compression.threshold": 0.9}
    window.ask_settings_path = lambda suggestion: str(original)
    assert not window.settings_dialog()
    assert original.read_text(encoding="utf-8") == "compression:\n  threshold: 0.7\n"
    assert "not saved" in window.message_bar.text()


def test_an_invalid_setting_is_refused_with_the_reason(window, tmp_path: Path) -> None:
    window.ask_settings = lambda values: {**values, "compression.threshold": "lots"}
    target = tmp_path / "bad.yaml"
    window.ask_settings_path = lambda suggestion: str(target)
    assert not window.settings_dialog()
    assert not target.exists() and "threshold" in window.message_bar.text()


def test_a_fault_and_its_traceback_can_be_copied(window, faulty_trace) -> None:
    from inspector.ui.panels.decision import DecisionPanel

    k = next(e.index for e in faulty_trace.events if e.fault is not None and e.fault.traceback)
    window.set_trace(faulty_trace, cursor=k)
    panel = window.panels["decision"]
    assert isinstance(panel, DecisionPanel)
    panel.refresh()
    text = panel.text()
    fault = faulty_trace.events[k].fault
    assert fault.message in text and fault.traceback.strip().splitlines()[-1].strip() in text
    panel.browser.selectAll()
    panel.browser.copy()
    assert fault.message in QApplication.clipboard().text(), "selectable and copied as plain text"
    window.show_message("Replay failed: boom", "error", "Traceback (most recent call last):\n  File x\nValueError: boom")
    copied = window.message_bar.copy()
    assert QApplication.clipboard().text() == copied and "ValueError: boom" in copied
