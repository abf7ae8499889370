"""Seed tests through the compatibility import path, thresholds and the default-hook skip check."""

from __future__ import annotations

import functools

import pytest

from inspector.engines.contract import ContextEngine, engine_overrides_hook, resolve_model_threshold
from inspector.engines.discovery import load_engine
from inspector.engines.doctor_static import validate_messages

from .conftest import BASIC, needs_compressor

SESSION = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "x" * 400},
    {"role": "assistant", "content": "done"},
] * 10 + [{"role": "user", "content": "next"}]


@pytest.fixture(params=["fixture_simple", pytest.param("compressor", marks=needs_compressor)])
def loaded(request, config):
    ld = load_engine(request.param, config, [str(BASIC)], include_project=False, include_entry_points=False)
    yield ld
    ld.close()


def test_engine_satisfies_abc(loaded):
    from agent.context_engine import ContextEngine as Imported

    assert Imported is ContextEngine
    assert isinstance(loaded.engine, ContextEngine)
    assert not getattr(type(loaded.engine), "__abstractmethods__", None)
    assert isinstance(loaded.engine.name, str) and loaded.engine.name


def test_compress_returns_valid_messages(loaded):
    eng = loaded.engine
    with loaded.activate():
        eng.update_model("test/model", 128000)
        out = eng.compress([dict(m) for m in SESSION], current_tokens=120000)
    assert isinstance(out, list) and out
    assert [p for p in validate_messages(out) if p[0] == "fail"] == []


def test_model_thresholds_longest_match_and_provider_scope():
    table = {"claude": 0.6, "claude-sonnet": 0.7, "openai-codex:gpt-5": 0.85, "gpt-5.5": 0.9}
    assert resolve_model_threshold("anthropic/claude-sonnet-4", table, 0.5) == 0.7
    assert resolve_model_threshold("gpt-5-mini", table, 0.5) == 0.5
    assert resolve_model_threshold("gpt-5-mini", table, 0.5, "OpenAI-Codex ") == 0.85
    assert resolve_model_threshold("gpt-5.5", table, 0.5, "openai-codex") == 0.9  # longer bare key wins
    assert resolve_model_threshold("gpt-5", {"gpt-5": 0.7, "openai-codex:gpt-5": 0.8}, 0.5, "openai-codex") == 0.8
    assert resolve_model_threshold("", table, 0.5) == 0.5
    assert resolve_model_threshold("claude", {}, 0.5) == 0.5


def test_update_model_snapshots_percent_once(config):
    ld = load_engine("fixture_simple", config, [str(BASIC)], include_project=False, include_entry_points=False)
    try:
        eng = ld.engine
        eng.threshold_percent = 0.5
        eng.model_thresholds = {"big": 0.9}
        eng.update_model("big-model", 200000)
        assert eng.threshold_percent == 0.9 and eng.threshold_tokens == 180000
        eng.update_model("small-model", 100000)
        assert eng.threshold_percent == 0.5 and eng.threshold_tokens == 50000  # configured value, not 0.9
    finally:
        ld.close()


class _Inherits(ContextEngine):
    name = "i"

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return messages


class _Overrides(_Inherits):
    def select_context(self, request_messages, **kw):
        return None


class _Static(_Inherits):
    @staticmethod
    def select_context(request_messages, **kw):
        return None


class _Duck:
    def select_context(self, request_messages, **kw):
        return None


def test_default_hook_skip_check():
    assert not engine_overrides_hook(_Inherits(), "select_context")
    assert not engine_overrides_hook(_Inherits(), "on_turn_complete")
    assert engine_overrides_hook(_Overrides(), "select_context")
    assert engine_overrides_hook(_Duck(), "select_context")
    assert engine_overrides_hook(_Static(), "select_context")
    partial_engine = _Inherits()
    partial_engine.select_context = functools.partial(lambda tag, request_messages, **kw: None, "p")
    assert engine_overrides_hook(partial_engine, "select_context")
    assert not engine_overrides_hook(None, "select_context")
    assert not engine_overrides_hook(_Duck(), "on_turn_complete")
