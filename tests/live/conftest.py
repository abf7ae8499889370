"""Fixtures for live-mode tests: a secret API key in the environment and the fake endpoint."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.live.fake_openai import FakeOpenAI
from tests.live.helpers import TEST_KEY_ENV


@pytest.fixture
def secret_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A unique key, set only in the environment, that must never reach any file we write."""
    key = f"sk-inspector-test-{uuid.uuid4().hex}"
    monkeypatch.setenv(TEST_KEY_ENV, key)
    return key


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    srv = FakeOpenAI(max_seconds=60).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def chat_plugins(tmp_path_factory: pytest.TempPathFactory):
    """A plugin folder with the engines live chats load in their worker processes."""
    from tests.live.chat_engines import write_chat_plugins

    return write_chat_plugins(tmp_path_factory.mktemp("chat_plugins"))
