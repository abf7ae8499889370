"""The quality analysis of a run, made while the run streams in from its worker.

A replay's worker sends its trace in batches (``TraceAssembler`` in ``inspector/worker/codec.py``),
and this process has a core with little to do meanwhile. A follower takes each batch's new events
on a thread of its own: the lifetime pass (:class:`~inspector.quality.lifetime.LifetimeBuilder`)
and the retention of every compaction whose next request has arrived
(:class:`~inspector.quality.retention.CompactionPoints`) are done by the time the run ends, and
only the end of the run is left (150 MB session: the analysis after the replay took 7.4 s, now 1.2 s;
``inspector.bench.large_session``).

:func:`inspector.quality.analysis.compute` takes what a follower made when there is one, and
computes the analysis itself when there is none or the follower failed: the figures are the same
either way (``tests/quality/test_ahead.py``). A follower holds no reference to its trace, so a
trace nobody analyses is freed with its follower.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from inspector.gc_pause import collection_in_batches
from inspector.quality.lifetime import LifetimeBuilder, Lifetimes
from inspector.quality.retention import CompactionPoints, FactIndex, Retention
from inspector.trace.model import Trace

_FOLLOWERS: weakref.WeakKeyDictionary[Trace, AnalysisAhead] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


class AnalysisAhead:
    """Follows one trace as its events arrive; :meth:`finish` makes the analysis of the whole run."""

    def __init__(self, trace: Trace) -> None:
        self._trace = weakref.ref(trace)
        view: Any = weakref.proxy(trace)
        self._builder = LifetimeBuilder(view)
        self._index = FactIndex(view, self._builder.messages)
        self._points = CompactionPoints(view, self._index, self._builder)
        self._fed = 0  # events the builder has seen
        self._arrived = 0  # events the trace is known to hold, complete with their requests and lists
        self._ended = False
        self._failed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._follow, name="inspector-analysis-ahead", daemon=True)
        self._thread.start()

    def arrived(self, events: int) -> None:
        """The trace now holds ``events`` complete events (called after each batch is added)."""
        with self._changed:
            if events > self._arrived:
                self._arrived = events
                self._changed.notify()

    def end(self) -> None:
        """No more batches: the thread stops once it has followed what arrived."""
        with self._changed:
            self._ended = True
            self._changed.notify()

    def _follow(self) -> None:
        try:
            while True:
                with self._changed:
                    while self._arrived == self._fed and not self._ended:
                        self._changed.wait()
                    target = self._arrived
                if target == self._fed:
                    return
                trace = self._trace()
                if trace is None:
                    return
                events = trace.events[self._fed:target]
                del trace
                with collection_in_batches():
                    self._builder.feed(events)
                    self._fed = target
                    self._points.measure_ready()
        except Exception:  # noqa: BLE001 - the analysis after the run computes everything itself
            self._failed = True

    def finish(self, trace: Trace) -> tuple[Lifetimes, FactIndex, Retention] | None:
        """The run's lifetimes, fact index and retention (None: the follower failed)."""
        self.end()
        self._thread.join()
        if self._failed:
            return None
        try:
            self._builder.feed(trace.events[self._fed:])  # what the supervisor added after the last batch
            lifetimes = self._builder.build()
            return lifetimes, self._index, self._points.retention(lifetimes)
        except Exception:  # noqa: BLE001 - as in _follow
            return None


def follow(trace: Trace) -> AnalysisAhead:
    """The follower of ``trace``, started on first call."""
    with _LOCK:
        found = _FOLLOWERS.get(trace)
        if found is None:
            found = _FOLLOWERS[trace] = AnalysisAhead(trace)
        return found


def end(trace: Trace) -> None:
    """The run of ``trace`` is over (its follower, if any, stops once it has caught up)."""
    with _LOCK:
        found = _FOLLOWERS.get(trace)
    if found is not None:
        found.end()


def made_ahead(trace: Trace) -> tuple[Lifetimes, FactIndex, Retention] | None:
    """What a follower made of ``trace`` (once: the follower is dropped), or None."""
    with _LOCK:
        found = _FOLLOWERS.pop(trace, None)
    return None if found is None else found.finish(trace)
