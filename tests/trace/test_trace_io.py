"""Saving and loading traces and comparison bundles: exact round trips, clear errors, small files."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.trace import io as trace_io
from inspector.trace.io import (
    TraceCorruptError,
    TraceFormatError,
    load_bundle,
    load_trace,
    save_bundle,
    save_marks,
    save_trace,
)
from inspector.trace.model import (
    EV_COMPRESS,
    EV_REQUEST,
    EV_SELECT,
    EV_TURN,
    CacheInfo,
    Event,
    Fault,
    KeyLists,
    Mark,
    Request,
    Trace,
    message_key,
)
from inspector.trace.summary import summarise


def make_trace(turns: int = 4, *, engine: str = "compressor") -> Trace:
    """A small trace with every kind of field the host records."""
    trace = Trace({"engine": {"name": engine, "config": {"threshold": 0.5}}, "session": {"id": "s1"}})
    store = trace.store
    trace.tool_schemas = [{"type": "function", "function": {"name": "read", "parameters": {}}}]
    system = store.put({"role": "system", "content": "You are a coding agent. ünïcödé ✓"})
    history: list[str] = []
    for turn in range(turns):
        user = store.put({"role": "user", "content": f"turn {turn}: fix bug #{turn}"})
        history.append(user)
        trace.add_event(Event(0, EV_TURN, turn=turn, t=float(turn), args={"user": {"$msg": user}}))
        assembled = store.put_list([system, *history])
        selected = store.put_list([system, *history[-3:]])
        sel = trace.add_event(
            Event(
                0,
                EV_SELECT,
                turn=turn,
                t=turn + 0.1,
                duration=0.002,
                args={"messages": {"$list": assembled}},
                result={"$list": selected},
                state=(100 * turn, 10, 100 * turn + 10, 5000, 10000, 0),
                status={"name": engine, "ok": True},
            )
        )
        req = Request(
            index=len(trace.requests),
            turn=turn,
            call=0,
            event=sel.index + 1,
            assembled=assembled,
            selected=selected,
            selected_by_engine=assembled != selected,
            tokens={"tiktoken": 50 * turn, "rough": 60 * turn},
            usage={"prompt_tokens": 50 * turn, "cache_read_tokens": 10},
            recorded={"prompt_tokens": 49 * turn} if turn % 2 else None,
            cache=CacheInfo(
                read=10,
                write=5,
                uncached=3,
                break_index=2 if turn else None,
                reason="prefix broke at message 2" if turn else "cold start",
                reason_kind="prefix_break" if turn else "cold",
                cause_event=sel.index if turn else None,
                block_tokens=[7] + [5 + i for i in range(len(store.get_list(selected)))],
                cost=0.25,
            ),
            timestamp=1700000000.5 + turn,
        )
        trace.requests.append(req)
        trace.add_event(Event(0, EV_REQUEST, turn=turn, request=req.index))
        answer = store.put({"role": "assistant", "content": f"fixed {turn}", "_meta": [1, 2]})
        req.response_key = answer
        history.append(answer)
        for key in (system, user, answer):
            store.tokens[key] = {"tiktoken": len(key), "rough": 3}
    trace.add_event(
        Event(
            0,
            EV_COMPRESS,
            turn=turns - 1,
            duration=30.0,
            fault=Fault("timeout", "compress exceeded 30 s", "Traceback (most recent call last):\n  ..."),
            thread="compress-0",
            note="discarded, as Hermes does",
        )
    )
    trace.marks = [Mark(1, "first select", "look here"), Mark(len(trace.events) - 1, "timeout", "")]
    return trace.finish()


def event_dicts(trace: Trace) -> list[dict]:
    return [dataclasses.asdict(ev) for ev in trace.events]


def assert_same(a: Trace, b: Trace) -> None:
    assert b.meta == a.meta
    assert b.store.messages == a.store.messages
    assert b.store.tokens == a.store.tokens
    assert b.store.lists == a.store.lists
    assert event_dicts(b) == event_dicts(a)
    assert [dataclasses.asdict(r) for r in b.requests] == [dataclasses.asdict(r) for r in a.requests]
    assert b.marks == a.marks
    assert b.tool_schemas == a.tool_schemas
    # Same answers to the per-event queries the panels use.
    for k in range(len(a)):
        assert b.state_at(k) == a.state_at(k)
        assert b.request_at(k) == a.request_at(k)
    assert b.fault_events == a.fault_events and b.compress_events == a.compress_events


@pytest.mark.parametrize("name", ["run.trace.json", "run.trace.json.gz"])
def test_round_trip_is_exact(tmp_path: Path, name: str):
    trace = make_trace()
    path = tmp_path / name
    save_trace(trace, path)
    loaded = load_trace(path)
    assert_same(trace, loaded)
    assert loaded._finished  # panels query at once; the loader must have built the arrays
    ev = loaded.events[-1]
    assert (
        isinstance(ev.fault, Fault)
        and ev.fault.kind == "timeout"
        and ev.fault.traceback.startswith("Traceback")
    )
    assert isinstance(loaded.events[1].state, tuple)
    assert isinstance(loaded.requests[1].cache, CacheInfo)
    assert loaded.requests[1].cache.block_tokens == trace.requests[1].cache.block_tokens
    assert all(isinstance(m, Mark) for m in loaded.marks)
    raw = path.read_bytes()
    assert (
        raw[:2] == b"\x1f\x8b"
        if name.endswith(".gz")
        else raw.startswith(b'{"format":"context-inspector-trace"')
    )
    # Messages keep their keys: the store can keep interning after a load.
    assert loaded.store.put_list(trace.store.lists[2]) == 2


def test_empty_trace_round_trips(tmp_path: Path):
    path = tmp_path / "empty.json"
    save_trace(Trace(), path)
    loaded = load_trace(path)
    assert len(loaded) == 0 and loaded.store.lists == [] and loaded.meta == {}


def test_gzip_is_detected_by_magic_not_name(tmp_path: Path):
    trace = make_trace()
    gz = tmp_path / "a.json.gz"
    save_trace(trace, gz)
    renamed = tmp_path / "a.json"
    gz.rename(renamed)
    assert_same(trace, load_trace(renamed))


def test_file_is_versioned_json_without_python_objects(tmp_path: Path):
    path = tmp_path / "t.json"
    save_trace(make_trace(), path)
    doc = json.loads(path.read_text("utf-8"))
    assert doc["format"] == "context-inspector-trace" and doc["version"] == 1
    for section in ("meta", "messages", "tokens", "lists", "events", "requests", "marks", "tool_schemas"):
        assert section in doc
    assert "ünïcödé" in path.read_text("utf-8")  # readable, not \\u-escaped


def test_odd_text_survives(tmp_path: Path):
    trace = Trace()
    weird = {"role": "tool", "content": "lone surrogate \udcff, NUL \x00, emoji 🧪, rtl \u202e"}
    key = trace.store.put(weird)
    trace.store.put_list([key])
    path = tmp_path / "w.json"
    save_trace(trace, path)
    assert load_trace(path, verify=True).store.get(key) == weird


# -- engine output (format version 2) ----------------------------------------------------------

DATA = Path(__file__).parent / "data"


def with_output(trace: Trace) -> Trace:
    trace.events[1].output = "INFO my_engine: Compressed 12 messages\nprinted ünïcödé ✓\n"
    trace.events[-1].output = "… 3,210 more characters dropped (this event's limit of engine output)"
    return trace


@pytest.mark.parametrize("name", ["run.trace.json", "run.trace.json.gz"])
def test_engine_output_round_trips_as_version_2(tmp_path: Path, name: str):
    trace = with_output(make_trace())
    path = tmp_path / name
    save_trace(trace, path)
    loaded = load_trace(path)
    assert_same(trace, loaded)
    assert loaded.events[1].output == trace.events[1].output
    assert [ev.output is None for ev in loaded.events].count(False) == 2
    raw = path.read_bytes()
    assert json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)["version"] == 2


def test_a_trace_without_engine_output_stays_version_1_for_older_inspectors(tmp_path: Path):
    path = tmp_path / "quiet.json"
    save_trace(make_trace(), path)
    assert json.loads(path.read_text("utf-8"))["version"] == 1


def _keyed_now(trace: Trace) -> Trace:
    """``trace`` with its messages keyed as this inspector keys them (a file may be older)."""
    now = {key: message_key(message) for key, message in trace.store.messages.items()}
    trace.store.messages = {now[key]: message for key, message in trace.store.messages.items()}
    trace.store.tokens = {now[key]: counts for key, counts in trace.store.tokens.items()}
    trace.store.lists = KeyLists([tuple(now[k] for k in keys) for keys in trace.store.lists])

    def rekey(value):
        if isinstance(value, dict):
            if list(value) == ["$msg"]:
                return {"$msg": now[value["$msg"]]}
            return {k: rekey(v) for k, v in value.items()}
        return [rekey(v) for v in value] if isinstance(value, list) else value

    for ev in trace.events:
        ev.args, ev.result = rekey(ev.args), rekey(ev.result)
    for request in trace.requests:
        request.response_key = now.get(request.response_key, request.response_key)
    return trace


def test_a_trace_saved_by_the_previous_inspector_loads_without_output():
    """``data/trace_v1.json`` was written by the inspector before engine output was recorded."""
    loaded = load_trace(DATA / "trace_v1.json")
    expected = make_trace(2)
    assert json.loads((DATA / "trace_v1.json").read_text("utf-8"))["version"] == 1
    assert set(loaded.store.messages) != set(expected.store.messages)  # keyed by an earlier scheme
    assert_same(expected, _keyed_now(loaded))
    assert all(ev.output is None for ev in loaded.events)


def test_bundle_with_engine_output_round_trips_as_version_2(tmp_path: Path):
    a, b = with_output(make_trace(3)), make_trace(2)
    path = tmp_path / "cmp.json"
    save_bundle([a, b], path)
    traces, _ = load_bundle(path)
    assert_same(a, traces[0])
    assert_same(b, traces[1])
    assert json.loads(path.read_text("utf-8"))["version"] == 2


def test_engine_output_that_is_not_text_is_a_clear_error(tmp_path: Path):
    path = tmp_path / "t.json"
    save_trace(with_output(make_trace()), path)
    doc = json.loads(path.read_text("utf-8"))
    doc["events"]["output"]["1"] = {"html": "<b>"}
    write_doc(path, doc)
    with pytest.raises(TraceCorruptError, match="output is not text"):
        load_trace(path)


# -- errors ---------------------------------------------------------------------------------


def write_doc(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), "utf-8")
    return path


def test_newer_version_is_a_clear_error(tmp_path: Path):
    path = write_doc(tmp_path / "future.json", {"format": "context-inspector-trace", "version": 3})
    with pytest.raises(TraceFormatError) as info:
        load_trace(path)
    err = info.value
    assert not isinstance(err, TraceCorruptError)
    assert err.found_version == 3 and err.supported_version == 2
    text = str(err)
    assert str(path) in text and "version 3" in text and "version 2" in text and "newer" in text


@pytest.mark.parametrize(
    "doc",
    [
        {"format": "something-else", "version": 1},
        {"version": 1, "messages": {}},
        {"format": "context-inspector-trace", "version": "1"},
        {"format": "context-inspector-trace", "version": 0},
        {"format": "context-inspector-trace"},
    ],
)
def test_unknown_format_or_version_is_a_clear_error(tmp_path: Path, doc: dict):
    path = write_doc(tmp_path / "x.json", doc)
    with pytest.raises(TraceFormatError) as info:
        load_trace(path)
    assert str(path) in str(info.value) and "version 2" in str(info.value)


def test_top_level_not_an_object(tmp_path: Path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]", "utf-8")
    with pytest.raises(TraceFormatError, match="not an inspector trace"):
        load_trace(path)


def test_bundle_and_trace_point_at_each_other(tmp_path: Path):
    bundle = tmp_path / "b.json"
    save_bundle([make_trace()], bundle)
    with pytest.raises(TraceFormatError, match="load_bundle"):
        load_trace(bundle)
    single = tmp_path / "t.json"
    save_trace(make_trace(), single)
    with pytest.raises(TraceFormatError, match="load_trace"):
        load_bundle(single)


def _valid_doc(tmp_path: Path) -> dict:
    path = tmp_path / "valid.json"
    save_trace(make_trace(), path)
    return json.loads(path.read_text("utf-8"))


def _corrupt_cases(tmp_path: Path) -> dict[str, bytes]:
    good = (tmp_path / "valid.json").read_bytes()
    gz = gzip.compress(good)
    cases = {
        "empty": b"",
        "truncated": good[: len(good) // 2],
        "binary garbage": bytes(range(128, 256)),
        "text garbage": b"hello, this is not JSON",
        "json scalar": b"42",
        "truncated gzip": gz[: len(gz) // 2],
        "bad gzip": b"\x1f\x8b" + b"not really gzip",
        "not utf-8": b'{"format": "\xff\xfe"}',
    }
    doc = json.loads(good)

    def mutated(fn) -> bytes:
        d = json.loads(good)
        fn(d)
        return json.dumps(d).encode()

    cases["unknown key in list"] = mutated(lambda d: d["lists"][0].append("0" * 20))
    cases["list refers forward"] = mutated(lambda d: d["lists"].__setitem__(0, [5, 0, 3]))
    cases["copy out of range"] = mutated(lambda d: d["lists"][1].extend([0, 999]))
    # Events and requests are columns: one array per field, sparse maps keyed by position.
    cases["event without kind"] = mutated(lambda d: d["events"]["kind"].__setitem__(0, 99))
    cases["event kinds cut short"] = mutated(lambda d: d["events"]["kind"].pop())
    cases["event request out of range"] = mutated(lambda d: d["events"]["request"].__setitem__(0, 99))
    cases["request list missing"] = mutated(lambda d: d["requests"]["selected"].__setitem__(0, 10**6))
    cases["request missing field"] = mutated(lambda d: d["requests"].pop("turn"))
    cases["fault without message"] = mutated(
        lambda d: d["events"]["fault"][str(d["events"]["count"] - 1)].pop("message")
    )
    cases["unknown message index"] = mutated(lambda d: d["lists"][0].append(-(10**6)))
    cases["unknown shape"] = mutated(lambda d: d["events"]["args"].__setitem__(0, [999, 1]))
    cases["state delta without base"] = mutated(lambda d: d["events"]["state"].__setitem__(1, [1, 5]))
    cases["mark without event"] = mutated(lambda d: d["marks"][0].pop("event"))
    cases["messages not a dict"] = mutated(lambda d: d.__setitem__("messages", []))
    cases["events not a list"] = mutated(lambda d: d.__setitem__("events", 5))
    # Wrong types that would load and only fail when a panel or summary read them.
    cases["cost is text"] = mutated(lambda d: d["requests"]["cache"].__setitem__("cost", {"0": "free"}))
    cases["tokens are null"] = mutated(lambda d: d["requests"]["tokens"].__setitem__(0, None))
    assert doc["lists"]  # the mutations above have something to break
    return cases


def test_corrupt_files_raise_clear_errors(tmp_path: Path):
    _valid_doc(tmp_path)
    for label, data in _corrupt_cases(tmp_path).items():
        path = tmp_path / "broken.json"
        path.write_bytes(data)
        with pytest.raises(TraceFormatError) as info:
            load_trace(path)
        assert str(path) in str(info.value), label
        err = info.value
        # No chained "During handling of the above exception..." traceback for the user.
        assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__), label


def test_verify_detects_edited_messages(tmp_path: Path):
    doc = _valid_doc(tmp_path)
    key = next(iter(doc["messages"]))
    doc["messages"][key]["content"] = "tampered"
    path = write_doc(tmp_path / "edited.json", doc)
    load_trace(path)  # the default load trusts the keys (fast)
    with pytest.raises(TraceCorruptError, match="content hash"):
        load_trace(path, verify=True)


def test_missing_file_is_an_os_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        load_trace(tmp_path / "nope.json")


# -- atomic writes and marks ----------------------------------------------------------------


def test_save_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "t.json"
    save_trace(make_trace(2), path)
    before = path.read_bytes()

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(trace_io.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        save_trace(make_trace(5), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]  # no temp file left behind


def test_saved_file_is_not_private(tmp_path: Path):
    path = tmp_path / "t.json"
    save_trace(make_trace(1), path)
    assert path.stat().st_mode & 0o044  # readable like any document, not mkstemp's 0600


@pytest.mark.parametrize("name", ["m.json", "m.json.gz"])
def test_save_marks_updates_only_marks(tmp_path: Path, name: str):
    trace = make_trace()
    path = tmp_path / name
    save_trace(trace, path)
    marks = [Mark(0, "start", "the very first event"), Mark(3, "", "note only")]
    save_marks(path, marks)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    loaded = load_trace(path)
    assert loaded.marks == marks
    trace.marks = marks
    assert_same(trace, loaded)
    with pytest.raises(ValueError):
        save_marks(path, marks, run=0)


def test_save_marks_refuses_a_newer_file(tmp_path: Path):
    path = write_doc(tmp_path / "f.json", {"format": "context-inspector-trace", "version": 9, "marks": []})
    with pytest.raises(TraceFormatError):
        save_marks(path, [Mark(0)])
    assert json.loads(path.read_text())["version"] == 9


# -- delta-encoded key lists ----------------------------------------------------------------


def _growing_trace(turns: int, *, window: int | None = None) -> Trace:
    trace = Trace()
    store = trace.store
    system = store.put({"role": "system", "content": "sys"})
    history: list[str] = []
    for t in range(turns):
        history.append(store.put({"role": "user", "content": f"message {t}"}))
        store.put_list([system, *history])
        if window:
            store.put_list([system, *history[-window:]])
        store.put_list(history)
    return trace


@pytest.mark.parametrize("window", [None, 50])
def test_key_lists_cost_distinct_keys_not_turns_times_context(tmp_path: Path, window: int | None):
    turns = 1000
    trace = _growing_trace(turns, window=window)
    total_keys = sum(len(lst) for lst in trace.store.lists)
    path = tmp_path / "grow.json"
    save_trace(trace, path)
    doc = json.loads(path.read_text("utf-8"))
    lists_bytes = len(json.dumps(doc["lists"], separators=(",", ":")))
    naive = total_keys * 23  # every list written out key by key
    print(f"\nwindow={window}: lists {lists_bytes / 1024:.0f} KiB vs {naive / 1024:.0f} KiB written whole")
    assert total_keys > 300 * turns  # quadratic growth is what we avoid
    # Each key is written literally about once; every list adds a few small integers.
    assert lists_bytes < 23 * (turns + 1) + 40 * len(trace.store.lists)
    assert load_trace(path).store.lists == trace.store.lists


keys = st.sampled_from([f"{i:020x}" for i in range(12)])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(keys, max_size=40), max_size=12))
def test_property_any_sequence_of_lists_round_trips(lists):
    trace = Trace()
    for key in {k for lst in lists for k in lst}:
        trace.store.messages[key] = {"role": "user", "content": key}
    for lst in lists:
        trace.store.put_list(lst)
    encoded = trace_io._encode_lists(trace.store.lists)
    assert trace_io._decode_lists(json.loads(json.dumps(encoded)), trace.store.messages) == trace.store.lists


# -- comparison bundles ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cmp.json", "cmp.json.gz"])
def test_bundle_round_trip_shares_messages(tmp_path: Path, name: str):
    a = make_trace(4, engine="compressor")
    b = make_trace(6, engine="window")
    first = next(iter(b.store.tokens))
    b.store.tokens[first] = {**b.store.tokens[first], "tiktoken": 12345}  # a run with its own count
    path = tmp_path / name
    save_bundle([a, b], path, meta={"session": "demo", "engines": ["compressor", "window"]})
    traces, meta = load_bundle(path)
    assert meta == {"session": "demo", "engines": ["compressor", "window"]}
    assert len(traces) == 2
    assert_same(a, traces[0])
    assert_same(b, traces[1])
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    assert doc["format"] == "context-inspector-comparison" and doc["version"] == 1
    # Shared messages are written once.
    assert len(doc["messages"]) == len(set(a.store.messages) | set(b.store.messages))
    assert len(doc["messages"]) < len(a.store.messages) + len(b.store.messages)


def test_bundle_marks_per_run(tmp_path: Path):
    path = tmp_path / "cmp.json"
    save_bundle([make_trace(2), make_trace(3)], path)
    save_marks(path, [Mark(2, "here")], run=1)
    traces, _ = load_bundle(path)
    assert traces[1].marks == [Mark(2, "here")]
    assert traces[0].marks == make_trace(2).marks
    with pytest.raises(ValueError):
        save_marks(path, [], run=None)


def test_bundle_errors(tmp_path: Path):
    path = write_doc(tmp_path / "b.json", {"format": "context-inspector-comparison", "version": 3})
    with pytest.raises(TraceFormatError, match="version 3"):
        load_bundle(path)
    path = write_doc(
        tmp_path / "c.json",
        {"format": "context-inspector-comparison", "version": 1, "messages": {}, "runs": [{"keys": ["zz"]}]},
    )
    with pytest.raises(TraceCorruptError, match="unknown message"):
        load_bundle(path)
    empty = tmp_path / "e.json"
    save_bundle([], empty)
    assert load_bundle(empty) == ([], {})


# -- the columnar encoding: every field, every escape hatch ---------------------------------


def _tricky_trace() -> Trace:
    """Values each column codec must carry exactly, including the ones it cannot compress."""
    trace = Trace({"engine": {"name": "tricky"}})
    store = trace.store
    text = "a long user message that is repeated with and without its timestamp " * 2
    wire = store.put({"role": "user", "content": text})
    raw = store.put({"role": "user", "content": text, "timestamp": 1700000000.25})
    reordered = store.put({"content": text, "role": "user"})  # same key as ``wire``: key order ignored
    assert reordered == wire
    renamed = store.put({"role": "assistant", "content": text, "name": "x"})
    store.messages["0" * 20] = ["not", "a", "dict"]  # a damaged store still saves
    answer = store.put({"role": "assistant", "content": "done", "tool_calls": [{"id": "c1"}]})
    a = store.put_list([wire, answer])
    b = store.put_list([raw, renamed, answer])
    usage = {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127, "input_tokens": 20,
             "output_tokens": 7, "cache_read_tokens": 90, "cache_write_tokens": 10, "reasoning_tokens": 1}
    odd_usage = dict(usage, total_tokens=5)  # not derivable: kept literally
    reasons = ["hit: read 1,457 of 1,798 tokens (messages 0–3), wrote 341",
               "prefix broke at message 1 of 109 (was 'user' key cf0ec4d0…); read 0 of 22,358 tokens",
               "odd 007 and 1,00 and 12,3456 and 3.14 \x00 control", "", "no numbers"]
    for i, reason in enumerate(reasons):
        trace.requests.append(Request(
            index=i, turn=i // 2, call=i % 2, event=3 * i + 1, assembled=a, selected=b if i % 2 else a,
            selected_by_engine=bool(i % 2), tools=a if i == 2 else None,
            tokens={"tiktoken": 10 * i, "rough": 11 * i, "tools": 0, "completion": 3},
            usage=usage if i != 3 else odd_usage,
            recorded=None if i % 2 else ({} if i == 4 else dict(usage)),
            cache=CacheInfo(read=i, write=2 * i, uncached=3, break_index=None if i == 1 else i,
                            reason=reason, reason_kind=["hit", "prefix_break", "cold", "", "ttl"][i],
                            cause_event=2 if i == 1 else None, block_tokens=[5, 6, 7 + i] if i != 2 else [],
                            cost=None if i else 0.0),
            timestamp=[1700000001.5, None, 1700000002, 1700000001.125, 0.1 + 0.2][i],
            response_key=[answer, None, "f" * 20, wire, answer][i],
        ))
    states = [(0, 0, 0, 96000, 128000, 0), (469, 18, 487, 96000, 128000, 0), (-1, 0, 487, 96000, 128000, 1),
              (-1, 0, 487, 96000, 128000, 1), (1, 2, 3)]
    statuses = [{"used": 0.0, "count": 0}, {"used": 2.0828124999999997, "count": 0},
                {"used": 2.0828124999999997, "count": 0}, {"count": 1, "used": 1.0}, {"nested": {"a": [1, None]}}]
    for i in range(15):
        r = i // 3 if i % 3 else None
        trace.add_event(Event(
            0, [EV_TURN, EV_REQUEST, EV_SELECT][i % 3], turn=None if i == 0 else i // 3, request=r,
            t=round(i * 0.001234, 6), duration=[0.0, 3e-06, 2.0][i % 3],  # kept to the microsecond
            args=[{}, None, {"messages": {"$list": a}, "site": "pre_api", "n": i, "flag": True, "none": None},
                  {"usage": trace.requests[r].usage} if r is not None else {"k": "v" * 50},
                  {"$msg": answer, "key": wire, "unknown": {"$msg": "9" * 20}, "list": [1, 2]}][i % 5],
            result=[None, False, [1, {"$list": b}], {"$msg": trace.requests[r].response_key} if r is not None else 3,
                    "text"][i % 5],
            state=states[i % 5] if i % 4 else None,
            status=statuses[i % 5] if i % 3 else None,
            fault=Fault("exception", "boom", None) if i == 7 else None,
            thread="compress-0" if i == 8 else None,
            note="a note" if i in (2, 9) else None,
        ))
    store.tokens[wire] = {"tiktoken": 30, "rough_chars": 140, "images": 0}
    store.tokens[answer] = {"tiktoken": 3, "images": 1}
    store.tokens[renamed] = {}
    store.tokens["e" * 20] = {"tiktoken": 1}  # a count for a key the store does not hold
    store.tokens[raw] = {"tiktoken": None}
    trace.marks = [Mark(3, "here", "and a note")]
    return trace.finish()


@pytest.mark.parametrize("name", ["x.json", "x.json.gz"])
def test_columnar_round_trip_is_exact(tmp_path: Path, name: str):
    trace = _tricky_trace()
    path = tmp_path / name
    save_trace(trace, path)
    loaded = load_trace(path)
    assert_same(trace, loaded)
    for k in range(len(trace)):
        assert loaded.status_at(k) == trace.status_at(k)
    assert loaded.requests[1].recorded is None and loaded.requests[4].recorded == {}
    assert type(loaded.requests[2].timestamp) is int and loaded.requests[1].timestamp is None
    assert loaded.events[0].turn is None and loaded.events[1].args is None
    assert loaded.events[8].args["usage"] is loaded.requests[2].usage  # shared, as the host records it


def test_columnar_file_is_compact(tmp_path: Path):
    """Repeated shapes, usage dicts, states and reasons are written once, not per event."""
    path = tmp_path / "c.json"
    save_trace(make_trace(40), path)
    doc = json.loads(path.read_text("utf-8"))
    events, requests = doc["events"], doc["requests"]
    assert events["count"] == len(events["kind"]) == len(events["t"])
    assert len(events["shapes"]) < 10 and len(events["kinds"]) == 4
    assert requests["count"] == 40 and len(requests["cache"]["templates"]) <= 2


def test_bundle_round_trip_of_tricky_runs(tmp_path: Path):
    a, b = _tricky_trace(), make_trace(3)
    path = tmp_path / "b.json"
    save_bundle([a, b], path)
    traces, _ = load_bundle(path, verify=False)
    assert_same(a, traces[0])
    assert_same(b, traces[1])


def test_delta_encoded_messages_are_verified(tmp_path: Path):
    trace = _tricky_trace()
    del trace.store.messages["0" * 20]  # verify demands dicts
    path = tmp_path / "v.json"
    save_trace(trace, path)
    doc = json.loads(path.read_text("utf-8"))
    assert any(isinstance(m, list) for m in doc["messages"].values())  # some message is a delta
    assert load_trace(path, verify=True).store.messages == trace.store.messages


def test_the_summary_of_a_reopened_trace_is_the_summary_it_had(tmp_path: Path):
    # Durations are saved to the microsecond; 151 hooks of 0.99 µs sum to 149.49 µs exactly but
    # 151 µs once saved, either side of a rounding boundary of the 0.1 ms figure.
    trace = Trace()
    for i in range(151):
        trace.add_event(Event(index=0, kind="should_compress", turn=0, t=i * 1e-3, duration=0.99e-6))
    trace.finish()
    path = tmp_path / "t.json"
    save_trace(trace, path)
    assert summarise(load_trace(path)) == summarise(trace)


def test_only_a_file_that_opens_with_a_format_name_is_a_saved_trace():
    assert trace_io.saved_kind_of(b'{"format":"context-inspector-trace","version":1}') == trace_io.TRACE_FORMAT
    assert trace_io.saved_kind_of(b' {\n  "format": "context-inspector-comparison"') == trace_io.BUNDLE_FORMAT
    mention = json.dumps({"role": "user", "content": 'why does my "context-inspector-trace" fail?'}).encode()
    assert trace_io.saved_kind_of(mention) is None
    assert trace_io.saved_kind_of(b'["context-inspector-trace"]') is None


def test_reading_and_writing_a_trace_pause_automatic_collection_and_restore_it(tmp_path: Path, monkeypatch):
    import gc

    seen: list[tuple[str, bool]] = []
    encode, decode = trace_io._encode_run, trace_io._decode_run
    monkeypatch.setattr(trace_io, "_encode_run", lambda *a: seen.append(("save", gc.isenabled())) or encode(*a))
    monkeypatch.setattr(trace_io, "_decode_run", lambda *a: seen.append(("load", gc.isenabled())) or decode(*a))
    assert gc.isenabled()
    path = tmp_path / "t.json.gz"
    save_trace(make_trace(), path)
    load_trace(path)
    save_bundle([make_trace(), make_trace(engine="lcm")], tmp_path / "b.json")
    load_bundle(tmp_path / "b.json")
    assert seen and {kind for kind, _ in seen} == {"save", "load"}
    assert not any(on for _, on in seen), "paused while the runs are encoded and decoded"
    assert gc.isenabled()
    doc = json.loads(gzip.decompress(path.read_bytes()))
    doc["events"] = {"kind": "not a column"}
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(doc))
    with pytest.raises(TraceCorruptError):
        load_trace(damaged)
    assert gc.isenabled(), "restored after a damaged file too"


@pytest.mark.parametrize("name", ["run.trace.json", "run.trace.json.gz"])
def test_columns_encoded_while_the_file_is_written_give_the_same_bytes(tmp_path: Path, monkeypatch, name: str):
    import contextlib
    import threading

    trace, a, b = make_trace(40), make_trace(6, engine="compressor"), make_trace(9, engine="window")
    save_trace(trace, tmp_path / f"ahead.{name}")
    save_bundle([a, b], tmp_path / f"ahead.bundle.{name}")
    threads: list[str] = []
    real = trace_io._encode_events
    monkeypatch.setattr(trace_io, "_encode_events",
                        lambda *args: threads.append(threading.current_thread().name) or real(*args))
    save_trace(trace, tmp_path / f"ahead2.{name}")
    assert threads and all(t.startswith("inspector-encode") for t in threads)  # made on the encoding thread
    monkeypatch.setattr(trace_io, "_encoding_ahead", lambda: contextlib.nullcontext(lambda fn, *args: fn(*args)))
    save_trace(trace, tmp_path / f"inline.{name}")
    save_bundle([a, b], tmp_path / f"inline.bundle.{name}")
    assert (tmp_path / f"ahead.{name}").read_bytes() == (tmp_path / f"inline.{name}").read_bytes()
    assert (tmp_path / f"ahead.bundle.{name}").read_bytes() == (tmp_path / f"inline.bundle.{name}").read_bytes()


@pytest.mark.parametrize("save", ["trace", "bundle"])
def test_a_column_that_fails_to_encode_leaves_the_old_file_and_no_temporary_one(tmp_path: Path, monkeypatch, save):
    path = tmp_path / "t.json.gz"
    save_trace(make_trace(2), path)
    before = path.read_bytes()

    def boom(*args):
        raise ValueError("cannot encode")

    monkeypatch.setattr(trace_io, "_encode_requests", boom)
    with pytest.raises(ValueError, match="cannot encode"):
        save_trace(make_trace(5), path) if save == "trace" else save_bundle([make_trace(5)], path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json.gz"]
