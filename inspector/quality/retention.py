"""Fact retention: after each compaction, and at the end, what the model can still read.

For a compaction, the *compacted part* is the session messages it took out of the history
(:class:`~inspector.quality.lifetime.Compaction`); at the end of the run it is every message the
last request no longer carries. Each fact of that part (:mod:`inspector.quality.facts`) is looked
up in the next request (the first provider call after the compaction; the last one at the end):

- **carried**: a session message the request still sends (or the system prompt) contains it,
  verbatim or normalised;
- **summary**: only text the engine wrote (a summary message, or anything it put in a request
  that is no session message) contains it;
- **lost**: the request does not contain it. With ``--probe-tools``, a lost fact the engine's
  read-only retrieval tools return is **recoverable** (:mod:`inspector.quality.probes`).

Retention = (carried + summary + recoverable) ÷ facts of the compacted part. A compaction or end
with no facts to lose retains everything (1.0). The end figure is the run's figure.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from inspector.quality.facts import Fact, facts_of, normalise, searchable_text
from inspector.quality.lifetime import LifetimeBuilder, Lifetimes, MessageLife
from inspector.trace.model import Trace

CARRIED = "carried"
SUMMARY = "summary"
LOST = "lost"
RECOVERABLE = "recoverable"
STATUSES = (CARRIED, SUMMARY, RECOVERABLE, LOST)
AVAILABLE = frozenset({CARRIED, SUMMARY, RECOVERABLE})


@dataclass(slots=True)
class FactStatus:
    fact: Fact
    status: str
    normalised: bool = False  # found only after normalising (not verbatim)
    via: str = ""  # the retrieval tool that returned a recoverable fact

    def to_json(self) -> list[Any]:
        return [*self.fact.to_json(), self.status, self.normalised, self.via]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> FactStatus:
        return cls(Fact.from_json(data[:3]), str(data[3]), bool(data[4]), str(data[5]))


@dataclass
class RetentionPoint:
    """One measurement: a compaction (``event``) or the end of the run (``event`` None)."""

    event: int | None
    request: int | None  # the request the facts were looked up in
    facts: list[FactStatus] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for f in self.facts if f.status == status)

    @property
    def total(self) -> int:
        return len(self.facts)

    @property
    def retention(self) -> float:
        if not self.facts:
            return 1.0
        return sum(1 for f in self.facts if f.status in AVAILABLE) / len(self.facts)

    @property
    def lost(self) -> list[FactStatus]:
        return [f for f in self.facts if f.status == LOST]

    def counts(self) -> dict[str, int]:
        return {s: self.count(s) for s in STATUSES}

    def to_json(self) -> dict[str, Any]:
        return {"event": self.event, "request": self.request, "facts": [f.to_json() for f in self.facts]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RetentionPoint:
        ev, req = data.get("event"), data.get("request")
        return cls(None if ev is None else int(ev), None if req is None else int(req),
                   [FactStatus.from_json(f) for f in data.get("facts", [])])

    def summary_json(self) -> dict[str, Any]:
        """The figures without the fact list (``replay --json``, the comparison table)."""
        return {"event": self.event, "request": self.request, "facts": self.total, **self.counts(),
                "retention": round(self.retention, 6)}


@dataclass
class Retention:
    compactions: list[RetentionPoint]
    end: RetentionPoint

    @property
    def retention(self) -> float:
        return self.end.retention

    def to_json(self) -> dict[str, Any]:
        return {"compactions": [p.to_json() for p in self.compactions], "end": self.end.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Retention:
        return cls([RetentionPoint.from_json(p) for p in data.get("compactions", [])],
                   RetentionPoint.from_json(data["end"]))


class _Texts:
    """Searchable text of messages by key, raw and normalised, computed once per key."""

    def __init__(self, trace: Trace) -> None:
        self.messages = trace.store.messages
        self._raw: dict[str, str] = {}
        self._norm: dict[str, str] = {}

    def raw(self, key: str) -> str:
        text = self._raw.get(key)
        if text is None:
            text = self._raw[key] = searchable_text(self.messages.get(key) or {})
        return text

    def norm(self, key: str) -> str:
        text = self._norm.get(key)
        if text is None:
            text = self._norm[key] = normalise(self.raw(key))
        return text


# From this many facts looked up in one request on, its texts are searched through sets of their
# pieces (:class:`_Pieces`): building the sets costs about as much as 500 scans of the text. The end
# of a 150 MB session looks up 13,560 facts, nearly all lost: 4.3 s by scans, 0.8 s so.
PIECES_FROM_FACTS = 512
_LONG_PIECE = 8
_SHORT_PIECE = 4


class _Pieces:
    """A text that answers ``needle in text`` exactly, ruling most absent needles out by set lookups.

    A needle is in the text only if each of its pieces (substrings of 8 characters, 4 for a needle
    shorter than 8) is a piece of the text; four of them are looked up in the set of the text's
    pieces (built on first need) before the text is scanned, so a needle the text lacks costs a few
    hash lookups instead of a scan of the whole request. The scan still decides every needle
    the sets let through: the answer is always that of ``in``.
    """

    __slots__ = ("text", "_sets")

    def __init__(self, text: str) -> None:
        self.text = text
        self._sets: dict[int, set[str]] = {}

    def _pieces(self, n: int) -> set[str]:
        found = self._sets.get(n)
        if found is None:
            text = self.text
            found = self._sets[n] = {text[i:i + n] for i in range(len(text) - n + 1)}
        return found

    def __contains__(self, needle: str) -> bool:
        n = len(needle)
        if n >= _LONG_PIECE:
            pieces, size = self._pieces(_LONG_PIECE), _LONG_PIECE
        elif n >= _SHORT_PIECE:
            pieces, size = self._pieces(_SHORT_PIECE), _SHORT_PIECE
        else:
            return needle in self.text
        last = n - size
        if (needle[:size] not in pieces or needle[last:] not in pieces
                or needle[last // 3:last // 3 + size] not in pieces or needle[2 * last // 3:2 * last // 3 + size] not in pieces):
            return False
        return needle in self.text


class _Haystack:
    """The request's text in two parts: what session messages carry, and what the engine wrote.

    With ``pieces`` (many facts to look up) each text is a :class:`_Pieces`, which answers ``in``
    the same way, faster when most facts are absent."""

    def __init__(self, carried: Sequence[str], written: Sequence[str], texts: _Texts, *, pieces: bool = False) -> None:
        sep = "\n\u241e\n"  # a separator no fact contains: a fact never matches across two messages
        wrap: Any = _Pieces if pieces else str
        self.carried_raw = wrap(sep.join(texts.raw(k) for k in carried))
        self.carried_norm = wrap(sep.join(texts.norm(k) for k in carried))
        self.written_raw = wrap(sep.join(texts.raw(k) for k in written))
        self.written_norm = wrap(sep.join(texts.norm(k) for k in written))

    def status(self, fact: Fact) -> tuple[str, bool]:
        if fact.text in self.carried_raw:
            return CARRIED, False
        if fact.text in self.written_raw:
            return SUMMARY, False
        if fact.norm in self.carried_norm:
            return CARRIED, True
        if fact.norm in self.written_norm:
            return SUMMARY, True
        return LOST, False


def _carried(keys: Iterable[str], instances: Container[str], summaries: Container[str], texts: _Texts) -> list[str]:
    """Which of a request's keys are session messages (or the system prompt): the rest the engine wrote.

    A key is a session message's once the lifetime pass knows it as one, and never becomes a
    summary's after (nor the other way round), so a request measured while its run streams in
    classifies every key it knew as the finished run does (:class:`CompactionPoints`)."""
    # a kept message the summary was merged into is summary text
    return [k for k in keys if (k in instances and k not in summaries) or _is_system(texts, k)]


def _is_system(texts: _Texts, key: str) -> bool:
    return (texts.messages.get(key) or {}).get("role") == "system"


class FactIndex:
    """Facts per session message (computed on first use): the unit of every retention measure.

    ``messages`` is the lifetimes' list of session messages (it may still grow: a run streaming in)."""

    def __init__(self, trace: Trace, messages: Sequence[MessageLife]) -> None:
        self.trace = trace
        self.messages = messages
        self._by_message: dict[int, list[Fact]] = {}

    def of(self, index: int) -> list[Fact]:
        found = self._by_message.get(index)
        if found is None:
            life = self.messages[index]
            msg = self.trace.store.messages.get(life.key) or {}
            found = self._by_message[index] = facts_of(life.key, msg, index)
        return found

    def of_part(self, indices: Iterable[int]) -> list[Fact]:
        """The distinct facts (by normalised text) of several messages, each with its first origin."""
        seen: set[str] = set()
        out: list[Fact] = []
        for i in sorted(indices):
            for f in self.of(i):
                if f.norm not in seen:
                    seen.add(f.norm)
                    out.append(f)
        return out

    def all(self) -> list[Fact]:
        return self.of_part(range(len(self.messages)))


def _statuses(facts: Sequence[Fact], keys: Sequence[str] | None, carried: Sequence[str], texts: _Texts) -> list[FactStatus]:
    """The status of each fact in a request of ``keys`` (None: no such request, all lost)."""
    if keys is None:
        return [FactStatus(f, LOST) for f in facts]
    own = set(carried)
    hay = _Haystack(carried, [k for k in keys if k not in own], texts, pieces=len(facts) >= PIECES_FROM_FACTS)
    out = []
    for f in facts:
        status, normalised = hay.status(f)
        out.append(FactStatus(f, status, normalised))
    return out


def _request_keys(trace: Trace, request: int | None) -> Sequence[str] | None:
    if request is None or not (0 <= request < len(trace.requests)):
        return None
    return trace.store.get_list(trace.requests[request].selected)


def end_part(lifetimes: Lifetimes) -> list[int]:
    """Messages sent before the last request that the last request no longer carries."""
    last = lifetimes.requests - 1
    if last < 0:
        return []
    return [m.index for m in lifetimes.messages if m.sent and m.sent[0] < last and m.sent[-1] != last]


class CompactionPoints:
    """Retention of each compaction, measured as soon as the lifetime pass has seen its next request.

    A run that streams in (:mod:`inspector.quality.ahead`) is measured while it runs, so that only
    the end of the run is left when it is over. Each point keeps the keys it counted as carried;
    :meth:`retention` measures again any point the finished lifetimes classify otherwise (a key
    of a selection the pass had not met yet), so the result is always that of :func:`fact_retention`.
    """

    def __init__(self, trace: Trace, index: FactIndex, builder: LifetimeBuilder | None = None) -> None:
        self.trace = trace
        self.builder = builder
        self.index = index
        self.texts = _Texts(trace)
        self._points: list[tuple[RetentionPoint, list[str]]] = []

    def _carried(self, request: int | None, instances: Container[str], summaries: Container[str]) -> list[str]:
        keys = _request_keys(self.trace, request)
        return [] if keys is None else _carried(keys, instances, summaries, self.texts)

    def _point(self, event: int | None, request: int | None, part: Iterable[int], carried: list[str]) -> RetentionPoint:
        """The statuses, in request ``request``, of the facts of the messages ``part``."""
        return RetentionPoint(event, request, _statuses(self.index.of_part(part), _request_keys(self.trace, request),
                                                        carried, self.texts))

    def measure_ready(self) -> None:
        """Measure every compaction whose next request the builder has seen."""
        b = self.builder
        assert b is not None, "points are measured ahead only from a lifetime pass"
        compactions = b.compactions
        while len(self._points) < len(compactions) and compactions[len(self._points)].next_request is not None:
            comp = compactions[len(self._points)]
            carried = self._carried(comp.next_request, b.instances, b.summary_index)
            self._points.append((self._point(comp.event, comp.next_request, comp.removed, carried), carried))

    def retention(self, lifetimes: Lifetimes) -> Retention:
        """The run's retention, from the points measured so far and ``lifetimes`` (the finished pass)."""
        instances, summaries = lifetimes.forms, set(lifetimes.summary_keys)
        points = []
        for n, comp in enumerate(lifetimes.compactions):
            carried = self._carried(comp.next_request, instances, summaries)
            if n < len(self._points) and self._points[n][1] == carried:
                points.append(self._points[n][0])
            else:
                points.append(self._point(comp.event, comp.next_request, comp.removed, carried))
        last = lifetimes.requests - 1 if lifetimes.requests else None
        end = self._point(None, last, end_part(lifetimes), self._carried(last, instances, summaries))
        return Retention(points, end)


def fact_retention(trace: Trace, lifetimes: Lifetimes, index: FactIndex | None = None) -> Retention:
    """Retention after every compaction of ``lifetimes`` and at the end of the run."""
    index = index or FactIndex(trace, lifetimes.messages)
    return CompactionPoints(trace, index).retention(lifetimes)
