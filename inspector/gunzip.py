"""Inflating gzip data with a ceiling: a few megabytes must not become gigabytes in memory.

Transcripts and traces are read whole, so a small crafted ``.gz`` (a "gzip bomb") could take
the machine's memory. Inflation stops at a limit far above any real file and says so.
"""

from __future__ import annotations

import zlib

MAGIC = b"\x1f\x8b"


class TooLarge(ValueError):
    """The data inflates to more than the limit."""


def gunzip(data: bytes, limit: int) -> tuple[bytes, bool]:
    """(inflated bytes, complete?) of gzip ``data``, all members; raises :class:`TooLarge` past ``limit``.

    ``complete`` is False for a truncated stream, whose inflatable prefix is returned (a writer
    that died mid-file still left something worth reading). ``zlib.error`` passes through for
    data that is not gzip at all.
    """
    out: list[bytes] = []
    size = 0
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        chunk = inflater.decompress(rest, limit - size + 1)
        size += len(chunk)
        out.append(chunk)
        if size > limit or inflater.unconsumed_tail:
            raise TooLarge(f"inflates to more than {limit // 1024**2:,} MiB")
        if not inflater.eof:
            return b"".join(out), False
        rest = inflater.unused_data
        if rest[:2] != MAGIC:  # trailing padding after the last member
            break
    return b"".join(out), True
