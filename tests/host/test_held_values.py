"""A replay's trace holds much of what it records packed or as what it is made of
(inspector.trace.packed); saved and loaded, or streamed from a worker, it reads the same."""

from __future__ import annotations

import dataclasses
import json

from inspector.cache.reasons import HitWords
from inspector.cache.simulator import CacheSimulator
from inspector.host.replay import replay
from inspector.trace.io import load_trace, save_trace
from inspector.trace.model import EV_REQUEST, EV_RESPONSE, NO_BLOCKS, STATUS_FROM_STATE, Request
from inspector.trace.packed import is_packed
from inspector.worker.codec import TraceAssembler, TraceStreamer

from .conftest import CountingEngine, coding_session


def _replayed(config):
    session = coding_session(10, tool_chars=40_000)  # past the window's threshold: compactions, lists restart
    return session, replay(session, CountingEngine(), config,
                           simulator=CacheSimulator("anthropic", model="claude-sonnet-4-5"))


def _read(trace):
    """What a reader sees of every event and request (but times: a file keeps them to the microsecond)."""
    events = [{**dataclasses.asdict(ev), "t": None, "duration": None} for ev in trace.events]
    return events, [dataclasses.asdict(r) for r in trace.requests], dict(trace.store.tokens.items()), list(trace.store.lists)


def test_a_replays_held_values_are_what_the_trace_holds_for_them(config):
    _, trace = _replayed(config)
    markers = [ev for ev in trace.events if ev.kind == EV_REQUEST]
    calls = [ev for ev in trace.events if ev.kind == EV_RESPONSE]
    assert markers and all(type(ev.args_held) is Request for ev in markers + calls)
    assert all(ev.status_held is STATUS_FROM_STATE for ev in calls)
    assert any(r.cache.reason_kind == "hit" for r in trace.requests) and trace.compress_events


def test_a_replays_trace_saved_and_loaded_reads_the_same_at_every_event(config, tmp_path):
    _, trace = _replayed(config)
    save_trace(trace, tmp_path / "run.trace.json")
    loaded = load_trace(tmp_path / "run.trace.json")
    assert _read(loaded) == _read(trace)
    for k in range(len(trace)):
        assert loaded.status_at(k) == trace.status_at(k) and loaded.state_at(k) == trace.state_at(k)


def test_a_replays_trace_streamed_in_batches_reads_the_same(config):
    session, trace = _replayed(config)
    streamer = TraceStreamer(trace, session.messages)
    assembler = TraceAssembler(trace.meta, session.messages)
    assembler.add(json.loads(json.dumps(streamer.batch(final=True))))
    assert _read(assembler.trace) == _read(trace)


def _held(value) -> str:  # noqa: ANN001 - any held value
    """How a value is held, where it is held as something other than itself."""
    if type(value) is Request:
        return "its request"
    if value is STATUS_FROM_STATE:
        return "from its state"
    if type(value) is HitWords:
        return "hit words"
    if value is NO_BLOCKS:
        return "no blocks"
    return "packed" if is_packed(value) else "as it is"


def _holdings(trace) -> list[tuple[str, ...]]:  # noqa: ANN001 - Trace
    return [(_held(ev.args_held), _held(ev.result_held), _held(ev.status_held)) for ev in trace.events] + [
        (_held(r.tokens_held), _held(r.usage_held), _held(r.cache.reason_held), _held(r.cache.block_tokens_held))
        for r in trace.requests]


def test_a_replays_trace_streamed_in_batches_is_held_as_the_replay_holds_it(config):
    """The supervisor's copy of a worker's trace takes no more memory than the worker's own: what
    the replay holds as its request, its state, hit words or packed, the copy holds so too (it may
    pack a few more dicts, which read the same)."""
    session, trace = _replayed(config)
    streamer = TraceStreamer(trace, session.messages)
    assembler = TraceAssembler(trace.meta, session.messages)
    assembler.add(json.loads(json.dumps(streamer.batch(final=True))))
    here, there = _holdings(trace), _holdings(assembler.trace)
    assert len(here) == len(there)
    differ = [(i, a, b) for i, (a, b) in enumerate(zip(here, there))
              if any(x != y and not (x == "as it is" and y == "packed") for x, y in zip(a, b))]
    assert not differ, differ[:5]
    assert {"its request", "from its state", "hit words", "no blocks", "packed"} <= {h for row in there for h in row}
