"""Hand-made sessions whose facts are known, and engines that keep, drop or return chosen messages."""

from __future__ import annotations

import json

import pytest

from inspector.config import load_config
from inspector.engines.contract import ContextEngine
from inspector.host.replay import replay
from inspector.sessions.model import Session, compute_turns

from ..host.conftest import NoCache


def url(k: int) -> str:
    """One fact per user message: a URL no other URL contains."""
    return f"https://example.com/doc-{k:03d}-end"


def url_session(turns: int = 8) -> Session:
    """Each turn: a user message that is just a URL (its one fact), and a reply with no fact.

    Replies differ: identical messages are one content key, so they would share one lifetime.
    """
    msgs = [{"role": "system", "content": "You are a careful agent."}]
    for t in range(turns):
        msgs.append({"role": "user", "content": url(t), "x_timestamp": 1000.0 + 60 * t})
        msgs.append({"role": "assistant", "content": f"Noted ({'abcdefghijklmnopqrstuvwxyz'[t % 26]})."})
    s = Session(id="quality-session", source_format="test", messages=msgs)
    s.turns = compute_turns(msgs)
    return s


class OnceEngine(ContextEngine):
    """Compresses once, at the first check after ``after`` responses; subclasses decide how."""

    name = "once"
    after = 5

    def __init__(self) -> None:
        self.responses = 0
        self.done = False

    def update_from_response(self, usage):
        self.responses += 1
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)
        self.last_completion_tokens = usage.get("completion_tokens", 0)
        self.last_total_tokens = usage.get("total_tokens", 0)

    def should_compress(self, prompt_tokens=None):
        return not self.done and self.responses >= self.after

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        self.done = True
        self.compression_count += 1
        return self.rewrite(messages)

    def rewrite(self, messages):
        raise NotImplementedError


class KeepLastTwo(OnceEngine):
    """Keeps the last two messages; the summary repeats the facts of the messages in ``keep``."""

    name = "keep_last_two"
    keep: tuple[str, ...] = ()
    summary = True

    def rewrite(self, messages):
        tail = messages[-2:]
        kept = [m["content"] for m in messages[:-2] if m.get("content") in self.keep]
        head = [{"role": "user", "content": "[SUMMARY] " + " ".join(kept)}] if self.summary else []
        return head + tail


class Lossless(OnceEngine):
    """Moves every compacted message's text, verbatim, into one summary message."""

    name = "lossless"

    def rewrite(self, messages):
        body = "\n".join(str(m.get("content") or "") for m in messages[:-2])
        return [{"role": "user", "content": "[SUMMARY]\n" + body}, *messages[-2:]]


class Recaller(KeepLastTwo):
    """Drops messages without a summary and offers a tool that quotes them back."""

    name = "recaller"
    summary = False

    def __init__(self) -> None:
        super().__init__()
        self.archive: list[str] = []

    def rewrite(self, messages):
        self.archive = [str(m.get("content") or "") for m in messages[:-2]]
        return super().rewrite(messages)

    def get_tool_schemas(self):
        return [{"name": "recall_all", "description": "return archived messages",
                 "parameters": {"type": "object", "properties": {}}}]

    def handle_tool_call(self, name, args, **kwargs):
        return json.dumps({"messages": self.archive})


@pytest.fixture
def config():
    return load_config(None, {"model": {"context_length": 64000}, "compression": {"context_timeout_seconds": 5},
                              "inspector": {"hook_timeout_seconds": 2}})


@pytest.fixture
def run(config):
    def go(engine, session=None):
        return replay(session or url_session(), engine, config, simulator=NoCache())
    return go
