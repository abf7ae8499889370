"""The supervisor measures the session's messages while a worker replays it: the worker takes those
measurements instead of making them, and the trace is the one it records alone."""

from __future__ import annotations

import json

import pytest

from inspector.bench.host_bench import DropOldest, make_session
from inspector.config import load_config
from inspector.host.hints import MessageHints
from inspector.host.replay import replay, replayable_indices
from inspector.host.responders import WireMessages
from inspector.tokens.counter import TokenCounter
from inspector.worker.ahead import SessionAhead
from inspector.worker.replays import RunRequest, StartedReplays

CONFIG = load_config(None, {"model": {"context_length": 64000}, "inspector": {"token_cache": "off"}})


class _Mailbox:
    """Stands in for a worker: keeps the frames posted to it."""

    def __init__(self) -> None:
        self.frames: list[dict] = []

    def post(self, frame: dict) -> None:
        self.frames.append(json.loads(json.dumps(frame)))  # as the pipe carries it


def _measured(session) -> tuple[MessageHints, list[dict]]:
    box = _Mailbox()
    ahead = SessionAhead(session, [box], CONFIG)
    ahead._measure()  # the thread's body, here to the end
    hints = MessageHints()
    for frame in box.frames:
        assert frame["type"] == "ahead"
        hints.add(frame["tokenizer"], frame["rows"])
    return hints, box.frames


def test_each_replayed_message_is_measured_as_the_replay_would_measure_it():
    session = make_session(40, seed=3)
    hints, frames = _measured(session)
    replayed = [i for turn in session.turns for i in replayable_indices(session, turn)]
    assert len(hints) == len(replayed) and all(f["tokenizer"] == "cl100k_base" for f in frames)
    wire, counter = WireMessages(session), TokenCounter("cl100k_base")
    for i in replayed:
        sent, key = wire.sent_form(i)
        assert hints._rows[i] == (key, wire.measured[id(wire[i])][1], counter.count_message(sent, key=key))


def test_a_replay_given_every_measurement_records_the_same_trace_and_counts_nothing_itself(tmp_path, monkeypatch):
    session = make_session(60, seed=4)
    alone = replay(session, DropOldest(), CONFIG, counter=TokenCounter("cl100k_base"))
    hints, _ = _measured(session)
    counter = TokenCounter("cl100k_base")
    counted: list = []
    real = counter._message_tokens
    monkeypatch.setattr(counter, "_message_tokens", lambda m: counted.append(m) or real(m))
    told = replay(session, DropOldest(), CONFIG, counter=counter, hints=hints)
    assert len(hints) == 0  # every row was taken
    replayed = {json.dumps(m, sort_keys=True) for t in session.turns for m in
                (WireMessages(session).sent_form(i)[0] for i in replayable_indices(session, t))}
    assert not [m for m in counted if json.dumps(m, sort_keys=True) in replayed]
    assert [(e.kind, e.args, e.result, e.state) for e in told.events] == \
        [(e.kind, e.args, e.result, e.state) for e in alone.events]
    assert [(r.tokens, r.usage, r.cache.reason) for r in told.requests] == \
        [(r.tokens, r.usage, r.cache.reason) for r in alone.requests]
    assert told.store.tokens == alone.store.tokens and list(told.store.lists) == list(alone.store.lists)


def test_a_message_the_sessions_json_would_change_is_left_to_the_worker():
    session = make_session(3, seed=5)
    changed = next(i for i, m in enumerate(session.messages) if m.get("role") == "tool")
    session.messages[changed] = {**session.messages[changed], "extra": ("a", "tuple")}  # a list once it crosses
    hints, _ = _measured(session)
    replayed = [i for turn in session.turns for i in replayable_indices(session, turn)]
    assert changed not in hints._rows and len(hints) == len(replayed) - 1


def test_counts_of_another_tokenizer_are_not_taken_but_the_keys_are():
    session = make_session(5, seed=6)
    hints, _ = _measured(session)
    hints.tokenizer = "o200k_base"
    wire, counter = WireMessages(session), TokenCounter("cl100k_base")
    first = replayable_indices(session, session.turns[0])
    assert hints.use(first, wire, counter) == len(first)
    assert all(id(wire[i]) in wire.measured for i in first)
    assert counter.cache_sizes()["messages"] == 0


def test_frames_posted_before_a_worker_starts_follow_its_job():
    from inspector.worker.replays import replay_job
    from inspector.worker.supervisor import Worker

    worker = Worker(replay_job(None, RunRequest("compressor", CONFIG, "c"), []), CONFIG, label="c")
    worker.post({"type": "ahead", "tokenizer": "", "rows": []})
    assert worker._outbox.empty()  # held until the job goes
    assert worker._early is not None and len(worker._early) == 1


def _events(trace) -> list[tuple]:
    """What a trace recorded, but the sandbox folder its run happened to get."""
    return [(e.kind, {k: v for k, v in e.args.items() if k != "hermes_home"}, e.result, e.state, e.status)
            for e in trace.events]


@pytest.mark.parametrize("ahead", [True, False])
def test_a_worker_replay_records_the_same_trace_whether_or_not_it_was_measured_ahead(ahead):
    session = make_session(80, seed=7)
    started = StartedReplays([RunRequest("compressor", CONFIG, "compressor")], [], ahead=ahead)
    (outcome,) = started.send(session)
    assert outcome.ok, outcome.describe()
    alone = replay(session, _compressor(), CONFIG, counter=TokenCounter("cl100k_base"))
    trace = outcome.trace
    assert _events(trace) == _events(alone)
    assert [(r.tokens, r.usage, r.cache.reason) for r in trace.requests] == \
        [(r.tokens, r.usage, r.cache.reason) for r in alone.requests]
    assert trace.store.tokens == alone.store.tokens and list(trace.store.lists) == list(alone.store.lists)
    assert ("measured_ahead" in trace.meta) is ahead


def _compressor():
    from inspector.engines.discovery import load_engine

    return load_engine("compressor", CONFIG)
