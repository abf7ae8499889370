"""Loading limits of saved traces, and the piecewise writer that keeps saving a large trace small."""

from __future__ import annotations

import gzip
import json

import pytest

from inspector.trace import io as trace_io


def _doc(lists: list) -> dict:
    return {"format": trace_io.TRACE_FORMAT, "version": 1, "meta": {},
            "messages": {"k0": {"role": "user", "content": "q"}, "k1": {"role": "assistant", "content": "a"}},
            "tokens": {"names": [], "columns": [], "missing": [], "extra": {}},
            "lists": lists, "events": {}, "requests": {}}


def test_copies_past_the_entry_cap_are_refused_before_they_are_made(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_io, "MAX_LIST_ENTRIES", 1000)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_doc([[0, -1, -2], [1, 0, 2, 0, 2, 0, 2], [1, 0, 6] + [0, 6] * 200])),
                    encoding="utf-8")
    with pytest.raises(trace_io.TraceCorruptError, match=r"more than 1,000 entries in all \(by list 2\)"):
        trace_io.load_trace(path)


def test_the_pieces_join_to_exactly_what_json_dumps_writes():
    messages = {f"k{i}": {"role": "user", "content": f"message {i} — ünïcode \u2028"} for i in range(5003)}
    doc = {"format": "x", "version": 2, "meta": {"when": 1.5, "set": {3, 1}}, "messages": messages,
           "lists": [[0, -1]], "empty": {}}
    pieces = list(trace_io._json_pieces(doc))
    assert len(pieces) > 6  # the message table came in several pieces
    assert b"".join(pieces).decode() == json.dumps(doc, ensure_ascii=False, separators=(",", ":"),
                                                   default=trace_io._json_default)


def test_a_saved_trace_is_the_same_bytes_each_time_and_loads(tmp_path):
    from inspector.engines.loading import build_builtin_compressor
    from inspector.host.replay import replay
    from tests.host.conftest import coding_session

    config = {"model": {"context_length": 64000}}
    trace = replay(coding_session(3), build_builtin_compressor(config), config)
    trace_io.save_trace(trace, tmp_path / "a.json.gz")
    trace_io.save_trace(trace, tmp_path / "b.json.gz")
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()
    again = trace_io.load_trace(tmp_path / "a.json.gz")
    assert again.store.messages == trace.store.messages and len(again.events) == len(trace.events)
    assert gzip.decompress((tmp_path / "a.json.gz").read_bytes()).startswith(b'{"format":"context-inspector-trace"')
