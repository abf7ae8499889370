"""The bundled demo session: reproducible bytes, realistic shape, long enough to compact often."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from inspector.tokens.rough import estimate_messages_tokens_rough

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "resources" / "demo" / "demo_session.json"
THRESHOLD = 96_000  # the built-in compressor's threshold at a 128K context length


def _generator():
    spec = importlib.util.spec_from_file_location("make_demo", ROOT / "resources" / "make_demo.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def demo() -> dict:
    return json.loads(DEMO.read_text(encoding="utf-8"))


def test_regenerating_gives_identical_bytes(tmp_path):
    out = tmp_path / "demo.json"
    assert _generator().main([str(out)]) == 0
    assert out.read_bytes() == DEMO.read_bytes()


def test_crosses_the_compressor_threshold_at_least_four_times(demo):
    """Naive accumulation: add each message's rough tokens; every time 96K is reached, count and restart."""
    running, crossings = 0, 0
    for msg in demo["messages"]:
        running += estimate_messages_tokens_rough([msg])
        if running >= THRESHOLD:
            crossings += 1
            running = 0
    assert crossings >= 4


def test_shape_of_the_session(demo):
    msgs = demo["messages"]
    assert DEMO.stat().st_size < 3_000_000
    assert msgs[0]["role"] == "system"
    assert set(demo["meta"]) >= {"title", "model"}
    tool_names = {t["function"]["name"] for t in demo["tools"]}
    assert {"read_file", "search_files", "terminal", "write_file", "patch"} <= tool_names
    users = [m for m in msgs if m["role"] == "user"]
    assert 60 <= len(users) <= 90
    stamps = [m["timestamp"] for m in msgs]
    assert all(isinstance(t, int) for t in stamps) and stamps == sorted(stamps)
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert max(gaps) > 600 and sum(1 for g in gaps if g > 600) == 1

    used, pending = set(), {}
    for msg in msgs:
        if msg["role"] == "assistant":
            assert not pending, "a tool call without its result"
            usage = msg["usage"]
            details = usage["prompt_tokens_details"]
            assert 0 <= details["cached_tokens"] <= usage["prompt_tokens"] < 128_000
            assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
            for call in msg.get("tool_calls") or []:
                pending[call["id"]] = call["function"]["name"]
                json.loads(call["function"]["arguments"])
        elif msg["role"] == "tool":
            used.add(pending.pop(msg["tool_call_id"]))
    assert {"read_file", "search_files", "terminal", "write_file", "patch", "lcm_grep"} <= used
    big = [m for m in msgs if m["role"] == "tool" and len(m["content"]) > 8000]
    assert len(big) >= 50  # sizeable tool results: source files and test logs
