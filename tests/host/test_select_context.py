"""select_context: Hermes' skip check and the validation table (docs/host-contract.md §3)."""

from __future__ import annotations

import pytest

from inspector.host.replay import replay
from inspector.trace.model import EV_SELECT

from .conftest import CountingEngine, coding_session


def run(engine, config, nocache, turns=3):
    return replay(coding_session(turns), engine, config, simulator=nocache)


def select_events(trace):
    return [e for e in trace.events if e.kind == EV_SELECT]


def test_inherited_default_is_never_called(config, nocache):
    trace = run(CountingEngine(), config, nocache)
    assert select_events(trace) == []
    assert all(r.selected == r.assembled and not r.selected_by_engine for r in trace.requests)


class Selecting(CountingEngine):
    result = None
    seen = None

    def select_context(self, request_messages, *, conversation_messages=None, incoming_message=None, budget_tokens=0):
        type(self).seen = (request_messages, conversation_messages, incoming_message, budget_tokens)
        value = type(self).result
        return value(request_messages) if callable(value) else value


def make(result):
    return type("E", (Selecting,), {"result": staticmethod(result) if callable(result) else result})()


@pytest.mark.parametrize(
    "result, fault_kind",
    [
        (lambda req: (_ for _ in ()).throw(RuntimeError("boom")), "exception"),
        (lambda req: [], "invalid_return"),
        (lambda req: {"role": "user"}, "invalid_return"),
        (lambda req: tuple(req), "invalid_return"),
        (lambda req: [*req, "not a dict"], "invalid_return"),
        (lambda req: None, None),
    ],
    ids=["raises", "empty-list", "dict", "tuple", "non-dict-item", "none"],
)
def test_rejected_results_fall_back_to_the_unmodified_request(config, nocache, result, fault_kind):
    trace = run(make(result), config, nocache)
    events = select_events(trace)
    assert len(events) == len(trace.requests) > 0
    for ev in events:
        assert (ev.fault.kind if ev.fault else None) == fault_kind
    assert all(r.selected == r.assembled for r in trace.requests)


def test_a_valid_list_is_used_as_the_request(config, nocache):
    # Keep the system prompt and the last two messages only.
    trace = run(make(lambda req: [req[0], *req[-2:]]), config, nocache, turns=4)
    last = trace.requests[-1]
    assert last.selected_by_engine
    sent = trace.store.materialise(last.selected)
    assert len(sent) == 3 and sent[0]["role"] == "system"
    assert len(trace.store.materialise(last.assembled)) > 3
    assert last.tokens["tiktoken"] < sum(trace.message_tokens(k) for k in trace.store.get_list(last.assembled))


def test_hook_receives_clones_incoming_message_and_the_context_length(config, nocache):
    engine = make(lambda req: None)
    trace = run(engine, config, nocache)
    request, conversation, incoming, budget = type(engine).seen
    assert budget == 64000
    assert request[0]["role"] == "system" and all(m.get("role") != "system" for m in conversation)
    assert incoming["role"] == "user" and incoming["content"].startswith("Please look at module 2")
    conversation.clear()  # clones: the host's history is unaffected
    assert trace.requests[-1].selected == trace.requests[-1].assembled


def test_in_place_mutation_with_none_is_reported_and_sent(config, nocache):
    def mutate(req):
        del req[1:-1]
        return None

    trace = run(make(mutate), config, nocache)
    faults = [e.fault.kind for e in select_events(trace) if e.fault]
    assert "mutated_input" in faults
    assert trace.requests[-1].selected_by_engine


class DuckTyped:
    """Not a ContextEngine subclass: Hermes' skip check treats its hook as overridden."""

    name = "duck"
    threshold_tokens = 10**9
    context_length = 64000
    calls = 0

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, **kw):
        return messages

    def select_context(self, request_messages, **kw):
        DuckTyped.calls += 1

    def get_status(self):
        return {}

    def get_tool_schemas(self):
        return []

    def on_session_start(self, session_id, **kw):
        pass

    def on_session_end(self, session_id, messages):
        pass

    def update_model(self, **kw):
        pass


def test_duck_typed_engines_are_called(config, nocache):
    DuckTyped.calls = 0
    trace = run(DuckTyped(), config, nocache)
    assert DuckTyped.calls == len(trace.requests) > 0


def test_a_selection_goes_through_hermes_sanitiser_before_it_is_sent(config, nocache):
    # A role the API refuses is dropped; a call whose result the engine left out gets a stub.
    def pick(req):
        call = next(m for m in req if m.get("role") == "assistant" and m.get("tool_calls"))
        return [req[0], {"role": "banana", "content": "?"}, call]

    trace = run(make(pick), config, nocache, turns=4)
    last = trace.requests[-1]
    sent = trace.store.materialise(last.selected)
    assert [m["role"] for m in sent] == ["system", "assistant", "tool"]
    assert "stub" in (select_events(trace)[-1].note or "")


def test_messages_passed_through_unchanged_keep_their_keys(config, nocache):
    # Dropping messages must not re-key the ones kept; an edited one gets a key of its own.
    def keep_some(req):
        kept = [req[0], *req[-2:]]
        kept[-1] = {**kept[-1], "content": "edited by the engine"}
        return kept

    trace = run(make(keep_some), config, nocache, turns=4)
    for req in trace.requests:
        assembled, selected = trace.store.get_list(req.assembled), trace.store.get_list(req.selected)
        assert selected[0] == assembled[0] and selected[1] == assembled[-2]
        assert selected[2] != assembled[-1]
        assert trace.store.get(selected[2])["content"] == "edited by the engine"
