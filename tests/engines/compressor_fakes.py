"""A scripted stand-in for ``inspector.llm.aux`` shared by the compressor tests.

The compressor imports ``inspector.llm.aux`` lazily, so swapping the module in ``sys.modules``
lets a test script the summariser's replies (or failures) and read back the prompts it got.
"""

from __future__ import annotations

import sys
import types
from contextlib import contextmanager

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice

import inspector.llm

NO_PROVIDER = RuntimeError("No LLM provider configured for task 'compression'")


def completion(text: str) -> ChatCompletion:
    return ChatCompletion(
        id="cmpl-test",
        created=0,
        model="fake-aux",
        object="chat.completion",
        choices=[Choice(index=0, finish_reason="stop", message=ChatCompletionMessage(role="assistant", content=text))],
    )


class FakeAux:
    """Replays scripted replies/exceptions (the last one repeats) and records every call."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls: list[dict] = []
        self.protected = 0

    def call_llm(self, task=None, **kwargs):
        self.calls.append({"task": task, **kwargs})
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, BaseException):
            raise reply
        return completion(reply) if isinstance(reply, str) else reply

    @property
    def prompts(self) -> list[str]:
        return [c["messages"][0]["content"] for c in self.calls]

    @contextmanager
    def aux_interrupt_protection(self):
        self.protected += 1
        yield


def install_aux(monkeypatch, fake: FakeAux) -> FakeAux:
    mod = types.ModuleType("inspector.llm.aux")
    mod.call_llm = fake.call_llm
    mod.aux_interrupt_protection = fake.aux_interrupt_protection
    monkeypatch.setitem(sys.modules, "inspector.llm.aux", mod)
    monkeypatch.setattr(inspector.llm, "aux", mod, raising=False)
    return fake


@pytest.fixture(autouse=True)
def hermetic(monkeypatch, tmp_path):
    """No real summariser and a private summary cache for every test of a module importing this."""
    monkeypatch.setenv("CONTEXT_INSPECTOR_SUMMARY_CACHE", str(tmp_path / "summary-cache"))
    install_aux(monkeypatch, FakeAux(NO_PROVIDER))
