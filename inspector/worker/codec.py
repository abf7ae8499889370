"""Sessions and traces as JSON, for the pipe between a worker and its supervisor.

A session goes to the worker whole (the window's sessions need not come from a file). A trace
comes back as it grows: after each replayed turn the worker sends what was added since the
last batch (events, requests, messages, key lists, token counts), so the supervisor always
holds the trace up to the last finished turn, even when the worker dies or is killed later.
Batches are cut at turn boundaries because the host completes an event's fields (result,
state, output) during the turn it belongs to; the final batch resends the token table whole.
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import fields
from typing import Any

from inspector.sessions.model import ApiCall, Compaction, Session, Turn, Usage
from inspector.trace.io import _common_prefix_len, _decode_lists
from inspector.trace.model import CacheInfo, Event, Fault, Request, Trace

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

_CACHE_FIELDS = tuple(f.name for f in fields(CacheInfo))


_EVENT_FIELDS = operator.attrgetter("kind", "turn", "request", "t", "duration", "args", "result", "state", "status",
                                    "fault", "thread", "note", "output")


def _event_row(ev: Event) -> list[Any]:
    row = list(_EVENT_FIELDS(ev))  # one C call for every field: batches are cut after each turn
    fault = row[9]
    if fault is not None:
        row[9] = [fault.kind, fault.message, fault.traceback]
    return row


def _event(row: list[Any]) -> Event:
    kind, turn, request, t, duration, args, result, state, status, fault, thread, note, output = row
    return Event(index=0, kind=kind, turn=turn, request=request, t=t, duration=duration, args=args or {},
                 result=result, state=tuple(state) if state is not None else None, status=status,
                 fault=Fault(*fault) if fault is not None else None, thread=thread, note=note, output=output)


_REQUEST_FIELDS = operator.attrgetter("turn", "call", "event", "assembled", "selected", "selected_by_engine", "tools",
                                      "tokens", "usage", "recorded", "cache", "timestamp", "response_key")
_CACHE_VALUES = operator.attrgetter(*_CACHE_FIELDS)


def _request_row(r: Request) -> list[Any]:
    row = list(_REQUEST_FIELDS(r))
    row[10] = _CACHE_VALUES(row[10])
    return row


def _request(index: int, row: list[Any]) -> Request:
    turn, call, event, assembled, selected, by_engine, tools, tokens, usage, recorded, cache, ts, response = row
    return Request(index=index, turn=turn, call=call, event=event, assembled=assembled, selected=selected,
                   selected_by_engine=by_engine, tools=tools, tokens=tokens, usage=usage, recorded=recorded,
                   cache=CacheInfo(**dict(zip(_CACHE_FIELDS, cache))), timestamp=ts, response_key=response)


def encode_lists_since(lists: list[tuple[str, ...]], start: int) -> list[list[Any]]:
    """The key lists from ``start`` on, in a saved trace's delta format (``[back, 0, n, *keys]``: the
    first ``n`` keys of the list ``back`` places earlier, then these). A request's list mostly
    extends one of the last two; the receiver already has the lists before ``start``.

    Cheaper than a saved trace's search (:func:`inspector.trace.io._encode_lists`, which also tries
    copied runs further back): this runs inside the replay, after every turn.
    """
    out: list[list[Any]] = []
    for i in range(start, len(lists)):
        cur = lists[i]
        best_back, best = 0, 0
        for back in (1, 2):
            if back > i:
                break
            p = _common_prefix_len(lists[i - back], cur)
            if p > best:
                best_back, best = back, p
        out.append([best_back, 0, best, *cur[best:]] if best else [0, *cur])
    return out


class TraceStreamer:
    """Worker side: what a growing trace gained since the last batch, as one JSON-able dict."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._events = self._requests = self._messages = self._lists = self._tokens = self._schemas = 0

    def batch(self, *, final: bool = False) -> dict[str, Any]:
        tr, store = self.trace, self.trace.store
        out: dict[str, Any] = {
            "events": [_event_row(ev) for ev in tr.events[self._events:]],
            "requests": [_request_row(r) for r in tr.requests[self._requests:]],
            "messages": dict(itertools.islice(store.messages.items(), self._messages, None)),
            "lists": encode_lists_since(store.lists, self._lists),
        }
        if final:
            out["tokens"] = store.tokens
            out["meta"] = tr.meta
            out["tool_schemas"] = tr.tool_schemas
        else:
            out["tokens_added"] = dict(itertools.islice(store.tokens.items(), self._tokens, None))
            if len(tr.tool_schemas) != self._schemas:
                out["tool_schemas"] = tr.tool_schemas
        self._events, self._requests = len(tr.events), len(tr.requests)
        self._messages, self._lists = len(store.messages), len(store.lists)
        self._tokens, self._schemas = len(store.tokens), len(tr.tool_schemas)
        return out


class TraceAssembler:
    """Supervisor side: the trace rebuilt from a worker's batches; readable after any of them."""

    def __init__(self, meta: dict[str, Any] | None = None) -> None:
        self.trace = Trace(dict(meta or {}))
        self.batches = 0

    def add(self, batch: dict[str, Any]) -> Trace:
        tr, store = self.trace, self.trace.store
        store.messages.update(batch.get("messages") or {})
        for keys in _decode_lists(batch.get("lists") or [], store.messages, prior=store.lists):
            store.lists.append(keys)
            store._list_ids.setdefault(keys, len(store.lists) - 1)
        start = len(tr.requests)
        tr.requests.extend(_request(start + i, row) for i, row in enumerate(batch.get("requests") or ()))
        for row in batch.get("events") or ():
            tr.add_event(_event(row))
        if "tokens" in batch:
            store.tokens = batch["tokens"]
        else:
            store.tokens.update(batch.get("tokens_added") or {})
        if "tool_schemas" in batch:
            tr.tool_schemas = batch["tool_schemas"]
        if isinstance(batch.get("meta"), dict):
            tr.meta = batch["meta"]
        self.batches += 1
        return tr
