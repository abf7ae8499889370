"""The trace stream between a worker and its supervisor carries the trace exactly, in few bytes."""

from __future__ import annotations

import json

import pytest

from inspector.trace.io import _decode_lists
from inspector.trace.model import Event, KeyLists, Trace
from inspector.worker.codec import TraceAssembler, TraceStreamer, encode_lists_since
from inspector.worker.protocol import FrameReader, encode


def _keys(*names: str | int) -> tuple[str, ...]:
    return tuple(f"k{n}" for n in names)


def _round_trip(lists: list[tuple[str, ...]], cut: int) -> list[tuple[str, ...]]:
    """The lists sent in two batches (before ``cut`` and from it), as the supervisor rebuilds them."""
    messages = {k: {"role": "user", "content": k} for tup in lists for k in tup}
    stored = KeyLists(lists)
    first = _decode_lists(encode_lists_since(stored, 0)[:cut], messages)
    rest = _decode_lists(encode_lists_since(stored, cut), messages, prior=KeyLists(first))
    return first + rest


def test_lists_that_drop_the_oldest_messages_go_as_runs_of_the_previous_list():
    system = ("sys",)
    lists = [system + _keys(*range(i, i + 40)) for i in range(0, 30)]  # each drops one, adds one
    encoded = encode_lists_since(KeyLists(lists), 1)
    assert all(len(entry) <= 6 for entry in encoded)  # [back, 0, 1, start, length, new key]
    assert _round_trip(lists, 10) == lists


def test_a_list_the_store_keeps_as_a_delta_goes_as_that_delta_without_rebuilding_a_list(monkeypatch):
    grown = [("sys",) + _keys(*range(n)) for n in range(10, 60, 3)] + [_keys("in")] * 2
    stored = KeyLists(grown)
    deltas = {i: stored.stored_delta(i) for i in range(len(grown))}
    assert sum(d is not None for d in deltas.values()) > len(grown) // 2
    rebuilt = []
    real = KeyLists.__getitem__
    monkeypatch.setattr(KeyLists, "__getitem__", lambda self, i: rebuilt.append(i) or real(self, i))
    encoded = encode_lists_since(stored, 0)
    whole = [i for i, d in deltas.items() if d is None]
    for i, delta in deltas.items():
        if delta is not None:
            base, prefix, tail = delta
            assert encoded[i] == [i - base, 0, prefix, *tail]
    # Only a list stored whole is read, and the two before it that it may extend.
    assert set(rebuilt) <= {j for i in whole for j in (i, i - 1, i - 2)}
    assert encoded[-1] == [0, "kin"]  # a short list goes as its keys
    monkeypatch.undo()
    assert _round_trip(grown, 5) == grown


def test_a_summary_before_the_recent_messages_and_unrelated_lists_come_back_unchanged():
    lists = [
        _keys(*range(20)),
        _keys(*range(21)),
        ("summary",) + _keys(*range(12, 21)) + ("x",),  # a compaction: new head, a run of the last list
        _keys("a", "b", "c"),  # nothing shared
        _keys(*range(21)) + _keys("c", "b", "a") * 5,  # runs of a list two back, keys repeated
        (),
        _keys(0),
    ]
    for cut in range(len(lists) + 1):
        assert _round_trip(lists, cut) == lists


def _event(i: int, status: dict | None) -> Event:
    return Event(index=0, kind="request", turn=i, request=i, t=float(i), status=status)


def test_statuses_repeated_from_event_to_event_are_sent_once_and_rebuilt_equal():
    trace = Trace({"engine": "x"})
    streamer, assembler = TraceStreamer(trace), TraceAssembler(trace.meta)
    statuses = [{"n": 1}, {"n": 1}, None, {"n": 1}, {"n": 2}, {"n": 2}, None, {}, {}]
    sizes = []
    for i, status in enumerate(statuses):
        trace.add_event(_event(i, dict(status) if status is not None else None))
        data = encode({"type": "batch", "batch": streamer.batch()})
        sizes.append(len(data))
        assembler.add(FrameReader().feed(data)[0]["batch"])
    assembler.add(FrameReader().feed(encode({"type": "done", "batch": streamer.batch(final=True)}))[0]["batch"])
    assert [e.status for e in assembler.trace.events] == statuses
    first = json.loads(encode({"type": "b", "batch": TraceStreamer(trace).batch()})[4:])["batch"]["events"]
    assert [row[8] for row in first] == [{"n": 1}, 0, None, 0, {"n": 2}, 0, None, {}, 0]


def test_a_stored_message_holding_a_session_message_s_text_goes_as_a_reference_to_it():
    long_text = "x" * 5000
    session = [{"role": "user", "content": "hi"}, {"role": "tool", "content": long_text, "tool_call_id": "c1"}]
    trace = Trace({})
    key = trace.store.put({"role": "tool", "tool_call_id": "c1", "content": session[1]["content"]})
    other = trace.store.put({"role": "tool", "content": "y" * 5000})  # not the session's string
    data = encode({"type": "batch", "batch": TraceStreamer(trace, session).batch(final=True)})
    assert len(data) < 5000 + 1000  # one long text crossed the pipe, not two
    batch = FrameReader().feed(data)[0]["batch"]
    assert batch["content_refs"] == {key: 1}
    receiver = [dict(m) for m in session]  # the supervisor's own copy of the session
    rebuilt = TraceAssembler({}, receiver).add(batch)
    assert rebuilt.store.messages == trace.store.messages
    assert list(rebuilt.store.messages[key]) == ["role", "tool_call_id", "content"]  # key order kept
    assert rebuilt.store.messages[key]["content"] is receiver[1]["content"]
    assert rebuilt.store.messages[other]["content"] == "y" * 5000


def test_a_content_reference_to_no_session_text_is_refused():
    trace = Trace({})
    session = [{"role": "tool", "content": "z" * 300}]
    trace.store.put(dict(session[0]))  # a copy of the message, holding the session's string
    batch = FrameReader().feed(encode({"type": "b", "batch": TraceStreamer(trace, session).batch()}))[0]["batch"]
    assert batch["content_refs"]
    with pytest.raises(ValueError):
        TraceAssembler({}, [{"role": "tool", "content": ["not", "text"]}]).add(batch)
    with pytest.raises(ValueError):
        TraceAssembler({}, []).add(batch)


def _batch(streamer: TraceStreamer, final: bool = False) -> dict:
    return FrameReader().feed(encode({"type": "batch", "batch": streamer.batch(final=final)}))[0]["batch"]


def test_token_rows_go_once_and_again_only_when_replaced():
    trace = Trace({})
    first = trace.store.put({"role": "user", "content": "one"})
    trace.store.tokens[first] = {"tiktoken": 1, "rough_chars": 3, "images": 0}
    streamer, assembler = TraceStreamer(trace), TraceAssembler({})
    batch = _batch(streamer)
    assert batch["tokens_added"] == {first: trace.store.tokens[first]}
    assembler.add(batch)
    second = trace.store.put({"role": "user", "content": "two"})
    trace.store.tokens[second] = {"tiktoken": 2, "rough_chars": 3, "images": 0}
    batch = _batch(streamer)
    assert list(batch["tokens_added"]) == [second], "only the new row"
    assembler.add(batch)
    trace.store.tokens[first] = {"tiktoken": 7, "rough_chars": 3, "images": 1}  # replaced after it was sent
    batch = _batch(streamer)
    assert batch["tokens_added"] == {}, "a replaced row waits for the final batch"
    assembler.add(batch)
    final = _batch(streamer, final=True)
    assert "tokens" not in final and final["tokens_added"] == {first: trace.store.tokens[first]}
    assembler.add(final)
    assert dict(assembler.trace.store.tokens.items()) == dict(trace.store.tokens.items())


def test_a_token_table_that_is_a_plain_dict_goes_whole_at_the_end():
    trace = Trace({})
    key = trace.store.put({"role": "user", "content": "one"})
    trace.store.tokens = {key: {"tiktoken": 1}}  # a loaded trace's table: rows may be edited in place
    streamer = TraceStreamer(trace)
    _batch(streamer)
    trace.store.tokens[key]["tiktoken"] = 5
    assert _batch(streamer, final=True)["tokens"] == {key: {"tiktoken": 5}}


def test_the_keys_of_rebuilt_lists_are_the_store_s_own_key_objects():
    trace = Trace({})
    keys = [trace.store.put({"role": "user", "content": f"m{i}"}) for i in range(30)]
    for n in range(1, 30):
        trace.store.put_list(tuple(keys[:n]))
    assembler, streamer = TraceAssembler({}), TraceStreamer(trace)
    assembler.add(_batch(streamer))
    rebuilt = assembler.trace.store
    assert list(rebuilt.lists) == list(trace.store.lists)
    own = {id(k) for k in rebuilt.messages}
    assert all(id(k) in own for lst in rebuilt.lists for k in lst), "no key read again as a copy"
