"""Small hand-made sessions and engines for host tests."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from inspector.config import load_config
from inspector.engines.contract import ContextEngine
from inspector.sessions.model import Session, compute_turns


class NoCache:
    """A cache model that never hits, so host tests don't depend on the simulator."""

    def simulate(self, **kw):
        return SimpleNamespace(read=0, write=0, uncached=sum(kw["block_tokens"]) + kw.get("tools_tokens", 0),
                               break_index=0, reason_kind="cold", reason="cold start")


def coding_session(turns: int = 6, tool_chars: int = 4000, engine_tool: str | None = None) -> Session:
    msgs = [{"role": "system", "content": "You are a careful coding agent."}]
    for t in range(turns):
        msgs.append({"role": "user", "content": f"Please look at module {t} and fix the bug.", "x_timestamp": 1000.0 + 60 * t})
        name = engine_tool if (engine_tool and t == turns - 1) else "read_file"
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{t}", "type": "function", "function": {"name": name, "arguments": json.dumps({"path": f"m{t}.py", "query": "bug"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_{t}", "content": f"# module {t}\n" + ("line of code\n" * (tool_chars // 13))})
        msgs.append({"role": "assistant", "content": f"Fixed module {t}."})
    s = Session(id="test-session", source_format="test", messages=msgs)
    s.turns = compute_turns(msgs)
    return s


class CountingEngine(ContextEngine):
    """A minimal engine that keeps the last 4 messages on compress."""

    name = "counting"

    def __init__(self):
        self.calls: list[str] = []

    def update_from_response(self, usage):
        self.calls.append("update_from_response")
        self.last_usage = usage
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)
        self.last_completion_tokens = usage.get("completion_tokens", 0)
        self.last_total_tokens = usage.get("total_tokens", 0)

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or 0) >= self.threshold_tokens > 0

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        self.compression_count += 1
        tail = messages[-4:]
        while tail and tail[0].get("role") == "tool":
            tail = tail[1:]
        return [{"role": "user", "content": "[CONTEXT SUMMARY]: earlier work"}] + tail


@pytest.fixture
def config():
    return load_config(None, {"model": {"context_length": 64000}, "compression": {"context_timeout_seconds": 5},
                              "inspector": {"hook_timeout_seconds": 2}})


@pytest.fixture
def nocache():
    return NoCache()
