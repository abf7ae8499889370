"""Inflating gzip data with a ceiling: a few megabytes must not become gigabytes in memory.

Transcripts and traces are read whole, so a small crafted ``.gz`` (a "gzip bomb") could take
the machine's memory. Inflation stops at a limit far above any real file and says so.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

try:  # ISA-L (the ``isal`` package): the same gzip, deflated about 4x and inflated about 2.5x faster
    from isal import isal_zlib as _members_zlib  # than zlib (a 150 MB session's trace, level 3 both)

    _MEMBER_ERRORS: tuple[type[Exception], ...] = (zlib.error, _members_zlib.error)
except ImportError:
    _members_zlib = zlib
    _MEMBER_ERRORS = (zlib.error,)

MAGIC = b"\x1f\x8b"
# A member we write carries its own length in the header's extra field (RFC 1952 §2.3.1.1,
# subfield "CI"): a reader then finds every member without inflating the ones before it, and
# inflates them on every core (as BGZF does; other gzip readers skip the field).
_SUBFIELD = b"CI"
_FEXTRA = 0x04
_HEADER = 10  # the fixed part of a member's header
_EXTRA = struct.Struct("<H2sHI")  # XLEN, subfield id, its length, the member's length
# Inflated bytes one member may reach on the parallel path: ours hold a few megabytes
# (inspector.outputs.MEMBER_BYTES); a larger one is inflated by the one-at-a-time path instead,
# whose ceiling is exact.
PARALLEL_MEMBER_CAP = 64 * 1024**2


class TooLarge(ValueError):
    """The data inflates to more than the limit."""


CHUNK = 16 * 1024**2  # inflated bytes per step: the ceiling is checked between steps


def gunzip(data: bytes, limit: int, check: Callable[[bytes], None] | None = None) -> tuple[bytes, bool]:
    """(inflated bytes, complete?) of gzip ``data``, all members; raises :class:`TooLarge` past ``limit``.

    Inflates ``CHUNK`` bytes at a time into one buffer (no second copy at the end), so memory
    never goes much past ``limit``; ``check`` sees each chunk as it comes and may raise to stop
    early (the one-huge-string test of :mod:`inspector.input_files`). ``complete`` is False for
    a truncated stream, whose inflatable prefix is returned (a writer that died mid-file still
    left something worth reading). ``zlib.error`` passes through for data that is not gzip at all.

    Members that say their length (:func:`sized_member`) are inflated on every core, in order.
    """
    spans = member_spans(data)
    if spans is not None and len(spans) > 1 and (os.cpu_count() or 1) > 1:
        inflated = _gunzip_parallel(data, spans, limit, check)
        if inflated is not None:
            return inflated, True
    out = bytearray()
    rest: bytes = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        pending = rest
        while True:
            chunk = inflater.decompress(pending, CHUNK)
            if len(out) + len(chunk) > limit:
                raise TooLarge(f"inflates to more than {limit // 1024**2:,} MiB")
            if check is not None and chunk:
                check(chunk)
            out += chunk
            pending = inflater.unconsumed_tail
            if inflater.eof or (not pending and len(chunk) < CHUNK):
                break
        if not inflater.eof:
            return out, False
        rest = inflater.unused_data
        if rest[:2] != MAGIC:  # trailing padding after the last member
            break
    return out, True


def gzip_member(data: bytes, level: int) -> bytes:
    """``data`` as one gzip member saying its length (:func:`sized_member`), at ``level`` (0-3).

    By ISA-L where it is installed; it lets go of the interpreter lock, as zlib does."""
    return sized_member(_members_zlib.compress(data, level, 31))


def sized_member(member: bytes) -> bytes:
    """A gzip member (one ``zlib.compress(..., wbits=31)`` made) with its length in its header."""
    if member[:2] != MAGIC or member[3] != 0:  # zlib writes no flags: anything else is not ours to edit
        raise ValueError("not a plain gzip member")
    total = len(member) + _EXTRA.size
    return b"".join((member[:3], bytes([member[3] | _FEXTRA]), member[4:_HEADER],
                     _EXTRA.pack(_EXTRA.size - 2, _SUBFIELD, 4, total), member[_HEADER:]))


def member_spans(data: bytes | bytearray | memoryview) -> list[tuple[int, int]] | None:
    """(start, end) of every member when each says its length (:func:`sized_member`), else None."""
    spans: list[tuple[int, int]] = []
    start, size = 0, len(data)
    while start < size:
        head = bytes(data[start:start + _HEADER + _EXTRA.size])
        if head[:2] != MAGIC:
            if spans:
                break  # trailing padding after the last member, as the stream reader allows
            return None
        if len(head) < _HEADER + _EXTRA.size or head[2] != 8 or not head[3] & _FEXTRA:
            return None
        xlen, sub, sublen, total = _EXTRA.unpack_from(head, _HEADER)
        if sub != _SUBFIELD or sublen != 4 or xlen < _EXTRA.size - 2 or total <= len(head) or start + total > size:
            return None
        spans.append((start, start + total))
        start += total
    return spans or None


def _inflate_member(member: bytes | memoryview) -> bytes | None:
    """One whole member inflated; None when it is damaged, truncated, not alone or too large here."""
    inflater = _members_zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(member, PARALLEL_MEMBER_CAP)
    except _MEMBER_ERRORS:
        return None
    if not inflater.eof or inflater.unused_data or inflater.unconsumed_tail:
        return None
    return out


def _gunzip_parallel(data: bytes, spans: list[tuple[int, int]], limit: int,
                     check: Callable[[bytes], None] | None) -> bytes | None:
    """:func:`gunzip` of sized members, several at once (zlib lets go of the interpreter lock).

    Members are joined and checked in order; at most two per core are inflated ahead. None when a
    member is not as its length said (the one-at-a-time path then reads it, and reports damage
    as it does).
    """
    view = memoryview(data)
    cores = max(1, min(4, os.cpu_count() or 1))
    ahead = 2 * cores
    out = bytearray()
    with ThreadPoolExecutor(max_workers=cores, thread_name_prefix="inspector-gunzip") as pool:
        futures = [pool.submit(_inflate_member, view[a:b]) for a, b in spans[:ahead]]
        try:
            for i in range(len(spans)):
                if i + ahead < len(spans):
                    a, b = spans[i + ahead]
                    futures.append(pool.submit(_inflate_member, view[a:b]))
                chunk = futures[i].result()
                if chunk is None:
                    return None
                if len(out) + len(chunk) > limit:
                    raise TooLarge(f"inflates to more than {limit // 1024**2:,} MiB")
                if check is not None and chunk:
                    check(chunk)
                out += chunk
        finally:
            for future in futures:
                future.cancel()  # those not started yet, after a refusal or a damaged member
    return out
