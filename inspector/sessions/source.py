"""Reading transcript bytes: gzip-transparent, BOM-tolerant, with line numbers kept.

Every reader goes through here so errors name the file and line the same way everywhere, and
a damaged record becomes a warning (when the rest is usable) instead of a lost session.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspector.input_files import InputRefused, check_values, max_input_bytes, read_input
from inspector.jsonfast import loads_text
from inspector.sessions.model import ReaderError

GZIP_MAGIC = b"\x1f\x8b"
SQLITE_MAGIC = b"SQLite format 3\x00"
MAX_BYTES = max_input_bytes()  # a file, plain or inflated: a gzip bomb is not a transcript


@dataclass
class Source:
    """A transcript's decoded text plus what went wrong while decoding it."""

    path: str
    text: str
    warnings: list[str] = field(default_factory=list)
    gzipped: bool = False
    # the text parsed as one JSON document, once: detection and the reader both need it
    _parsed: Any = field(default=None, init=False, repr=False, compare=False)
    _has_parsed: bool = field(default=False, init=False, repr=False, compare=False)

    def whole_json(self) -> Any:
        """The text as one JSON value, parsed on the first call; raises what ``json.loads`` raises.

        Format detection parses a one-document transcript whole, and so does its reader: a
        150 MB export was parsed twice (and read, inflated and decoded twice) before this.
        """
        if not self._has_parsed:
            self._parsed, self._has_parsed = json.loads(self.text), True
        return self._parsed

    def error(self, message: str, line: int | None = None) -> ReaderError:
        return ReaderError(message, path=self.path, line=line)


def read_bytes(path: str | Path) -> tuple[bytes, list[str], bool]:
    """Raw bytes of ``path``, gunzipped when they start with the gzip magic.

    Only regular files are read (a FIFO or ``/dev/zero`` is refused before it is opened), both
    the file and its inflated bytes are capped at ``MAX_BYTES``, and a file that holds one value
    longer than :func:`~inspector.input_files.max_string_chars` is refused before any parsing.
    """
    path = str(path)
    try:
        data, gz, complete = read_input(path, MAX_BYTES)
        if not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            check_values(data)
    except FileNotFoundError:
        raise ReaderError("no such file", path=path) from None
    except IsADirectoryError:
        raise ReaderError("is a directory, not a transcript file", path=path) from None
    except InputRefused as exc:
        raise ReaderError(str(exc), path=path) from None
    except MemoryError:
        raise ReaderError("not enough memory to read this file", path=path) from None
    except OSError as exc:
        raise ReaderError(f"cannot read: {exc.strerror or exc}", path=path) from None
    if not gz:
        return data, [], False
    if not data:
        raise ReaderError("gzip stream is empty or corrupt", path=path)
    # A truncated gzip (the writer died) still holds a usable prefix.
    return data, [] if complete else ["gzip stream is truncated or corrupt; read the part that could be inflated"], True


def decode(data: bytes, path: str) -> tuple[str, list[str]]:
    """UTF-8 text without a BOM; undecodable bytes are replaced and reported."""
    warnings: list[str] = []
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # PowerShell's `>` writes UTF-16 with a byte-order mark; the text itself is fine.
        text = data.decode("utf-16", errors="replace")
        try:
            check_values(text)
        except InputRefused as exc:
            raise ReaderError(str(exc), path=path) from None
        return text, ["the file is UTF-16 encoded (not UTF-8); it was read as UTF-16"]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8-sig", errors="replace")
        warnings.append(f"invalid UTF-8 at byte {exc.start}; undecodable bytes were replaced")
    if "\x00" in text and not text.strip("\x00"):
        raise ReaderError("file holds only NUL bytes", path=path)
    return text, warnings


def open_source(path: str | Path) -> Source:
    """Read a transcript file into a :class:`Source` (gzip transparent)."""
    data, warnings, gz = read_bytes(path)
    if data.startswith(SQLITE_MAGIC):
        if gz:
            raise ReaderError("a gzip-compressed SQLite database: decompress it first (gunzip -k), then open the "
                              ".db file, which is read in place and never modified", path=str(path))
        raise ReaderError("this is an SQLite database, not a JSON transcript", path=str(path))
    text, more = decode(data, str(path))
    return Source(path=str(path), text=text, warnings=warnings + more, gzipped=gz)


def json_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text: split at newlines only.

    ``str.splitlines`` also splits at U+2028, U+2029, U+0085 and other separators, which JSON
    allows raw inside strings (Hermes writes them with ``ensure_ascii=False``, as do Node and
    serde); a ``\r`` before the newline is whitespace to the JSON parser.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# The start of the warning for a last line that has no newline yet and does not parse: a writer
# is (or was) in the middle of it. ``follow`` does not record it (the next poll reads it whole).
PENDING_LINE = "the last line is incomplete"


def _lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """``(line number, line, ends with a newline?)`` of :func:`json_lines`, one at a time: the
    list of every line of a 150 MB transcript would double what reading it holds in memory."""
    start, lineno, n = 0, 0, len(text)
    while start < n:
        end = text.find("\n", start)
        lineno += 1
        if end < 0:
            yield lineno, text[start:], False
            return
        yield lineno, text[start:end], True
        start = end + 1


def iter_jsonl(source: Source) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for every non-blank line; bad lines become warnings.

    A last line without its newline that does not parse is pending, not malformed: its warning
    starts with :data:`PENDING_LINE`. Raises :class:`ReaderError` when no line at all parses,
    naming the first bad line.
    """
    first_error: tuple[int, str] | None = None
    good = 0
    text = source.text
    for lineno, line, terminated in _lines(text):
        if not line.strip():
            continue
        try:
            value = loads_text(line)
        except (ValueError, RecursionError) as exc:
            msg = _json_error(exc)
            if not terminated:
                source.warnings.append(f"line {lineno}: {PENDING_LINE} (no newline at its end yet: being written, "
                                       "or cut short); not read")
                if first_error is None:
                    first_error = (lineno, f"{PENDING_LINE}: {msg}")
                continue
            if first_error is None:
                first_error = (lineno, msg)
            source.warnings.append(f"line {lineno}: skipped, not valid JSON ({msg})")
            continue
        good += 1
        yield lineno, value
    if not good:
        if first_error is not None:
            raise source.error(f"not valid JSON Lines ({first_error[1]})", line=first_error[0])
        raise source.error("file is empty")


def parse_json(source: Source) -> Any:
    """The whole file as one JSON value, with the failing line in the error."""
    if not source.text.strip():
        raise source.error("file is empty")
    try:
        return source.whole_json()
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise source.error(f"not valid JSON ({_json_error(exc)})", line=line) from None
    except RecursionError:
        raise source.error("JSON nested too deeply") from None


def element_lines(text: str) -> list[int]:
    """Line number where each top-level element of a JSON array starts (best effort).

    Lets array readers name the line of a bad message without a second full parse.
    """
    lines: list[int] = []
    depth = 0
    in_str = False
    esc = False
    line = 1
    expect = False
    for ch in text:
        if ch == "\n":
            line += 1
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch in " \t\r\n":
            continue
        if depth == 1 and expect and ch not in ",]":
            lines.append(line)
            expect = False
        if ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth == 1:
                expect = True
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 1:
            expect = True
    return lines


def _json_error(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        where = f"line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        # some messages already end in "at" ("Unterminated string starting at")
        return f"{exc.msg} {where}" if exc.msg.endswith(" at") else f"{exc.msg} at {where}"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)
