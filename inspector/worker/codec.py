"""Sessions and traces as JSON, for the pipe between a worker and its supervisor.

A session goes to the worker whole (the window's sessions need not come from a file). A trace
comes back as it grows: after each replayed turn the worker sends what was added since the
last batch (events, requests, messages, key lists, token counts), so the supervisor always
holds the trace up to the last finished turn, even when the worker dies or is killed later.
Batches are cut at turn boundaries because the host completes an event's fields (result,
state, output) during the turn it belongs to; the final batch adds the token rows replaced
since they were sent.
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import fields
from typing import Any

from inspector.cache.reasons import HitWords
from inspector.sessions.model import ApiCall, Compaction, Session, Turn, Usage
from inspector.trace.io import _decode_lists
from inspector.trace.model import (
    NO_BLOCKS,
    STATUS_FROM_STATE,
    CacheInfo,
    Event,
    Fault,
    KeyLists,
    Request,
    Trace,
)
from inspector.trace.packed import pack, pack_usage, unpack
from inspector.trace.prefix import common_prefix_len
from inspector.trace.token_table import TokenTable

# -- sessions ------------------------------------------------------------------------------------


def _usage(u: Usage | None) -> dict[str, Any] | None:
    return u.to_json() if u is not None else None


def session_to_json(session: Session) -> dict[str, Any]:
    return {
        "id": session.id, "source_format": session.source_format, "messages": session.messages,
        "api_calls": [[c.message_index, _usage(c.usage), c.timestamp, c.model] for c in session.api_calls],
        "turns": [[t.index, t.start, t.end, t.user_index, t.meta, t.interrupted, t.turn_id, t.ended]
                  for t in session.turns],
        "compactions": [[c.message_index, c.kind, c.summary, c.tokens_before, c.timestamp] for c in session.compactions],
        "title": session.title, "model": session.model, "started_at": session.started_at, "cwd": session.cwd,
        "source_path": session.source_path, "tools": session.tools, "meta": session.meta,
        "warnings": session.warnings, "children": [session_to_json(c) for c in session.children],
        "aggregate_usage": _usage(session.aggregate_usage),
        "context_window": session.context_window,  # the transcript's window: a replay's default (settle)
    }


def session_from_json(data: dict[str, Any]) -> Session:
    def usage(u: Any) -> Usage | None:
        return Usage.from_json(u) if isinstance(u, dict) else None

    return Session(
        id=data["id"], source_format=data["source_format"], messages=list(data["messages"]),
        api_calls=[ApiCall(i, usage(u), ts, m) for i, u, ts, m in data["api_calls"]],
        turns=[Turn(*t) for t in data["turns"]],
        compactions=[Compaction(*c) for c in data["compactions"]],
        title=data.get("title"), model=data.get("model"), started_at=data.get("started_at"), cwd=data.get("cwd"),
        source_path=data.get("source_path"), tools=list(data.get("tools") or []), meta=dict(data.get("meta") or {}),
        warnings=list(data.get("warnings") or []),
        children=[session_from_json(c) for c in data.get("children") or []],
        aggregate_usage=usage(data.get("aggregate_usage")),
        context_window=data.get("context_window"),
    )


# -- traces ---------------------------------------------------------------------------------------

# A trace is sent as it is held (inspector.trace.packed), so that the supervisor's copy is held
# as the worker's is, not as dicts made for the pipe (a 10,000-turn replay of a session file took
# 422 MB in the supervisor against 261 in process: inspector.bench.worker_bench --memory-turns),
# and the worker does not build a dict per value to send it. What a value stands for goes as a
# flag on its row: an event's arguments or result held as its request (``hold_request``), a
# status that is the base class's of the event's state; a packed value goes as the dict it holds
# and is packed again on arrival.
_ARGS_REQUEST, _RESULT_REQUEST, _STATUS_FROM_STATE = 1, 2, 4
_SHARED_CHARS = 40  # an argument's string this short is held once however many events carry it

_CACHE_FIELDS = tuple(f.name for f in fields(CacheInfo))
_REASON, _BLOCKS = _CACHE_FIELDS.index("reason"), _CACHE_FIELDS.index("block_tokens")

_EVENT_FIELDS = operator.attrgetter("kind", "turn", "request", "t", "duration", "args_held", "result_held", "state",
                                    "status_held", "fault", "thread", "note", "output")


def _event_row(ev: Event) -> list[Any]:
    """An event's fields as held (one C call for all: batches are cut after each turn), and the
    flags of what :func:`_event` rebuilds the held ones from; its status as held, for
    :meth:`TraceStreamer._event_rows` to send."""
    row = list(_EVENT_FIELDS(ev))
    flags = 0
    args, result = row[5], row[6]
    if type(args) is Request:
        row[5], flags = None, _ARGS_REQUEST
    elif type(args) is tuple:
        row[5] = unpack(args)
    if type(result) is Request:
        row[6], flags = None, flags | _RESULT_REQUEST
    elif type(result) is tuple:
        row[6] = unpack(result)
    if row[8] is STATUS_FROM_STATE:
        row[8], flags = None, flags | _STATUS_FROM_STATE
    fault = row[9]
    if fault is not None:
        row[9] = [fault.kind, fault.message, fault.traceback]
    if flags:
        row.append(flags)
    return row


def _event(row: list[Any], last_status: Any, last_state: tuple[int, ...] | None, requests: list[Request],
           strings: dict[str, str]) -> Event:
    """The event a row describes, its values held as the worker held them (``last_status``: the
    status held for the last one sent; ``last_state``: the state of the event before).

    A JSON reader makes a new object of every value it reads: the event's kind and the short
    strings of its arguments (``"site": "pre_api"``) are taken from ``strings``, one object each,
    and a state equal to the one before is that tuple again."""
    kind, turn, request, t, duration, args, result, state, status, fault, thread, note, output, *rest = row
    flags = rest[0] if rest else 0
    kind = strings.setdefault(kind, kind)
    if state is not None:
        state = last_state if last_state is not None and list(last_state) == state else tuple(state)
    if type(args) is dict:
        for name, value in args.items():
            if type(value) is str and len(value) <= _SHARED_CHARS:
                args[name] = strings.setdefault(value, value)
    if flags & _STATUS_FROM_STATE:
        status = STATUS_FROM_STATE
    elif type(status) is int and status == 0:  # the last status sent again (see TraceStreamer._event_rows)
        status = last_status
    else:
        status = pack(status)
    if flags & (_ARGS_REQUEST | _RESULT_REQUEST):
        held = requests[request]
        args = held if flags & _ARGS_REQUEST else args
        result = held if flags & _RESULT_REQUEST else result
    return Event(index=0, kind=kind, turn=turn, request=request, t=t, duration=duration,
                 args=pack(args) if args else {}, result=result, state=state, status=status,
                 fault=Fault(*fault) if fault is not None else None, thread=thread, note=note, output=output)


_REQUEST_FIELDS = operator.attrgetter("turn", "call", "event", "assembled", "selected", "selected_by_engine", "tools",
                                      "tokens", "usage", "recorded", "cache", "timestamp", "response_key")
_CACHE_VALUES = operator.attrgetter(*(name + "_held" if name in ("reason", "block_tokens") else name
                                      for name in _CACHE_FIELDS))


def _request_row(r: Request) -> list[Any]:
    """A request's fields; a hit's reason, held as :class:`HitWords`, as ``[steps]`` (its words are
    made of the figures beside it), and block counts left empty (``NO_BLOCKS``) as None."""
    row = list(_REQUEST_FIELDS(r))
    cache = list(_CACHE_VALUES(row[10]))
    reason = cache[_REASON]
    if type(reason) is HitWords:
        cache[_REASON] = [reason.steps]
    if cache[_BLOCKS] is NO_BLOCKS:
        cache[_BLOCKS] = None
    row[10] = cache
    return row


def _request(index: int, row: list[Any]) -> Request:
    turn, call, event, assembled, selected, by_engine, tools, tokens, usage, recorded, cache, ts, response = row
    info = CacheInfo(**dict(zip(_CACHE_FIELDS, cache)))
    reason = cache[_REASON]
    if type(reason) is list:
        info.reason = HitWords(*reason)
    if cache[_BLOCKS] is None:
        info.block_tokens = NO_BLOCKS
    return Request(index=index, turn=turn, call=call, event=event, assembled=assembled, selected=selected,
                   selected_by_engine=by_engine, tools=tools, tokens=pack(tokens), usage=pack_usage(usage),
                   recorded=recorded, cache=info, timestamp=ts, response_key=response)


def encode_lists_since(lists: KeyLists | list[tuple[str, ...]], start: int) -> list[list[Any]]:
    """The key lists from ``start`` on, in a saved trace's delta format (``[back, 0, n, *keys]``: the
    first ``n`` keys of the list ``back`` places earlier, then these; a longer rest also as
    ``start, length`` runs of that list). A request's list mostly extends one of the last two;
    the receiver already has the lists before ``start``.

    Cheaper than a saved trace's search (:func:`inspector.trace.io._encode_lists`, which also tries
    copied runs further back): this runs inside the replay, after every turn. A list the store keeps
    as a prefix of an earlier one plus a tail (:meth:`KeyLists.stored_delta`, most of a replay's)
    goes as that, without rebuilding either list.
    """
    out: list[list[Any]] = []
    stored = lists.stored_delta if isinstance(lists, KeyLists) else None
    for i in range(start, len(lists)):
        delta = stored(i) if stored is not None else None
        if delta is not None:
            base, prefix, tail = delta
            out.append([i - base, 0, prefix, *tail])
            continue
        cur = lists[i]
        if len(cur) <= _SMALL_TAIL:  # a turn's inputs: sending the keys costs less than finding them
            out.append([0, *cur])
            continue
        best_back, best = 0, 0
        for back in (1, 2):
            if back > i:
                break
            p = common_prefix_len(lists[i - back], cur)
            if p > best:
                best_back, best = back, p
        if best_back == 0 and i >= 1:
            best_back = 1  # no shared prefix: the previous list may still hold runs of this one
        items: list[Any] = [0, best] if best else []
        if best_back and len(cur) - best > _SMALL_TAIL:
            items += _copy_runs(lists[i - best_back], cur, best)
        else:
            items += cur[best:]
        out.append([best_back if any(type(x) is int for x in items) else 0, *items])
    return out


_SMALL_TAIL = 8  # a tail this short is sent as keys: looking for runs in the base costs more
_SEARCHES = 4  # keys looked up in the base (each a scan of it in C) before the rest goes as keys


def _copy_runs(base: tuple[str, ...], cur: tuple[str, ...], j: int) -> list[Any]:
    """``cur[j:]`` as ``start, length`` runs copied from ``base`` and literal keys, greedily: a
    request's list that is not the last one extended is mostly one or two runs of it (an engine
    dropped the oldest messages, or put a summary before the recent ones)."""
    items: list[Any] = []
    searches, n = 0, len(cur)
    while j < n and searches < _SEARCHES:
        searches += 1
        try:
            q = base.index(cur[j])
        except ValueError:
            items.append(cur[j])
            j += 1
            continue
        run = common_prefix_len(base[q:], cur[j:])
        items += [q, run]
        j += run
    items += cur[j:]
    return items


REF_MIN_CHARS = 256  # a shorter content is sent as it is


class TraceStreamer:
    """Worker side: what a growing trace gained since the last batch, as one JSON-able dict.

    With the session's messages (a replay: the supervisor holds the same session), a stored
    message whose content is the very string of a session message goes with its content as None
    and ``content_refs`` naming that message: the supervisor puts its own copy back. Tool outputs
    are most of a large session's bytes, and were otherwise encoded, piped and decoded a second time.
    """

    def __init__(self, trace: Trace, session_messages: list[dict[str, Any]] | None = None) -> None:
        self.trace = trace
        self._events = self._requests = self._messages = self._lists = self._schemas = 0
        self._sent_rows: list[Any] = []  # the token rows sent, in the table's order (see _new_token_rows)
        self._status: dict[str, Any] | None = None
        self._status_held: Any = None  # the value the last status sent was held as
        self._session = session_messages or []
        self._contents = {id(c): i for i, m in enumerate(self._session)
                          if type(c := m.get("content")) is str and len(c) >= REF_MIN_CHARS}

    def _new_messages(self) -> tuple[dict[str, Any], dict[str, int]]:
        messages = dict(itertools.islice(self.trace.store.messages.items(), self._messages, None))
        refs: dict[str, int] = {}
        if self._contents:
            for key, msg in messages.items():
                content = msg.get("content")
                if type(content) is str and len(content) >= REF_MIN_CHARS:
                    i = self._contents.get(id(content))
                    if i is not None and self._session[i].get("content") is content:
                        messages[key] = {**msg, "content": None}
                        refs[key] = i
        return messages, refs

    def _event_rows(self, events: list[Event]) -> list[list[Any]]:
        """Event rows; a status equal to the last one sent goes as 0 (most events repeat
        ``get_status()``, and it was most of the stream's bytes), as a saved trace stores it.
        A run of events the recorder gave one held status is told by identity, without a dict."""
        rows = []
        last, last_held = self._status, self._status_held
        for ev in events:
            row = _event_row(ev)
            held = row[8]
            if held is None:
                rows.append(row)
                continue
            if held is last_held:
                row[8] = 0
            else:
                status = unpack(held)
                if type(status) is dict:  # what the host records (inspector.host: a dict or None)
                    if status == last:
                        row[8] = 0
                    else:
                        row[8] = last = status
                    last_held = held
            rows.append(row)
        self._status, self._status_held = last, last_held
        return rows

    def batch(self, *, final: bool = False) -> dict[str, Any]:
        tr, store = self.trace, self.trace.store
        out: dict[str, Any] = {
            "events": self._event_rows(tr.events[self._events:]),
            "requests": [_request_row(r) for r in tr.requests[self._requests:]],
            "lists": encode_lists_since(store.lists, self._lists),
        }
        out["messages"], refs = self._new_messages()
        if refs:
            out["content_refs"] = refs
        added = self._new_token_rows(store.tokens, final)
        if added is None:
            out["tokens"] = dict(store.tokens.items())  # rows as dicts (a TokenTable holds them packed)
        else:
            out["tokens_added"] = added
        if final:
            out["meta"] = tr.meta
            out["tool_schemas"] = tr.tool_schemas
        elif len(tr.tool_schemas) != self._schemas:
            out["tool_schemas"] = tr.tool_schemas
        self._events, self._requests = len(tr.events), len(tr.requests)
        self._messages, self._lists = len(store.messages), len(store.lists)
        self._schemas = len(tr.tool_schemas)
        return out

    def _new_token_rows(self, tokens: Any, final: bool) -> dict[str, Any] | None:
        """Token rows added since the last batch and, in the final one, rows replaced since they
        were sent, as dicts; None when the whole table must go (the final batch of a table that
        is not a :class:`TokenTable`, whose rows may be edited in place, or one that lost a row).
        A TokenTable's row is replaced, never edited, so a replaced row is told by identity; the
        whole table went again at the end before (50,000 rows of a 10,000-turn replay at once)."""
        rows = tokens.rows if isinstance(tokens, TokenTable) else tokens
        sent = self._sent_rows
        if final and (rows is tokens or len(rows) < len(sent)):
            return None
        out = {}
        if final:
            for key, row, was in zip(rows, rows.values(), sent):
                if row is not was:
                    out[key] = unpack(row)
        for key, row in itertools.islice(rows.items(), len(sent), None):
            sent.append(row)
            out[key] = unpack(row)
        return out


class TraceAssembler:
    """Supervisor side: the trace rebuilt from a worker's batches; readable after any of them."""

    def __init__(self, meta: dict[str, Any] | None = None, session_messages: list[dict[str, Any]] | None = None) -> None:
        self.trace = Trace(dict(meta or {}))
        self.batches = 0
        self._status: Any = None  # the status held for the last one sent
        self._strings: dict[str, str] = {}  # see _event
        self._keys: dict[str, str] = {}  # each message key, to itself (see add)
        self._session = session_messages or []

    def add(self, batch: dict[str, Any]) -> Trace:
        """Add one batch; a batch that does not fit (a content ref to no text) raises ValueError."""
        tr, store = self.trace, self.trace.store
        messages = batch.get("messages") or {}
        for key, i in (batch.get("content_refs") or {}).items():
            content = self._session[i].get("content") if type(i) is int and 0 <= i < len(self._session) else None
            if type(content) is not str or messages[key].get("content") is not None:
                raise ValueError(f"message {str(key)[:40]!r} refers to no session message's text")
            messages[key]["content"] = content
        store.messages.update(messages)
        canonical = self._keys  # a key in a list is the store's key object, not a copy per list read
        for key in messages:
            canonical[key] = key
        encoded = batch.get("lists") or []
        for row in encoded:
            if type(row) is list:
                for j, item in enumerate(row):
                    if type(item) is str:
                        row[j] = canonical.get(item, item)
        for keys in _decode_lists(encoded, store.messages, prior=store.lists):
            store.lists.append(keys)
            store._list_ids.setdefault(hash(keys), len(store.lists) - 1)
        start = len(tr.requests)
        tr.requests.extend(_request(start + i, row) for i, row in enumerate(batch.get("requests") or ()))
        status, requests, strings = self._status, tr.requests, self._strings
        state = tr.events[-1].state if tr.events else None
        for row in batch.get("events") or ():
            ev = _event(row, status, state, requests, strings)
            held = ev.status_held  # type: ignore[attr-defined]
            if held is not None and held is not STATUS_FROM_STATE:
                status = held
            state = ev.state
            tr.add_event(ev)
        self._status = status
        if "tokens" in batch:
            store.tokens = TokenTable(batch["tokens"])
        else:
            store.tokens.update(batch.get("tokens_added") or {})
        if "tool_schemas" in batch:
            tr.tool_schemas = batch["tool_schemas"]
        if isinstance(batch.get("meta"), dict):
            tr.meta = batch["meta"]
        self.batches += 1
        return tr
