"""Host profiles: which Hermes the loop plays, chosen by inspector.host_profile and recorded in the trace."""

from __future__ import annotations

import json
import threading

import pytest

from inspector.config import ConfigError, load_config
from inspector.config_check import ConfigProblem, check_config
from inspector.host import profiles
from inspector.host.host import resolved_api_mode
from inspector.host.profiles import PROFILES, ProfileError, profile_for
from inspector.host.replay import replay
from inspector.trace.model import (
    EV_COMPRESS,
    EV_PRUNE,
    EV_SELECT,
    EV_SHOULD,
    EV_SHOULD_INFO,
    EV_TOOL,
    EV_TURN_COMPLETE,
    EV_UPDATE_MODEL,
)

from .conftest import CountingEngine, coding_session


def _config(profile: str, **inspector):
    return load_config(None, {"model": {"context_length": 64000}, "compression": {"context_timeout_seconds": 5},
                              "inspector": {"hook_timeout_seconds": 2, "host_profile": profile, **inspector}})


def test_an_unknown_profile_is_an_error_naming_every_profile():
    with pytest.raises(ProfileError) as err:
        profile_for({"inspector": {"host_profile": "hermes-9"}})
    for name in PROFILES:
        assert name in str(err.value)
    with pytest.raises(ConfigProblem, match="hermes-0.19.0"):
        check_config({"inspector": {"host_profile": "hermes-9"}})
    with pytest.raises(ConfigError, match="unknown host profile 'hermes-9'"):
        _config("hermes-9")


def test_the_default_is_the_installed_hermes_profile_else_hermes_main(monkeypatch):
    monkeypatch.setattr(profiles, "installed_hermes_version", lambda: None)
    assert profile_for({}).name == "hermes-main"
    monkeypatch.setattr(profiles, "installed_hermes_version", lambda: "0.19.0")
    assert profile_for({}).name == "hermes-0.19.0"
    monkeypatch.setattr(profiles, "installed_hermes_version", lambda: "0.12.0")  # a version we have no profile for
    assert profile_for({}).name == "hermes-main"


class Everything(CountingEngine):
    """Overrides every optional hook, so only the profile decides which are called."""

    def __init__(self):
        super().__init__()
        self.status_calls = 0
        self.compress_threads: list[str] = []
        self.handed: list[int] = []

    def select_context(self, request_messages, **kw):
        return None

    def on_turn_complete(self, messages, usage=None, **kw):
        return None

    def should_compress_info(self, prompt_tokens=None):
        return (False, None)

    def prune_tool_results_only(self, messages, current_tokens=None):
        return (messages, 0)

    def get_status(self):
        self.status_calls += 1  # a side effect the host must not cause where Hermes would not
        return super().get_status()

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        self.compress_threads.append(threading.current_thread().name)
        self.handed.append(id(messages))
        return super().compress(messages, current_tokens, focus_topic, force, memory_context)


def _kinds(trace):
    return {e.kind for e in trace.events}


def test_hermes_0_19_0_never_calls_the_post_release_hooks_nor_get_status(nocache):
    engine = Everything()
    trace = replay(coding_session(4), engine, _config("hermes-0.19.0"), simulator=nocache)
    assert trace.meta["host_profile"] == "hermes-0.19.0"
    assert not _kinds(trace) & {EV_SELECT, EV_TURN_COMPLETE, EV_SHOULD_INFO, EV_PRUNE}
    assert engine.status_calls == 0
    assert any("hermes-0.19.0" in d for d in trace.meta["host_differences"])

    engine = Everything()
    trace = replay(coding_session(4), engine, _config("hermes-main"), simulator=nocache)
    assert trace.meta["host_profile"] == "hermes-main"
    assert {EV_SELECT, EV_TURN_COMPLETE, EV_SHOULD_INFO} <= _kinds(trace)
    assert engine.status_calls > 0


def _compressing(engine_cls=Everything, **cfg):
    engine = engine_cls()
    engine.threshold_tokens = 1500  # set again by update_model's base implementation below
    engine.update_model = lambda **kw: setattr(engine, "threshold_tokens", 1500) or setattr(
        engine, "context_length", kw["context_length"])
    return engine


def test_hermes_0_19_0_compresses_on_the_host_thread_with_the_live_list(nocache):
    engine = _compressing()
    trace = replay(coding_session(6), engine, _config("hermes-0.19.0"), simulator=nocache)
    compress = [e for e in trace.events if e.kind == EV_COMPRESS]
    assert compress and all(e.thread is None for e in compress)  # inline: no pool thread recorded
    assert set(engine.compress_threads) == {threading.current_thread().name}

    engine = _compressing()
    trace = replay(coding_session(6), engine, _config("hermes-main"), simulator=nocache)
    assert engine.compress_threads and threading.current_thread().name not in engine.compress_threads


class InPlace(Everything):
    """Compacts the list it is given in place and returns that same list."""

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        self.compression_count += 1
        tail = messages[-3:]
        while tail and tail[0].get("role") == "tool":
            tail = tail[1:]
        messages[:] = [{"role": "user", "content": "[CONTEXT SUMMARY]: earlier work"}] + tail
        return messages


def test_an_in_place_compaction_commits_under_0_19_0_and_is_discarded_under_main(nocache):
    trace = replay(coding_session(6), _compressing(InPlace), _config("hermes-0.19.0"), simulator=nocache)
    committed = [e for e in trace.events if e.kind == EV_COMPRESS and isinstance(e.result, dict)
                 and not e.result.get("unchanged")]
    assert committed and "commits it" in (committed[0].note or "")
    # The request after the compaction carries the compacted history, not the whole transcript.
    after = next(r for r in trace.requests if r.event > committed[0].index)
    sent = trace.store.materialise(after.selected)
    assert any("[CONTEXT SUMMARY]" in str(m.get("content")) for m in sent)
    assert len(sent) < 10

    trace = replay(coding_session(6), _compressing(InPlace), _config("hermes-main"), simulator=nocache)
    compress = [e for e in trace.events if e.kind == EV_COMPRESS]
    assert compress and all(isinstance(e.result, dict) and e.result.get("unchanged") for e in compress)


def test_after_tools_0_19_0_passes_last_prompt_tokens_as_current_tokens(nocache):
    engine = _compressing()
    trace = replay(coding_session(6), engine, _config("hermes-0.19.0"), simulator=nocache)
    post = [e for e in trace.events if e.kind == EV_SHOULD and e.args.get("site") == "post_tool"]
    assert post
    for ev in post:
        before = trace.state_at(ev.index - 1)["last_prompt_tokens"]
        expected = before if before > 0 else 0 if before == -1 else None
        if expected is not None:
            assert ev.args["prompt_tokens"] == expected
    for ev in (e for e in trace.events if e.kind == EV_COMPRESS and e.args["site"] == "post_tool"):
        assert ev.args["kwargs"]["current_tokens"] == trace.state_at(ev.index - 1)["last_prompt_tokens"]


def test_update_model_gets_the_api_mode_hermes_derives(nocache):
    assert resolved_api_mode("", "", "http://localhost:8000/v1") == "chat_completions"
    assert resolved_api_mode("", "anthropic", "") == "anthropic_messages"
    assert resolved_api_mode("", "openai-codex", "") == "codex_responses"
    assert resolved_api_mode("codex_responses", "", "") == "codex_responses"
    assert resolved_api_mode("nonsense", "", "https://x.example/anthropic") == "anthropic_messages"
    trace = replay(coding_session(2), CountingEngine(), _config("hermes-0.19.0"), simulator=nocache)
    ev = next(e for e in trace.events if e.kind == EV_UPDATE_MODEL)
    assert ev.args["api_mode"] == "chat_completions"


class BatchTools(CountingEngine):
    def __init__(self):
        super().__init__()
        self.seen: list[list[str]] = []

    def get_tool_schemas(self):
        return [{"name": "ctx_a", "description": "a", "parameters": {"type": "object", "properties": {}}}]

    def handle_tool_call(self, name, args, **kwargs):
        self.seen.append([m.get("tool_call_id") for m in kwargs["messages"] if m.get("role") == "tool"])
        return json.dumps({"ok": True})


def _batch_session():
    session = coding_session(1)
    calls = [{"id": f"b{i}", "type": "function", "function": {"name": "ctx_a", "arguments": "{}"}} for i in range(3)]
    msgs = session.messages[:2] + [{"role": "assistant", "content": None, "tool_calls": calls}] + [
        {"role": "tool", "tool_call_id": f"b{i}", "content": f"recorded {i}"} for i in range(3)] + [
        {"role": "assistant", "content": "done"}]
    from inspector.sessions.model import Session, compute_turns

    out = Session(id="batch", source_format="test", messages=msgs)
    out.turns = compute_turns(msgs)
    return out


def test_in_a_batch_0_19_0_appends_each_result_before_the_next_engine_call(nocache):
    engine = BatchTools()
    trace = replay(_batch_session(), engine, _config("hermes-0.19.0"), simulator=nocache)
    assert [e.args["call_id"] for e in trace.events if e.kind == EV_TOOL] == ["b0", "b1", "b2"]
    assert engine.seen == [[], ["b0"], ["b0", "b1"]]
    engine = BatchTools()
    replay(_batch_session(), engine, _config("hermes-main"), simulator=nocache)
    assert engine.seen == [[], [], []]


def test_the_trace_and_the_cli_table_name_the_profile(nocache, capsys):
    from inspector.host.cli import print_summary

    traces = [replay(coding_session(2), CountingEngine(), _config(p), simulator=nocache) for p in PROFILES]
    print_summary(traces, list(PROFILES))
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("host profile"))
    assert all(p in row for p in PROFILES)
