"""Every live chat, whichever process runs its engine: one request at a time, and a transcript that saves without the key."""

from __future__ import annotations

import json

import pytest

from inspector.live.conversation import Conversation
from inspector.live.responder import LiveError, LiveSettings


def _chat(monkeypatch) -> Conversation:
    monkeypatch.setenv("CONVERSATION_TEST_KEY", "sk-secret-1234")
    settings = LiveSettings.from_config({"inspector": {"live": {"api_key_env": "CONVERSATION_TEST_KEY"}}})
    return Conversation(settings, "be brief")


def test_a_second_request_while_one_runs_is_refused_as_busy_and_a_closed_chat_refuses_all(monkeypatch):
    chat = _chat(monkeypatch)
    with chat._exclusive():
        with pytest.raises(LiveError) as busy, chat._exclusive():
            pass
        assert busy.value.kind == "busy"
    with chat._exclusive():  # free again once the first ended
        pass
    chat._closed = True
    with pytest.raises(LiveError) as closed, chat._exclusive():
        pass
    assert closed.value.kind == "config"


def test_the_saved_transcript_starts_with_the_system_prompt_and_never_holds_the_key(monkeypatch, tmp_path):
    chat = _chat(monkeypatch)
    assert chat.settings.api_key_env == "CONVERSATION_TEST_KEY"
    chat.transcript += [{"role": "user", "content": "my key is sk-secret-1234"},
                        {"role": "assistant", "content": "noted", "usage": {"prompt_tokens": 9}}]
    path = chat.save_transcript(tmp_path / "out" / "chat.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [r["role"] for r in rows] == ["system", "user", "assistant"]
    assert rows[0]["content"] == "be brief" and rows[2]["usage"] == {"prompt_tokens": 9}
    assert "sk-secret-1234" not in path.read_text(encoding="utf-8")
