"""Message lifetime: what became of every session message across a run, derived from the trace.

A *session message* is a message that entered the conversation (the transcript's user,
assistant and tool messages, and the results of the engine's own tools): every key of a request's
assembled list that no compaction or prune produced. Messages are numbered in the order they first
appear. For each one the lifetime lists

- the requests it was **sent** in (in any of its forms: a prune that shortens a tool result, or a
  compaction that rewrites a message in place, keeps its identity — same role and tool call id);
- the compaction that **summarised** it (removed it while writing new text: the summary message it
  went into is the first new message of that compaction's result) or that **dropped** it (removed it
  and wrote nothing);
- any later **return**: ``select_context`` sending it again after a request left it out, a later
  history holding it again, or an engine tool's result (``lcm_expand``) quoting its text.

Everything comes from the recorded requests (content-addressed keys) and the compress, prune,
select and tool events (``inspector/host/recorder.py`` records them), so a saved trace gives the same
lifetimes as the run it came from.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inspector.quality.facts import _decoded, normalise, searchable_text, tool_calls_of
from inspector.sessions.model import message_text
from inspector.trace.model import EV_COMPRESS, EV_PRUNE, EV_REQUEST, EV_TOOL, Trace
from inspector.trace.prefix import common_prefix_len
from inspector.trace.summary import is_committed_compression

# Lifetime event kinds.
FIRST = "first_sent"
SUMMARISED = "summarised"
DROPPED = "dropped"
LEFT_OUT = "left_out"  # in the history, but the request did not carry it (select_context)
RESTORED = "restored"  # sent again after a request left it out, or after a compaction removed it
TOOL_RETURN = "tool_return"  # an engine tool's result quoted its text after it left the context
PRUNED = "pruned"  # its content was rewritten (a prune, or a compaction keeping it in place)

# Cell codes of the session chart (message × request).
CELL_NONE, CELL_SENT, CELL_SUMMARISED, CELL_DROPPED, CELL_LEFT_OUT, CELL_RESTORED = range(6)
CELL_NAMES = ("not yet", "sent", "in a summary", "dropped", "left out", "sent again")

MIN_QUOTE_CHARS = 24  # shorter texts ("ok", "Done.") are quoted by chance, not returned
QUOTE_CHARS = 160  # how much of a message's text a tool result must contain to count as returning it


class Requests(Sequence[int]):
    """Ascending request indices held as runs (``[start, length, ...]``, as saved), not one per request.

    A message stays in the context for hundreds or thousands of consecutive requests; a list of
    every one of them made the pass (and its memory) grow with turns × context. Reads as a
    sequence of ints and compares equal to a list of the same ints.
    """

    __slots__ = ("_flat", "_ends")

    def __init__(self, values: Sequence[int] = ()) -> None:
        self._flat: list[int] = []
        self._ends: list[int] | None = None  # cumulative lengths, built on the first indexed read
        for v in values:
            self.append(v)

    @classmethod
    def from_runs(cls, flat: Sequence[Any]) -> Requests:
        out = cls()
        for i in range(0, len(flat) - 1, 2):
            out.add_run(int(flat[i]), int(flat[i + 1]))
        return out

    def add_run(self, start: int, length: int) -> None:
        """Append ``start .. start+length-1`` (merged into the last run when it continues it)."""
        if length <= 0:
            return
        flat = self._flat
        if flat and flat[-2] + flat[-1] == start:
            flat[-1] += length
        else:
            flat += [start, length]
        self._ends = None

    def append(self, value: int) -> None:
        self.add_run(value, 1)

    def runs(self) -> list[int]:
        """The runs as ``[start, length, ...]`` (what :func:`_ranges` makes of the list)."""
        return list(self._flat)

    def __len__(self) -> int:
        return sum(self._flat[1::2])

    def __bool__(self) -> bool:
        return bool(self._flat)

    def __iter__(self) -> Iterator[int]:
        flat = self._flat
        for i in range(0, len(flat), 2):
            yield from range(flat[i], flat[i] + flat[i + 1])

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        flat = self._flat
        if index == 0 and flat:
            return flat[0]
        if index == -1 and flat:
            return flat[-2] + flat[-1] - 1
        ends = self._ends
        if ends is None:
            ends, total = [], 0
            for i in range(1, len(flat), 2):
                total += flat[i]
                ends.append(total)
            self._ends = ends
        n = ends[-1] if ends else 0
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("request index out of range")
        run = bisect.bisect_right(ends, index)
        before = ends[run - 1] if run else 0
        return flat[2 * run] + index - before

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Requests):
            return self._flat == other._flat
        if isinstance(other, (list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Requests({list(self)!r})" if len(self._flat) <= 8 else f"Requests(runs={self._flat!r})"


@dataclass(slots=True)
class LifeEvent:
    kind: str
    event: int  # trace event index (a jump target)
    request: int | None = None
    detail: str = ""
    summary: int | None = None  # the summary message (its summary index) a summarised message went into

    def to_json(self) -> list[Any]:
        return [self.kind, self.event, self.request, self.detail, self.summary]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> LifeEvent:
        kind, event, request, detail, summary = data
        return cls(str(kind), int(event), None if request is None else int(request), str(detail),
                   None if summary is None else int(summary))


@dataclass(slots=True)
class MessageLife:
    """One session message across the run."""

    index: int
    key: str  # its key when it first appeared
    role: str
    sent: Requests = field(default_factory=Requests)  # request indices, ascending
    events: list[LifeEvent] = field(default_factory=list)

    def first(self, kind: str) -> LifeEvent | None:
        return next((e for e in self.events if e.kind == kind), None)

    @property
    def removed(self) -> LifeEvent | None:
        """The compaction that took it out of the history (summarised or dropped), if any."""
        return next((e for e in self.events if e.kind in (SUMMARISED, DROPPED)), None)

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "role": self.role, "sent": self.sent.runs(),
                "events": [e.to_json() for e in self.events]}

    @classmethod
    def from_json(cls, index: int, data: dict[str, Any]) -> MessageLife:
        return cls(index, str(data["key"]), str(data.get("role", "")), Requests.from_runs(data.get("sent", [])),
                   [LifeEvent.from_json(e) for e in data.get("events", [])])


@dataclass(slots=True)
class Compaction:
    """One committed compaction, as the lifetimes see it."""

    event: int
    removed: list[int]  # session message indices it took out
    summaries: list[str]  # keys of the new messages it wrote (summary text)
    next_request: int | None  # the first request after it (what the model then saw)

    def to_json(self) -> dict[str, Any]:
        return {"event": self.event, "removed": _ranges(self.removed), "summaries": self.summaries,
                "next_request": self.next_request}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Compaction:
        nr = data.get("next_request")
        return cls(int(data["event"]), _unranges(data.get("removed", [])), [str(k) for k in data.get("summaries", [])],
                   None if nr is None else int(nr))


@dataclass
class Lifetimes:
    """Every session message's lifetime, the compactions, and which keys are which message."""

    messages: list[MessageLife]
    compactions: list[Compaction]
    requests: int
    instances: dict[str, list[int]]  # every key of a session message (any form) → its messages, in order
    summary_keys: list[str]  # keys written by compactions, in order (summary index = position)

    @property
    def forms(self) -> dict[str, int]:
        """Key → the (first) session message it is a form of."""
        found = self._forms
        if found is None:
            found = self._forms = {k: v[0] for k, v in self.instances.items() if v}
        return found

    _forms: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        own = {m.key: m.index for m in self.messages}
        return {"messages": [m.to_json() for m in self.messages],
                "compactions": [c.to_json() for c in self.compactions], "requests": self.requests,
                "instances": {k: v for k, v in self.instances.items() if v != [own.get(k)]},
                "summary_keys": self.summary_keys}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Lifetimes:
        messages = [MessageLife.from_json(i, m) for i, m in enumerate(data.get("messages", []))]
        instances: dict[str, list[int]] = {}
        for m in messages:
            instances.setdefault(m.key, []).append(m.index)
        instances.update({str(k): [int(i) for i in v] for k, v in (data.get("instances") or {}).items()})
        return cls(messages, [Compaction.from_json(c) for c in data.get("compactions", [])],
                   int(data.get("requests", 0)), instances, [str(k) for k in data.get("summary_keys", [])])

    def cells(self, max_rows: int = 4000, max_cols: int = 4000) -> tuple[np.ndarray, int, int]:
        """The session chart as (message rows × request columns) of cell codes, binned to fit.

        Returns (codes, messages per row, requests per column). A bin shows the most telling
        state in it (sent again > dropped > in a summary > left out > sent). Built from each
        message's segments, never one step per cell, so a 30,000-turn run stays quick.
        """
        n_msg, n_req = len(self.messages), self.requests
        rstep = max(1, -(-n_msg // max_rows))
        cstep = max(1, -(-n_req // max_cols))
        ranks = np.zeros((-(-n_msg // rstep), -(-n_req // cstep)), dtype=np.uint8)
        for life in self.messages:
            row = ranks[life.index // rstep]
            for start, end, code in life_segments(life, n_req):
                a, b = start // cstep, (end - 1) // cstep + 1
                np.maximum(row[a:b], _RANK[code], out=row[a:b])
        return _CODE_OF_RANK[ranks], rstep, cstep


_RANK = np.array([0, 1, 3, 4, 2, 5], dtype=np.uint8)  # CELL_* → precedence in a bin
_CODE_OF_RANK = np.argsort(_RANK).astype(np.uint8)  # precedence → CELL_*


def life_segments(life: MessageLife, n_requests: int) -> list[tuple[int, int, int]]:
    """(first request, end request exclusive, cell code) runs covering the message's first to last request."""
    if not life.sent:
        return []
    removed = life.removed
    removed_req = removed.request if removed is not None else None
    out_code = CELL_SUMMARISED if removed is not None and removed.kind == SUMMARISED else CELL_DROPPED
    segs: list[tuple[int, int, int]] = []
    flat = life.sent.runs()
    been_out = False
    pos = life.sent[0]
    for i in range(0, len(flat), 2):
        start, length = flat[i], flat[i + 1]
        if start > pos:
            segs.extend(_gap(pos, start, removed_req, out_code))
            been_out = True
        segs.append((start, start + length, CELL_RESTORED if been_out else CELL_SENT))
        pos = start + length
    if pos < n_requests:
        segs.extend(_gap(pos, n_requests, removed_req, out_code))
    return segs


def _gap(a: int, b: int, removed_req: int | None, out_code: int) -> list[tuple[int, int, int]]:
    """Requests a..b that did not carry the message: left out before its removal, removed after."""
    if removed_req is None or removed_req >= b:
        return [(a, b, CELL_LEFT_OUT)]
    if removed_req <= a:
        return [(a, b, out_code)]
    return [(a, removed_req, CELL_LEFT_OUT), (removed_req, b, out_code)]


def life_cells(life: MessageLife, n_requests: int) -> list[tuple[int, int]]:
    """(request, cell code) for every request from the message's first to the run's last."""
    return [(r, code) for a, b, code in life_segments(life, n_requests) for r in range(a, b)]


def _ranges(values: Sequence[int]) -> list[int]:
    out: list[int] = []
    for v in values:
        if out and out[-2] + out[-1] == v:
            out[-1] += 1
        else:
            out += [v, 1]
    return out


def _unranges(flat: Sequence[Any]) -> list[int]:
    out: list[int] = []
    for i in range(0, len(flat) - 1, 2):
        out.extend(range(int(flat[i]), int(flat[i]) + int(flat[i + 1])))
    return out


def _identity(msg: dict[str, Any]) -> tuple[Any, ...] | None:
    """What survives a rewrite of a message in place: its role and tool call ids (None: nothing)."""
    role = msg.get("role")
    if role == "tool" and msg.get("tool_call_id"):
        return ("tool", str(msg["tool_call_id"]))
    calls = msg.get("tool_calls")
    if role == "assistant" and calls:
        ids = []
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict) and call.get("id"):
                ids.append(str(call["id"]))
        if ids:
            return ("assistant", *ids)
        return ("assistant", repr(tool_calls_of(msg)))
    return None


class LifetimeBuilder:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.store = trace.store
        self.messages: list[MessageLife] = []
        # key → the session messages with that key, in order: the same text twice (two "continue"
        # messages) is two messages, told apart by which occurrence of the key a list holds
        self.instances: dict[str, list[int]] = {}
        self.summary_keys: list[str] = []
        self.summary_index: dict[str, int] = {}
        self.compactions: list[Compaction] = []
        self._pending: list[Compaction] = []  # compactions waiting for their next request
        self._gone: dict[int, str] = {}  # message index → how it left (for returns)
        self._out_of_request: set[int] = set()  # left out of the previous request
        self._quotes: dict[int, str] = {}
        self._history: tuple[Sequence[str], list[int | None]] = ((), [])  # the history as last known
        # What the previous request sent, kept so a request handles only what changed since: the
        # messages it sent (each with the first request of its current run of consecutive
        # requests), whether that was its whole history and nothing has rewritten it since, and
        # the messages a compaction removed since.
        self._open: dict[int, int] = {}
        self._last_request: int | None = None
        self._plain = False
        self._gone_since: list[int] = []
        self._ever_sent: set[int] = set()

    # -- message identity ------------------------------------------------------------------
    def _new(self, key: str) -> int:
        msg = self.store.messages.get(key) or {}
        index = len(self.messages)
        self.messages.append(MessageLife(index, key, str(msg.get("role", ""))))
        self.instances.setdefault(key, []).append(index)
        return index

    def _map(self, keys: Sequence[str], ref_keys: Sequence[str], ref_ids: Sequence[int | None], *,
             create: bool, from_end: bool = False, returns: bool = True) -> list[int | None]:
        """The session message each position of ``keys`` holds, by alignment with a known list.

        The common prefix is the known list's own messages (a history only grows between
        requests); after it, each key takes the earliest unused copy of itself in the known list
        (the latest with ``from_end``: a compaction keeps the recent copy of a repeated message).
        A key the known list lacks is summary text (None), a message that left and that the engine
        put back (``returns``: in its rewrite or selection; new input the host appends is never a
        return, even when its text repeats one), or, with ``create``, a new session message.
        """
        p = common_prefix_len(keys, ref_keys)
        out: list[int | None] = list(ref_ids[:p])
        rest = keys[p:]
        found: list[int | None] = [None] * len(rest)
        if p < len(ref_keys):
            pool: dict[str, deque[int]] = {}
            for k, i in zip(ref_keys[p:], ref_ids[p:]):
                if i is not None:
                    pool.setdefault(k, deque()).append(i)
            order = range(len(rest) - 1, -1, -1) if from_end else range(len(rest))
            for pos in order:
                q = pool.get(rest[pos])
                if q:
                    found[pos] = q.pop() if from_end else q.popleft()
        # the messages already placed, built only when a key could be a return (most lists have none)
        taken: set[int | None] | None = None
        for pos, k in enumerate(rest):
            if found[pos] is not None or k in self.summary_index:
                continue
            back = [i for i in self.instances.get(k, ()) if i in self._gone] if returns else []
            if back:
                if taken is None:
                    taken = set(out)
                    taken.update(found)
                back = [i for i in back if i not in taken]
            if back:
                found[pos] = back[-1]
                taken.add(back[-1])  # type: ignore[union-attr]
            elif create:
                found[pos] = self._new(k)
        return out + found

    def _body(self, keys: Sequence[str]) -> list[str]:
        """A request list without its system message (the host puts it first)."""
        if keys and (self.store.messages.get(keys[0]) or {}).get("role") == "system" and keys[0] not in self.instances:
            return list(keys[1:])
        return list(keys)

    # -- events ----------------------------------------------------------------------------
    def on_compress(self, ev: Any) -> None:
        before = self.store.get_list(ev.args["messages"]["$list"])
        after = self.store.get_list(ev.result["$list"])
        self._rewrite(before, after, ev.index, compaction=True)

    def on_prune(self, ev: Any) -> None:
        before = self.store.get_list(ev.args["messages"]["$list"])
        after = self.store.get_list(ev.result["$list"])
        self._rewrite(before, after, ev.index, compaction=False)

    def _rewrite(self, before: Sequence[str], after: Sequence[str], event: int, *, compaction: bool) -> None:
        """Map a history rewrite: kept messages, rewritten forms (same identity), new text, removed messages."""
        # messages that joined the history after the last request (post-tool) are registered here
        before_ids = self._map(before, *self._history, create=True, returns=False)
        after_ids = self._map(after, before, before_ids, create=False, from_end=True)
        present = {i for i in after_ids if i is not None}
        by_identity: dict[tuple[Any, ...], int] = {}
        for k, i in zip(before, before_ids):
            if i is None or i in present:
                continue
            ident = _identity(self.store.messages.get(k) or {})
            if ident is not None:
                by_identity.setdefault(ident, i)
        new_text: list[str] = []
        grown: list[str] = []
        for k in after:
            if k in self.instances or k in self.summary_index:
                continue
            msg = self.store.messages.get(k) or {}
            ident = _identity(msg)
            origin = by_identity.pop(ident, None) if ident is not None else None
            if origin is not None and origin not in present:
                old = self.store.messages.get(self.messages[origin].key) or {}
                self.instances[k] = [origin]
                present.add(origin)
                after_ids[after.index(k)] = origin
                self.messages[origin].events.append(LifeEvent(PRUNED, event))
                if compaction and len(message_text(msg)) > len(message_text(old)) + 100:
                    # the summary merged into a kept message, as Hermes does when roles must
                    # alternate (agent/context_compressor.py:3623 of hermes-agent 0.19.0)
                    grown.append(k)
            else:  # text the engine wrote (a prune that adds a message writes its own text too)
                new_text.append(k)
        summaries = new_text + [k for k in grown if k not in new_text]
        for k in summaries:
            if k not in self.summary_index:
                self.summary_index[k] = len(self.summary_keys)
                self.summary_keys.append(k)
        self._history = (list(after), after_ids)
        self._plain = False
        gone: list[int] = []
        for i in before_ids:
            if i is None or i in present or i in gone:
                continue
            gone.append(i)
        if not compaction:
            return
        target = self.summary_index[summaries[0]] if summaries else None
        for i in gone:
            kind = SUMMARISED if summaries else DROPPED
            self.messages[i].events.append(LifeEvent(kind, event, None, "", target))
            self._gone[i] = kind
            self._gone_since.append(i)
        comp = Compaction(event, sorted(gone), summaries, None)
        self.compactions.append(comp)
        self._pending.append(comp)

    def on_tool(self, ev: Any) -> None:
        """An engine tool's result that quotes a message no longer in the context returns it."""
        if not self._gone and not self._out_of_request:
            return
        res = ev.result if isinstance(ev.result, dict) else {}
        key = res.get("$msg")
        msg = self.store.messages.get(key) if isinstance(key, str) else None
        if not msg:
            return
        text = normalise(_decoded(message_text(msg)))
        if len(text) < MIN_QUOTE_CHARS:
            return
        # every window of the result the length of a quote's head: one set lookup per candidate
        windows = {text[i:i + MIN_QUOTE_CHARS] for i in range(len(text) - MIN_QUOTE_CHARS + 1)}
        name = (ev.args or {}).get("name") or "engine tool"
        for i in sorted(set(self._gone) | self._out_of_request):
            quote = self._quote(i)
            if quote and quote[:MIN_QUOTE_CHARS] in windows and quote in text:
                self.messages[i].events.append(LifeEvent(TOOL_RETURN, ev.index, ev.request, str(name)))

    def _quote(self, i: int) -> str:
        if i not in self._quotes:
            msg = self.store.messages.get(self.messages[i].key) or {}
            text = normalise(searchable_text(msg))
            self._quotes[i] = text[:QUOTE_CHARS] if len(text) >= MIN_QUOTE_CHARS else ""
        return self._quotes[i]

    def on_request(self, ev: Any) -> None:
        """What the request sent, left out and brought back, from what changed since the previous one.

        A history nearly always grows between requests: then the request sends what the previous
        one sent plus the appended messages, and only those are looked at. Otherwise (a rewrite,
        a selection) the sets are compared whole, in C. A message's consecutive requests are one
        run of :class:`Requests`, closed when a request no longer sends it.
        """
        req = self.trace.requests[ev.request]
        assembled = self._body(self.store.get_list(req.assembled))
        prev_keys, prev_ids = self._history
        ids = self._map(assembled, prev_keys, prev_ids, create=True, returns=False)
        self._history = (assembled, ids)
        selected = self.store.get_list(req.selected) if req.selected != req.assembled else None
        if self._last_request is not None and req.index != self._last_request + 1:
            self._close_runs()  # not the next request: every run so far ends at the last one
        open_runs = self._open
        grown = (selected is None and self._plain and bool(open_runs) and len(ids) >= len(prev_ids)
                 and common_prefix_len(assembled, prev_keys) == len(prev_keys))
        in_history: set[int | None] = set()
        if grown:  # sends what the previous request sent, plus the appended messages
            added = {i for i in ids[len(prev_ids):] if i is not None and i not in open_runs}
            stopped: set[int] = set()
        else:
            in_history = set(ids)
            in_history.discard(None)
            if selected is None:
                sent: set[int | None] = in_history
            else:
                sent = set(self._map(self._body(selected), assembled, ids, create=False))
                sent.discard(None)
            added = sent - open_runs.keys()  # type: ignore[assignment]
            stopped = open_runs.keys() - sent  # type: ignore[assignment]
        # sent in the previous request, then removed by a compaction, and sent again now
        back = sorted({i for i in self._gone_since if i in self._gone and i in open_runs and i not in stopped})
        self._gone_since = []
        how = "select_context" if req.selected_by_engine else "history"
        for i in back:
            self.messages[i].events.append(LifeEvent(RESTORED, ev.index, req.index, how))
            del self._gone[i]
        for i in sorted(added):
            life = self.messages[i]
            if i not in self._ever_sent:
                life.events.append(LifeEvent(FIRST, ev.index, req.index))
                self._ever_sent.add(i)
            elif i in self._gone or i in self._out_of_request:
                life.events.append(LifeEvent(RESTORED, ev.index, req.index, how))
            open_runs[i] = req.index
            self._gone.pop(i, None)
        for i in stopped:
            start = open_runs.pop(i)
            self.messages[i].sent.add_run(start, self._last_request - start + 1)  # type: ignore[operator]
        if selected is not None:
            out = (in_history - open_runs.keys()) & self._ever_sent
            for i in sorted(out - self._out_of_request):
                self.messages[i].events.append(LifeEvent(LEFT_OUT, ev.index, req.index, "select_context"))
            self._out_of_request = out  # type: ignore[assignment]
        else:
            self._out_of_request = set()
        self._plain = selected is None
        self._last_request = req.index
        for comp in self._pending:
            comp.next_request = req.index
            for i in comp.removed:
                for e in self.messages[i].events:
                    if e.event == comp.event and e.request is None:
                        e.request = req.index
        self._pending = []

    def _close_runs(self) -> None:
        for i, start in self._open.items():
            self.messages[i].sent.add_run(start, self._last_request - start + 1)  # type: ignore[operator]
        self._open = {}

    def feed(self, events: Iterable[Any]) -> None:
        """Follow ``events``, the trace's next ones in order (all of them, or as a run streams in:
        :mod:`inspector.quality.ahead`)."""
        for ev in events:
            kind = ev.kind
            if kind == EV_REQUEST and ev.request is not None:
                self.on_request(ev)
            elif kind == EV_COMPRESS and is_committed_compression(ev) and isinstance(ev.args.get("messages"), dict):
                self.on_compress(ev)
            elif kind == EV_PRUNE and isinstance(ev.result, dict) and "$list" in ev.result \
                    and isinstance(ev.args.get("messages"), dict):
                self.on_prune(ev)
            elif kind == EV_TOOL:
                self.on_tool(ev)

    def build(self) -> Lifetimes:
        """The lifetimes of every event fed so far; no event may be fed after."""
        self._close_runs()
        return Lifetimes(self.messages, self.compactions, len(self.trace.requests), self.instances, self.summary_keys)


def message_lifetimes(trace: Trace) -> Lifetimes:
    """Every session message's lifetime over ``trace`` (see the module docstring)."""
    builder = LifetimeBuilder(trace)
    builder.feed(trace.events)
    return builder.build()
