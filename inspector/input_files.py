"""Opening the files a user names as input: regular files only, read with a ceiling.

Transcripts, traces and configs are read whole. A FIFO blocks ``open`` until a writer comes,
``/dev/zero`` never ends, and a plain file has no natural size: so the path is ``stat``-ed
before it is opened (and opened non-blocking, then checked again on the open descriptor, in
case it was swapped in between), and the read stops one byte past the limit.

The limits are far above any real file (a 30,000-turn trace is ~160 MB; the largest real
Claude Code transcripts are a few hundred MB) and can be raised with environment variables,
documented in the README: ``INSPECTOR_MAX_INPUT_MIB`` (a file, plain or once inflated) and
``INSPECTOR_MAX_STRING_MIB`` (one value inside it).
"""

from __future__ import annotations

import os
import stat
import zlib
from typing import Any, BinaryIO

from inspector.gunzip import MAGIC, TooLarge, gunzip

MIB = 1024**2
DEFAULT_MAX_INPUT_MIB = 1024
DEFAULT_MAX_STRING_MIB = 64


class InputRefused(ValueError):
    """The path is not something the inspector reads (a device, a FIFO, too large, corrupt)."""


def env_count(name: str, default: int) -> int:
    """A positive whole number from the environment variable ``name`` (``default`` when unset or
    not a positive number)."""
    raw = os.environ.get(name, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        value = default
    return value if value > 0 else default


def _env_mib(name: str, default: int) -> int:
    return env_count(name, default) * MIB


def max_input_bytes() -> int:
    """How many bytes a file may hold, plain or inflated (``INSPECTOR_MAX_INPUT_MIB``)."""
    return _env_mib("INSPECTOR_MAX_INPUT_MIB", DEFAULT_MAX_INPUT_MIB)


def max_string_chars() -> int:
    """How long one JSON value without a quote in it may be (``INSPECTOR_MAX_STRING_MIB``): a
    500 MB string is refused before a tokenizer is asked to count it (tiktoken aborts)."""
    return _env_mib("INSPECTOR_MAX_STRING_MIB", DEFAULT_MAX_STRING_MIB)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading; :class:`InputRefused` unless it is a regular file.

    ``OSError`` (missing, unreadable) passes through for the caller to word.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise InputRefused(f"is {_kind(st.st_mode)}, not a file; not read")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode):
            raise InputRefused(f"is {_kind(now.st_mode)}, not a file; not read")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_head(path: str | os.PathLike[str], size: int) -> bytes:
    """The first ``size`` raw bytes of a regular file (special files refused, as above)."""
    with open_regular(path) as fh:
        return fh.read(size)


def read_capped(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """All bytes of a regular file; :class:`InputRefused` when it holds more than ``limit``."""
    limit = max_input_bytes() if limit is None else limit
    too_large = InputRefused(f"is larger than {limit // MIB:,} MiB (INSPECTOR_MAX_INPUT_MIB); not read")
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise too_large
        # The size it says, plus whatever was appended since (or all of a /proc file, which says 0);
        # never read(limit + 1), which would set aside the whole limit in memory first.
        pieces = [fh.read(size + 1)]
        total = len(pieces[0])
        while pieces[-1] and total <= limit:
            pieces.append(fh.read(min(16 * MIB, limit + 1 - total)))
            total += len(pieces[-1])
    if total > limit:
        raise too_large
    return pieces[0] if len(pieces) <= 2 and not pieces[-1] else b"".join(pieces)


def read_input(path: str | os.PathLike[str], limit: int | None = None) -> tuple[bytes, bool, bool]:
    """``(bytes, gzipped, complete)``: the file, inflated when it starts with the gzip magic.

    Both the file and what it inflates to are capped at ``limit``; a truncated gzip stream gives
    its inflatable prefix and ``complete=False``; corrupt gzip data is :class:`InputRefused`.
    """
    limit = max_input_bytes() if limit is None else limit
    data = read_capped(path, limit)
    if not data.startswith(MAGIC):
        return data, False, True
    try:
        out, complete = gunzip(data, limit, ValueRuns().feed)
    except TooLarge as exc:
        raise InputRefused(f"gzip data {exc} (INSPECTOR_MAX_INPUT_MIB), more than any real file (a crafted file?); "
                           "not read") from None
    except zlib.error as exc:
        raise InputRefused(f"corrupt gzip data ({exc})") from None
    return out, True, complete


def _refuse_value(limit: int, offset: int) -> InputRefused:
    return InputRefused(f"holds a single value of more than {limit // MIB:,} MiB at offset {offset:,} "
                        "(INSPECTOR_MAX_STRING_MIB); not read")


def check_values(data: bytes | bytearray | str, limit: int | None = None, start: int = 0) -> None:
    """:class:`InputRefused` when ``data[start:]`` (JSON text) holds a run of more than ``limit``
    characters without a double quote: a string that long, or that much bare structure.

    Each step looks back from the end of a window for its last quote, so the scan moves a whole
    window at a time: linear, and only data longer than the limit is scanned at all.
    """
    limit = max_string_chars() if limit is None else limit
    quote: Any = b'"' if not isinstance(data, str) else '"'
    n = len(data)
    pos = start
    while n - pos > limit:
        q = data.rfind(quote, pos, pos + limit + 1)
        if q < 0:
            raise _refuse_value(limit, pos)
        pos = q + 1


class ValueRuns:
    """:func:`check_values` over data that arrives in pieces (gzip inflation): refuses as soon as
    the run since the last quote passes the limit, before the rest is inflated."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = max_string_chars() if limit is None else limit
        self.run = 0  # bytes since the last quote, carried from earlier pieces
        self.offset = 0

    def feed(self, piece: bytes) -> None:
        first = piece.find(b'"')
        if first < 0:
            self.run += len(piece)
            if self.run > self.limit:
                raise _refuse_value(self.limit, self.offset + len(piece) - self.run)
        else:
            if self.run + first > self.limit:
                raise _refuse_value(self.limit, self.offset - self.run)
            check_values(piece, self.limit, first + 1)
            self.run = len(piece) - piece.rfind(b'"') - 1
        self.offset += len(piece)


def read_head_inflated(path: str | os.PathLike[str], size: int) -> bytes:
    """The first ``size`` bytes of a file, inflated when it is gzipped (the raw bytes when the
    gzip data is corrupt): enough to recognise what a file is without reading it whole."""
    with open_regular(path) as fh:
        raw = fh.read(max(size, 64 * 1024))
    if not raw.startswith(MAGIC):
        return raw[:size]
    try:
        return zlib.decompressobj(wbits=31).decompress(raw, size)
    except zlib.error:
        return raw[:size]
