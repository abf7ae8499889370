"""Bounded inflation: a small crafted .gz cannot take the machine's memory."""

from __future__ import annotations

import gzip
import threading
import zlib
from pathlib import Path

import pytest

from inspector.gunzip import TooLarge, gunzip


def _bomb(size: int) -> bytes:
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    return squeeze.compress(b"0" * size) + squeeze.flush()


def test_inflation_stops_at_the_limit() -> None:
    data = _bomb(8 * 1024**2)
    assert len(data) < 20_000
    with pytest.raises(TooLarge, match="more than 1 MiB"):
        gunzip(data, 1024**2)
    assert gunzip(data, 16 * 1024**2) == (b"0" * 8 * 1024**2, True)


def test_every_member_and_a_truncated_tail_are_read() -> None:
    two = gzip.compress(b"first ") + gzip.compress(b"second")
    assert gunzip(two, 1024) == (b"first second", True)
    text = b"".join(b"line %d of a transcript\n" % i for i in range(5000))
    whole = gzip.compress(text)
    prefix, complete = gunzip(whole[: len(whole) // 2], 1024**2)
    assert not complete and prefix and text.startswith(prefix)


def test_readers_refuse_bombs_with_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    from inspector.sessions import ReaderError, load_session, source
    from inspector.trace import io as trace_io

    monkeypatch.setattr(source, "MAX_BYTES", 1024**2)
    monkeypatch.setattr(trace_io, "MAX_TRACE_BYTES", 1024**2)
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(_bomb(4 * 1024**2))
    with pytest.raises(ReaderError, match="inflates to more than 1 MiB"):
        load_session(str(path))
    with pytest.raises(trace_io.TraceCorruptError, match="inflates to more than 1 MiB"):
        trace_io.load_trace(path)


def test_inflation_goes_in_chunks_that_a_check_can_stop(monkeypatch) -> None:
    import inspector.gunzip as gz

    monkeypatch.setattr(gz, "CHUNK", 1024**2)
    seen: list[int] = []

    def check(chunk: bytes) -> None:
        seen.append(len(chunk))
        if sum(seen) > 3 * 1024**2:
            raise ValueError("enough")

    with pytest.raises(ValueError, match="enough"):
        gunzip(_bomb(32 * 1024**2), 64 * 1024**2, check)
    assert max(seen) <= 1024**2 and sum(seen) <= 4 * 1024**2  # stopped long before the 32 MB were inflated
    whole, complete = gunzip(_bomb(3 * 1024**2 + 5), 64 * 1024**2)
    assert complete and whole == b"0" * (3 * 1024**2 + 5)


def _sized(parts: list[bytes]) -> bytes:
    from inspector.gunzip import sized_member

    return b"".join(sized_member(zlib.compress(part, 3, 31)) for part in parts)


def test_members_that_say_their_length_are_inflated_on_every_core_in_order(monkeypatch) -> None:
    from inspector import gunzip as module

    parts = [b"member %d " % i * (1000 + i) for i in range(40)]
    data = _sized(parts)
    threads: set[str] = set()
    inflate = module._inflate_member
    monkeypatch.setattr(module, "_inflate_member",
                        lambda member: threads.add(threading.current_thread().name) or inflate(member))
    monkeypatch.setattr(module.os, "cpu_count", lambda: 2)
    assert gunzip(data, 1 << 30) == (b"".join(parts), True)
    assert threads and all(name.startswith("inspector-gunzip") for name in threads)
    assert gzip.decompress(data) == b"".join(parts), "other readers skip the length field"


def test_sized_members_keep_the_ceiling_the_check_and_the_damage_rules(monkeypatch) -> None:
    from inspector import gunzip as module

    monkeypatch.setattr(module.os, "cpu_count", lambda: 2)
    parts = [b"x" * 50_000 for _ in range(8)]
    data = _sized(parts)
    with pytest.raises(TooLarge, match="more than 0 MiB"):
        gunzip(data, 200_000)
    seen: list[int] = []

    def check(chunk: bytes) -> None:
        seen.append(len(chunk))
        if sum(seen) > 120_000:
            raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        gunzip(data, 1 << 30, check)
    assert sum(seen) <= 150_000, "the check stops inflation part-way"
    # a member whose bytes do not match its stated length: read one member at a time, as before
    damaged = data[: len(data) // 2] + b"\x00" * 10 + data[len(data) // 2:]
    assert gunzip(damaged, 1 << 30) == gunzip_stream(damaged)
    truncated = data[:-5]
    out, complete = gunzip(truncated, 1 << 30)
    assert not complete and b"".join(parts).startswith(out) and len(out) >= 7 * 50_000


def gunzip_stream(data: bytes) -> tuple[bytes, bool] | type[Exception]:
    """What the one-member-at-a-time path gives (members without lengths)."""
    from inspector import gunzip as module

    spans, module.member_spans = module.member_spans, lambda _data: None
    try:
        return gunzip(data, 1 << 30)
    except zlib.error:
        return zlib.error
    finally:
        module.member_spans = spans
