"""Inflating gzip data with a ceiling: a few megabytes must not become gigabytes in memory.

Transcripts and traces are read whole, so a small crafted ``.gz`` (a "gzip bomb") could take
the machine's memory. Inflation stops at a limit far above any real file and says so.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

MAGIC = b"\x1f\x8b"


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
    """
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
