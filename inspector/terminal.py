"""Text from transcripts made safe to print on a terminal.

A transcript (or a ``state.db``) is data from elsewhere: an escape sequence in a title or an id
could retitle the window, clear the screen or recolour what follows, and a bidi override could
reorder a line. Printed cells show such characters as visible escapes instead.
"""

from __future__ import annotations

import re

# C0 controls (tab kept), DEL, C1 controls, and the bidi embedding/override/isolate marks.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with terminal control and bidi override characters shown as ``\\xNN``/``\\uNNNN``."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
