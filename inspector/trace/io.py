"""Save and load traces (and comparison bundles) as one versioned JSON file.

Why this shape:

- **One file, versioned.** A trace is something people attach to bug reports and reopen months
  later, so the file names its format and version, and a reader refuses (with a clear message)
  what it does not understand instead of guessing.
- **O(distinct text).** Messages are written once in a table keyed by content hash. Requests
  and events already refer to interned key lists; those lists mostly grow by appending, so
  each is written as a delta against an earlier list: "the first P keys of list i-b, then
  these new keys". Lists that drop keys from the front or the middle (a sliding window in
  ``select_context``, a compression) are written as copied runs of the earlier list plus
  literal keys. A 2,000-turn session therefore costs its distinct text plus a few keys per
  list, not turns x context.
- **Safe.** Plain JSON only (no pickle, no eval). Loading a damaged file raises
  :class:`TraceCorruptError`, never a bare ``KeyError``/``JSONDecodeError`` traceback.
- **Atomic.** Files are written to a temporary sibling and renamed over the target, so a crash
  mid-save never leaves half a trace where the user's good one was.
- **gzip when asked.** A path ending in ``.gz`` is compressed; loading recognises gzip by its
  magic bytes, whatever the file is called.

File layout (trace)::

    {"format": "context-inspector-trace", "version": 1, "meta": {...},
     "messages": {key: message}, "tokens": {key: {tokenizer: n}},
     "lists": [[back, item, item, ...], ...],
     "events": [...], "requests": [...], "marks": [...], "tool_schemas": [...]}

Each list is rebuilt from ``base = lists[i - back]`` (``back == 0``: no base) by reading its
items in order: an integer pair ``start, length`` copies ``base[start:start + length]``; a
string is a literal message key. The append-only case is therefore ``[1, 0, P, "k1", "k2"]``:
the common prefix with the previous list, then the tail. The writer tries the few preceding
lists as the base (the host interleaves history, request and compress lists) and keeps the
shortest encoding.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import MISSING, asdict, fields, is_dataclass
from pathlib import Path
from typing import Any

from inspector.trace.model import CacheInfo, Event, Fault, Mark, Request, Trace, message_key

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "TraceCorruptError",
    "TraceFormatError",
    "load_bundle",
    "load_trace",
    "save_bundle",
    "save_marks",
    "save_trace",
]

TRACE_FORMAT = "context-inspector-trace"
TRACE_VERSION = 1
BUNDLE_FORMAT = "context-inspector-comparison"
BUNDLE_VERSION = 1
_SUPPORTED = {TRACE_FORMAT: TRACE_VERSION, BUNDLE_FORMAT: BUNDLE_VERSION}
_GZIP_MAGIC = b"\x1f\x8b"
# How many preceding lists the writer considers as the base of a delta.
_DELTA_WINDOW = 8
# A list whose tail after the best common prefix is longer than this also tries copied runs,
# against this many preceding lists.
_SMALL_TAIL = 16
_COPY_CANDIDATES = 3


class TraceFormatError(ValueError):
    """The file is not a trace this inspector can read (unknown format or newer version).

    ``path``, ``found_format``/``found_version`` and ``supported_version`` are kept as
    attributes so the UI can phrase its own message; ``str()`` is already user-readable.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        message: str,
        *,
        found_format: Any = None,
        found_version: Any = None,
        supported_version: int | None = None,
    ) -> None:
        self.path = str(path)
        self.found_format = found_format
        self.found_version = found_version
        self.supported_version = supported_version
        super().__init__(f"{self.path}: {message}")


class TraceCorruptError(TraceFormatError):
    """The file claims to be a trace but cannot be decoded (truncated, edited, damaged)."""


# -- encoding -------------------------------------------------------------------------------


def _json_default(value: Any) -> Any:
    """Last resort for values that are not JSON: keep the save working, lose only exactness."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _dumps(doc: dict[str, Any]) -> bytes:
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), default=_json_default)
    # surrogatepass: a transcript decoded with errors="surrogateescape" must still save.
    return text.encode("utf-8", "surrogatepass")


def _common_prefix_len(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the common prefix, using C-level tuple comparison (binary search on slices)."""
    n = min(len(a), len(b))
    if n == 0 or a[0] != b[0]:
        return 0
    if a[:n] == b[:n]:
        return n  # the common case: one list extends the other
    lo, hi = 1, n - 1  # a[:lo] == b[:lo] holds, a[:hi + 1] != b[:hi + 1]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _copy_items(base: Sequence[str], cur: Sequence[str]) -> list[Any]:
    """Encode ``cur`` as runs copied from ``base`` plus literal keys (greedy, C-speed runs)."""
    pos: dict[str, int] = {}
    for idx, key in enumerate(base):
        pos.setdefault(key, idx)
    items: list[Any] = []
    j, n = 0, len(cur)
    while j < n:
        p = pos.get(cur[j])
        if p is None:
            items.append(cur[j])
            j += 1
            continue
        run = _common_prefix_len(base[p:], cur[j:])
        items += [p, run]
        j += run
    return items


def _cost(items: list[Any]) -> int:
    """Rough encoded size: a literal key costs its length, a copy a few digits."""
    return sum(len(x) + 3 if isinstance(x, str) else 6 for x in items)


def _encode_lists(lists: Sequence[tuple[str, ...]]) -> list[list[Any]]:
    out: list[list[Any]] = []
    for i, cur in enumerate(lists):
        window = range(1, min(_DELTA_WINDOW, i) + 1)
        best_back, best_prefix = 0, 0
        for back in window:
            p = _common_prefix_len(lists[i - back], cur)
            if p > best_prefix:
                best_back, best_prefix = back, p
                if p == len(cur):
                    break
        items: list[Any] = [0, best_prefix] if best_prefix else []
        items += cur[best_prefix:]
        if len(cur) - best_prefix > _SMALL_TAIL:
            # Not (almost) append-only: try copied runs against the nearest lists.
            for back in list(window)[:_COPY_CANDIDATES]:
                candidate = _copy_items(lists[i - back], cur)
                if _cost(candidate) < _cost(items):
                    best_back, items = back, candidate
        out.append([best_back, *items])
    return out


def _drop_defaults(d: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in defaults or v != defaults[k]}


_EVENT_DEFAULTS: dict[str, Any] = {
    "turn": None,
    "request": None,
    "t": 0.0,
    "duration": 0.0,
    "args": {},
    "result": None,
    "state": None,
    "status": None,
    "fault": None,
    "thread": None,
    "note": None,
}


def _encode_event(ev: Event, state_before: Any = None, status_before: Any = None) -> dict[str, Any]:
    """An event without defaults; state and status only where they changed.

    ``Trace.finish`` carries the engine state forward and ``status_at`` looks back, so an
    unchanged snapshot costs nothing to drop, and most hooks change neither.
    """
    same_state = ev.state is not None and ev.state == state_before
    same_status = ev.status is not None and ev.status == status_before
    d: dict[str, Any] = {
        "kind": ev.kind,
        "turn": ev.turn,
        "request": ev.request,
        "t": round(ev.t, 6),
        "duration": round(ev.duration, 6),
        "args": ev.args,
        "result": ev.result,
        # 0 means "the same as the last event that had one"; absent means None.
        "state": 0 if same_state else (list(ev.state) if ev.state is not None else None),
        "status": 0 if same_status else ev.status,
        "fault": ev.fault.to_json() if ev.fault is not None else None,
        "thread": ev.thread,
        "note": ev.note,
    }
    return _drop_defaults(d, _EVENT_DEFAULTS)


def _encode_events(events: Sequence[Event]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    state: Any = None
    status: Any = None
    for ev in events:
        out.append(_encode_event(ev, state, status))
        if ev.state is not None:
            state = ev.state
        if ev.status is not None:
            status = ev.status
    return out


def _field_defaults(cls: type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(cls):
        if f.default is not MISSING:
            out[f.name] = f.default
        elif f.default_factory is not MISSING:
            out[f.name] = f.default_factory()
    return out


_REQUEST_DEFAULTS = _field_defaults(Request)
_CACHE_DEFAULTS = _field_defaults(CacheInfo)


def _encode_request(req: Request, prev_blocks: Sequence[int]) -> dict[str, Any]:
    """A request without its default fields; ``block_tokens`` as a delta on the previous one.

    ``block_tokens`` has one entry per request block, so writing it whole would cost
    O(turns x context); consecutive requests share most of it.
    """
    d = {f.name: getattr(req, f.name) for f in fields(Request) if f.name not in ("index", "cache")}
    d = _drop_defaults(d, _REQUEST_DEFAULTS)
    cache = _drop_defaults(req.cache.to_json(), _CACHE_DEFAULTS)
    cache.pop("block_tokens", None)
    blocks = req.cache.block_tokens
    if blocks:
        p = _common_prefix_len(prev_blocks, blocks)
        cache["block_tokens_delta"] = [p, *blocks[p:]]
    d["cache"] = cache
    return d


def _encode_requests(requests: Sequence[Request]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    prev: Sequence[int] = ()
    for req in requests:
        out.append(_encode_request(req, prev))
        prev = req.cache.block_tokens
    return out


def _encode_mark(mark: Mark) -> dict[str, Any]:
    return {"event": mark.event, "label": mark.label, "note": mark.note}


def _encode_run(trace: Trace) -> dict[str, Any]:
    """Everything of a trace except its message and token tables."""
    return {
        "meta": trace.meta,
        "lists": _encode_lists(trace.store.lists),
        "events": _encode_events(trace.events),
        "requests": _encode_requests(trace.requests),
        "marks": [_encode_mark(m) for m in trace.marks],
        "tool_schemas": trace.tool_schemas,
    }


def _write_atomic(path: str | os.PathLike[str], data: bytes, *, compress: bool) -> None:
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            if compress:
                # mtime=0 and no file name: the same trace always gives the same bytes.
                with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=6) as gz:
                    gz.write(data)
            else:
                fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = target.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644  # mkstemp makes 0600; a saved trace is an ordinary user document
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _wants_gzip(path: str | os.PathLike[str]) -> bool:
    return str(path).lower().endswith(".gz")


def save_trace(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write ``trace`` to ``path`` as one versioned JSON file (gzip if it ends in ``.gz``)."""
    doc: dict[str, Any] = {"format": TRACE_FORMAT, "version": TRACE_VERSION}
    run = _encode_run(trace)
    doc["meta"] = run.pop("meta")
    doc["messages"] = trace.store.messages
    doc["tokens"] = trace.store.tokens
    doc.update(run)
    _write_atomic(path, _dumps(doc), compress=_wants_gzip(path))


def save_bundle(
    traces: Sequence[Trace], path: str | os.PathLike[str], meta: dict[str, Any] | None = None
) -> None:
    """Write several runs (e.g. engines compared on one session) into one file.

    The runs share one message table, so comparing five engines on the same session costs the
    session's text once. Each run lists the keys of its own store, so loading gives every run
    exactly the messages it had. Token counts are shared too; a run whose count for a key and
    tokenizer differs from the shared one keeps its own in ``tokens`` of that run.
    """
    messages: dict[str, dict[str, Any]] = {}
    tokens: dict[str, dict[str, int]] = {}
    runs: list[dict[str, Any]] = []
    for trace in traces:
        own_tokens: dict[str, dict[str, int]] = {}
        for key, counts in trace.store.tokens.items():
            shared = tokens.setdefault(key, {})
            for name, n in counts.items():
                if name not in shared:
                    shared[name] = n
                elif shared[name] != n:
                    own_tokens.setdefault(key, {})[name] = n
        messages.update(trace.store.messages)
        run = _encode_run(trace)
        run["keys"] = list(trace.store.messages)
        run["token_keys"] = list(trace.store.tokens)
        run["tokens"] = own_tokens
        runs.append(run)
    doc = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "meta": meta or {},
        "messages": messages,
        "tokens": tokens,
        "runs": runs,
    }
    _write_atomic(path, _dumps(doc), compress=_wants_gzip(path))


# -- decoding -------------------------------------------------------------------------------


def _read_doc(path: str | os.PathLike[str]) -> tuple[dict[str, Any], bool]:
    """Read and parse the file; returns (document, was_gzip). OSError passes through."""
    raw = Path(path).read_bytes()
    compressed = raw[:2] == _GZIP_MAGIC
    try:
        if compressed:
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8", "surrogatepass")
        doc = json.loads(text)
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceCorruptError(path, f"damaged gzip data ({exc})") from None
    except UnicodeDecodeError as exc:
        raise TraceCorruptError(path, f"not UTF-8 text at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        what = (
            "file is empty" if not text.strip() else f"invalid JSON at line {exc.lineno} column {exc.colno}"
        )
        raise TraceCorruptError(path, f"not a trace file: {what} ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:
        raise TraceCorruptError(path, f"not a trace file: {exc}") from None
    if not isinstance(doc, dict):
        raise TraceFormatError(path, f"not an inspector trace (top level is a JSON {type(doc).__name__})")
    return doc, compressed


def _check_header(path: str | os.PathLike[str], doc: dict[str, Any], expected: str) -> None:
    fmt, version = doc.get("format"), doc.get("version")
    supported = _SUPPORTED[expected]
    if fmt != expected:
        if fmt == BUNDLE_FORMAT and expected == TRACE_FORMAT:
            hint = "it is a comparison bundle; open it with load_bundle"
        elif fmt == TRACE_FORMAT and expected == BUNDLE_FORMAT:
            hint = "it is a single trace; open it with load_trace"
        else:
            hint = f"this inspector reads {expected!r} version {supported}"
        raise TraceFormatError(
            path,
            f"unknown file format {fmt!r} (version {version!r}); {hint}",
            found_format=fmt,
            found_version=version,
            supported_version=supported,
        )
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceFormatError(
            path,
            f"unknown {expected} version {version!r}; this inspector reads version {supported}",
            found_format=fmt,
            found_version=version,
            supported_version=supported,
        )
    if version > supported:
        raise TraceFormatError(
            path,
            f"{expected} version {version} is newer than this inspector supports (version "
            f"{supported}); open it with a newer Context Engine Inspector",
            found_format=fmt,
            found_version=version,
            supported_version=supported,
        )


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise ValueError(what)


def _decode_lists(encoded: Any, messages: dict[str, Any]) -> list[tuple[str, ...]]:
    _expect(isinstance(encoded, list), "'lists' is not a list")
    lists: list[tuple[str, ...]] = []
    for i, entry in enumerate(encoded):
        _expect(isinstance(entry, list) and entry and isinstance(entry[0], int), f"list {i} has no base")
        back = entry[0]
        _expect(0 <= back <= i, f"list {i} refers to list {i}-{back!r}")
        base = lists[i - back] if back else ()
        out: list[str] = []
        k, n = 1, len(entry)
        while k < n:
            item = entry[k]
            if isinstance(item, str):
                _expect(item in messages, f"list {i} refers to unknown message {item!r}")
                out.append(item)
                k += 1
                continue
            _expect(k + 1 < n, f"list {i} ends inside a copy")
            start, length = item, entry[k + 1]
            _expect(
                isinstance(start, int)
                and isinstance(length, int)
                and 0 <= start
                and 0 < length
                and start + length <= len(base),
                f"list {i} copies {start!r}+{length!r} from a list of {len(base)}",
            )
            out.extend(base[start : start + length])
            k += 2
        lists.append(tuple(out))
    return lists


def _decode_event(d: Any, state_before: Any = None, status_before: Any = None) -> Event:
    _expect(isinstance(d, dict) and isinstance(d.get("kind"), str), "an event has no kind")
    fault = d.get("fault")
    state = d.get("state")
    status = d.get("status")
    if state == 0:
        state = state_before
    if status == 0:
        status = status_before
    _expect(state is None or isinstance(state, (list, tuple)), "an event's state is not a list")
    return Event(
        index=0,
        kind=d["kind"],
        turn=d.get("turn"),
        request=d.get("request"),
        t=d.get("t", 0.0),
        duration=d.get("duration", 0.0),
        args=d.get("args", {}),
        result=d.get("result"),
        state=tuple(state) if state is not None else None,
        status=status,
        fault=Fault(fault["kind"], fault["message"], fault.get("traceback")) if fault is not None else None,
        thread=d.get("thread"),
        note=d.get("note"),
    )


_REQUEST_FIELDS = {f.name for f in fields(Request)} - {"index", "cache"}
_CACHE_FIELDS = {f.name for f in fields(CacheInfo)}


def _decode_request(index: int, d: Any, n_lists: int, prev_blocks: list[int]) -> Request:
    _expect(isinstance(d, dict), f"request {index} is not an object")
    kwargs = {k: v for k, v in d.items() if k in _REQUEST_FIELDS}
    cache = d.get("cache") or {}
    _expect(isinstance(cache, dict), f"request {index} cache is not an object")
    info = CacheInfo(**{k: v for k, v in cache.items() if k in _CACHE_FIELDS})
    delta = cache.get("block_tokens_delta")
    if delta is not None:
        _expect(
            isinstance(delta, list)
            and delta
            and isinstance(delta[0], int)
            and 0 <= delta[0] <= len(prev_blocks),
            f"request {index} has a bad block_tokens delta",
        )
        info.block_tokens = prev_blocks[: delta[0]] + delta[1:]
    req = Request(index=index, cache=info, **kwargs)
    for name in ("assembled", "selected"):
        lid = getattr(req, name)
        _expect(
            isinstance(lid, int) and 0 <= lid < n_lists, f"request {index} {name} list {lid!r} does not exist"
        )
    return req


def _decode_run(
    run: dict[str, Any],
    messages: dict[str, dict[str, Any]],
    tokens: dict[str, dict[str, int]],
) -> Trace:
    _expect(isinstance(messages, dict), "'messages' is not an object")
    _expect(isinstance(tokens, dict), "'tokens' is not an object")
    meta = run.get("meta") or {}
    _expect(isinstance(meta, dict), "'meta' is not an object")
    trace = Trace(meta)
    store = trace.store
    store.messages = messages
    store.tokens = tokens
    for i, tup in enumerate(_decode_lists(run.get("lists", []), messages)):
        if store.put_list(tup) != i:
            store.lists.append(tup)  # a duplicate list (never written by us): keep ids stable
    state: Any = None
    status: Any = None
    for d in run.get("events", []):
        ev = trace.add_event(_decode_event(d, state, status))
        state = ev.state if ev.state is not None else state
        status = ev.status if ev.status is not None else status
    requests = run.get("requests", [])
    _expect(isinstance(requests, list), "'requests' is not a list")
    prev_blocks: list[int] = []
    for i, d in enumerate(requests):
        req = _decode_request(i, d, len(store.lists), prev_blocks)
        trace.requests.append(req)
        prev_blocks = req.cache.block_tokens
    marks = run.get("marks", [])
    _expect(isinstance(marks, list), "'marks' is not a list")
    trace.marks = [Mark(int(m["event"]), str(m.get("label", "")), str(m.get("note", ""))) for m in marks]
    schemas = run.get("tool_schemas", [])
    _expect(isinstance(schemas, list), "'tool_schemas' is not a list")
    trace.tool_schemas = schemas
    for ev in trace.events:
        if ev.request is not None:
            _expect(
                isinstance(ev.request, int) and 0 <= ev.request < len(trace.requests),
                f"event {ev.index} refers to request {ev.request!r}",
            )
    return trace.finish()


def _verify_keys(messages: dict[str, dict[str, Any]]) -> None:
    for key, msg in messages.items():
        _expect(isinstance(msg, dict), f"message {key} is not an object")
        _expect(message_key(msg) == key, f"message {key} does not match its content hash")


_DECODE_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError)


def load_trace(path: str | os.PathLike[str], *, verify: bool = False) -> Trace:
    """Read a trace written by :func:`save_trace`; the result has ``finish()`` called.

    Raises :class:`TraceFormatError` for another format or a newer version and
    :class:`TraceCorruptError` for a damaged file. ``verify=True`` also re-hashes every
    message against its key (slower; for files that may have been edited by hand).
    """
    doc, _ = _read_doc(path)
    _check_header(path, doc, TRACE_FORMAT)
    try:
        messages = doc.get("messages", {})
        if verify:
            _verify_keys(messages)
        return _decode_run(doc, messages, doc.get("tokens", {}))
    except _DECODE_ERRORS as exc:
        raise TraceCorruptError(path, f"corrupt trace: {_describe(exc)}") from None


def load_bundle(path: str | os.PathLike[str], *, verify: bool = False) -> tuple[list[Trace], dict[str, Any]]:
    """Read a comparison bundle written by :func:`save_bundle`: (traces, bundle meta)."""
    doc, _ = _read_doc(path)
    _check_header(path, doc, BUNDLE_FORMAT)
    try:
        messages = doc.get("messages", {})
        tokens = doc.get("tokens", {})
        _expect(isinstance(messages, dict) and isinstance(tokens, dict), "bad message or token table")
        if verify:
            _verify_keys(messages)
        runs = doc.get("runs", [])
        _expect(isinstance(runs, list), "'runs' is not a list")
        traces: list[Trace] = []
        for n, run in enumerate(runs):
            _expect(isinstance(run, dict), f"run {n} is not an object")
            own = {}
            for key in run.get("keys", []):
                _expect(key in messages, f"run {n} refers to unknown message {key!r}")
                own[key] = messages[key]
            own_tokens: dict[str, dict[str, int]] = {}
            overrides = run.get("tokens", {})
            for key in run.get("token_keys", []):
                own_tokens[key] = {**tokens.get(key, {}), **overrides.get(key, {})}
            traces.append(_decode_run(run, own, own_tokens))
        meta = doc.get("meta") or {}
        _expect(isinstance(meta, dict), "bundle 'meta' is not an object")
        return traces, meta
    except _DECODE_ERRORS as exc:
        raise TraceCorruptError(path, f"corrupt comparison bundle: {_describe(exc)}") from None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc) or type(exc).__name__


def save_marks(path: str | os.PathLike[str], marks: Iterable[Mark], *, run: int | None = None) -> None:
    """Replace only the bookmarks and notes inside an existing trace (or one run of a bundle).

    The rest of the file is kept as it is (re-serialised, not re-encoded from a Trace), and the
    file stays gzip-compressed if it was. ``run`` selects the run of a comparison bundle.
    """
    doc, compressed = _read_doc(path)
    encoded = [_encode_mark(m) for m in marks]
    if doc.get("format") == BUNDLE_FORMAT:
        _check_header(path, doc, BUNDLE_FORMAT)
        runs = doc.get("runs")
        if run is None or not isinstance(runs, list) or not 0 <= run < len(runs):
            raise ValueError(f"{path}: choose a run between 0 and {len(runs or []) - 1} for a bundle")
        runs[run]["marks"] = encoded
    else:
        _check_header(path, doc, TRACE_FORMAT)
        if run is not None:
            raise ValueError(f"{path}: a single trace has no runs")
        doc["marks"] = encoded
    _write_atomic(path, _dumps(doc), compress=compressed)
