"""Hostile saved traces: refused with one line naming the file, before they take the memory."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest


def _trace_doc(lists: list) -> dict:
    return {"format": "context-inspector-trace", "version": 1, "meta": {},
            "messages": {"k0": {"role": "user", "content": "q"}, "k1": {"role": "assistant", "content": "a"}},
            "tokens": {"names": [], "columns": [], "missing": [], "extra": {}},
            "lists": lists, "events": {}, "requests": {}}


def test_a_21_kb_trace_asking_for_2_to_the_34_entries_is_refused_quickly(cli, tmp_path):
    # Each list copies its base twice: 34 lists ask for 2**34 message references.
    lists = [[0, -1, -2]] + [[1, 0, 2 ** k, 0, 2 ** k] for k in range(1, 35)]
    src = tmp_path / "doubling.json"
    src.write_text(json.dumps(_trace_doc(lists)), encoding="utf-8")
    assert src.stat().st_size < 21_000
    r = cli("replay", str(src), "--quiet", timeout=60, inputs=(src,))
    assert r.code == 2 and "INSPECTOR_MAX_TRACE_ENTRIES" in r.one_line_error(str(src))
    assert r.peak_mib < 800 and r.seconds < 45


def test_a_small_gzip_trace_of_many_long_copied_lists_is_refused_within_its_bound(cli, tmp_path):
    first = [0] + [-1, -2] * 500
    lists = [first] + [[1, 0, 1000] for _ in range(200_000)]  # 200 M references from ~1 MB of JSON
    src = tmp_path / "copies.json.gz"
    src.write_bytes(gzip.compress(json.dumps(_trace_doc(lists)).encode()))
    r = cli("replay", str(src), "--quiet", timeout=60, env={"INSPECTOR_MAX_TRACE_ENTRIES": "2000000"}, inputs=(src,))
    assert r.code == 2 and "more than 2,000,000 entries" in r.one_line_error(str(src))
    assert r.peak_mib < 500


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_gzip_trace_is_one_line(cli, tmp_path, damage):
    whole = gzip.compress(json.dumps(_trace_doc([[0, -1, -2]])).encode())
    data = whole[: len(whole) // 2] if damage == "truncated" else whole[:12] + b"\x00" * 8 + whole[20:]
    src = tmp_path / "t.json.gz"
    src.write_bytes(data)
    r = cli("replay", str(src), "--quiet", inputs=(src,))
    assert r.code == 2
    r.one_line_error(str(src))


def test_a_trace_with_one_huge_string_is_refused_before_parsing(cli, tmp_path):
    src = tmp_path / "huge.json.gz"
    with gzip.open(src, "wb", compresslevel=9) as gz:
        gz.write(b'{"format": "context-inspector-trace", "version": 1, "meta": {"x": "')
        for _ in range(100):
            gz.write(b"b" * (1 << 20))
        gz.write(b'"}}')
    r = cli("replay", str(src), "--quiet", inputs=(src,))
    assert r.code == 2 and "single value" in r.one_line_error(str(src))
    assert r.peak_mib < 400


def test_a_fifo_named_as_a_trace_is_refused(cli, tmp_path: Path):
    import os

    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    r = cli("replay", str(fifo), "--quiet", timeout=20)
    assert r.code == 2 and "named pipe" in r.one_line_error(str(fifo))


def test_a_deeply_nested_trace_is_one_line(cli, tmp_path):
    src = tmp_path / "deep.json"
    src.write_text('{"format": "context-inspector-trace", "version": 1, "meta": ' + "[" * 100_000 + "]" * 100_000 + "}",
                   encoding="utf-8")
    r = cli("replay", str(src), "--quiet", inputs=(src,))
    assert r.code == 2 and "nested too deeply" in r.one_line_error(str(src))
