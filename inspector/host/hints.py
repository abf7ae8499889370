"""Measurements of a session's messages made outside the replay, for the replay to take.

Before an engine sees a transcript message, the replay measures it: its sent form's content key
and repr length (one walk over it, hashed) and its token count. For a replay in a worker, the
supervisor holds the same session and its own core is mostly idle meanwhile, so it makes these
ahead, in the order the replay reaches the messages (:mod:`inspector.worker.ahead`), and the
worker's replay takes what has arrived when it prepares a batch of turns; anything not here
yet it measures itself. Only ever a speed-up: a hint is exactly what the replay would compute.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


class MessageHints:
    """Session index → (key, repr length, token count or None), filled from another thread."""

    def __init__(self) -> None:
        self.tokenizer = ""  # the tokenizer the counts are of: a counter of another takes none
        self._rows: dict[int, tuple[str, int, int | None]] = {}

    def add(self, tokenizer: str, rows: Iterable[Sequence[Any]]) -> None:
        """Rows ``[index, key, repr length, tokens]`` (what :mod:`inspector.worker.ahead` sends)."""
        self.tokenizer = tokenizer
        for index, key, chars, tokens in rows:
            self._rows[index] = (key, chars, tokens)

    def __len__(self) -> int:
        return len(self._rows)

    def use(self, indices: Iterable[int], wire: Any, counter: Any) -> int:
        """Hand the replay what is known of ``indices``: their keys to ``wire``
        (:class:`~inspector.host.responders.WireMessages`, whose ``measured`` the host's prepare
        takes) and their counts to ``counter``. Returns how many were known."""
        rows = self._rows
        learn = getattr(counter, "learn", None) if getattr(counter, "name", None) == self.tokenizer else None
        measured = wire.measured
        used = 0
        for i in indices:
            row = rows.pop(i, None)
            if row is None:
                continue
            key, chars, tokens = row
            measured[id(wire[i])] = (key, chars)
            if learn is not None and tokens is not None:
                learn(key, tokens)
            used += 1
        return used
