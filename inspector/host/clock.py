"""The session's clock during a replay: time as the transcript lived it."""

from __future__ import annotations

import time


class SessionClock:
    """Time as the transcript lived it, for engines' failure cooldowns during a replay.

    A replay runs a two-hour session in seconds, so a cooldown measured on the wall clock would
    outlast the whole replay. The clock follows the transcript's timestamps (or advances a fixed
    step per request when there are none), keeping monotonic semantics.

    It reads ``time.monotonic()`` when the host is built and from then on runs ahead of it by
    however much the transcript's time outruns the replay (hours, in a fast replay), so a deadline
    taken on one of the two clocks means nothing on the other; the compressor translates the one
    deadline plugins compare with ``time.monotonic()`` (``_summary_failure_cooldown_until``).
    """

    STEP_WITHOUT_TIMESTAMPS = 30.0

    def __init__(self) -> None:
        self._base = time.monotonic()
        self._first: float | None = None
        self._offset = 0.0

    def observe(self, timestamp: float | None) -> None:
        if timestamp is None:
            self._offset += self.STEP_WITHOUT_TIMESTAMPS
            return
        try:
            ts = float(timestamp)
        except (TypeError, ValueError):
            return
        if self._first is None:
            self._first = ts
        self._offset = max(self._offset, ts - self._first)

    def __call__(self) -> float:
        return self._base + self._offset
