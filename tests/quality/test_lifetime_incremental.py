"""The lifetime pass looks only at what changed between consecutive requests; these runs check it
gives exactly what a straightforward pass gives, one that visits every sent message at every
request, on runs that compact, drop, prune, leave messages out and bring them back."""

from __future__ import annotations

from collections import deque

from inspector.quality import lifetime as lt
from inspector.quality.lifetime import Requests, message_lifetimes

from ..host.conftest import NoCache, coding_session
from .conftest import OnceEngine


class Straightforward(lt.LifetimeBuilder):
    """Every request: map the whole list, then visit every message it sent and every one it left out."""

    def _map(self, keys, ref_keys, ref_ids, *, create, from_end=False, returns=True):
        n = min(len(keys), len(ref_keys))
        p = 0
        while p < n and keys[p] == ref_keys[p]:
            p += 1
        out = list(ref_ids[:p])
        pool: dict[str, deque[int]] = {}
        for k, i in zip(ref_keys[p:], ref_ids[p:]):
            if i is not None:
                pool.setdefault(k, deque()).append(i)
        rest = keys[p:]
        found = [None] * len(rest)
        taken = set(out)
        for pos in (range(len(rest) - 1, -1, -1) if from_end else range(len(rest))):
            q = pool.get(rest[pos])
            if q:
                found[pos] = q.pop() if from_end else q.popleft()
                taken.add(found[pos])
        for pos, k in enumerate(rest):
            if found[pos] is not None or k in self.summary_index:
                continue
            back = [i for i in self.instances.get(k, ()) if i in self._gone and i not in taken] if returns else []
            if back:
                found[pos] = back[-1]
                taken.add(back[-1])
            elif create:
                found[pos] = self._new(k)
        return out + found

    def on_request(self, ev):
        req = self.trace.requests[ev.request]
        assembled = self._body(self.store.get_list(req.assembled))
        ids = self._map(assembled, *self._history, create=True, returns=False)
        self._history = (assembled, ids)
        in_history = {i for i in ids if i is not None}
        selected = self.store.get_list(req.selected) if req.selected != req.assembled else None
        if selected is None:
            sent = in_history
        else:
            sent = {i for i in self._map(self._body(selected), assembled, ids, create=False) if i is not None}
        for i in sorted(sent):
            life = self.messages[i]
            if not life.sent:
                life.events.append(lt.LifeEvent(lt.FIRST, ev.index, req.index))
            elif i in self._gone or i in self._out_of_request:
                how = "select_context" if req.selected_by_engine else "history"
                life.events.append(lt.LifeEvent(lt.RESTORED, ev.index, req.index, how))
            life.sent.append(req.index)
            self._gone.pop(i, None)
        out = (in_history - sent) if selected is not None else set()
        for i in sorted(out - self._out_of_request):
            if self.messages[i].sent:
                self.messages[i].events.append(lt.LifeEvent(lt.LEFT_OUT, ev.index, req.index, "select_context"))
        self._out_of_request = {i for i in out if self.messages[i].sent}
        for comp in self._pending:
            comp.next_request = req.index
            for i in comp.removed:
                for e in self.messages[i].events:
                    if e.event == comp.event and e.request is None:
                        e.request = req.index
        self._pending = []


class Churn(OnceEngine):
    """Compacts every few responses (a summary, or nothing, or putting back a message an earlier
    compaction removed), prunes old tool results in between, leaves messages out of some requests,
    and selects a message the compaction just removed into the request after it."""

    name = "churn"

    def __init__(self) -> None:
        super().__init__()
        self.compactions = 0
        self.removed: list[dict] = []
        self.just_removed: list[str] = []
        self.as_sent: dict[str, dict] = {}  # content → the message as a request carried it

    def should_compress(self, prompt_tokens=None):
        return self.responses >= 6 and self.responses % 6 == 0 and self.compactions < self.responses // 6

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        self.compactions += 1
        self.compression_count += 1
        keep = messages[-6:]
        while keep and keep[0].get("role") == "tool":
            keep = keep[1:]
        gone = [m for m in messages[1:-6] if m.get("role") == "user" and "[SUMMARY" not in str(m.get("content"))]
        head = [messages[0]] if messages and messages[0].get("role") == "system" else []
        if self.compactions % 3 == 2 and self.removed:  # an earlier compaction's message comes back
            head.append(self.removed[0])
        elif self.compactions % 3 != 0:
            head.append({"role": "user", "content": f"[SUMMARY {self.compactions}] {len(messages)} messages"})
        self.removed.extend(gone)
        self.just_removed = [str(m.get("content")) for m in gone]
        return head + keep

    def prune_tool_results_only(self, messages, current_tokens=None):
        out, count = [], 0
        for m in messages[:-8]:
            if m.get("role") == "tool" and not str(m.get("content")).startswith("[pruned"):
                m = dict(m, content="[pruned] " + str(m.get("content"))[:20])
                count += 1
            out.append(m)
        return out + messages[-8:], count

    def select_context(self, request_messages, *, conversation_messages=None, incoming_message=None, budget_tokens=0):
        self.as_sent.update((str(m.get("content")), m) for m in request_messages)
        back = [self.as_sent[c] for c in self.just_removed if c in self.as_sent]
        self.just_removed = []
        if back:
            return [request_messages[0], back[-1], *request_messages[1:]]
        if self.responses % 5 in (2, 3):
            return [m for j, m in enumerate(request_messages) if j == 0 or j % 3 != 1]
        return None


def _session():
    session = coding_session(40, tool_chars=300)
    for t in (3, 17, 30):  # the same text three times: three messages
        session.messages[1 + 4 * t]["content"] = "Carry on."
    return session


def test_the_incremental_pass_agrees_with_a_straightforward_one(config):
    from inspector.host.replay import replay

    trace = replay(_session(), Churn(), config, simulator=NoCache())
    fast = message_lifetimes(trace)
    straightforward = Straightforward(trace)
    straightforward.feed(trace.events)
    slow = straightforward.build()
    seen = {e.kind for m in slow.messages for e in m.events}
    assert {lt.FIRST, lt.SUMMARISED, lt.DROPPED, lt.LEFT_OUT, lt.RESTORED, lt.PRUNED} <= seen  # every case ran
    assert {e.detail for m in slow.messages for e in m.events if e.kind == lt.RESTORED} == {"select_context", "history"}
    assert len(fast.compactions) >= 5 and len(fast.messages) > 100
    assert fast.to_json() == slow.to_json()
    for a, b in zip(fast.messages, slow.messages, strict=True):
        assert list(a.sent) == list(b.sent) and [e.to_json() for e in a.events] == [e.to_json() for e in b.events]


def test_requests_read_as_the_list_of_their_indices():
    values = [0, 1, 2, 5, 6, 9]
    req = Requests(values)
    assert req == values and list(req) == values and len(req) == 6 and bool(req)
    assert req.runs() == [0, 3, 5, 2, 9, 1]
    assert [req[i] for i in range(-6, 6)] == values + values
    assert req[1:4] == values[1:4]
    assert Requests.from_runs(req.runs()) == req
    assert not Requests() and Requests() == [] and req != [0, 1, 2]
