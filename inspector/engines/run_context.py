"""The run in progress (replay, follow or live session), as every compressor instance sees it.

A plugin may build Hermes' ``ContextCompressor`` itself (an inner compressor it wraps) or
subclass it, at load time before any host exists or later inside a hook. In Hermes all of them
share one clock with the built-in; in the inspector they must all share the run's clock (a
replay plays hours of transcript in seconds) and the run's offline rule. The host makes its run
current with :func:`running` around every call into engine code, and a compressor reads it at
the moment it needs the time, so no instance has to be found and patched. It is a context
variable: a comparison's runs on their own threads each see their own, and the compress pool
copies the caller's context (``inspector.host.guard.call_on_pool``).
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from inspector.config import cfg_get


@dataclass(frozen=True)
class RunContext:
    """What a run tells compressors: the clock cooldowns run on, and the offline rule."""

    clock: Callable[[], float] = time.monotonic
    # With no auxiliary provider at all, the deterministic summary stands in for the LLM
    # summary (no no-provider cooldown, no fallback streak); False is Hermes' strict rule.
    offline_stand_in: bool = False


_current: contextvars.ContextVar[RunContext | None] = contextvars.ContextVar("inspector_run", default=None)


def current_run() -> RunContext | None:
    """The run this thread's context belongs to, or None outside any run."""
    return _current.get()


def run_clock() -> float:
    """Now on the current run's clock; ``time.monotonic()`` outside a run (as in Hermes)."""
    run = _current.get()
    return run.clock() if run is not None else time.monotonic()


def effective_clock(clock: Callable[[], float]) -> Callable[[], float]:
    """The callable ``clock`` stands for right now (:func:`run_clock` resolves to the run's)."""
    if clock is run_clock:
        run = _current.get()
        return run.clock if run is not None else time.monotonic
    return clock


def offline_stand_in_for(config: dict[str, Any]) -> bool:
    """The offline rule a run with ``config`` applies (``inspector.offline_fallback_counts``)."""
    return not cfg_get(config, "inspector.offline_fallback_counts", False)


@contextlib.contextmanager
def running(run: RunContext) -> Iterator[RunContext]:
    """Make ``run`` current in this context until the block ends (nesting restores the outer)."""
    token = _current.set(run)
    try:
        yield run
    finally:
        _current.reset(token)
