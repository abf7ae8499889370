"""The agent loop: usage fed to the engine, engine tools, turn completion, faults, lifecycle."""

from __future__ import annotations

import json
import time

from inspector.engines.contract import ContextEngine
from inspector.host.replay import replay
from inspector.trace.model import EV_RESPONSE, EV_SESSION_END, EV_SESSION_START, EV_TOOL, EV_TURN_COMPLETE

from .conftest import CountingEngine, coding_session


def test_update_from_response_gets_hermes_usage_dict_from_the_request_sent(config, nocache):
    engine = CountingEngine()
    trace = replay(coding_session(3), engine, config, simulator=nocache)
    assert len(trace.requests) == 6
    for req in trace.requests:
        ev = next(e for e in trace.events if e.kind == EV_RESPONSE and e.request == req.index)
        usage = ev.args["usage"]
        assert set(usage) == {"prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens",
                              "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"}
        sent = sum(trace.message_tokens(k) for k in trace.store.get_list(req.selected))
        assert usage["prompt_tokens"] == sent + req.tokens["tools"] + 3
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert trace.state_at(ev.index)["last_prompt_tokens"] == usage["prompt_tokens"]


def test_requests_grow_by_appending_the_recorded_messages(config, nocache):
    trace = replay(coding_session(3), CountingEngine(), config, simulator=nocache)
    lists = [trace.store.get_list(r.selected) for r in trace.requests]
    for a, b in zip(lists, lists[1:]):
        assert b[: len(a)] == a and len(b) > len(a)


class Tooling(CountingEngine):
    def get_tool_schemas(self):
        return [{"name": "ctx_grep", "description": "search", "parameters": {"type": "object", "properties": {}}}]

    def handle_tool_call(self, name, args, **kwargs):
        self.tool_seen = (name, args, len(kwargs["messages"]))
        if args.get("query") == "explode":
            raise ValueError("kaboom")
        return json.dumps({"matches": 3})


def test_engine_tool_calls_are_dispatched_with_the_live_transcript(config, nocache):
    engine = Tooling()
    trace = replay(coding_session(3, engine_tool="ctx_grep"), engine, config, simulator=nocache)
    assert any(t["function"]["name"] == "ctx_grep" for t in trace.tool_schemas)
    ev = next(e for e in trace.events if e.kind == EV_TOOL)
    assert engine.tool_seen[0] == "ctx_grep" and engine.tool_seen[1]["path"] == "m2.py"
    assert engine.tool_seen[2] == 10  # user, asst, tool x2 turns + user + assistant call = live list
    assert json.loads(trace.store.get(ev.result["$msg"])["content"]) == {"matches": 3}
    # Teacher forcing: the transcript's own result stays in the history.
    last = trace.store.materialise(trace.requests[-1].selected)
    assert last[-1]["content"].startswith("# module 2")


def test_an_engine_tool_that_raises_gives_hermes_error_text_and_a_fault(config, nocache):
    session = coding_session(2, engine_tool="ctx_grep")
    session.messages[-3]["tool_calls"][0]["function"]["arguments"] = json.dumps({"query": "explode"})
    trace = replay(session, Tooling(), config, simulator=nocache)
    ev = next(e for e in trace.events if e.kind == EV_TOOL)
    assert ev.fault.kind == "exception" and "kaboom" in ev.fault.message
    content = json.loads(trace.store.get(ev.result["$msg"])["content"])
    assert content["error"] == "Context engine tool 'ctx_grep' failed: kaboom"  # str(exc), as Hermes writes it


def test_on_turn_complete_gets_a_clone_and_the_last_usage(config, nocache):
    got = []

    class Finisher(CountingEngine):
        def on_turn_complete(self, messages, usage=None, **kwargs):
            got.append((len(messages), usage, kwargs))
            messages.clear()

    trace = replay(coding_session(3), Finisher(), config, simulator=nocache)
    assert [g[0] for g in got] == [4, 8, 12]
    assert got[-1][1]["prompt_tokens"] == trace.requests[-1].usage["prompt_tokens"]
    assert got[0][2]["api_call_count"] == 2 and got[0][2]["turn_exit_reason"] == "completed"
    assert len([e for e in trace.events if e.kind == EV_TURN_COMPLETE]) == 3


def test_a_turn_the_transcript_never_answered_or_marks_interrupted_is_finalised_as_interrupted(config, nocache):
    """Hermes calls the provider at least once per turn unless the user stops it first."""
    from inspector.sessions.common import build_turns

    got = []

    class Finisher(CountingEngine):
        def on_turn_complete(self, messages, usage=None, **kwargs):
            got.append(kwargs)

    session = coding_session(3)
    session.messages[5]["x_flags"] = {"interrupted": True}  # the reader saw the user stop turn 1
    session.messages.append({"role": "user", "content": "and the docs?"})  # never answered
    session.turns = build_turns(session.messages)  # the readers' turn split, which reads the flag
    trace = replay(session, Finisher(), config, simulator=nocache)
    assert [(g["interrupted"], g["failed"], g["turn_exit_reason"], g["api_call_count"]) for g in got] == [
        (False, False, "completed", 2), (True, False, "interrupted", 2), (False, False, "completed", 2),
        (True, False, "interrupted", 0)]
    assert "no reply to this turn" in trace.events[-2].note


def test_a_duck_typed_engine_with_only_the_hooks_hermes_calls_unchecked_replays(config, nocache):
    """Hermes looks for on_session_start/end before calling them and never calls get_status."""

    class Minimal:
        name = "minimal"
        threshold_tokens, context_length, compression_count = 10**9, 64000, 0
        last_prompt_tokens = last_completion_tokens = last_total_tokens = 0

        def update_model(self, model, context_length, **kw):
            self.context_length = context_length

        def get_tool_schemas(self):
            return []

        def update_from_response(self, usage):
            self.last_prompt_tokens = usage["prompt_tokens"]

        def should_compress(self, prompt_tokens=None):
            return False

        def compress(self, messages, **kw):
            return messages

    trace = replay(coding_session(2), Minimal(), config, simulator=nocache)
    assert len(trace.requests) == 4 and not trace.fault_events
    assert not [e for e in trace.events if e.kind in (EV_SESSION_START, EV_SESSION_END)]


def test_lifecycle_order(config, nocache):
    trace = replay(coding_session(2), CountingEngine(), config, simulator=nocache)
    kinds = [e.kind for e in trace.events]
    assert kinds[:3] == ["update_model", "get_tool_schemas", EV_SESSION_START]
    assert kinds[-1] == EV_SESSION_END


def test_a_raising_engine_is_recorded_and_the_replay_continues(config, nocache):
    class Broken(CountingEngine):
        def should_compress(self, prompt_tokens=None):
            raise RuntimeError("should_compress exploded")

        def get_status(self):
            raise KeyError("status")

    trace = replay(coding_session(3), Broken(), config, simulator=nocache)
    assert len(trace.requests) == 6
    messages = [trace.events[i].fault.message for i in trace.fault_events]
    assert any("should_compress exploded" in m for m in messages)
    assert sum("get_status" in m for m in messages) == 1


def test_every_event_records_the_status_get_status_gives_after_it(config, nocache):
    # The base class's get_status is only re-read when a token attribute changed; the recorded
    # status must still be, event by event, exactly what get_status() returns at that point.
    seen = []

    class Watched(CountingEngine):
        def update_from_response(self, usage):
            super().update_from_response(usage)
            seen.append(ContextEngine.get_status(self))

    engine = Watched()
    trace = replay(coding_session(6, tool_chars=30000), engine, config, simulator=nocache)
    assert any(e.kind == "compress" for e in trace.events)
    responses = [e for e in trace.events if e.kind == "update_from_response"]
    assert [e.status for e in responses] == seen
    for ev in trace.events:
        if ev.status is not None and ev.state is not None:
            last, _, _, threshold, ctx, count = ev.state
            assert ev.status["last_prompt_tokens"] == max(0, last)
            assert (ev.status["threshold_tokens"], ev.status["context_length"]) == (threshold, ctx)
            assert ev.status["compression_count"] == count


def test_a_hanging_hook_is_interrupted(config, nocache):
    config["inspector"]["hook_timeout_seconds"] = 0.3

    class Hangs(CountingEngine):
        def update_from_response(self, usage):
            end = time.monotonic() + 30
            while time.monotonic() < end:
                time.sleep(0.01)

    start = time.monotonic()
    trace = replay(coding_session(1), Hangs(), config, simulator=nocache)
    assert time.monotonic() - start < 10
    faults = [trace.events[i].fault for i in trace.fault_events]
    assert faults and all(f.kind == "timeout" for f in faults)
    assert len(trace.requests) == 2
    # The fault names the engine line that never finished, like any other fault.
    assert all(f.where.startswith(f"{__file__}:") and f.where.endswith(" in update_from_response") for f in faults)


def test_a_timeout_on_a_worker_thread_names_where_the_hook_was_blocked(config, nocache):
    """Off the main thread nothing ends a blocking call; the fault still says which call it was."""
    import threading

    config["inspector"]["hook_timeout_seconds"] = 0.2

    class Blocks(CountingEngine):
        def should_compress(self, prompt_tokens=None):
            time.sleep(0.6)  # one C call: the interrupt lands only when it returns
            return False

    out = {}
    worker = threading.Thread(target=lambda: out.update(trace=replay(coding_session(1), Blocks(), config, simulator=nocache)))
    worker.start()
    worker.join(30)
    faults = [out["trace"].events[i].fault for i in out["trace"].fault_events]
    assert faults and all(f.kind == "timeout" for f in faults)
    assert all("time.sleep(0.6)" in f.traceback and f.where.endswith(" in should_compress") for f in faults)


def test_a_hook_that_keeps_timing_out_is_not_called_again(config, nocache):
    from inspector.host.host import HOOK_TIMEOUTS_BEFORE_SKIP

    config["inspector"]["hook_timeout_seconds"] = 0.2
    calls = []

    class Spins(CountingEngine):
        def should_compress(self, prompt_tokens=None):
            calls.append(prompt_tokens)
            while True:
                pass

    trace = replay(coding_session(4), Spins(), config, simulator=nocache)
    assert len(calls) == HOOK_TIMEOUTS_BEFORE_SKIP
    should = [e for e in trace.events if e.kind == "should_compress"]
    assert len(should) > HOOK_TIMEOUTS_BEFORE_SKIP and all(e.fault.kind == "timeout" for e in should)
    assert "not called" in should[-1].fault.message
    assert len(trace.requests) == 8  # the replay went on


def test_a_main_thread_hook_blocked_in_a_system_call_is_woken(config, nocache):
    import threading

    import pytest

    from inspector.host.guard import wake_main_thread_on_timeout

    if threading.current_thread() is not threading.main_thread() or not wake_main_thread_on_timeout():
        pytest.skip("needs the main thread and pthread_kill")
    config["inspector"]["hook_timeout_seconds"] = 0.3

    class Sleeps(CountingEngine):
        def should_compress(self, prompt_tokens=None):
            time.sleep(30)  # one C call: only a signal ends it
            return False

    start = time.monotonic()
    trace = replay(coding_session(1), Sleeps(), config, simulator=nocache)
    assert time.monotonic() - start < 10
    faults = [trace.events[i].fault for i in trace.fault_events]
    assert faults and all(f.kind == "timeout" and "was interrupted" in f.message for f in faults)


def test_a_worker_run_stuck_in_a_hook_is_abandoned_and_the_late_return_records_nothing(config, nocache):
    """The waiting thread takes the partial trace; the hook returning later must not touch it."""
    import threading

    from inspector.host.replay import StuckWatch

    config["inspector"]["hook_timeout_seconds"] = 0.2
    release, entered = threading.Event(), threading.Event()

    class Blocks(CountingEngine):
        def update_from_response(self, usage):
            super().update_from_response(usage)
            if self.calls.count("update_from_response") == 2:
                entered.set()
                release.wait()  # one C call: the watchdog's interrupt cannot land

    watch, out = StuckWatch(), {}

    def run():
        try:
            replay(coding_session(3), Blocks(), config, simulator=nocache, watch=watch)
        except BaseException as exc:  # noqa: BLE001 - the test wants to see what ended the thread
            out["ended_by"] = type(exc).__name__

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    assert entered.wait(30)
    assert not watch.abandon_if_stuck(grace=30)  # not yet past timeout + grace
    deadline = time.monotonic() + 10
    while not watch.abandon_if_stuck(grace=0.2) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert watch.abandoned and watch.stuck.hook == "update_from_response"
    trace = watch.trace
    last = trace.events[-1]
    assert last.kind == "update_from_response" and last.fault.kind == "timeout"
    assert "abandoned" in last.fault.message and "release.wait()" in last.fault.traceback
    assert last.fault.where.startswith(f"{__file__}:") and trace.meta["abandoned"]
    import gc

    assert gc.isenabled(), "the blocked run no longer keeps automatic collection paused"
    recorded = len(trace.events)
    release.set()  # the hook returns at last
    worker.join(10)
    assert not worker.is_alive() and out["ended_by"] == "HookAbandoned"
    assert len(trace.events) == recorded  # nothing of the late hook, nor of the turns after it


def test_a_timeout_that_could_not_interrupt_says_so():
    from inspector.host.guard import _overrun

    assert "interrupted" in _overrun(2, 2.05)
    late = _overrun(2, 20.0)
    assert "cannot interrupt" in late and "20.0 s" in late


def test_small_context_length_stops_like_hermes(config, nocache):
    config["model"]["context_length"] = 32000
    trace = replay(coding_session(2), CountingEngine(), config, simulator=nocache)
    assert not trace.requests
    assert any("64000" in trace.events[i].fault.message for i in trace.fault_events)


def test_an_engine_whose_update_model_raises_stops_the_replay_as_hermes_cannot_start(config, nocache):
    class OldSignature(CountingEngine):
        def update_model(self, model, context_length, base_url="", api_key="", provider=""):  # no api_mode
            super().update_model(model, context_length, base_url, api_key, provider)

    trace = replay(coding_session(2), OldSignature(), config, simulator=nocache)
    assert not trace.requests
    assert "update_model raised at agent start" in trace.meta["stopped"] and "api_mode" in trace.meta["stopped"]
    assert not [e for e in trace.events if e.kind == EV_SESSION_END], "no agent, so no session to end"


def test_an_engine_without_get_tool_schemas_stops_as_hermes_cannot_build_the_agent(config, nocache):
    class NoSchemas:  # duck-typed: Hermes calls get_tool_schemas without checking for it
        name = "no-schemas"
        threshold_tokens, context_length, compression_count = 10**9, 64000, 0
        last_prompt_tokens = last_completion_tokens = last_total_tokens = 0

        def update_model(self, model, context_length, **kw):
            self.context_length = context_length

        def update_from_response(self, usage):
            pass

        def should_compress(self, prompt_tokens=None):
            return False

        def compress(self, messages, **kw):
            return messages

    trace = replay(coding_session(1), NoSchemas(), config, simulator=nocache)
    assert not trace.requests and "no get_tool_schemas()" in trace.meta["stopped"]


def test_a_hook_whose_signature_refuses_the_call_is_located_at_its_definition(config, nocache):
    import inspect

    class NoUsage(CountingEngine):
        def update_from_response(self):  # Hermes passes the usage dict
            pass

    trace = replay(coding_session(1), NoUsage(), config, simulator=nocache)
    faults = [trace.events[i].fault for i in trace.fault_events]
    line = inspect.getsourcelines(NoUsage.update_from_response)[1]
    assert faults and all(f.where == f"{__file__}:{line} in update_from_response" for f in faults)


def test_faults_name_the_engines_own_line_whatever_the_hook_is_or_calls(config, nocache):
    """A compress on the pool refusing its call, a functools.partial hook, and an error inside an
    installed library the hook called: each fault names the line in the engine the author edits."""
    import functools
    import inspect

    import yaml

    class Odd(CountingEngine):
        def __init__(self):
            super().__init__()
            self.update_from_response = functools.partial(self._record, "tag")

        def _record(self, tag):  # the partial leaves no room for the usage Hermes passes
            pass

        def should_compress(self, prompt_tokens=None):
            return True

        def compress(self):  # Hermes passes the messages
            return []

        def on_session_start(self, session_id, **kw):
            yaml.safe_load("a: [")  # raises deep inside an installed package

    trace = replay(coding_session(1), Odd(), config, simulator=nocache)
    where = {trace.events[i].kind: trace.events[i].fault.where for i in trace.fault_events}
    line = {name: inspect.getsourcelines(getattr(Odd, name))[1] for name in ("_record", "compress")}
    assert where["update_from_response"] == f"{__file__}:{line['_record']} in _record"
    assert where["compress"] == f"{__file__}:{line['compress']} in compress"
    start = inspect.getsourcelines(Odd.on_session_start)[1]
    assert where["on_session_start"] == f"{__file__}:{start + 1} in on_session_start"


def test_an_override_the_inherited_compressor_calls_with_arguments_it_refuses_is_located(config, nocache):
    """compresr's case: Hermes' compress calls ``_generate_summary(..., memory_context=...)``."""
    import inspect

    from inspector.engines.compressor import ContextCompressor

    class OldSummary(ContextCompressor):
        def __init__(self):
            super().__init__("test-model", config_context_length=64000, quiet_mode=True)

        def update_model(self, *a, **kw):
            super().update_model(*a, **kw)
            self.threshold_tokens = 3000

        def _generate_summary(self, turns, focus_topic=None):  # predates memory_context
            return "summary"

    trace = replay(coding_session(6), OldSummary(), config, simulator=nocache)
    faults = [trace.events[i].fault for i in trace.fault_events if trace.events[i].kind == "compress"]
    line = inspect.getsourcelines(OldSummary._generate_summary)[1]
    assert faults and all(f.where == f"{__file__}:{line} in _generate_summary" for f in faults)


def test_the_provider_rejects_past_the_models_window_not_the_engines_belief(config, nocache):
    class BelievesBigger(CountingEngine):
        def update_model(self, *a, **kw):
            super().update_model(*a, **kw)
            self.context_length = 10 * self.context_length  # the engine thinks the window is larger
            self.threshold_tokens = self.context_length

    config["model"]["context_length"] = 64000
    trace = replay(coding_session(20, tool_chars=16000), BelievesBigger(), config, simulator=nocache)
    overflow = [trace.events[i].fault.message for i in trace.fault_events
                if trace.events[i].fault.kind == "context_overflow"]
    assert overflow and all("64,000-token window" in m for m in overflow)
    assert any("the engine's context_length is 640,000" in (e.note or "") for e in trace.events)


def test_a_request_over_the_window_triggers_overflow_compaction_then_exhaustion(config, nocache):
    class NeverCompresses(CountingEngine):
        def should_compress(self, prompt_tokens=None):
            return False

        def compress(self, messages, **kw):
            return messages  # no progress

    config["model"]["context_length"] = 64000
    trace = replay(coding_session(20, tool_chars=16000), NeverCompresses(), config, simulator=nocache)
    kinds = [trace.events[i].fault.kind for i in trace.fault_events]
    assert "context_overflow" in kinds and "compression_exhausted" in kinds
    first = next(i for i in trace.fault_events if trace.events[i].fault.kind == "context_overflow")
    assert trace.events[first + 1].kind == "compress" and trace.events[first + 1].args["site"] == "overflow"
    # Teacher forcing: every recorded call is still replayed.
    assert len(trace.requests) == 40


def test_the_compressor_cooldown_follows_transcript_time(config, nocache):
    import pytest

    from inspector.host.host import SessionClock

    clock = SessionClock()
    start = clock()
    clock.observe(1000.0)
    clock.observe(1600.0)
    assert clock() - start == pytest.approx(600.0)
    clock.observe(None)  # no timestamp: a fixed step
    assert clock() - start == pytest.approx(600.0 + SessionClock.STEP_WITHOUT_TIMESTAMPS)


def test_a_failed_provider_call_ends_the_turn_without_finalising_it(config, nocache):
    import pytest

    from inspector.host.host import Host
    from inspector.host.replay import make_counter

    got = []

    class Finisher(CountingEngine):
        def on_turn_complete(self, messages, usage=None, **kwargs):
            got.append(kwargs)

    class Failing:
        def wants_request(self):
            return True

        def pending_inputs(self):
            return []

        def respond(self, request, tools):
            raise ConnectionError("provider down")

        def tool_results(self, assistant, engine_results):
            return []

    host = Host(Finisher(), config, session_id="s", system_prompt="sys", counter=make_counter(config), simulator=nocache)
    assert host.start()
    with pytest.raises(ConnectionError):
        host.play_turn([{"role": "user", "content": "hi"}], Failing())
    assert got == []  # Hermes returns early on a terminal provider failure: no on_turn_complete (docs/host-contract.md §2.10)
    assert "skips on_turn_complete" in (host.trace.events[-1].note or "")
    assert host.history[-1] == {"role": "user", "content": "hi"}  # the conversation is kept


class _Overflow(Exception):
    kind = "context_overflow"


class _OverflowOnce:
    """A provider that rejects the first request as too long (with ``error``), then answers."""

    def __init__(self, error: str):
        self.error = error
        self.calls: list[int] = []

    def wants_request(self):
        return len(self.calls) < 2

    def pending_inputs(self):
        return []

    def respond(self, request, tools):
        from inspector.host.responders import ProviderResponse

        self.calls.append(len(request))
        if len(self.calls) == 1:
            raise _Overflow(self.error)
        return ProviderResponse(message={"role": "assistant", "content": "ok"})

    def tool_results(self, assistant, engine_results):
        return []


def _overflow_turn(config, nocache, error: str):
    from inspector.host.host import Host
    from inspector.host.replay import make_counter

    engine = CountingEngine()
    host = Host(engine, config, session_id="s", system_prompt="sys", counter=make_counter(config), simulator=nocache)
    assert host.start()
    responder = _OverflowOnce(error)
    host.play_turn([m for m in coding_session(4).messages[1:]], responder)
    return engine, host, responder


def test_a_provider_overflow_error_compresses_and_reassembles(config, nocache):
    engine, host, responder = _overflow_turn(config, nocache, "HTTP 400: context length exceeded")
    assert engine.compression_count == 1
    assert responder.calls[1] < responder.calls[0]  # the retry sent the compacted request
    assert any(host.trace.events[i].fault.kind == "context_overflow" for i in host.trace.finish().fault_events)
    assert engine.context_length == config["model"]["context_length"]  # the error named no limit


def test_an_overflow_error_that_states_the_limit_updates_the_model_first(config, nocache):
    from inspector.host.host import reported_context_limit

    assert reported_context_limit("This model's maximum context length is 8,192 tokens. However, ...") == 8192
    assert reported_context_limit("prompt is too long: 210000 tokens > 200000 maximum") == 200000
    assert reported_context_limit("context length exceeded") is None
    engine, host, _ = _overflow_turn(config, nocache, "HTTP 400: This model's maximum context length is 48000 tokens")
    kinds = [e.kind for e in host.trace.events]
    update = max(i for i, k in enumerate(kinds) if k == "update_model")
    assert host.trace.events[update].args["context_length"] == 48000
    assert update < kinds.index("compress")  # the window is adopted before compressing
    assert engine.context_length == 48000


def test_a_replay_says_when_it_assumes_another_model_than_the_transcript(config):
    from inspector.config import load_config
    from inspector.trace.model import EV_NOTE

    session = coding_session(1)
    session.model = "claude-opus-4-6"
    chosen = load_config(None, {**config, "model": {"default": "anthropic/claude-sonnet-4.5"}})
    notes = [e.note for e in replay(session, CountingEngine(), chosen).events if e.kind == EV_NOTE]
    assert any("'claude-opus-4-6'" in n and "model.default=claude-opus-4-6" in n for n in notes), notes
    session.model = "anthropic/claude-sonnet-4.5"
    notes = [e.note for e in replay(session, CountingEngine(), chosen).events if e.kind == EV_NOTE]
    assert not any("transcript's model" in n for n in notes), "same model: nothing to say"


def test_a_trace_records_the_model_the_replay_assumed(config):
    from inspector.config import load_config

    session = coding_session(1)
    session.model = "claude-opus-4-6"
    chosen = load_config(None, {"model": {"default": "anthropic/claude-sonnet-4.5"}})
    assert replay(session, CountingEngine(), chosen).meta["assumed_model"] == "anthropic/claude-sonnet-4.5", \
        "a model.default the user set wins over the transcript"
    trace = replay(session, CountingEngine(), config)
    assert trace.meta["assumed_model"] == "claude-opus-4-6", "unset, the transcript's model is replayed"
    assert trace.meta["assumed"]["model"] == {"value": "claude-opus-4-6", "from": "transcript"}
    without_default = {**config, "model": {k: v for k, v in config["model"].items() if k != "default"}}
    assert replay(session, CountingEngine(), without_default).meta["assumed_model"] == "claude-opus-4-6"
