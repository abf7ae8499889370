"""The quality analysis of a trace: lifetimes and retention, derived once and kept with the trace.

It is computed from the trace after the run (nothing here changes what the host records), cached
in ``trace.derived["quality"]`` so the window, the report and the command line share one result,
and written with the trace (``inspector/trace/io.py`` saves ``derived``), so a reopened trace
shows the same figures without recomputing. The cached copy is used only when it was made by
this analysis version from a trace of the same size; anything else is recomputed.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from inspector.gc_pause import collection_in_batches
from inspector.quality.facts import KINDS
from inspector.quality.lifetime import Lifetimes, message_lifetimes
from inspector.quality.retention import FactIndex, FactStatus, Retention, fact_retention
from inspector.trace.model import Trace

ANALYSIS_KEY = "quality"
ANALYSIS_VERSION = 1
_MEMO: weakref.WeakKeyDictionary[Trace, tuple[dict[str, int], Analysis]] = weakref.WeakKeyDictionary()


@dataclass
class Analysis:
    lifetimes: Lifetimes
    retention: Retention
    facts: int  # distinct facts in the whole session
    probes: dict[str, Any] = field(default_factory=dict)  # what probes.py added (tools, graded questions)
    # (event, retention) per compaction, counted once: the window asks at every cursor step (the probes
    # change only the end's facts, so these stay true)
    _points: list[tuple[int, float]] | None = field(default=None, init=False, repr=False, compare=False)
    # the run's retention, a count over every fact at the end, kept for the same reason; a probe that
    # changes a fact's status says so (facts_changed)
    _run: float | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def run_retention(self) -> float:
        if self._run is None:
            self._run = self.retention.retention
        return self._run

    def facts_changed(self) -> None:
        """The status of some fact at the end changed (a retrieval probe recovered it): count again."""
        self._run = None

    def compaction_points(self) -> list[tuple[int, float]]:
        """(event, retention) of every compaction that has an event, in order."""
        if self._points is None:
            self._points = [(p.event, p.retention) for p in self.retention.compactions if p.event is not None]
        return self._points

    def lost_facts(self) -> list[FactStatus]:
        """Facts lost at the end of the run, most telling kinds first (decisions, commands, errors ...)."""
        order = {k: i for i, k in enumerate(KINDS)}
        return sorted(self.retention.end.lost, key=lambda f: (order.get(f.fact.kind, 99), f.fact.origin))

    def summary_json(self) -> dict[str, Any]:
        """Figures for ``replay --json`` and the comparison: per compaction and for the run."""
        end = self.retention.end
        return {"retention": round(self.run_retention, 6), "facts": self.facts, "end": end.summary_json(),
                "compactions": [p.summary_json() for p in self.retention.compactions],
                "lost": [{"kind": f.fact.kind, "text": f.fact.text, "message": f.fact.origin,
                          "event": _first_event(self.lifetimes, f.fact.origin)} for f in self.lost_facts()],
                **({"probes": self.probes} if self.probes else {})}

    def to_json(self, fingerprint: dict[str, int]) -> dict[str, Any]:
        return {"version": ANALYSIS_VERSION, "fingerprint": fingerprint, "lifetimes": self.lifetimes.to_json(),
                "retention": self.retention.to_json(), "facts": self.facts, "probes": self.probes}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Analysis:
        return cls(Lifetimes.from_json(data["lifetimes"]), Retention.from_json(data["retention"]),
                   int(data.get("facts", 0)), dict(data.get("probes") or {}))


def _first_event(lifetimes: Lifetimes, index: int) -> int | None:
    """The event that first sent message ``index`` (where "jump to the origin" goes)."""
    if not (0 <= index < len(lifetimes.messages)):
        return None
    events = lifetimes.messages[index].events
    return events[0].event if events else None


def origin_event(analysis: Analysis, index: int) -> int | None:
    return _first_event(analysis.lifetimes, index)


def fingerprint(trace: Trace) -> dict[str, int]:
    return {"events": len(trace.events), "requests": len(trace.requests)}


def compute(trace: Trace) -> Analysis:
    """The analysis, made now, or finished from what was made while the run streamed in
    (:mod:`inspector.quality.ahead`); automatic collection is paused meanwhile
    (:mod:`inspector.gc_pause`: the lifetimes are hundreds of thousands of long-lived objects,
    8.0-9.1 -> 7.6-8.0 s for the 150 MB session)."""
    from inspector.quality.ahead import made_ahead

    with collection_in_batches():
        made = made_ahead(trace)
        if made is None:
            lifetimes = message_lifetimes(trace)
            index = FactIndex(trace, lifetimes.messages)
            made = lifetimes, index, fact_retention(trace, lifetimes, index)
        lifetimes, index, retention = made
        return Analysis(lifetimes, retention, len(index.all()))


def analyse(trace: Trace, *, refresh: bool = False) -> Analysis:
    """The trace's quality analysis: the cached one when it still fits the trace, else computed and cached."""
    derived = getattr(trace, "derived", None)
    if derived is None:
        derived = trace.derived = {}
    cached = derived.get(ANALYSIS_KEY)
    fp = fingerprint(trace)
    memo = _MEMO.get(trace)
    if not refresh and memo is not None and memo[0] == fp and cached is not None:
        return memo[1]
    if not refresh and isinstance(cached, dict) and cached.get("version") == ANALYSIS_VERSION \
            and cached.get("fingerprint") == fp:
        try:
            loaded = Analysis.from_json(cached)
            _MEMO[trace] = (fp, loaded)
            return loaded
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            pass  # a damaged cache is recomputed, never trusted
    analysis = compute(trace)
    previous = cached.get("probes") if isinstance(cached, dict) and cached.get("fingerprint") == fp else None
    if isinstance(previous, dict):
        analysis.probes = previous  # probes need the live engine or an endpoint: keep them
    store(trace, analysis)
    return analysis


def store(trace: Trace, analysis: Analysis) -> None:
    """Cache ``analysis`` in the trace (it is saved with it)."""
    if getattr(trace, "derived", None) is None:
        trace.derived = {}
    fp = fingerprint(trace)
    trace.derived[ANALYSIS_KEY] = analysis.to_json(fp)
    _MEMO[trace] = (fp, analysis)


def cached_analysis(trace: Trace) -> Analysis | None:
    """The analysis if it is already at hand (made, or saved with the trace); never computes one.

    For views that must stay cheap on every cursor step and on opening a trace (the counters).
    """
    memo = _MEMO.get(trace)
    fp = fingerprint(trace)
    if memo is not None and memo[0] == fp:
        return memo[1]
    cached = (getattr(trace, "derived", None) or {}).get(ANALYSIS_KEY)
    if isinstance(cached, dict) and cached.get("version") == ANALYSIS_VERSION and cached.get("fingerprint") == fp:
        return analyse(trace)
    return None


def analyse_quietly(trace: Trace | None) -> Analysis | None:
    """:func:`analyse` for a worker thread that must deliver its trace whatever happens here."""
    if trace is None:
        return None
    try:
        return analyse(trace)
    except Exception:  # noqa: BLE001 - an analysis bug must not cost the user the run
        return None


def retention_before(analysis: Analysis, event: int) -> tuple[int, float] | None:
    """(event, retention) of the last compaction at or before ``event``, or None."""
    found = None
    for point in analysis.compaction_points():
        if point[0] <= event:
            found = point
    return found


@contextlib.contextmanager
def facts_ahead(messages: list[dict[str, Any]]) -> Iterator[None]:
    """While the block runs (a worker replaying the session), extract the session's facts on a
    thread of this process, keyed as the trace will store its messages; the analysis after the
    replay then finds them made (``inspector.quality.facts.prepare_facts``). Only a speed-up."""
    from inspector.host.replay import wire_form
    from inspector.quality.facts import prepare_facts
    from inspector.trace.model import message_key

    stop = threading.Event()

    def keyed() -> Iterator[tuple[str, dict[str, Any]]]:
        for message in messages:
            if stop.is_set():
                return
            wire = wire_form(message)
            yield message_key(wire), wire

    def run() -> None:
        try:
            prepare_facts(keyed(), stop)
        except Exception:  # noqa: BLE001 - the analysis extracts whatever is missing itself
            pass

    thread = threading.Thread(target=run, name="inspector-facts-ahead", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def forget_facts_ahead() -> None:
    """Drop the facts made ahead (after the analysis that needed them)."""
    from inspector.quality.facts import forget_prepared

    forget_prepared()
