"""Lockstep alignment of runs by (turn, provider request within the turn).

Every run replays the same session, so the session's turns are the common clock. Inside a
turn, runs may differ in how many provider calls they make (a compaction that restarts the
call, a run that stopped early), so a *row* is a ``(turn, call)`` pair and each run either has
a request at that row or not. One cursor — a row — therefore means the same moment in every
run; :meth:`Alignment.event_for` turns it into an event index per run and
:meth:`Alignment.row_for` turns a run's event back into the row.

Plots overlay runs with :func:`aligned_series`: one list per run, one value per row, NaN where
the run has no request (pyqtgraph leaves a gap with ``connect="finite"``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inspector.trace.diff import MessageDiff, diff_messages
from inspector.trace.model import EV_COMPRESS, Request, Trace, key_scheme
from inspector.trace.summary import is_committed_compression

if TYPE_CHECKING:
    from inspector.compare.runs import Comparison

Row = tuple[int, int]


@dataclass
class Alignment:
    """Rows (turn, call) in session order, and which request of each run sits at each row.

    ``index[row][run]`` is the request index in ``traces[run].requests``, or None when that run
    has no such request. Runs without a trace have None everywhere.
    """

    rows: list[Row]
    index: list[list[int | None]]
    traces: list[Trace | None] = field(repr=False, default_factory=list)
    _row_of_request: list[list[int]] = field(repr=False, default_factory=list)
    _first_row_of_turn: dict[int, int] = field(repr=False, default_factory=dict)
    _request_events: list[list[int]] = field(repr=False, default_factory=list)

    @property
    def run_count(self) -> int:
        return len(self.traces)

    def __len__(self) -> int:
        return len(self.rows)

    def request(self, run: int, row: int) -> Request | None:
        """The request run ``run`` sent at ``row``, or None."""
        trace = self.traces[run]
        if trace is None or not 0 <= row < len(self.rows):
            return None
        idx = self.index[row][run]
        return trace.requests[idx] if idx is not None else None

    def has_request(self, run: int, row: int) -> bool:
        return self.request(run, row) is not None

    def event_for(self, run: int, row: int, *, fallback: bool = True) -> int | None:
        """The event index in run ``run`` for cursor row ``row`` (its request marker event).

        When the run has no request at that row and ``fallback`` is set, the event of the run's
        latest request at an earlier row is returned — the state in force at that moment — or,
        before any request, the run's first event. None when the run has no trace/events.
        """
        trace = self.traces[run]
        if trace is None or not trace.events or not self.rows:
            return None
        row = max(0, min(row, len(self.rows) - 1))
        idx = self.index[row][run]
        if idx is not None:
            return trace.requests[idx].event
        if not fallback:
            return None
        rows_of = self._row_of_request[run]
        pos = bisect.bisect_right(rows_of, row) - 1  # rows_of is increasing (requests in session order)
        if pos >= 0:
            return trace.requests[pos].event
        return 0

    def row_for(self, run: int, event_index: int) -> int | None:
        """The row for event ``event_index`` of run ``run``.

        An event before the first request of its turn (the turn marker, a preflight compress)
        maps to that turn's first row: the request it leads up to. Other events map to the
        request in force (the latest request at or before them). None for an empty alignment.
        """
        trace = self.traces[run]
        if trace is None or not trace.events or not self.rows:
            return None
        k = trace.clamp(event_index)
        event = trace.events[k]
        req = trace.request_at(k)
        if event.turn is not None and (req is None or req.turn != event.turn):
            first = self._first_row_of_turn.get(event.turn)
            if first is not None:
                return first
        if req is not None:
            return self._row_of_request[run][req.index]
        return 0

    def span(self, run: int, pos: int) -> tuple[int, int]:
        """The events :meth:`row_for` maps to request ``pos`` of run ``run``, as [first, last].

        A turn's first request also owns the events of its turn before it (the turn marker, a
        preflight compress); every request owns the hooks after it up to the next row.
        """
        trace = self.traces[run]
        assert trace is not None
        reqs = trace.requests

        def start(p: int) -> int:
            e = reqs[p].event
            if p > 0 and reqs[p - 1].turn == reqs[p].turn:
                return e
            floor = reqs[p - 1].event + 1 if p > 0 else 0
            while e > floor and trace.events[e - 1].turn == reqs[p].turn:
                e -= 1
            return e

        last = start(pos + 1) - 1 if pos + 1 < len(reqs) else len(trace.events) - 1
        return start(pos), last

    def event_at_phase(self, run: int, row: int, source: int, k: int) -> int | None:
        """Run ``run``'s event at the point of ``row`` where event ``k`` of run ``source`` is.

        The same hook (kind and occurrence within the row) when the run has one, else the same
        offset from the row's request, kept inside the row. A run with no request at ``row``
        gives the last event before it (the state in force). None when the run has no events.
        """
        if run == source:
            return k
        trace, src = self.traces[run], self.traces[source]
        if trace is None or not trace.events or not self.rows:
            return None
        row = max(0, min(row, len(self.rows) - 1))
        idx = self.index[row][run]
        if idx is None:
            pos = bisect.bisect_right(self._row_of_request[run], row) - 1
            return self.span(run, pos)[1] if pos >= 0 else 0
        first, last = self.span(run, idx)
        request_event = trace.requests[idx].event
        sidx = self.index[row][source]
        if src is None or sidx is None:
            return request_event
        sfirst, slast = self.span(source, sidx)
        if not sfirst <= k <= slast:
            return request_event
        kind = src.events[k].kind
        nth = sum(1 for j in range(sfirst, k + 1) if src.events[j].kind == kind)
        for j in range(first, last + 1):
            if trace.events[j].kind == kind:
                nth -= 1
                if nth == 0:
                    return j
        return max(first, min(last, request_event + k - src.requests[sidx].event))

    def event_x(self, run: int, event_index: int) -> float:
        """Plot x of any event of a run: a request's own row, else halfway to the next row.

        Used for markers (compressions, faults) that happen between two requests.
        """
        trace = self.traces[run]
        if trace is None or not trace.events:
            return math.nan
        k = trace.clamp(event_index)
        rows_of = self._row_of_request[run]
        reqs = trace.requests
        # requests are in event order; find the first request whose marker is at/after k
        pos = bisect.bisect_left(self._request_events[run], k)
        if pos < len(reqs) and reqs[pos].event == k:
            return float(rows_of[pos])
        if pos < len(reqs):
            return rows_of[pos] - 0.5
        return (rows_of[-1] + 0.5) if rows_of else 0.0


def align_runs(traces: Sequence[Trace | None]) -> Alignment:
    """Build the lockstep alignment of ``traces`` (None entries are runs without a trace).

    A run that made two requests in turn 3 and another that made three get rows (3,0), (3,1),
    (3,2); the first run has None at (3,2). Should a run record two requests with the same
    (turn, call) — never done by the host — the later one gets the next free call number so no
    request is lost from the alignment.
    """
    keyed: list[list[Row]] = []
    for trace in traces:
        rows_of_run: list[Row] = []
        if trace is not None:
            used: set[Row] = set()
            for req in trace.requests:
                row = (int(req.turn), int(req.call))
                while row in used:
                    row = (row[0], row[1] + 1)
                used.add(row)
                rows_of_run.append(row)
        keyed.append(rows_of_run)
    rows = sorted(set().union(*[set(k) for k in keyed])) if keyed else []
    pos = {row: i for i, row in enumerate(rows)}
    index: list[list[int | None]] = [[None] * len(traces) for _ in rows]
    row_of_request: list[list[int]] = []
    for run, rows_of_run in enumerate(keyed):
        mapped = []
        for req_idx, row in enumerate(rows_of_run):
            index[pos[row]][run] = req_idx
            mapped.append(pos[row])
        row_of_request.append(mapped)
    first_row: dict[int, int] = {}
    for i, (turn, _call) in enumerate(rows):
        first_row.setdefault(turn, i)
    events = [[r.event for r in t.requests] if t is not None else [] for t in traces]
    return Alignment(rows=rows, index=index, traces=list(traces), _row_of_request=row_of_request,
                     _first_row_of_turn=first_row, _request_events=events)


# -- series for overlaid plots -------------------------------------------------------------------


def _prompt(trace: Trace, req: Request) -> float:
    return float(req.usage.get("prompt_tokens", req.tokens.get("tiktoken", 0)))


def _state(name: str) -> Callable[[Trace, Request], float]:
    def get(trace: Trace, req: Request) -> float:
        return float(trace.state_at(req.event)[name])

    return get


def _cost(trace: Trace, req: Request) -> float:
    return float(req.cache.cost) if req.cache.cost is not None else math.nan


SERIES_KEYS: dict[str, Callable[[Trace, Request], float]] = {
    "prompt_tokens": _prompt,  # what the provider was charged for (usage), per request
    "tiktoken": lambda t, r: float(r.tokens.get("tiktoken", 0)),
    "rough": lambda t, r: float(r.tokens.get("rough", 0)),
    "cache_read": lambda t, r: float(r.usage.get("cache_read_tokens", 0)),
    "cache_write": lambda t, r: float(r.usage.get("cache_write_tokens", 0)),
    "uncached": lambda t, r: float(r.cache.uncached),
    "cost": _cost,
    "compression_count": _state("compression_count"),
    "threshold_tokens": _state("threshold_tokens"),
    "context_length": _state("context_length"),
    "last_prompt_tokens": _state("last_prompt_tokens"),
}


def aligned_series(
    comparison: Comparison | Sequence[Trace | None],
    key: str | Callable[[Trace, Request], float],
    alignment: Alignment | None = None,
) -> list[list[float]]:
    """One list of floats per run, one value per alignment row, NaN where the run has no request.

    ``key`` is a name from :data:`SERIES_KEYS` or a function ``(trace, request) -> float``.
    x for every series is simply ``range(len(alignment.rows))`` (use ``alignment.rows`` for
    tick labels), so all runs share one x axis.
    """
    get = SERIES_KEYS[key] if isinstance(key, str) else key
    al = alignment if alignment is not None else _alignment_of(comparison)
    out: list[list[float]] = []
    for run, trace in enumerate(al.traces):
        values = [math.nan] * len(al.rows)
        if trace is not None:
            for row, slots in enumerate(al.index):
                idx = slots[run]
                if idx is not None:
                    values[row] = get(trace, trace.requests[idx])
        out.append(values)
    return out


def compression_points(
    comparison: Comparison | Sequence[Trace | None], alignment: Alignment | None = None, *, every_call: bool = False
) -> list[list[dict[str, Any]]]:
    """Per run, every committed compression: x on the shared axis, event, turn, tokens before/after.

    Committed means the engine returned a new list the host kept (same rule as the summary).
    ``every_call`` adds the compress calls Hermes kept nothing of (faulted, aborted, no progress),
    flagged by ``committed`` and ``faulted``. ``count_before``/``count_after`` are message counts;
    ``compression_count`` is the engine's counter after the call, the height of its staircase.
    """
    al = alignment if alignment is not None else _alignment_of(comparison)
    out: list[list[dict[str, Any]]] = []
    for run, trace in enumerate(al.traces):
        points: list[dict[str, Any]] = []
        if trace is not None:
            for ev in trace.events:
                committed = is_committed_compression(ev)
                if not (committed or (every_call and ev.kind == EV_COMPRESS)):
                    continue
                result = ev.result if committed else {}
                points.append({
                    "x": al.event_x(run, ev.index),
                    "event": ev.index,
                    "turn": ev.turn,
                    "row": al.row_for(run, ev.index),
                    "committed": committed,
                    "faulted": ev.fault is not None,
                    "tokens_before": (ev.args or {}).get("tokens_before"),
                    "tokens_after": result.get("tokens_after"),
                    "count_before": result.get("count_before"),
                    "count_after": result.get("count_after"),
                    "compression_count": trace.state_at(ev.index)["compression_count"],
                })
        out.append(points)
    return out


def _alignment_of(comparison: Comparison | Sequence[Trace | None]) -> Alignment:
    al = getattr(comparison, "alignment", None)
    if isinstance(al, Alignment):
        return al
    return align_runs(list(comparison))  # type: ignore[arg-type]


# -- runs diff -----------------------------------------------------------------------------------


def diff_runs(comparison: Comparison | Alignment, row: int, a: int, b: int) -> MessageDiff | None:
    """How the request run ``b`` sent at ``row`` differs from the one run ``a`` sent.

    ``before`` is run A's selected request, ``after`` run B's. Messages are keyed by content
    hash in both traces, so the shared prefix (the cache prefix they have in common) is found
    by key. None when either run has no request at that row.
    """
    al = comparison if isinstance(comparison, Alignment) else comparison.alignment
    ra, rb = al.request(a, row), al.request(b, row)
    ta, tb = al.traces[a], al.traces[b]
    if ra is None or rb is None or ta is None or tb is None:
        return None
    before, after = ta.store.materialise(ra.selected), tb.store.materialise(rb.selected)
    if key_scheme(ta) != key_scheme(tb):  # a trace saved by an older inspector: re-key both sides
        return diff_messages(before, after)
    return diff_messages(before, after, keys_before=list(ta.store.get_list(ra.selected)),
                         keys_after=list(tb.store.get_list(rb.selected)))
