"""The guarded-call recorder and its hook table: which hooks each profile calls, how, and what is recorded."""

from __future__ import annotations

import threading

import pytest

from inspector.config import load_config
from inspector.engines.contract import ContextEngine
from inspector.host.profiles import CHECKED, INLINE, OVERRIDDEN, POOL, PROFILES, REQUIRED
from inspector.host.recorder import HOOK_TIMEOUTS_BEFORE_SKIP, HookRecorder
from inspector.host.replay import replay
from inspector.trace.model import (
    EV_COMPRESS,
    EV_DEFER,
    EV_PRUNE,
    EV_RESPONSE,
    EV_SELECT,
    EV_SESSION_END,
    EV_SESSION_START,
    EV_SHOULD,
    EV_SHOULD_INFO,
    EV_TOOL,
    EV_TOOL_SCHEMAS,
    EV_TURN_COMPLETE,
    EV_UPDATE_MODEL,
    STATUS_FROM_STATE,
    Trace,
)

from .conftest import CountingEngine, coding_session

# The hook table, written out: (event kind, how the host decides to call it, thread) per profile.
# None: the profile's Hermes never calls the hook.
COMMON = {
    "update_model": (EV_UPDATE_MODEL, REQUIRED, INLINE),
    "bind_session_state": ("bind_session_state", CHECKED, INLINE),
    "get_tool_schemas": (EV_TOOL_SCHEMAS, REQUIRED, INLINE),
    "on_session_start": (EV_SESSION_START, CHECKED, INLINE),
    "should_defer_preflight_to_real_usage": (EV_DEFER, OVERRIDDEN, INLINE),
    "should_compress": (EV_SHOULD, REQUIRED, INLINE),
    "update_from_response": (EV_RESPONSE, REQUIRED, INLINE),
    "handle_tool_call": (EV_TOOL, REQUIRED, INLINE),
    "on_session_end": (EV_SESSION_END, CHECKED, INLINE),
}
TABLE = {
    "hermes-0.19.0": {**COMMON,
                      "compress": (EV_COMPRESS, REQUIRED, INLINE),
                      "select_context": None, "should_compress_info": None, "prune_tool_results_only": None,
                      "on_turn_complete": None},
    "hermes-main": {**COMMON,
                    "compress": (EV_COMPRESS, REQUIRED, POOL),
                    "select_context": (EV_SELECT, OVERRIDDEN, INLINE),
                    "should_compress_info": (EV_SHOULD_INFO, OVERRIDDEN, INLINE),
                    "prune_tool_results_only": (EV_PRUNE, OVERRIDDEN, INLINE),
                    "on_turn_complete": (EV_TURN_COMPLETE, OVERRIDDEN, INLINE)},
}


@pytest.mark.parametrize(("profile", "hook"), [(p, h) for p, rows in TABLE.items() for h in rows])
def test_each_hook_has_its_row_under_each_profile(profile, hook):
    row = PROFILES[profile].row(hook)
    expected = TABLE[profile][hook]
    if expected is None:
        assert row is None
        return
    assert (row.event, row.call, row.thread) == expected


def test_the_table_lists_no_hook_this_specification_does_not():
    for name, profile in PROFILES.items():
        assert {r.hook for r in profile.hooks} == {h for h, row in TABLE[name].items() if row is not None}


class Duck:
    """Not a ContextEngine: has the required hooks only."""

    last_prompt_tokens = last_completion_tokens = last_total_tokens = threshold_tokens = context_length = 0
    compression_count = 0

    def should_compress(self, prompt_tokens=None):
        return False


class Overrides(CountingEngine):
    def select_context(self, request_messages, **kw):
        return None


def _recorder(engine, profile="hermes-main", hook_timeout=2.0):
    return HookRecorder(engine, PROFILES[profile], Trace(), hook_timeout=hook_timeout)


def test_the_call_rule_decides_whether_a_hook_is_called():
    duck = _recorder(Duck())
    assert duck.wants("should_compress")  # required: called unchecked
    assert not duck.wants("on_session_start")  # checked: the duck lacks it
    assert not duck.wants("select_context")  # overridden only: the duck has no override
    base = _recorder(CountingEngine())
    assert base.wants("on_session_start")  # the base class has it
    assert not base.wants("select_context")  # the base class's no-op is skipped
    assert _recorder(Overrides()).wants("select_context")
    assert not _recorder(Overrides(), "hermes-0.19.0").wants("select_context")  # not in that Hermes at all


def test_a_hook_is_recorded_as_its_rows_event_with_only_the_rows_arguments():
    rec = _recorder(CountingEngine())
    ev, out = rec.hook("should_compress", 10, record_args={"prompt_tokens": 10, "site": "pre_api", "secret": 1})
    assert out.ok and out.value is False
    assert ev.kind == EV_SHOULD
    assert ev.args == {"prompt_tokens": 10, "site": "pre_api"}  # "secret" is in no row
    assert ev.thread is None  # inline: on the host thread
    assert rec.trace.events[-1] is ev


def test_a_pool_row_runs_the_hook_on_a_pool_thread():
    seen = []

    class Pooled(CountingEngine):
        def compress(self, messages, **kw):
            seen.append(threading.current_thread().name)
            return messages

    rec = _recorder(Pooled())
    ev, out = rec.hook("compress", [], record_args={"site": "manual"}, timeout=5)
    assert out.ok and ev.thread is not None
    assert seen and seen[0] != threading.current_thread().name
    ev, out = _recorder(Pooled(), "hermes-0.19.0").hook("compress", [], record_args={"site": "manual"})
    assert ev.thread is None and seen[-1] == threading.current_thread().name


def test_an_inline_hook_that_timed_out_twice_is_not_called_again():
    calls = []
    gate = threading.Event()

    class Stuck(CountingEngine):
        def should_compress(self, prompt_tokens=None):
            calls.append(prompt_tokens)
            gate.wait(5)
            return False

    rec = _recorder(Stuck(), hook_timeout=0.05)
    try:
        for i in range(HOOK_TIMEOUTS_BEFORE_SKIP + 1):
            ev, out = rec.hook("should_compress", i)
            assert out.fault is not None and out.fault.kind == "timeout"
        assert calls == list(range(HOOK_TIMEOUTS_BEFORE_SKIP))
        assert "not called" in out.fault.message
    finally:
        gate.set()


def _config(profile):
    return load_config(None, {"model": {"context_length": 64000}, "compression": {"context_timeout_seconds": 5},
                              "inspector": {"hook_timeout_seconds": 2, "host_profile": profile}})


class EveryHook(CountingEngine):
    """Overrides every optional hook and compresses early, so a replay records each row's arguments."""

    def update_model(self, **kw):
        super().update_model(**kw)
        self.threshold_tokens = 1500

    def bind_session_state(self, session_db=None, session_id=None):
        return None

    def get_tool_schemas(self):
        return [{"name": "ctx_find", "description": "", "parameters": {"type": "object", "properties": {}}}]

    def handle_tool_call(self, name, args, **kw):
        return "{}"

    def select_context(self, request_messages, **kw):
        return None

    def on_turn_complete(self, messages, **kw):
        return None

    def should_compress_info(self, prompt_tokens=None):
        return (False, None)

    def prune_tool_results_only(self, messages, current_tokens=None):
        return (messages, 0)

    def should_defer_preflight_to_real_usage(self, rough_tokens):
        return False


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_a_replay_records_each_hook_with_the_arguments_its_row_names(profile, nocache):
    trace = replay(coding_session(6, engine_tool="ctx_find"), EveryHook(), _config(profile), simulator=nocache)
    rows = {row.event: row for row in PROFILES[profile].hooks}
    seen = set()
    for ev in trace.events:
        row = rows.get(ev.kind)
        if row is None:
            continue
        seen.add(row.hook)
        assert set(ev.args) <= set(row.records), (ev.kind, ev.args)
    assert seen == {r.hook for r in PROFILES[profile].hooks}  # every row was exercised


def test_get_status_is_read_only_where_the_profiles_hermes_would():
    class Status(CountingEngine):
        calls = 0

        def get_status(self):
            Status.calls += 1
            return {"n": Status.calls}

    rec = _recorder(Status(), "hermes-0.19.0")
    rec.hook("should_compress", 1)
    assert Status.calls == 0
    rec = _recorder(Status(), "hermes-main")
    ev, _ = rec.hook("should_compress", 1)
    assert Status.calls == 1 and ev.status == {"n": 1}
    assert isinstance(ContextEngine.get_status(CountingEngine()), dict)


def test_the_base_classs_status_is_built_from_the_attributes_read_for_the_trace_not_called_again(monkeypatch):
    called = []
    original = ContextEngine.get_status

    def counted(self):
        called.append(1)
        return original(self)

    monkeypatch.setattr(ContextEngine, "get_status", counted)
    engine = CountingEngine()
    engine.threshold_tokens, engine.context_length = 50_000, 64_000
    rec = _recorder(engine, "hermes-0.19.0")
    ev, _ = rec.hook("update_from_response", {"prompt_tokens": 12_345, "completion_tokens": 10, "total_tokens": 12_355})
    assert called == []
    assert ev.status == original(engine) == {"last_prompt_tokens": 12_345, "threshold_tokens": 50_000,
                                             "context_length": 64_000, "usage_percent": 12_345 / 64_000 * 100,
                                             "compression_count": 0}


class _PropertyTokens(CountingEngine):
    """Reads of last_prompt_tokens run engine code: the status must come from get_status() itself."""

    reads = 0

    @property
    def last_prompt_tokens(self):
        _PropertyTokens.reads += 1
        return 7

    @last_prompt_tokens.setter
    def last_prompt_tokens(self, value):
        pass


def test_engine_code_behind_the_attributes_or_an_own_get_status_is_still_called(monkeypatch):
    called = []
    original = ContextEngine.get_status
    monkeypatch.setattr(ContextEngine, "get_status", lambda self: called.append(type(self)) or original(self))
    rec = _recorder(_PropertyTokens(), "hermes-0.19.0")
    ev, _ = rec.hook("update_from_response", {"prompt_tokens": 1})
    assert called == [_PropertyTokens] and ev.status["last_prompt_tokens"] == 7

    engine = CountingEngine()
    rec = _recorder(engine, "hermes-0.19.0")
    engine.get_status = lambda: {"mine": True}  # set on the instance after the recorder was made
    ev, _ = rec.hook("update_from_response", {"prompt_tokens": 1})
    assert ev.status == {"mine": True}


def test_a_base_class_status_is_held_as_the_events_state_and_reads_as_get_status_would_report_it():
    engine = CountingEngine()
    engine.threshold_tokens, engine.context_length = 50_000, 64_000
    rec = _recorder(engine, "hermes-0.19.0")
    events = []
    for prompt in (12_345, 12_345, 20_000, 0):
        engine.compression_count += prompt == 0
        events.append(rec.hook("update_from_response", {"prompt_tokens": prompt, "completion_tokens": 1})[0])
        assert events[-1].status == ContextEngine.get_status(engine)
    assert all(ev.status_held is STATUS_FROM_STATE for ev in events)  # nothing kept per event but its state
    assert events[0].status == events[1].status != events[2].status


def test_an_engines_own_status_is_held_packed_and_one_value_while_it_does_not_change():
    class Status(CountingEngine):
        def get_status(self):
            return {"mode": "lean", "count": self.compression_count}

    engine = Status()
    rec = _recorder(engine, "hermes-main")
    first, _ = rec.hook("should_compress", 1)
    second, _ = rec.hook("should_compress", 2)
    engine.compression_count = 3
    third, _ = rec.hook("should_compress", 3)
    assert first.status == second.status == {"mode": "lean", "count": 0} and third.status == {"mode": "lean", "count": 3}
    assert first.status_held is second.status_held and type(first.status_held) is tuple
