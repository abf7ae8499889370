"""The batch's progress line on stderr: counts, reused results, failures and an ETA.

On a terminal the line is redrawn in place; into a file or a pipe it is written as whole lines,
at most one per tenth of the batch, so a log stays readable. The ETA is the mean time per
replayed task so far (reused results cost nothing and are left out) times the tasks left,
divided among the workers by measuring wall time rather than task time.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR = 24


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class Progress:
    def __init__(self, total: int, reused: int = 0, out: TextIO | None = None, enabled: bool = True) -> None:
        self.total = total
        self.reused = reused
        self.done = reused
        self.failed = 0
        self.out = out or sys.stderr
        self.enabled = enabled and total > 0
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self.started = time.monotonic()
        self._last_tenth = -1

    def line(self) -> str:
        frac = self.done / self.total if self.total else 1.0
        filled = int(frac * BAR)
        ran = self.done - self.reused
        left = self.total - self.done
        elapsed = time.monotonic() - self.started
        eta = f"ETA {_duration(elapsed / ran * left)}" if ran and left else ("done" if not left else "ETA …")
        extra = "".join([f", {self.reused} reused" if self.reused else "", f", {self.failed} failed" if self.failed else ""])
        return f"[{'#' * filled}{'.' * (BAR - filled)}] {self.done}/{self.total} tasks{extra}  {_duration(elapsed)}  {eta}"

    def step(self, ok: bool = True) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        self.show()

    def show(self) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.out.write("\r" + self.line() + "\x1b[K")
            self.out.flush()
            return
        tenth = self.done * 10 // self.total
        if tenth != self._last_tenth:
            self._last_tenth = tenth
            self.out.write(self.line() + "\n")
            self.out.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.out.write("\n")
            self.out.flush()
