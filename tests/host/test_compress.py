"""compress as Hermes calls it: pool thread, private copy, timeout discard, sentinel (docs/host-contract.md §4.3; agent/conversation_compression.py:1450-1480 of hermes-agent 0.19.0)."""

from __future__ import annotations

import threading
import time

from inspector.engines.contract import ContextEngine
from inspector.host.replay import replay
from inspector.sessions.model import Session, compute_turns
from inspector.trace.model import EV_COMPRESS, EV_NOTE, EV_SESSION_END, EV_SESSION_START

from .conftest import CountingEngine, coding_session


def compress_events(trace):
    return [e for e in trace.events if e.kind == EV_COMPRESS]


def committed(trace):
    return [e for e in compress_events(trace) if isinstance(e.result, dict) and "$list" in e.result
            and not e.result.get("unchanged")]


class LowThreshold(CountingEngine):
    def update_model(self, *a, **kw):
        super().update_model(*a, **kw)
        self.threshold_tokens = 3000


def test_compress_runs_on_a_pool_thread_over_a_private_copy(config, nocache):
    seen = {}

    class Spy(LowThreshold):
        def compress(self, messages, **kw):
            seen["thread"] = threading.current_thread().name
            seen["input"] = messages
            messages.append({"role": "user", "content": "engine scribbles on its copy"})
            return super().compress(messages[:-1], **kw)

    trace = replay(coding_session(6), Spy(), config, simulator=nocache)
    assert committed(trace)
    assert seen["thread"].startswith("compress-ctx-timeout")
    assert seen["thread"] != threading.current_thread().name
    before = trace.store.materialise(compress_events(trace)[0].args["messages"]["$list"])
    assert all(m.get("content") != "engine scribbles on its copy" for m in before)


def test_commit_writes_the_sentinel_and_boundary_hooks(config, nocache):
    trace = replay(coding_session(6), LowThreshold(), config, simulator=nocache)
    ev = committed(trace)[0]
    assert trace.state_at(ev.index)["compression_count"] == 1
    assert trace.state_at(ev.index)["last_prompt_tokens"] > 0  # what compress() left, before the commit
    after = trace.events[ev.index + 1: ev.index + 4]
    assert [e.kind for e in after] == [EV_SESSION_END, EV_SESSION_START, EV_NOTE]
    assert after[1].args["boundary_reason"] == "compression"
    assert trace.state_at(after[1].index)["last_prompt_tokens"] > 0  # Hermes writes the sentinel after the hooks
    assert trace.state_at(after[2].index)["last_prompt_tokens"] == -1
    # The next response replaces the sentinel with the real (synthesised) count.
    nxt = trace.requests[[r.event for r in trace.requests].index(
        next(r.event for r in trace.requests if r.event > ev.index))]
    assert trace.state_at(nxt.event + 1)["last_prompt_tokens"] == nxt.usage["prompt_tokens"]


def test_a_compress_past_the_timeout_is_discarded(config, nocache):
    config["compression"]["context_timeout_seconds"] = 0.3

    class Slow(LowThreshold):
        def __init__(self):
            super().__init__()
            self.compression_count = 0  # an instance field, so Hermes' snapshot covers it

        def compress(self, messages, **kw):
            self.compression_count += 1
            time.sleep(1.0)
            return messages[-2:]

    trace = replay(coding_session(4), Slow(), config, simulator=nocache)
    evs = compress_events(trace)
    assert evs and all(e.fault is not None and e.fault.kind == "timeout" for e in evs)
    # Still running when the host gave up: the fault says where (the pool thread's stack).
    assert all("time.sleep(1.0)" in e.fault.traceback and e.fault.where.startswith(f"{__file__}:")
               and e.fault.where.endswith(" in compress") for e in evs)
    assert not committed(trace)
    # Hermes restores the allow-listed fields, so compression_count does not move.
    assert trace.state_at(len(trace) - 1)["compression_count"] == 0
    # The history was never replaced: the last request still starts with the first user turn.
    first_user = trace.store.materialise(trace.requests[-1].selected)[1]
    assert first_user["content"].startswith("Please look at module 0")


def test_a_timed_out_pass_that_finishes_late_cannot_change_the_engine(config, nocache):
    config["compression"]["context_timeout_seconds"] = 0.2

    class LateWriter(LowThreshold):
        def __init__(self):
            super().__init__()
            self.compression_count = 0
            self._previous_summary = None
            self.calls = 0

        def compress(self, messages, **kw):
            self.calls += 1
            time.sleep(0.5)  # a slow summariser; the host has long given up
            self.compression_count += 1
            self._previous_summary = "written after the timeout"
            return messages[-2:]

        def on_turn_complete(self, messages, usage=None, **kw):
            time.sleep(0.25)  # later hooks run after the pass has finished

    engine = LateWriter()
    trace = replay(coding_session(8), engine, config, simulator=nocache)
    assert engine.calls >= 1 and not committed(trace)
    assert any("changes to the engine were undone" in (e.note or "") for e in trace.events)
    undone = next(e.index for e in trace.events if "changes to the engine were undone" in (e.note or ""))
    assert trace.state_at(undone)["compression_count"] == 0


def test_a_timed_out_pass_still_running_is_never_overlapped_and_the_turn_is_marked_failed(config, nocache):
    import threading

    config["compression"]["context_timeout_seconds"] = 0.2
    running, overlaps, turns = [], [], []
    lock = threading.Lock()

    class Slow(LowThreshold):
        def compress(self, messages, **kw):
            with lock:
                running.append(1)
                if len(running) > 1:
                    overlaps.append(len(running))
            time.sleep(0.8)
            with lock:
                running.pop()
            return messages[-2:]

        def on_turn_complete(self, messages, usage=None, **kw):
            turns.append((kw["failed"], kw["turn_exit_reason"]))

    trace = replay(coding_session(6), Slow(), config, simulator=nocache)
    assert overlaps == []
    assert any("still running" in (e.note or "") for e in trace.events)
    # Without tool calls the first compaction is at the pre-API gate, whose timeout ends the turn (docs/host-contract.md §4.3).
    chat = Session(id="chat", source_format="test", messages=[{"role": "system", "content": "Be brief."}] + [
        m for t in range(6) for m in ({"role": "user", "content": f"part {t}: " + "lorem ipsum " * 700},
                                       {"role": "assistant", "content": f"noted {t}"})])
    chat.turns = compute_turns(chat.messages)
    trace = replay(chat, Slow(), config, simulator=nocache)
    assert any(e.fault is not None and e.fault.kind == "context_compression_timeout" for e in trace.events)
    assert (True, "context_compression_timeout") in turns


def test_a_compress_result_with_unpaired_tool_messages_is_mended_before_it_is_sent(config, nocache):
    from inspector.host.shaping import STUB_RESULT

    class Careless(LowThreshold):
        def compress(self, messages, **kw):
            # keeps a tool result whose call it summarised away, and a call whose result it dropped
            self.compression_count += 1
            head = [m for m in messages if m.get("role") == "system"][:1]
            orphan = next(m for m in messages if m.get("role") == "tool")
            call = next(m for m in reversed(messages) if m.get("role") == "assistant" and m.get("tool_calls"))
            return head + [{"role": "user", "content": "summary"}, orphan, call]

    trace = replay(coding_session(6), Careless(), config, simulator=nocache)
    assert committed(trace)
    after = next(r for r in trace.requests if r.event > committed(trace)[0].index)
    sent = trace.store.materialise(after.selected)
    results = {m.get("tool_call_id") for m in sent if m.get("role") == "tool"}
    calls = {c["id"] for m in sent if m.get("role") == "assistant" for c in m.get("tool_calls") or ()}
    assert results <= calls  # no orphan went out
    assert any(m.get("content") == STUB_RESULT for m in sent)  # the call that lost its result got a stub
    assert any("host sanitiser" in (e.note or "") for e in trace.events)


def test_old_signatures_get_only_the_arguments_they_declare(config, nocache):
    got = {}

    class Old(LowThreshold):
        def compress(self, messages, current_tokens=None):  # no focus_topic, force
            got["ok"] = current_tokens
            return super().compress(messages)

    trace = replay(coding_session(6), Old(), config, simulator=nocache)
    assert committed(trace) and isinstance(got["ok"], int)
    assert compress_events(trace)[0].args["kwargs"] == {"current_tokens": got["ok"]} or "current_tokens" in compress_events(trace)[0].args["kwargs"]


def test_no_op_and_garbage_results_leave_the_transcript_alone(config, nocache):
    class Same(LowThreshold):
        def compress(self, messages, **kw):
            return messages

    class Garbage(LowThreshold):
        def compress(self, messages, **kw):
            return "not a list"

    same = replay(coding_session(5), Same(), config, simulator=nocache)
    assert compress_events(same) and not committed(same)
    assert all(e.result.get("unchanged") for e in compress_events(same))
    garbage = replay(coding_session(5), Garbage(), config, simulator=nocache)
    assert all(e.fault and e.fault.kind == "invalid_return" for e in compress_events(garbage))
    assert len(garbage.requests) == len(same.requests)


def test_summary_without_user_gets_the_latest_user_message_back(config, nocache):
    class DropsUsers(LowThreshold):
        def compress(self, messages, **kw):
            self.compression_count += 1
            return [{"role": "assistant", "content": "summary of everything"}]

    trace = replay(coding_session(5), DropsUsers(), config, simulator=nocache)
    after = trace.store.materialise(committed(trace)[0].result["$list"])
    assert [m["role"] for m in after] == ["user", "assistant"]


def test_context_variables_reach_the_compress_worker(config, nocache):
    import contextvars

    current = contextvars.ContextVar("session", default=None)
    seen = []

    class UsesContext(LowThreshold):
        def on_session_start(self, session_id, **kw):
            current.set(session_id)

        def compress(self, messages, **kw):
            seen.append(current.get())
            return super().compress(messages, **kw)

    replay(coding_session(6), UsesContext(), config, simulator=nocache)
    assert seen and set(seen) == {"test-session"}


def test_a_summariser_window_under_64k_is_reported_as_hermes_refusing_it(config, nocache):
    config.setdefault("auxiliary", {}).setdefault("compression", {})["context_length"] = 50000
    trace = replay(coding_session(6), LowThreshold(), config, simulator=nocache)
    faults = [e for e in trace.events if e.fault is not None and e.fault.kind == "aux_context_too_small"]
    assert len(faults) == 1, "checked once, at the first compaction"
    assert "50,000" in faults[0].fault.message and "ValueError" in faults[0].fault.message


def test_hermes_lowers_the_threshold_to_a_smaller_summariser_window(config, nocache):
    config["model"]["context_length"] = 200000
    config.setdefault("auxiliary", {}).setdefault("compression", {})["context_length"] = 80000

    class Big(LowThreshold):
        def update_model(self, *a, **kw):
            ContextEngine.update_model(self, *a, **kw)
            self.threshold_tokens = 6000  # compression starts early; the check must not raise it

    trace = replay(coding_session(6), Big(), config, simulator=nocache)
    assert not [e for e in trace.events if "summariser's window" in (e.note or "")], "80,000 > 6,000: nothing to do"

    class Huge(LowThreshold):
        def update_model(self, *a, **kw):
            ContextEngine.update_model(self, *a, **kw)
            self.threshold_tokens = 150000

        def should_compress(self, prompt_tokens=None):
            return True  # forces the first compaction early

    engine = Huge()
    trace = replay(coding_session(4), engine, config, simulator=nocache)
    (note,) = [e for e in trace.events if "summariser's window" in (e.note or "")]
    assert engine.threshold_tokens == 80000 and engine.threshold_percent == 0.4
    assert note.args["previous_threshold"] == 150000
