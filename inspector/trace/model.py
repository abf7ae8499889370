"""The trace: an immutable, content-addressed record of one engine run over one session.

Messages are stored once, keyed by a hash of their key-sorted repr; message *lists* (the
history, a request, a compress result) are interned too, so a 2,000-turn session costs the
distinct text once plus a key list per distinct list. Events refer to keys and list ids.

Every panel asks "what was true at event k?"; the answers come from arrays built once in
:meth:`Trace.finish`, so moving the cursor costs the same at event 5 and at event 50,000.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from array import array
from collections.abc import MutableMapping
from dataclasses import dataclass, field, fields
from typing import Any

from inspector.cache.reasons import HitWords
from inspector.engines.contract import base_status
from inspector.trace.key_lists import KeyLists, _Delta  # noqa: F401  (imported from here)
from inspector.trace.packed import read_through
from inspector.trace.token_table import TokenTable

# Event kinds, in the vocabulary of Hermes' hook names (agent/context_engine.py:56-263 of hermes-agent 0.19.0, docs/host-contract.md §1). The UI groups and colours by these.
EV_SESSION_START = "on_session_start"
EV_SESSION_END = "on_session_end"
EV_SESSION_RESET = "on_session_reset"
EV_UPDATE_MODEL = "update_model"
EV_TOOL_SCHEMAS = "get_tool_schemas"
EV_TURN = "turn"  # host marker: a user turn starts (args: user message key)
EV_REQUEST = "request"  # host marker: one provider call (the request is ``Trace.requests[ev.request]``)
EV_SELECT = "select_context"
EV_RESPONSE = "update_from_response"
EV_SHOULD = "should_compress"
EV_SHOULD_INFO = "should_compress_info"
EV_DEFER = "should_defer_preflight_to_real_usage"
EV_COMPRESS = "compress"
EV_PRUNE = "prune_tool_results_only"
EV_TOOL = "handle_tool_call"
EV_TURN_COMPLETE = "on_turn_complete"
EV_AUX_LLM = "call_llm"
EV_PLUGIN_HOOK = "plugin_hook"
EV_MARKER = "transcript_compaction"  # the original agent compacted here (from the transcript)
EV_FAULT = "fault"  # a host-level fault not tied to one hook call
EV_NOTE = "host_note"  # the host differs from Hermes here, or a host decision worth showing

LIFECYCLE_KINDS = frozenset({EV_SESSION_START, EV_SESSION_END, EV_SESSION_RESET, EV_UPDATE_MODEL, EV_TOOL_SCHEMAS})
COMPRESSION_KINDS = frozenset({EV_COMPRESS})

# The engine's token attributes snapshotted after every event, in this order.
STATE_FIELDS = (
    "last_prompt_tokens",
    "last_completion_tokens",
    "last_total_tokens",
    "threshold_tokens",
    "context_length",
    "compression_count",
)


# Messages are keyed by a hash of their content with dict keys sorted at every level, each
# string hashed as its UTF-8 bytes after its length. The same walk yields the length of the
# message's repr, which is Hermes' rough token figure for it (agent/model_metadata.py:2612 of
# hermes-agent 0.19.0), so keying a message measures it: a string's repr length is counted with
# a few passes of C over its bytes, not built (building the reprs was 1.2 s of the 1.9 s a pass
# over a 150 MB session's messages took; now 0.6 s in all). A message holding what JSON cannot (a tuple, another
# object, a key that is not a string) is keyed as a saved and reloaded trace holds it. Traces saved
# under the schemes before (the repr of that form, hashed; canonical JSON before that) stay valid;
# see ``key_scheme``.
KEY_SCHEME = "fields-sorted"
LEGACY_KEY_SCHEME = "json-sorted"
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
_STR_ONLY = frozenset({str})
_LEGACY_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))
_SCALAR_TAGS = {int: b"i", float: b"f", bool: b"b", type(None): b"n"}


class _NotWalked(Exception):
    """A value :func:`_walk` does not key: the message is keyed in its canonical form instead."""


def _str_repr_len(text: str, data: bytes | None = None) -> int:
    """``len(repr(text))``, counted without building it where that is cheaper; ``data``: ``text``
    in UTF-8 when the caller has it."""
    if len(text) < 512 or not text.isascii():
        return len(repr(text))
    escaped = (text.encode("ascii") if data is None else data).translate(None, _PRINTABLE_ASCII)
    n = len(text) + 2 + text.count("\\") + len(escaped)  # \n, \t and \r escape to two characters, the rest to \xNN
    if escaped:
        n += 2 * (len(escaped) - escaped.count(b"\n") - escaped.count(b"\t") - escaped.count(b"\r"))
    if "'" in text and '"' in text:  # repr quotes with ' and escapes each
        n += text.count("'")
    return n


def _walk(value: Any, put: Any) -> int:
    """``len(repr(value))``, and with ``put`` (a hash's update) ``value`` fed to it with dict keys
    sorted, each string as its length then its UTF-8 bytes (a framing no two values share)."""
    t = type(value)
    if t is str:
        if put is None:
            return _str_repr_len(value)
        data = value.encode("utf-8", "surrogatepass")
        put(b"s%d:" % len(data))
        put(data)
        return _str_repr_len(value, data)
    if t is dict:
        if not _STR_ONLY.issuperset(map(type, value)):
            raise _NotWalked
        n = 2 * len(value) if value else 2  # the braces, and ", " between items
        if put is None:
            for k, v in value.items():
                n += len(repr(k)) + 2 + _walk(v, None)  # "k: v"
            return n
        put(b"d%d:" % len(value))
        for k in sorted(value):
            v = value[k]
            name = k.encode("utf-8", "surrogatepass")
            if type(v) is str:  # most values: framed here as the str case above frames them
                data = v.encode("utf-8", "surrogatepass")
                put(b"%d:%bs%d:" % (len(name), name, len(data)))
                put(data)
                n += len(repr(k)) + 2 + _str_repr_len(v, data)
            else:
                put(b"%d:%b" % (len(name), name))
                n += len(repr(k)) + 2 + _walk(v, put)
        return n
    if t is list:
        if put is not None:
            put(b"l%d:" % len(value))
        n = 2 * len(value) if value else 2
        for v in value:
            n += _walk(v, put)
        return n
    tag = _SCALAR_TAGS.get(t)
    if tag is None:
        raise _NotWalked
    text = repr(value)
    if put is not None:
        put(b"%b%d:%b" % (tag, len(text), text.encode()))
    return len(text)


def _key_text(k: Any) -> str:
    """A dict key as JSON writes it, so a key survives a save and load unchanged."""
    if type(k) is str:
        return k
    if k is None or type(k) is bool:
        return json.dumps(k)
    return str(k) if type(k) in (int, float) else repr(k)


def _canonical(value: Any) -> tuple[Any, bool]:
    """(value with dict keys sorted at every level, whether its repr length is unchanged).

    Values JSON would write differently (tuples, other objects, non-string keys) become what a
    saved-and-reloaded trace holds, so a key can be re-checked after loading.
    """
    t = type(value)
    if t in _SCALAR_TYPES:
        return value, True
    if t is dict and _STR_ONLY.issuperset(map(type, value)) and _SCALAR_TYPES.issuperset(map(type, value.values())):
        return dict(sorted(value.items())), True  # the common flat message, sorted in C
    exact = True
    if t is dict:
        items = []
        for k, v in value.items():
            if type(k) is not str:
                exact = False
                k = _key_text(k)
            if type(v) not in _SCALAR_TYPES:
                v, same = _canonical(v)
                exact = exact and same
            items.append((k, v))
        items.sort(key=_first)
        return dict(items), exact
    if t is list or t is tuple:
        out = []
        for v in value:
            if type(v) not in _SCALAR_TYPES:
                v, same = _canonical(v)
                exact = exact and same
            out.append(v)
        return out, exact and t is list
    return str(value), False


def _first(item: tuple[str, Any]) -> str:
    return item[0]


def measured_key(message: dict[str, Any]) -> tuple[str, int | None]:
    """(content key, ``len(str(message))``) — the length is None when the message had to be normalised."""
    try:
        return _walked(message)
    except _NotWalked:
        canonical, exact = _canonical(message)  # what a saved and reloaded trace holds
        key, chars = _walked(canonical)
        return key, (chars if exact else None)


def repr_length(value: Any) -> int:
    """``len(repr(value))``, strings counted rather than built where :func:`_walk` takes the value."""
    try:
        return _walk(value, None)
    except _NotWalked:
        return len(repr(value))


def _walked(value: Any) -> tuple[str, int]:
    digest = hashlib.blake2b(b"\0", digest_size=10)  # no repr starts with NUL: no key of the earlier scheme
    chars = _walk(value, digest.update)
    return digest.hexdigest(), chars


def message_key(message: dict[str, Any]) -> str:
    """Content hash of a message: equal content (in any key order) gives an equal key."""
    return measured_key(message)[0]


def key_scheme(trace: Trace) -> str:
    """How ``trace``'s message keys were made (traces from before the scheme was recorded: JSON)."""
    return str(trace.meta.get("message_keys", LEGACY_KEY_SCHEME))


def earlier_message_keys(message: dict[str, Any]) -> tuple[str, str]:
    """The keys the schemes before ``KEY_SCHEME`` gave ``message``: repr-sorted (the hash of the
    repr of its canonical form), json-sorted (:func:`legacy_message_key`)."""
    text = repr(_canonical(message)[0])
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest(), legacy_message_key(message)


def legacy_message_key(message: dict[str, Any]) -> str:
    """The key traces written before ``KEY_SCHEME`` used (hash of the canonical JSON)."""
    canonical = _LEGACY_CANONICAL.encode(message)
    return hashlib.blake2b(canonical.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


class MessageStore:
    """Messages by key and interned key lists; each distinct message or list stored once."""

    def __init__(self) -> None:
        self.messages: dict[str, dict[str, Any]] = {}
        self.lists: KeyLists = KeyLists()
        # Interning by the tuple's hash (the tuples themselves are not kept: see KeyLists).
        self._list_ids: dict[int, int | list[int]] = {}
        # Per-key figures filled by the host's token counter: {key: {"tiktoken": n, "rough_chars": n, ...}},
        # rows held packed (a loaded or streamed trace may hold a plain dict)
        self.tokens: MutableMapping[str, dict[str, Any]] = TokenTable()

    def put(self, message: dict[str, Any]) -> str:
        return self.put_measured(message)[0]

    def put_measured(self, message: dict[str, Any]) -> tuple[str, int | None]:
        """Store a message; returns its key and its repr length (see :func:`measured_key`)."""
        key, chars = measured_key(message)
        if key not in self.messages:
            self.messages[key] = message
        return key, chars

    def put_keyed(self, message: dict[str, Any], measured: tuple[str, int | None]) -> tuple[str, int | None]:
        """:meth:`put_measured` of a message whose ``measured_key`` is known already."""
        if measured[0] not in self.messages:
            self.messages[measured[0]] = message
        return measured

    def get(self, key: str) -> dict[str, Any]:
        return self.messages[key]

    def put_list(self, keys: list[str] | tuple[str, ...]) -> int:
        tup = tuple(keys)
        lists = self.lists
        if type(lists) is not KeyLists:  # assigned a plain list of tuples (tests, older callers)
            lists = self.lists = KeyLists(lists)
            self._list_ids = {}
            for i, existing in enumerate(lists):
                self._list_ids.setdefault(hash(existing), i)
        h = hash(tup)
        found = self._list_ids.get(h)
        if found is not None:
            for i in (found if type(found) is list else (found,)):
                if lists[i] == tup:
                    return i
        i = len(lists)
        lists.append(tup)
        if found is None:
            self._list_ids[h] = i
        else:  # a hash collision between different lists: keep both
            self._list_ids[h] = [*(found if type(found) is list else (found,)), i]
        return i

    def put_messages(self, messages: list[dict[str, Any]]) -> int:
        return self.put_list([self.put(m) for m in messages])

    def get_list(self, list_id: int) -> tuple[str, ...]:
        return self.lists[list_id]

    def materialise(self, list_id: int) -> list[dict[str, Any]]:
        return [self.messages[k] for k in self.lists[list_id]]


_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.+)$', re.M)
# Frames that are never the engine's own: the host calling it, the stand-ins for Hermes' modules it
# calls (``ctx.llm``, ``call_llm``), and the interpreter's libraries.
_NOT_ENGINE_CODE = ("/inspector/host/", "/inspector/llm/", "/inspector/engines/compat/", "/lib/python3", "<frozen ")


def traceback_frames(text: str | None) -> list[tuple[str, str, str]]:
    """``(file, line, function)`` of every frame a formatted traceback names, outermost first."""
    return _FRAME.findall(text or "")


def _not_engine_code(path: str) -> bool:
    """Host machinery, a stand-in, or the standard library (an installed package may be the engine)."""
    path = path.replace("\\", "/")
    if not any(part in path for part in _NOT_ENGINE_CODE):
        return False
    return "-packages/" not in path or "/inspector/" in path


@dataclass(slots=True)
class Fault:
    """Something an engine (or the host around it) did wrong, recorded as data."""

    kind: str  # exception | timeout | invalid_return | mutated_input | refused | host_error
    message: str
    traceback: str | None = None

    def _frames(self) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        """(every frame of the traceback, the frames that are not host machinery or the stdlib)."""
        frames = traceback_frames(self.traceback)
        return frames, [f for f in frames if not _not_engine_code(f[0])]

    @property
    def where(self) -> str | None:
        """``file:line in function`` where the engine failed: the innermost frame of the traceback
        that is not the inspector's own host machinery or Python's standard library."""
        frames, own = self._frames()
        if not frames:
            return None
        path, line, fn = (own or frames)[-1]
        return f"{path}:{line} in {fn}"

    def where_is_engine_code(self) -> bool | None:
        """Whether :attr:`where` names engine code (None: the traceback names no frame at all)."""
        frames, own = self._frames()
        return bool(own) if frames else None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "traceback": self.traceback}


_NEW_DICT: Any = object()  # Event(args=...) not given: a new empty dict, as field(default_factory=dict) makes


@dataclass(slots=True)
class Event:
    """One hook call (or host marker), with inputs, outputs and the engine state after it.

    ``args``/``result`` hold JSON-able small values; message lists appear as ``{"$list": id}``
    and single messages as ``{"$msg": key}``.

    ``args``, ``result`` and ``status`` may be held packed (:mod:`inspector.trace.packed`) or
    as the :class:`Request` they are made of (a request marker's arguments and result, an
    ``update_from_response`` call's arguments): either way they read as the dicts they stand
    for, built anew at each read, so change one by assigning a new dict, never by editing the
    one read.
    """

    index: int
    kind: str
    turn: int | None = None
    request: int | None = None
    t: float = 0.0
    duration: float = 0.0
    args: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    state: tuple[int, ...] | None = None
    status: dict[str, Any] | None = None
    fault: Fault | None = None
    thread: str | None = None
    note: str | None = None
    output: str | None = None  # what the engine printed and logged during the call (inspector.host.capture)

    def __init__(self, index: int, kind: str, turn: int | None = None, request: int | None = None, t: float = 0.0,
                 duration: float = 0.0, args: Any = _NEW_DICT, result: Any = None,
                 state: tuple[int, ...] | None = None, status: Any = None, fault: Fault | None = None,
                 thread: str | None = None, note: str | None = None, output: str | None = None) -> None:
        """The dataclass's own, except that ``args``, ``result`` and ``status`` are stored as given
        (the slots under their second names, see :func:`inspector.trace.packed.read_through`):
        a replay builds a hundred thousand events, and through their setters each cost a fifth
        more to build. ``tests/trace/test_packed.py`` holds it to the fields."""
        self.index = index
        self.kind = kind
        self.turn = turn
        self.request = request
        self.t = t
        self.duration = duration
        self.args_held = {} if args is _NEW_DICT else args
        self.result_held = result
        self.state = state
        self.status_held = status
        self.fault = fault
        self.thread = thread
        self.note = note
        self.output = output


@dataclass(slots=True)
class CacheInfo:
    """The simulated prompt-cache outcome of one request."""

    read: int = 0
    write: int = 0
    uncached: int = 0
    break_index: int | None = None  # first message index of the request not served from cache
    reason: str = ""  # words, e.g. "prefix broke at message 4 (compress at event 812)"; a hit's held as HitWords
    reason_kind: str = ""  # cold | ttl | below_minimum | prefix_break | hit | disabled
    cause_event: int | None = None
    block_tokens: list[int] = field(default_factory=list)  # tokens per request block (system, msgs...)
    cost: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(slots=True)
class Request:
    """One simulated (or live) provider call: what the engine made the model see."""

    index: int
    turn: int
    call: int  # provider call number within the turn
    event: int  # index of the EV_REQUEST marker event
    assembled: int  # list id: system + history + incoming, before select_context
    selected: int  # list id: what is sent (== assembled when the engine changed nothing)
    selected_by_engine: bool = False
    tools: int | None = None  # list id of tool schemas sent? (schemas are stored as messages-like dicts)
    tokens: dict[str, int] = field(default_factory=dict)  # {"tiktoken": n, "rough": n, "tools": n}
    usage: dict[str, int] = field(default_factory=dict)  # synthesised Hermes usage dict
    recorded: dict[str, int] | None = None  # recorded usage from the transcript, same shape
    cache: CacheInfo = field(default_factory=CacheInfo)
    timestamp: float | None = None
    response_key: str | None = None  # the assistant message this call produced


# What an event's args or result held as its request stand for: a request marker's are its
# selected list and its response, an update_from_response call's argument is its usage.
def _args_from(event: Event, held: Any) -> Any:
    if type(held) is not Request:
        return held
    if event.kind == EV_RESPONSE:
        return {"usage": held.usage}
    return {"messages": {"$list": held.selected}}


def _result_from(event: Event, held: Any) -> Any:
    return {"$msg": held.response_key} if type(held) is Request else held


class _Stands:
    """A value a trace holds in place of one it reads as (see :func:`inspector.trace.packed.read_through`)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# A CacheInfo holding this reads its block_tokens as a new empty list: the host leaves them
# empty (derivable from the request's list and the per-message counts), and an empty list per
# request was 1.9 MiB of a 10,000-turn replay.
NO_BLOCKS: Any = _Stands("NO_BLOCKS")


def _blocks_from(info: CacheInfo, held: Any) -> Any:
    return [] if held is NO_BLOCKS else held


def _reason_from(info: CacheInfo, held: Any) -> Any:
    if type(held) is HitWords:  # a hit's words, made from the figures beside them (inspector.cache.reasons)
        return held.words(info.read, info.write, info.uncached, info.break_index)  # type: ignore[arg-type]
    return held


# An event holding this reads its status as ``ContextEngine.get_status()`` would report its
# ``state`` (those of its fields the base class reads): the host records it for every event of
# an engine that keeps the base class's get_status and plain int attributes, where that status
# is a function of the state the trace holds anyway (40,000 distinct dicts in a 10,000-turn
# replay, 3.8 MiB even packed).
STATUS_FROM_STATE: Any = _Stands("STATUS_FROM_STATE")


def _status_from(event: Event, held: Any) -> Any:
    if held is STATUS_FROM_STATE:
        s = event.state
        return base_status(s[0], s[3], s[4], s[5])  # last_prompt_tokens, threshold, context_length, compressions
    return held


read_through(Event, "args", _args_from)
read_through(Event, "result", _result_from)
read_through(Event, "status", _status_from)
read_through(CacheInfo, "reason", _reason_from)
read_through(CacheInfo, "block_tokens", _blocks_from)
read_through(Request, "tokens")
read_through(Request, "usage")


def hold_request(event: Event, request: Request) -> None:
    """Hold a request marker's arguments and result, or an ``update_from_response`` call's
    arguments, as their request (what they are made of: 17 MiB of a 10,000-turn replay as dicts)."""
    event.args_held = request  # type: ignore[attr-defined]
    if event.kind == EV_REQUEST:
        event.result_held = request  # type: ignore[attr-defined]


@dataclass(slots=True)
class Mark:
    """A user's bookmark or note, saved inside the trace file."""

    event: int
    label: str = ""
    note: str = ""


class Trace:
    """One run of one engine over one session. Built by the host, then read-only."""

    def __init__(self, meta: dict[str, Any] | None = None) -> None:
        self.meta: dict[str, Any] = meta or {}
        self.store = MessageStore()
        self.events: list[Event] = []
        self.requests: list[Request] = []
        self.marks: list[Mark] = []
        self.tool_schemas: list[dict[str, Any]] = []
        # Analyses computed from the trace after the run (``inspector.quality``), saved with it.
        self.derived: dict[str, Any] = {}
        self._finished = False
        self._request_at: array[int] = array("i")  # per event: 4 bytes, not a pointer
        self._turn_starts: list[int] = []
        self._compress_events: list[int] = []
        self._fault_events: list[int] = []
        self._miss_events: list[int] = []
        self._state_at: list[tuple[int, ...]] = []

    # -- building --------------------------------------------------------------------
    def add_event(self, event: Event) -> Event:
        event.index = len(self.events)
        events = self.events
        if events and event.state is not None and event.state == events[-1].state:
            event.state = events[-1].state  # one tuple for a run of equal states (most events change none)
        events.append(event)
        self._finished = False
        return event

    def finish(self) -> Trace:
        """Build the per-event lookup arrays. Idempotent; cheap enough to call after each live turn."""
        req = -1
        state: tuple[int, ...] = (0,) * len(STATE_FIELDS)
        self._request_at = array("i")
        self._state_at = []
        self._turn_starts = []
        self._compress_events = []
        self._fault_events = []
        self._miss_events = []
        for ev in self.events:
            if ev.request is not None:
                req = ev.request
            if ev.state is not None:
                state = ev.state
            self._request_at.append(req)
            self._state_at.append(state)
            if ev.kind == EV_TURN:
                self._turn_starts.append(ev.index)
            elif ev.kind == EV_COMPRESS:
                self._compress_events.append(ev.index)
            if ev.fault is not None:
                self._fault_events.append(ev.index)
            if ev.kind == EV_REQUEST and ev.request is not None:
                info = self.requests[ev.request].cache
                if info.reason_kind not in ("hit", "disabled", ""):
                    self._miss_events.append(ev.index)
        self._finished = True
        return self

    def _ensure(self) -> None:
        if not self._finished:
            self.finish()

    # -- queries ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.events)

    def clamp(self, k: int) -> int:
        return max(0, min(k, len(self.events) - 1)) if self.events else 0

    def request_at(self, k: int) -> Request | None:
        """The request in force at event k: the latest provider call at or before k."""
        self._ensure()
        if not self.events:
            return None
        idx = self._request_at[self.clamp(k)]
        return self.requests[idx] if idx >= 0 else None

    def state_at(self, k: int) -> dict[str, int]:
        """The engine's token attributes after event k."""
        self._ensure()
        if not self.events:
            return dict.fromkeys(STATE_FIELDS, 0)
        return dict(zip(STATE_FIELDS, self._state_at[self.clamp(k)]))

    def status_at(self, k: int) -> dict[str, Any] | None:
        """``get_status()`` as last recorded at or before event k."""
        for i in range(self.clamp(k), -1, -1):
            if self.events and self.events[i].status is not None:
                return self.events[i].status
        return None

    def turn_at(self, k: int) -> int | None:
        if not self.events:
            return None
        return self.events[self.clamp(k)].turn

    def _next(self, indices: list[int], k: int) -> int | None:
        self._ensure()
        pos = bisect.bisect_right(indices, k)
        return indices[pos] if pos < len(indices) else None

    def _prev(self, indices: list[int], k: int) -> int | None:
        self._ensure()
        pos = bisect.bisect_left(indices, k)
        return indices[pos - 1] if pos > 0 else None

    def next_turn(self, k: int) -> int | None:
        return self._next(self._turn_starts, k)

    def prev_turn(self, k: int) -> int | None:
        return self._prev(self._turn_starts, k)

    def next_compression(self, k: int) -> int | None:
        return self._next(self._compress_events, k)

    def prev_compression(self, k: int) -> int | None:
        return self._prev(self._compress_events, k)

    def next_fault(self, k: int) -> int | None:
        return self._next(self._fault_events, k)

    def prev_fault(self, k: int) -> int | None:
        return self._prev(self._fault_events, k)

    def next_cache_miss(self, k: int) -> int | None:
        return self._next(self._miss_events, k)

    def prev_cache_miss(self, k: int) -> int | None:
        return self._prev(self._miss_events, k)

    def next_mark(self, k: int) -> int | None:
        """The nearest bookmarked event after ``k`` (marks are edited while the trace is open)."""
        return min((m.event for m in self.marks if m.event > k), default=None)

    def prev_mark(self, k: int) -> int | None:
        return max((m.event for m in self.marks if m.event < k), default=None)

    def turn_event(self, turn: int) -> int | None:
        """Event index where turn ``turn`` starts."""
        self._ensure()
        for idx in self._turn_starts:
            if self.events[idx].turn == turn:
                return idx
        return None

    @property
    def compress_events(self) -> list[int]:
        self._ensure()
        return list(self._compress_events)

    @property
    def fault_events(self) -> list[int]:
        self._ensure()
        return list(self._fault_events)

    @property
    def turn_count(self) -> int:
        self._ensure()
        return len(self._turn_starts)

    def request_messages(self, request: Request, *, selected: bool = True) -> list[dict[str, Any]]:
        return self.store.materialise(request.selected if selected else request.assembled)

    def message_tokens(self, key: str, tokenizer: str = "tiktoken") -> int:
        return self.store.tokens.get(key, {}).get(tokenizer, 0)
