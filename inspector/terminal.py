"""Text from transcripts made safe to print on a terminal.

A transcript (or a ``state.db``) is data from elsewhere: an escape sequence in a title or an id
could retitle the window, clear the screen or recolour what follows, and a bidi override could
reorder a line. Printed cells show such characters as visible escapes instead.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any

# C0 controls (tab kept), DEL, C1 controls, and the bidi embedding/override/isolate marks.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with terminal control and bidi override characters shown as ``\\xNN``/``\\uNNNN``."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


# The same, but line breaks and tabs are what a message is made of: only a lone carriage return
# (which could overwrite what was printed before it on the line) is escaped besides.
_UNSAFE_IN_LINES = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")


def printable_lines(text: str) -> str:
    """:func:`printable`, keeping line breaks and tabs, and writing every escape as ``\\uXXXX``:
    that is also how JSON escapes a character, so ``--json`` shown on a terminal stays JSON."""
    return _UNSAFE_IN_LINES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class SafeStream:
    """A text stream that writes :func:`printable_lines` of whatever it is given.

    Messages on stderr quote data (a reader error names a file and its bad value, a fault
    carries an engine's exception text, a note names the transcript's model), and the inspector
    itself never writes control sequences: so the whole stream is made safe at once rather than
    each message (the window shows the same messages as text, where escapes do nothing).
    """

    __slots__ = ("_stream",)

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if type(text) is not str:
            return self._stream.write(text)
        self._stream.write(printable_lines(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def safe_stderr() -> Iterator[None]:
    """``sys.stderr`` as a :class:`SafeStream` for the duration (a command's run), and
    ``sys.stdout`` too when it is a terminal (a pipe gets the exact data: ``--json`` stays what
    the JSON encoder wrote)."""
    saved = (sys.stdout, sys.stderr)
    sys.stderr = _wrapped(sys.stderr)
    if _is_terminal(sys.stdout):
        sys.stdout = _wrapped(sys.stdout)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _wrapped(stream: Any) -> Any:
    return stream if stream is None or isinstance(stream, SafeStream) else SafeStream(stream)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
