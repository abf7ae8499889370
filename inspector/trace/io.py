"""Save and load traces (and comparison bundles) as one versioned JSON file.

Why this shape:

- **One file, versioned.** A trace is something people attach to bug reports and reopen months
  later, so the file names its format and version, and a reader refuses (with a clear message)
  what it does not understand instead of guessing.
- **O(distinct text), and not much more.** Messages are written once in a table keyed by
  content hash; everything else refers to a message by its position in that table (a few
  digits instead of a 20-character key). Interned key lists mostly grow by appending, so each
  is a delta against an earlier list. Events and requests are written as columns (one array
  per field, small deltas for turns, requests, times and ids; sparse maps for the rare fields;
  repeated argument shapes written once), so the bookkeeping of a 2,000-turn replay costs
  about a fifth of what the session's own text costs (it used to cost as much again).
- **Exact.** Every codec below checks that it can reproduce the value it encodes (types
  included); whatever it cannot represent is written literally in an override map. Times are
  kept to the microsecond.
- **Safe.** Plain JSON only (no pickle, no eval). Loading a damaged file raises
  :class:`TraceCorruptError`, never a bare ``KeyError``/``JSONDecodeError`` traceback.
- **Atomic.** Files are written to a temporary sibling and renamed over the target, so a crash
  mid-save never leaves half a trace where the user's good one was.
- **gzip when asked.** A path ending in ``.gz`` is compressed; loading recognises gzip by its
  magic bytes, whatever the file is called.

File layout (trace, version 2)::

    {"format": "context-inspector-trace", "version": 2, "meta": {...},
     "messages": {key: message | [base, {changed}, [removed]] | [-1, non-dict]},
     "tokens": {"names": [...], "columns": [[...], ...], "missing": [gaps], "extra": {key: {...}}},
     "lists": [[back, item, ...], ...],
     "events": {"count": n, "kinds": [...], "kind": [...], "turn": [...], ...},
     "requests": {"count": n, "turn": [...], "usage": [...], "cache": {...}, ...},
     "marks": [...], "tool_schemas": [...], "derived": {...}}

``derived`` (optional) holds analyses computed from the trace after the run, as plain JSON
(``inspector.quality``: lifetimes and retention); a reader that does not know it ignores it.

``messages``: the position of a key in this object is its *message index*. A message whose text
already appeared (the same user text with and without its timestamp, say) may be written as
``[base index, {changed keys}, [removed keys]]``, rebuilt from the earlier message.

``lists``: each list is rebuilt from ``base = lists[i - back]`` (``back == 0``: no base) by reading
its items in order: a non-negative integer pair ``start, length`` copies
``base[start:start + length]``; a negative integer ``-(m + 1)`` is message index ``m``; a string is
a literal message key. The append-only case is ``[1, 0, P, -m1, -m2]``: the common prefix with
an earlier list, then the tail. The writer tries the few preceding lists as the base (the host
interleaves history, request and compress lists) and keeps the shortest encoding.

``events``/``requests``: one array per field, all of length ``count``. Integer fields that
mostly repeat or count up (turn, request, event, list ids, times in microseconds) are deltas;
hook arguments and results are JSON values, with dicts written as ``[shape, values...]`` where
``shapes[shape]`` lists the keys (and the constant values, list/message references and "the
usage of this event's request" that need no value). Engine state and ``get_status()`` are sparse
``[gap, value, ...]`` arrays, written as ``0`` (the same as the previous one), a
``[mask, changed values...]`` delta, or in full. Usage dicts in Hermes' shape are the five
numbers they are made of; cache reasons are a template plus their numbers. ``more`` holds, per
field, the values a column could not represent exactly. Faults, threads, notes and (version 2)
``output``, what the engine printed and logged during the call, are sparse maps.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import MISSING, asdict, fields, is_dataclass
from itertools import accumulate
from typing import Any

from inspector.gc_pause import collection_in_batches
from inspector.input_files import (
    InputRefused,
    check_values,
    env_count,
    max_input_bytes,
    read_head_inflated,
    read_input,
)
from inspector.jsonfast import dumps_bytes, loads
from inspector.trace.model import (
    EV_RESPONSE,
    STATUS_FROM_STATE,
    CacheInfo,
    Event,
    Fault,
    Mark,
    Request,
    Trace,
    earlier_message_keys,
    message_key,
)
from inspector.trace.packed import shape_of, usage_numbers
from inspector.trace.prefix import common_prefix_len
from inspector.trace.token_table import TokenTable

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
    "saved_kind",
]

TRACE_FORMAT = "context-inspector-trace"
TRACE_VERSION = 2
BUNDLE_FORMAT = "context-inspector-comparison"
BUNDLE_VERSION = 2
# Versions (trace and bundle alike): 1, the first; 2 adds what engines printed and logged
# (``events.output``). A file is written with the lowest version that holds it, so a trace in
# which no engine wrote anything is a version-1 file that older inspectors still open.
_OUTPUT_VERSION = 2
_SUPPORTED = {TRACE_FORMAT: TRACE_VERSION, BUNDLE_FORMAT: BUNDLE_VERSION}
_GZIP_MAGIC = b"\x1f\x8b"
# How many preceding lists the writer considers as the base of a delta.
_DELTA_WINDOW = 8
# A list whose tail after the best common prefix is longer than this also tries copied runs,
# against this many preceding lists.
_SMALL_TAIL = 16
_COPY_CANDIDATES = 3
# A message whose content string is at least this long may be written as a delta of an earlier
# message with the same content.
_DERIVE_MIN = 64
# Strings up to this length in hook arguments/results become part of a shape (written once).
_CONST_MAX = 40
# A [mask, values] delta is used for states/statuses of at most this many fields (JSON-safe ints).
_MASK_MAX = 52
# Shape tags.
# _KEY: a message key written as its index; _RESPONSE: the response key of the event's request.
_RAW, _CONST, _LIST, _MSG, _USAGE, _KEY, _RESPONSE = 0, 1, 2, 3, 4, 5, 6
# Hermes' usage dict, in to_hermes_dict order; written as the five numbers it derives from.
_USAGE_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
# A number standing alone (not inside a hex key or a word), plain or grouped by commas.
_NUMBER = re.compile(r"(?<![0-9A-Za-z_])(?:\d[\d,]*\d|\d)(?![0-9A-Za-z_])")
_PLAIN, _GROUPED = "\x00", "\x01"


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


_PIECE_ITEMS = 2000  # message-table entries per piece when a file is written piece by piece


class _Later:
    """A document value still being encoded on a thread; the writer waits for it when it gets there."""

    __slots__ = ("future",)

    def __init__(self, future: Future[Any]) -> None:
        self.future = future


@contextmanager
def _encoding_ahead() -> Iterator[Callable[[Callable[..., Any], Any], Any]]:
    """``later(fn, *args)``: ``fn(*args)`` encoded on one thread while the file is written.

    The run's columns (lists, events, requests) come after the message table in the file, and
    are pure Python; the table is mostly text, compressed on other threads that let go of the
    interpreter lock. Encoding the columns on a thread meanwhile overlaps the two, where the
    writer used to wait for the compression with nothing to do (150 MB session: 1.6 s of a 5.6 s
    save). The file is the same, byte for byte: only when each part is made changes.
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inspector-encode")
    try:
        yield lambda fn, *args: _Later(pool.submit(fn, *args))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _json_pieces(doc: dict[str, Any]) -> Iterator[bytes]:
    """``json.dumps(doc)`` (compact, not ASCII-escaped; written by :mod:`inspector.jsonfast`, so it reads
    back as that) in UTF-8, as consecutive pieces whose joined bytes are the document: top-level values
    one by one, the message table a few thousand entries at a time, so saving a 150 MB session's trace
    never builds its whole text at once."""

    def dumps(value: Any) -> bytes:
        return dumps_bytes(value, _json_default)

    yield b"{"
    for n, (key, value) in enumerate(doc.items()):
        yield (b"," if n else b"") + dumps(key) + b":"
        if type(value) is _Later:
            value = value.future.result()
        if type(value) is dict and len(value) > _PIECE_ITEMS:
            items = list(value.items())
            yield b"{"
            for start in range(0, len(items), _PIECE_ITEMS):
                part = items[start:start + _PIECE_ITEMS]
                yield (b"," if start else b"") + dumps(dict(part))[1:-1]
            yield b"}"
        else:
            yield dumps(value)
    yield b"}"


def _dumps(doc: dict[str, Any]) -> Iterator[bytes]:
    """The file's text, in pieces (:func:`_json_pieces`). No known key reaches the file, whatever
    an engine put where (a note, a summary, its state): the writer masks them
    (:func:`inspector.outputs.write_atomic`). Lone surrogates (a transcript decoded with
    ``surrogateescape``) are written as they are (``surrogatepass``)."""
    return _json_pieces(doc)


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
        run = common_prefix_len(base[p:], cur[j:])
        items += [p, run]
        j += run
    return items


def _cost(items: list[Any]) -> int:
    """Rough encoded size: a literal key costs its length, a copy a few digits."""
    return sum(len(x) + 3 if isinstance(x, str) else 6 for x in items)


def _encode_lists(
    lists: Sequence[tuple[str, ...]], index: dict[str, int] | None = None
) -> list[list[Any]]:
    """Delta-encode the interned key lists; with ``index``, literal keys become message indices."""
    out: list[list[Any]] = []
    for i, cur in enumerate(lists):
        window = range(1, min(_DELTA_WINDOW, i) + 1)
        best_back, best_prefix = 0, 0
        for back in window:
            p = common_prefix_len(lists[i - back], cur)
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
        if index is not None:
            get = index.get
            items = [-get(x, -1) - 1 if type(x) is str and x in index else x for x in items]
        out.append([best_back, *items])
    return out


# -- small column codecs ----------------------------------------------------------------------


def _gaps(indices: Iterable[int]) -> list[int]:
    """Sorted indices as gaps (first one from -1), so sparse positions cost a digit or two."""
    out, prev = [], -1
    for i in indices:
        out.append(i - prev)
        prev = i
    return out


def _ungaps(gaps: Any, n: int, what: str) -> list[int]:
    _expect(isinstance(gaps, list), f"{what} is not a list")
    out = list(accumulate(gaps, initial=-1))[1:]
    _expect(all(type(i) is int for i in out) and all(a < b for a, b in zip([-1, *out], out)), f"{what} is not ascending")
    _expect(not out or out[-1] < n, f"{what} points past the end")
    return out


def _int_deltas(values: Sequence[Any]) -> Any:
    """Ints as differences from the previous one; anything else makes the column literal."""
    if not all(type(v) is int for v in values):
        return {"raw": list(values)}
    out, prev = [], 0
    for v in values:
        out.append(v - prev)
        prev = v
    return out


def _int_undeltas(col: Any, n: int, what: str) -> list[Any]:
    if isinstance(col, dict):
        raw = col["raw"]
        _expect(isinstance(raw, list) and len(raw) == n, f"{what} has the wrong length")
        return raw
    _expect(isinstance(col, list) and len(col) == n, f"{what} has the wrong length")
    _expect(all(type(v) is int for v in col), f"{what} holds a non-integer")
    return list(accumulate(col))


def _column(col: Any, n: int, what: str) -> list[Any]:
    _expect(isinstance(col, list) and len(col) == n, f"{what} has the wrong length")
    return col


def _sparse(values: Sequence[Any], default: Any) -> dict[str, Any]:
    """Only the entries that differ from the default, keyed by position."""
    return {str(i): v for i, v in enumerate(values) if not (v is default or (v == default and type(v) is type(default)))}


def _unsparse(col: Any, n: int, default: Any, what: str) -> list[Any]:
    out = [default] * n
    _expect(isinstance(col, dict), f"{what} is not an object")
    for k, v in col.items():
        i = int(k)
        _expect(0 <= i < n, f"{what} refers to entry {k}")
        out[i] = v
    return out


def _mask_delta(prev: Sequence[Any], cur: Sequence[Any]) -> list[Any]:
    """[mask, changed values...]: bit j set when position j differs from ``prev``."""
    mask, vals = 0, []
    for j, (a, b) in enumerate(zip(prev, cur)):
        if not (a is b or (type(a) is type(b) and a == b)):
            mask |= 1 << j
            vals.append(b)
    return [mask, *vals]


def _mask_apply(prev: Sequence[Any], delta: list[Any], what: str) -> list[Any]:
    mask = delta[0]
    _expect(type(mask) is int and 0 <= mask < (1 << len(prev)), f"{what} has a bad mask")
    out = list(prev)
    k = 1
    for j in range(len(prev)):
        if mask >> j & 1:
            out[j] = delta[k]
            k += 1
    _expect(k == len(delta), f"{what} has the wrong number of values")
    return out


def _usage_encode(usage: Any) -> Any:
    """Hermes' usage dict as [prompt, completion, cache_read, cache_write, reasoning] when exact."""
    if type(usage) is dict and tuple(usage) == _USAGE_KEYS and all(type(v) is int for v in usage.values()):
        p, c = usage["prompt_tokens"], usage["completion_tokens"]
        cr, cw, r = usage["cache_read_tokens"], usage["cache_write_tokens"], usage["reasoning_tokens"]
        if (
            usage["total_tokens"] == p + c
            and usage["input_tokens"] == max(0, p - cr - cw)
            and usage["output_tokens"] == c
        ):
            return [p, c, cr, cw, r]
    if usage is None or type(usage) is dict:
        return usage
    return MISSING


def _usage_decode(entry: Any, what: str) -> Any:
    if type(entry) is list:
        _expect(len(entry) == 5 and all(type(v) is int for v in entry), f"{what} is not five numbers")
        p, c, cr, cw, r = entry
        return dict(zip(_USAGE_KEYS, (p, c, p + c, max(0, p - cr - cw), c, cr, cw, r)))
    _expect(entry is None or isinstance(entry, dict), f"{what} is not a usage object")
    return entry


class _Strings:
    """An interning table: each distinct string written once, referred to by position."""

    def __init__(self) -> None:
        self.table: list[Any] = []
        self._ids: dict[Any, int] = {}

    def id(self, value: Any) -> int:
        found = self._ids.get(value)
        if found is None:
            found = self._ids[value] = len(self.table)
            self.table.append(value)
        return found


def _template(text: str, templates: _Strings) -> Any:
    """A reason string as [template id, numbers...]: the wording is written once per template."""
    if _PLAIN in text or _GROUPED in text:
        return text
    nums: list[int] = []

    def repl(m: re.Match[str]) -> str:
        tok = m.group()
        if "," in tok:
            n = int(tok.replace(",", ""))
            if f"{n:,}" == tok:
                nums.append(n)
                return _GROUPED
            return tok
        n = int(tok)
        if str(n) == tok and n < 2**53:
            nums.append(n)
            return _PLAIN
        return tok

    shape = _NUMBER.sub(repl, text)
    if not nums:
        return text
    return [templates.id(shape), *nums]


def _untemplate(entry: Any, templates: list[list[str]], what: str) -> Any:
    if type(entry) is not list:
        return entry
    tid = entry[0]
    _expect(type(tid) is int and 0 <= tid < len(templates), f"{what} refers to template {tid!r}")
    parts = templates[tid]
    _expect(len(entry) - 1 == len(parts) // 2, f"{what} has the wrong number of values")
    out = [parts[0]]
    for j, n in enumerate(entry[1:]):
        _expect(type(n) is int, f"{what} holds a non-integer")
        out.append(f"{n:,}" if parts[2 * j + 1] == _GROUPED else str(n))
        out.append(parts[2 * j + 2])
    return "".join(out)


class _Shapes:
    """Dicts written as [shape id, values...]; keys, constants and references written once.

    A list value is written as ``[-1, list]`` so that a list in a column is always a shape.
    """

    def __init__(self, index: dict[str, int]) -> None:
        self.index = index
        self.table: list[list[Any]] = []
        self._ids: dict[tuple[Any, ...], int] = {}

    def encode(self, value: Any, usage: Any = None, response: Any = None) -> Any:
        if type(value) is list:
            return [-1, value]
        if type(value) is not dict:
            return value
        sig: list[Any] = []
        vals: list[Any] = []
        index = self.index
        for k, v in value.items():
            if type(k) is not str:
                return value
            tv = type(v)
            if tv is str:
                if response is not None and v == response:
                    sig.append((k, _RESPONSE))
                    continue
                if v in index:
                    sig.append((k, _KEY))
                    vals.append(index[v])
                    continue
                if len(v) <= _CONST_MAX:
                    sig.append((k, _CONST, v))
                    continue
            elif tv is dict:
                if len(v) == 1:
                    ref = v.get("$list", MISSING)
                    if type(ref) is int:
                        sig.append((k, _LIST))
                        vals.append(ref)
                        continue
                    ref = v.get("$msg", MISSING)
                    if type(ref) is str and ref in index:
                        sig.append((k, _MSG))
                        vals.append(index[ref])
                        continue
                if usage is not None and v is usage or (type(usage) is dict and v == usage and _same_types(v, usage)):
                    sig.append((k, _USAGE))
                    continue
            elif v is None or tv is bool:
                sig.append((k, _CONST, v))
                continue
            sig.append(k)
            vals.append(v)
        key = tuple(sig)
        sid = self._ids.get(key)
        if sid is None:
            sid = self._ids[key] = len(self.table)
            self.table.append([s if type(s) is str else list(s) for s in sig])
        return [sid, *vals]


def _same_types(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(type(x) is type(b.get(k)) for k, x in a.items())


class _ShapeDecoder:
    def __init__(self, table: Any, keys: list[str], what: str) -> None:
        _expect(isinstance(table, list), f"{what} shapes are not a list")
        self.keys = keys
        self.what = what
        self.shapes: list[list[tuple[str, int, Any]]] = []
        for shape in table:
            _expect(isinstance(shape, list), f"{what} has a bad shape")
            specs = []
            for s in shape:
                if type(s) is str:
                    specs.append((s, _RAW, None))
                else:
                    _expect(isinstance(s, list) and len(s) in (2, 3) and type(s[0]) is str, f"{what} has a bad shape")
                    _expect(s[1] in (_CONST, _LIST, _MSG, _USAGE, _KEY, _RESPONSE) and (len(s) == 3) == (s[1] == _CONST), f"{what} has a bad shape")
                    specs.append((s[0], s[1], s[2] if len(s) == 3 else None))
            self.shapes.append(specs)

    def decode(self, entry: Any, usage: Any = None, response: Any = None) -> Any:
        if type(entry) is not list:
            return entry
        sid = entry[0]
        if sid == -1 and len(entry) == 2:
            return entry[1]
        if not (type(sid) is int and 0 <= sid < len(self.shapes)):
            raise ValueError(f"{self.what} refers to shape {sid!r}")
        out: dict[str, Any] = {}
        j = 1
        for k, tag, const in self.shapes[sid]:
            if tag == _CONST:
                out[k] = const
                continue
            if tag == _USAGE:
                _expect(usage is not None, f"{self.what} refers to the usage of no request")
                out[k] = usage
                continue
            if tag == _RESPONSE:
                if type(response) is not str:
                    raise ValueError(f"{self.what} refers to the response of no request")
                out[k] = response
                continue
            v = entry[j]
            j += 1
            if tag == _LIST:
                out[k] = {"$list": v}
            elif tag == _MSG or tag == _KEY:
                if not (type(v) is int and 0 <= v < len(self.keys)):
                    raise ValueError(f"{self.what} refers to message {v!r}")
                out[k] = {"$msg": self.keys[v]} if tag == _MSG else self.keys[v]
            else:
                out[k] = v
        _expect(j == len(entry), f"{self.what} has the wrong number of values")
        return out


# -- messages and tokens ----------------------------------------------------------------------


def _derive(base: Any, msg: dict[str, Any]) -> list[Any] | None:
    """[changed, removed] that rebuild ``msg`` from ``base`` exactly (key order included)."""
    if type(base) is not dict:
        return None
    removed = [k for k in base if k not in msg]
    changed: dict[str, Any] = {}
    for k, v in msg.items():
        if k in base:
            b = base[k]
            if v is b or (type(v) is str and type(b) is str and v == b):
                continue
        changed[k] = v
    rebuilt = {k: v for k, v in base.items() if k not in removed}
    rebuilt.update(changed)
    if list(rebuilt) != list(msg):
        return None
    return [changed, removed] if removed else [changed]


def _encode_messages(messages: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    by_content: dict[str, int] = {}
    values = list(messages.values())
    for i, (key, msg) in enumerate(messages.items()):
        enc = msg
        if type(msg) is dict:
            content = msg.get("content")
            if type(content) is str and len(content) >= _DERIVE_MIN:
                j = by_content.setdefault(content, i)
                if j != i:
                    delta = _derive(values[j], msg)
                    if delta is not None:
                        enc = [j, *delta]
        else:
            enc = [-1, msg]
        out[key] = enc
    return out


def _decode_messages(encoded: Any) -> dict[str, Any]:
    _expect(isinstance(encoded, dict), "'messages' is not an object")
    out: dict[str, Any] = {}
    values: list[Any] = []
    for key, enc in encoded.items():
        if type(enc) is list:
            base = enc[0]
            if base == -1:
                _expect(len(enc) == 2, f"message {key} is malformed")
                msg = enc[1]
            else:
                _expect(type(base) is int and 0 <= base < len(values) and 2 <= len(enc) <= 3, f"message {key} is malformed")
                src = values[base]
                _expect(isinstance(src, dict) and isinstance(enc[1], dict), f"message {key} is malformed")
                removed = set(enc[2]) if len(enc) == 3 else ()
                msg = {k: v for k, v in src.items() if k not in removed}
                msg.update(enc[1])
        else:
            msg = enc
        out[key] = msg
        values.append(msg)
    return out


def _encode_tokens(tokens: Mapping[str, Any], keys: list[str]) -> dict[str, Any]:
    """Per-message counts as one column per tokenizer name, in message order."""
    if type(tokens) is not dict:  # a TokenTable: each row read once (a read unpacks it)
        tokens = dict(tokens.items())
    names: dict[str, int] = {}
    extra: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    missing: list[int] = []
    known = set(keys)
    for key, counts in tokens.items():
        if key not in known or type(counts) is not dict or any(v is None for v in counts.values()):
            extra[key] = counts
            continue
        for name in counts:
            names.setdefault(name, len(names))
    for i, key in enumerate(keys):
        counts = tokens.get(key)
        if counts is None or key in extra:
            missing.append(i)
        else:
            rows.append(counts)
    columns = [[row.get(name) for row in rows] for name in names]
    return {"names": list(names), "columns": columns, "missing": _gaps(missing), "extra": extra}


def _decode_tokens(encoded: Any, keys: list[str]) -> TokenTable:
    _expect(isinstance(encoded, dict), "'tokens' is not an object")
    names = encoded.get("names", [])
    columns = encoded.get("columns", [])
    _expect(isinstance(names, list) and isinstance(columns, list) and len(names) == len(columns), "bad token columns")
    missing = set(_ungaps(encoded.get("missing", []), len(keys), "token 'missing'"))
    present = [k for i, k in enumerate(keys) if i not in missing]
    for col in columns:
        _expect(isinstance(col, list) and len(col) == len(present), "a token column has the wrong length")
    out = TokenTable()
    rows = out.rows
    whole = shape_of(tuple(names)) if names and all(type(n) is str for n in names) else None
    for pos, key in enumerate(present):
        values = [col[pos] for col in columns]
        if whole is not None and None not in values:
            rows[key] = (whole, *values)  # what TokenTable holds for this row, made without the dict
        else:
            out[key] = {name: v for name, v in zip(names, values) if v is not None}
    extra = encoded.get("extra", {})
    _expect(isinstance(extra, dict), "token 'extra' is not an object")
    out.update(extra)
    return out


def _ranges(indices: Sequence[int]) -> list[int]:
    """Indices as flattened [start, length] runs (order kept)."""
    out: list[int] = []
    for i in indices:
        if out and out[-2] + out[-1] == i:
            out[-1] += 1
        else:
            out += [i, 1]
    return out


def _run_keys(items: Any, keys: list[str], what: str) -> list[str]:
    """Keys from [start, length] runs of message indices, or literal key strings."""
    _expect(isinstance(items, list), f"{what} keys are not a list")
    out: list[str] = []
    k, n = 0, len(items)
    while k < n:
        item = items[k]
        if type(item) is str:
            out.append(item)
            k += 1
            continue
        _expect(k + 1 < n, f"{what} keys end inside a run")
        start, length = item, items[k + 1]
        _expect(
            type(start) is int and type(length) is int and 0 <= start and 0 < length and start + length <= len(keys),
            f"{what} refers to message indices {start!r}+{length!r} of {len(keys)}",
        )
        out.extend(keys[start : start + length])
        k += 2
    return out


# -- events -----------------------------------------------------------------------------------

_EVENT_DONE = {"index", "kind", "turn", "request", "t", "duration", "args", "result", "state", "status", "fault",
               "thread", "note", "output"}


def _field_defaults(cls: type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(cls):
        if f.default is not MISSING:
            out[f.name] = f.default
        elif f.default_factory is not MISSING:
            out[f.name] = f.default_factory()
    return out


_EVENT_DEFAULTS = _field_defaults(Event)
_REQUEST_DEFAULTS = _field_defaults(Request)
_CACHE_DEFAULTS = _field_defaults(CacheInfo)


def _micros(value: Any) -> int | None:
    """A time in whole microseconds, or None when it is not a finite number."""
    if type(value) not in (float, int):
        return None
    try:
        return round(value * 1_000_000)
    except (OverflowError, ValueError):
        return None


def _more_fields(objs: Sequence[Any], done: set[str], defaults: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Fields a newer model added that the columns do not know: kept literally, sparse."""
    out: dict[str, dict[str, Any]] = {}
    for f in fields(objs[0]) if objs else ():
        if f.name in done:
            continue
        values = _sparse([getattr(o, f.name) for o in objs], defaults.get(f.name))
        if values:
            out[f.name] = values
    return out


# Held values an event's args or result read as unchanged (inspector.trace.packed.read_through).
_AS_HELD = frozenset({dict, list, str, int, float, bool, type(None)})


def _encode_events(events: Sequence[Event], requests: Sequence[Request], index: dict[str, int]) -> dict[str, Any]:
    kinds = _Strings()
    shapes = _Shapes(index)
    more: dict[str, dict[str, Any]] = {}
    kind, turn, request, t, duration, args, result = [], [], [], [], [], [], []
    state: list[Any] = []
    status: list[Any] = []
    faults: dict[str, Any] = {}
    prev_turn, prev_req, prev_t = 0, -1, 0
    last_state: Any = None
    last_status: Any = None
    state_at = status_at = -1
    n_requests = len(requests)
    usage_of: Any = None
    request_usage: Any = None
    last_held: Any = None
    last_held_state: Any = None
    for i, ev in enumerate(events):
        if type(ev.kind) is str:
            kind.append(kinds.id(ev.kind))
        else:
            kind.append(-1)
            more.setdefault("kind", {})[str(i)] = ev.kind
        v = ev.turn
        if v is None:
            turn.append(None)
        elif type(v) is int:
            turn.append(v - prev_turn)
            prev_turn = v
        else:
            turn.append(None)
            more.setdefault("turn", {})[str(i)] = v
        r = ev.request
        usage = response = None
        if r is None:
            request.append(0)
        elif type(r) is int:
            d = r - prev_req
            request.append(d + 1 if d >= 0 else d)
            prev_req = r
            if 0 <= r < n_requests:
                if r != usage_of:  # a request's events in a row: its usage read once (a read unpacks it)
                    usage_of, request_usage = r, requests[r].usage
                usage, response = request_usage, requests[r].response_key
        else:
            request.append(0)
            more.setdefault("request", {})[str(i)] = r
        us = _micros(ev.t)
        if us is None:
            t.append(0)
            more.setdefault("t", {})[str(i)] = ev.t
        else:
            t.append(us - prev_t)
            prev_t = us
        us = _micros(ev.duration)
        if us is None:
            duration.append(0)
            more.setdefault("duration", {})[str(i)] = ev.duration
        else:
            duration.append(us)
        # What args and result hold (Event: a dict, or what reads as one); read through the
        # property only where the held value is not already what it reads as.
        a = ev.args_held
        if type(a) is Request and a.index == r and ev.kind == EV_RESPONSE:
            a = {"usage": usage}  # what it reads as, with the request's usage just read (the same dict, not another)
        elif type(a) not in _AS_HELD:
            a = ev.args
        if type(a) is dict and not a:
            args.append(None)
        elif a is None:
            args.append([-2])
        else:
            args.append(shapes.encode(a, usage, response))
        res = ev.result_held
        result.append(shapes.encode(res if type(res) in _AS_HELD else ev.result, usage, response))
        s = ev.state
        if s is not None:
            if type(s) not in (tuple, list):
                more.setdefault("state", {})[str(i)] = s
            else:
                state.append(i - state_at)
                state_at = i
                if last_state is not None and tuple(s) == tuple(last_state):
                    state.append(0)
                elif last_state is not None and len(s) == len(last_state) <= _MASK_MAX:
                    state.append(_mask_delta(last_state, s))
                else:
                    state.append({"full": list(s)})
                last_state = s
        held = ev.status_held
        if held is not None and held is last_held and (held is not STATUS_FROM_STATE or ev.state is last_held_state):
            st = last_status  # what the last dict status was held as (and of the same state): not read again
        else:
            st = ev.status
        if st is not None:
            if type(st) is not dict:
                more.setdefault("status", {})[str(i)] = st
                last_held = None
            else:
                last_held, last_held_state = held, ev.state
                status.append(i - status_at)
                status_at = i
                if last_status is not None and st == last_status:
                    status.append(0)
                elif last_status is not None and len(st) <= _MASK_MAX and list(st) == list(last_status):
                    status.append(_mask_delta(list(last_status.values()), list(st.values())))
                else:
                    status.append(st)
                last_status = st
        if ev.fault is not None:
            faults[str(i)] = ev.fault.to_json() if isinstance(ev.fault, Fault) else ev.fault
    more.update(_more_fields(events, _EVENT_DONE, _EVENT_DEFAULTS))
    return {
        "count": len(events),
        "kinds": kinds.table,
        "kind": kind,
        "turn": turn,
        "request": request,
        "t": t,
        "duration": duration,
        "shapes": shapes.table,
        "args": args,
        "result": result,
        "state": state,
        "status": status,
        "fault": faults,
        "thread": _sparse([ev.thread for ev in events], None),
        "note": _sparse([ev.note for ev in events], None),
        "output": _sparse([ev.output for ev in events], None),
        "more": more,
    }


def _pairs(flat: Any, n: int, what: str) -> list[tuple[int, Any]]:
    """A sparse [gap, value, gap, value...] array as (index, value) pairs."""
    _expect(isinstance(flat, list) and len(flat) % 2 == 0, f"{what} is malformed")
    idx = _ungaps(flat[::2], n, what)
    return list(zip(idx, flat[1::2]))


def _decode_events(d: Any, requests: list[Request], keys: list[str]) -> list[Event]:
    _expect(isinstance(d, dict), "'events' is not an object")
    n = d["count"]
    _expect(type(n) is int and n >= 0, "'events' has no count")
    kinds = d["kinds"]
    _expect(isinstance(kinds, list), "event kinds are not a list")
    kind = _column(d["kind"], n, "event kinds")
    turn = _column(d["turn"], n, "event turns")
    request = _column(d["request"], n, "event requests")
    t = _int_undeltas(d["t"], n, "event times")
    duration = _column(d["duration"], n, "event durations")
    args = _column(d["args"], n, "event args")
    result = _column(d["result"], n, "event results")
    shapes = _ShapeDecoder(d.get("shapes", []), keys, "an event")
    more = d.get("more", {})
    _expect(isinstance(more, dict), "event 'more' is not an object")
    events: list[Event] = []
    prev_turn, prev_req = 0, -1
    n_requests = len(requests)
    for i in range(n):
        k = kind[i]
        if not (type(k) is int and (0 <= k < len(kinds) or k == -1)):
            raise ValueError(f"event {i} has no kind")
        tv = turn[i]
        if tv is not None:
            if type(tv) is not int:
                raise ValueError(f"event {i} has a bad turn")
            prev_turn += tv
            tv = prev_turn
        rv = request[i]
        if type(rv) is not int:
            raise ValueError(f"event {i} has a bad request")
        usage = response = None
        if rv == 0:
            r = None
        else:
            prev_req += rv - 1 if rv > 0 else rv
            r = prev_req
            if 0 <= r < n_requests:
                usage, response = requests[r].usage, requests[r].response_key
        dur = duration[i]
        if type(dur) is not int:
            raise ValueError(f"event {i} has a bad duration")
        a = args[i]
        if a is None:
            a = {}
        elif a == [-2]:
            a = None
        else:
            a = shapes.decode(a, usage, response)
        events.append(
            Event(
                index=i,
                kind=kinds[k] if k >= 0 else None,  # type: ignore[arg-type]
                turn=tv,
                request=r,
                t=t[i] / 1_000_000,
                duration=dur / 1_000_000,
                args=a,
                result=shapes.decode(result[i], usage, response),
            )
        )
    last: Any = None
    for i, v in _pairs(d.get("state", []), n, "event states"):
        if v == 0 and type(v) is int:
            _expect(last is not None, "an event's state refers to no earlier state")
            s = last
        elif type(v) is list:
            _expect(last is not None and len(v) >= 1, "an event's state delta has no base")
            s = tuple(_mask_apply(last, v, "an event's state"))
        else:
            _expect(isinstance(v, dict) and isinstance(v.get("full"), list), "an event's state is not a list")
            s = tuple(v["full"])
        events[i].state = last = s
    last = None
    for i, v in _pairs(d.get("status", []), n, "event statuses"):
        if v == 0 and type(v) is int:
            _expect(last is not None, "an event's status refers to no earlier status")
            st = last
        elif type(v) is list:
            _expect(isinstance(last, dict) and len(v) >= 1, "an event's status delta has no base")
            st = dict(zip(last, _mask_apply(list(last.values()), v, "an event's status")))
        else:
            _expect(isinstance(v, dict), "an event's status is not an object")
            st = v
        events[i].status = last = st
    for name, default in (("fault", None), ("thread", None), ("note", None), ("output", None)):
        for i, v in enumerate(_unsparse(d.get(name, {}), n, default, f"event {name}s")):
            if v is not None:
                if not (name != "output" or isinstance(v, str)):
                    raise ValueError(f"event {i}'s output is not text")
                setattr(events[i], name, Fault(v["kind"], v["message"], v.get("traceback")) if name == "fault" else v)
    for name, values in more.items():
        if not (name in _EVENT_DEFAULTS or name == "kind"):
            raise ValueError(f"events have an unknown field {name!r}")
        if not (isinstance(values, dict)):
            raise ValueError(f"event {name} overrides are not an object")
        for k, v in values.items():
            i = int(k)
            if not (0 <= i < n):
                raise ValueError(f"event {name} refers to event {k}")
            setattr(events[i], name, v)
    for ev in events:
        if not (isinstance(ev.kind, str)):
            raise ValueError(f"event {ev.index} has no kind")
    return events


# -- requests ---------------------------------------------------------------------------------

_REQUEST_DONE = {"index", "turn", "call", "event", "assembled", "selected", "selected_by_engine", "tools", "tokens",
                 "usage", "recorded", "cache", "timestamp", "response_key"}
_CACHE_DONE = {"read", "write", "uncached", "break_index", "reason", "reason_kind", "cause_event", "block_tokens",
               "cost"}


def _encode_requests(requests: Sequence[Request], index: dict[str, int]) -> dict[str, Any]:
    more: dict[str, dict[str, Any]] = {}
    shapes = _Shapes(index)
    kinds = _Strings()
    templates = _Strings()
    usage, recorded, timestamp, response, tokens = [], [], [], [], []
    reason, reason_kind = [], []
    blocks: dict[str, Any] = {}
    prev_ts: Any = 0
    prev_resp = 0
    prev_blocks: Sequence[Any] = ()
    for i, req in enumerate(requests):
        for name, col in (("usage", usage), ("recorded", recorded)):
            numbers = usage_numbers(req.usage_held) if name == "usage" else None  # held as them already
            enc = numbers if numbers is not None else _usage_encode(getattr(req, name))
            if enc is MISSING:
                col.append(None)
                more.setdefault(name, {})[str(i)] = getattr(req, name)
            else:
                col.append(enc)
        tokens.append(shapes.encode(req.tokens))
        ts = req.timestamp
        if ts is None:
            timestamp.append(None)
        else:
            delta = ts - prev_ts if type(ts) in (int, float) and type(prev_ts) in (int, float) else None
            if delta is not None and prev_ts + delta == ts and type(prev_ts + delta) is type(ts):
                timestamp.append(delta)
                prev_ts = ts
            else:
                timestamp.append(None)
                more.setdefault("timestamp", {})[str(i)] = ts
        key = req.response_key
        if key is None:
            response.append(None)
        elif key in index:
            response.append(index[key] - prev_resp)
            prev_resp = index[key]
        else:
            response.append(key)
        info = req.cache
        words = info.reason  # a hit's is made at each read (inspector.cache.reasons): read once
        if type(words) is str:
            reason.append(_template(words, templates))
        else:
            reason.append("")
            more.setdefault("cache.reason", {})[str(i)] = words
        reason_kind.append(kinds.id(info.reason_kind) if type(info.reason_kind) is str else kinds.id(""))
        if type(info.reason_kind) is not str:
            more.setdefault("cache.reason_kind", {})[str(i)] = info.reason_kind
        bt = info.block_tokens
        if type(bt) is list:
            if bt:
                p = common_prefix_len(prev_blocks, bt)
                blocks[str(i)] = [p, *bt[p:]]
            prev_blocks = bt
        else:
            more.setdefault("cache.block_tokens", {})[str(i)] = bt
            prev_blocks = ()
    more.update(_more_fields(requests, _REQUEST_DONE, _REQUEST_DEFAULTS))
    caches = [r.cache for r in requests]
    for name, values in _more_fields(caches, _CACHE_DONE, _CACHE_DEFAULTS).items():
        more["cache." + name] = values
    assembled = [r.assembled for r in requests]
    selected = [r.selected for r in requests]
    if all(type(a) is int and type(s) is int for a, s in zip(assembled, selected)):
        selected_col: Any = [s - a for a, s in zip(assembled, selected)]
    else:
        selected_col = {"raw": selected}
    return {
        "count": len(requests),
        "turn": _int_deltas([r.turn for r in requests]),
        "call": [r.call for r in requests],
        "event": _int_deltas([r.event for r in requests]),
        "assembled": _int_deltas(assembled),
        "selected": selected_col,
        "selected_by_engine": _sparse([r.selected_by_engine for r in requests], False),
        "tools": _sparse([r.tools for r in requests], None),
        "shapes": shapes.table,
        "tokens": tokens,
        "usage": usage,
        "recorded": recorded,
        "timestamp": timestamp,
        "response_key": response,
        "cache": {
            "read": [c.read for c in caches],
            "write": [c.write for c in caches],
            "uncached": [c.uncached for c in caches],
            "break_index": [c.break_index for c in caches],
            "kinds": kinds.table,
            "reason_kind": reason_kind,
            "templates": templates.table,
            "reason": reason,
            "cause_event": _sparse([c.cause_event for c in caches], None),
            "block_tokens": blocks,
            "cost": _sparse([c.cost for c in caches], None),
        },
        "more": more,
    }


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _numbers(value: Any) -> bool:
    return isinstance(value, dict) and all(v is None or _number(v) for v in value.values())


def _decode_requests(d: Any, n_lists: int, keys: list[str]) -> list[Request]:
    _expect(isinstance(d, dict), "'requests' is not an object")
    n = d["count"]
    _expect(type(n) is int and n >= 0, "'requests' has no count")
    turn = _int_undeltas(d["turn"], n, "request turns")
    call = _column(d["call"], n, "request calls")
    event = _int_undeltas(d["event"], n, "request events")
    assembled = _int_undeltas(d["assembled"], n, "request lists")
    sel = d["selected"]
    if isinstance(sel, dict):
        selected = _column(sel.get("raw"), n, "request selections")
    else:
        _column(sel, n, "request selections")
        _expect(all(type(v) is int for v in sel), "request selections hold a non-integer")
        selected = [a + s for a, s in zip(assembled, sel)]
    by_engine = _unsparse(d.get("selected_by_engine", {}), n, False, "request selected_by_engine")
    tools = _unsparse(d.get("tools", {}), n, None, "request tools")
    shapes = _ShapeDecoder(d.get("shapes", []), keys, "a request")
    tokens = _column(d["tokens"], n, "request tokens")
    usage = _column(d["usage"], n, "request usage")
    recorded = _column(d["recorded"], n, "request recorded usage")
    timestamp = _column(d["timestamp"], n, "request timestamps")
    response = _column(d["response_key"], n, "request responses")
    c = d["cache"]
    _expect(isinstance(c, dict), "request cache is not an object")
    read = _column(c["read"], n, "cache read")
    write = _column(c["write"], n, "cache write")
    uncached = _column(c["uncached"], n, "cache uncached")
    break_index = _column(c["break_index"], n, "cache break_index")
    kinds = c["kinds"]
    _expect(isinstance(kinds, list), "cache kinds are not a list")
    reason_kind = _column(c["reason_kind"], n, "cache reason kinds")
    templates = c.get("templates", [])
    _expect(isinstance(templates, list) and all(type(x) is str for x in templates), "cache templates are not strings")
    parts = [re.split(f"([{_PLAIN}{_GROUPED}])", x) for x in templates]
    reason = _column(c["reason"], n, "cache reasons")
    cause = _unsparse(c.get("cause_event", {}), n, None, "cache cause_event")
    cost = _unsparse(c.get("cost", {}), n, None, "cache cost")
    blocks = c.get("block_tokens", {})
    _expect(isinstance(blocks, dict), "cache block_tokens is not an object")
    out: list[Request] = []
    prev_ts: Any = 0
    prev_resp = 0
    prev_blocks: list[Any] = []
    for i in range(n):
        rk = reason_kind[i]
        if not (type(rk) is int and 0 <= rk < len(kinds)):
            raise ValueError(f"request {i} has a bad reason kind")
        info = CacheInfo(
            read=read[i],
            write=write[i],
            uncached=uncached[i],
            break_index=break_index[i],
            reason=_untemplate(reason[i], parts, f"request {i} cache reason"),
            reason_kind=kinds[rk],
            cause_event=cause[i],
            cost=cost[i],
        )
        delta = blocks.get(str(i))
        if delta is not None:
            _expect(
                isinstance(delta, list) and delta and type(delta[0]) is int and 0 <= delta[0] <= len(prev_blocks),
                f"request {i} has a bad block_tokens delta",
            )
            info.block_tokens = prev_blocks[: delta[0]] + delta[1:]
        prev_blocks = info.block_tokens
        ts = timestamp[i]
        if ts is not None:
            if type(ts) not in (int, float):
                raise ValueError(f"request {i} has a bad timestamp")
            ts = prev_ts = prev_ts + ts
        key = response[i]
        if type(key) is int:
            prev_resp += key
            if not (0 <= prev_resp < len(keys)):
                raise ValueError(f"request {i} refers to message {prev_resp}")
            key = keys[prev_resp]
        else:
            if not (key is None or type(key) is str):
                raise ValueError(f"request {i} has a bad response key")
        req = Request(
            index=i,
            turn=turn[i],
            call=call[i],
            event=event[i],
            assembled=assembled[i],
            selected=selected[i],
            selected_by_engine=by_engine[i],
            tools=tools[i],
            tokens=shapes.decode(tokens[i]),
            usage=_usage_decode(usage[i], f"request {i} usage"),
            recorded=_usage_decode(recorded[i], f"request {i} recorded usage"),
            cache=info,
            timestamp=ts,
            response_key=key,
        )
        out.append(req)
    more = d.get("more", {})
    _expect(isinstance(more, dict), "request 'more' is not an object")
    for name, values in more.items():
        target = name[6:] if name.startswith("cache.") else name
        known = _CACHE_DEFAULTS if name.startswith("cache.") else _REQUEST_DEFAULTS
        if not (target in known or target in ("turn", "call", "event", "assembled", "selected")):
            raise ValueError(f"requests have an unknown field {name!r}")
        if not (isinstance(values, dict)):
            raise ValueError(f"request {name} overrides are not an object")
        for k, v in values.items():
            i = int(k)
            if not (0 <= i < n):
                raise ValueError(f"request {name} refers to request {k}")
            setattr(out[i].cache if name.startswith("cache.") else out[i], target, v)
    for req in out:
        for name in ("assembled", "selected"):
            lid = getattr(req, name)
            _expect(
                isinstance(lid, int) and 0 <= lid < n_lists, f"request {req.index} {name} list {lid!r} does not exist"
            )
        # Wrong types would load, then fail wherever a panel or a summary reads them.
        i, c = req.index, req.cache
        if not (_numbers(req.tokens)):
            raise ValueError(f"request {i} tokens are not a map of numbers")
        if not (req.usage is None or _numbers(req.usage)):
            raise ValueError(f"request {i} usage is not a map of numbers")
        if not (req.recorded is None or _numbers(req.recorded)):
            raise ValueError(f"request {i} recorded usage is not a map of numbers")
        _expect(all(v is None or _number(v) for v in (c.read, c.write, c.uncached, c.cost)),
                f"request {i} cache figures are not numbers")
    return out


# -- runs -------------------------------------------------------------------------------------


def _encode_mark(mark: Mark) -> dict[str, Any]:
    return {"event": mark.event, "label": mark.label, "note": mark.note}


def _encode_run(trace: Trace, index: dict[str, int], later: Callable[..., Any] | None = None) -> dict[str, Any]:
    """Everything of a trace except its message and token tables (messages by ``index``); with
    ``later`` (:func:`_encoding_ahead`), its columns are encoded while the file is written."""
    def make(fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args) if later is None else later(fn, *args)

    return {
        "meta": trace.meta,
        "lists": make(_encode_lists, trace.store.lists, index),
        "events": make(_encode_events, trace.events, trace.requests, index),
        "requests": make(_encode_requests, trace.requests, index),
        "marks": [_encode_mark(m) for m in trace.marks],
        "tool_schemas": trace.tool_schemas,
        # Derived analyses (``inspector.quality``): plain JSON a reader may ignore; absent when empty.
        **({"derived": trace.derived} if trace.derived else {}),
    }


def _write_atomic(path: str | os.PathLike[str], data: Iterable[bytes], *, compress: bool) -> None:
    from inspector.outputs import write_atomic

    write_atomic(path, data, compress=compress, text_bytes=True)


def _version_for(traces: Iterable[Trace]) -> int:
    """The lowest format version that holds ``traces`` (see ``TRACE_VERSION``)."""
    has_output = any(ev.output is not None for trace in traces for ev in trace.events)
    return _OUTPUT_VERSION if has_output else 1


def _wants_gzip(path: str | os.PathLike[str]) -> bool:
    return str(path).lower().endswith(".gz")


# automatic collection paused while a trace is read or written (inspector.gc_pause)
@collection_in_batches()
def save_trace(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write ``trace`` to ``path`` as one versioned JSON file (gzip if it ends in ``.gz``)."""
    doc: dict[str, Any] = {"format": TRACE_FORMAT, "version": _version_for([trace])}
    messages = trace.store.messages
    keys = list(messages)
    index = {k: i for i, k in enumerate(keys)}
    with _encoding_ahead() as later:
        run = _encode_run(trace, index, later)
        doc["meta"] = run.pop("meta")
        doc["messages"] = _encode_messages(messages)
        doc["tokens"] = _encode_tokens(trace.store.tokens, keys)
        doc.update(run)
        _write_atomic(path, _dumps(doc), compress=_wants_gzip(path))


@collection_in_batches()
def save_bundle(
    traces: Sequence[Trace], path: str | os.PathLike[str], meta: dict[str, Any] | None = None
) -> None:
    """Write several runs (e.g. engines compared on one session) into one file.

    The runs share one message table, so comparing five engines on the same session costs the
    session's text once. Each run lists the indices of its own store's messages (as runs of
    consecutive indices), so loading gives every run exactly the messages it had. Token counts
    are shared too; a run whose count for a key and tokenizer differs from the shared one keeps
    its own in ``tokens`` of that run.
    """
    messages: dict[str, dict[str, Any]] = {}
    tokens: dict[str, dict[str, int]] = {}
    own: list[dict[str, dict[str, int]]] = []
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
        own.append(own_tokens)
    keys = list(messages)
    index = {k: i for i, k in enumerate(keys)}
    with _encoding_ahead() as later:
        doc = {
            "format": BUNDLE_FORMAT,
            "version": _version_for(traces),
            "meta": meta or {},
            "messages": _encode_messages(messages),
            "tokens": _encode_tokens(tokens, keys),
            "runs": later(_bundle_runs, traces, own, index),
        }
        _write_atomic(path, _dumps(doc), compress=_wants_gzip(path))


def _bundle_runs(traces: Sequence[Trace], own: list[dict[str, dict[str, int]]], index: dict[str, int]) -> list[Any]:
    """Each run of a bundle: its columns, its messages and token keys (by ``index``), its own counts."""
    runs: list[dict[str, Any]] = []
    for trace, own_tokens in zip(traces, own):
        run = _encode_run(trace, index)
        run["keys"] = _ranges([index[k] for k in trace.store.messages])
        token_keys = list(trace.store.tokens)
        run["token_keys"] = _ranges([index[k] for k in token_keys if k in index]) + [
            k for k in token_keys if k not in index
        ]
        run["tokens"] = own_tokens
        runs.append(run)
    return runs


# -- decoding -------------------------------------------------------------------------------


MAX_TRACE_BYTES = max_input_bytes()  # a 30,000-turn trace is ~160 MB: far more than that is a crafted file


MAX_LIST_ENTRIES = env_count("INSPECTOR_MAX_TRACE_ENTRIES", 50_000_000)
"""Message references in all the lists of a trace together. Copies make a list cost a few bytes
whatever its length, so a 21 KB file could ask for 2**34 entries; the trace of the 150 MB,
4,000-turn session of ``inspector.bench.large_session`` holds 3.1 million."""


def _read_doc(path: str | os.PathLike[str]) -> tuple[dict[str, Any], bool]:
    """Read and parse the file; returns (document, was_gzip). OSError passes through.

    Special files are refused before they are opened, the file and its inflated bytes are
    capped at ``MAX_TRACE_BYTES``, and one value longer than ``max_string_chars()`` is refused
    before parsing (see :mod:`inspector.input_files`).
    """
    raw = b""
    try:
        raw, compressed, complete = read_input(path, MAX_TRACE_BYTES)
        if not complete:
            raise EOFError("the gzip stream ends early")
        check_values(raw)
        doc = loads(raw)
    except InputRefused as exc:
        raise TraceCorruptError(path, str(exc)) from None
    except EOFError as exc:
        raise TraceCorruptError(path, f"damaged gzip data ({exc})") from None
    except UnicodeDecodeError as exc:
        raise TraceCorruptError(path, f"not UTF-8 text at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        what = (
            "file is empty" if not raw.strip() else f"invalid JSON at line {exc.lineno} column {exc.colno}"
        )
        raise TraceCorruptError(path, f"not a trace file: {what} ({exc.msg})") from None
    except RecursionError:
        raise TraceCorruptError(path, "not a trace file: JSON nested too deeply") from None
    except MemoryError:
        raise TraceCorruptError(path, "not enough memory to read this file") from None
    except ValueError as exc:
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
    """Raise ValueError(what) unless ``cond``. Loops over every event, request and list check
    inline instead (``if not …: raise``): an f-string message made for each call that passes
    was a fifth of reopening a long trace."""
    if not cond:
        raise ValueError(what)


def _decode_lists(
    encoded: Any, messages: dict[str, Any], keys: Sequence[str] | None = None,
    prior: Sequence[tuple[str, ...]] = (),
) -> list[tuple[str, ...]]:
    """Rebuild the key lists; negative items are message indices into ``keys``. ``prior``: the
    lists before these (a trace streamed in batches), which their deltas may refer to."""
    _expect(isinstance(encoded, list), "'lists' is not a list")
    lists: list[tuple[str, ...]] = []  # the new lists; ``prior`` is read only where a delta refers to it
    first = len(prior)
    n_keys = len(keys) if keys is not None else 0
    total = 0
    for i, entry in enumerate(encoded, start=first):
        if not (isinstance(entry, list) and entry and type(entry[0]) is int):
            raise ValueError(f"list {i} has no base")
        back = entry[0]
        if not (0 <= back <= i):
            raise ValueError(f"list {i} refers to list {i}-{back!r}")
        base = (lists[i - back - first] if i - back >= first else prior[i - back]) if back else ()
        out: list[str] = []
        k, n = 1, len(entry)
        while k < n:
            item = entry[k]
            if type(item) is int and item < 0:
                m = -item - 1
                if not (keys is not None and m < n_keys):
                    raise ValueError(f"list {i} refers to unknown message index {m}")
                key = keys[m]  # type: ignore[index]
                if key not in messages:
                    raise ValueError(f"list {i} refers to unknown message {key!r}")
                out.append(key)
                k += 1
                continue
            if isinstance(item, str):
                if item not in messages:
                    raise ValueError(f"list {i} refers to unknown message {item!r}")
                out.append(item)
                k += 1
                continue
            if not (k + 1 < n):
                raise ValueError(f"list {i} ends inside a copy")
            start, length = item, entry[k + 1]
            _expect(
                type(start) is int
                and type(length) is int
                and 0 <= start
                and 0 < length
                and start + length <= len(base),
                f"list {i} copies {start!r}+{length!r} from a list of {len(base)}",
            )
            total += length
            _expect(total <= MAX_LIST_ENTRIES, f"its message lists hold more than {MAX_LIST_ENTRIES:,} entries in "
                    f"all (by list {i}); refused, as a crafted file would be (INSPECTOR_MAX_TRACE_ENTRIES)")
            out.extend(base[start : start + length])
            k += 2
        total += n  # the literal items (a bound: copies were counted above)
        _expect(total <= MAX_LIST_ENTRIES, f"its message lists hold more than {MAX_LIST_ENTRIES:,} entries in all "
                f"(by list {i}); refused, as a crafted file would be (INSPECTOR_MAX_TRACE_ENTRIES)")
        lists.append(tuple(out))
    return lists


def _decode_run(
    run: dict[str, Any],
    messages: dict[str, dict[str, Any]],
    tokens: Mapping[str, dict[str, int]],
    keys: list[str],
) -> Trace:
    _expect(isinstance(messages, dict), "'messages' is not an object")
    _expect(isinstance(tokens, Mapping), "'tokens' is not an object")
    meta = run.get("meta") or {}
    _expect(isinstance(meta, dict), "'meta' is not an object")
    trace = Trace(meta)
    store = trace.store
    store.messages = messages
    store.tokens = tokens if isinstance(tokens, TokenTable) else TokenTable(tokens)
    for i, tup in enumerate(_decode_lists(run.get("lists", []), messages, keys)):
        if store.put_list(tup) != i:
            store.lists.append(tup)  # a duplicate list (never written by us): keep ids stable
    trace.requests = _decode_requests(run["requests"], len(store.lists), keys)
    for ev in _decode_events(run["events"], trace.requests, keys):
        trace.add_event(ev)
    marks = run.get("marks", [])
    _expect(isinstance(marks, list), "'marks' is not a list")
    trace.marks = [Mark(int(m["event"]), str(m.get("label", "")), str(m.get("note", ""))) for m in marks]
    schemas = run.get("tool_schemas", [])
    _expect(isinstance(schemas, list), "'tool_schemas' is not a list")
    trace.tool_schemas = schemas
    derived = run.get("derived", {})
    trace.derived = derived if isinstance(derived, dict) else {}  # optional and recomputable: never fatal
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
        _expect(key == message_key(msg) or key in earlier_message_keys(msg), f"message {key} does not match its content hash")


_DECODE_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError)


def saved_kind(path: str | os.PathLike[str]) -> str | None:
    """``TRACE_FORMAT`` or ``BUNDLE_FORMAT`` when ``path`` is a file this module wrote, else None.

    Reads only the head of the file (decompressed when gzipped): the format name is written first.
    """
    try:
        raw = read_head_inflated(path, 4096)
    except (OSError, InputRefused):
        return None
    return saved_kind_of(raw)


# A saved file opens with its format name: a transcript that merely mentions one is not a trace.
_FORMAT_HEAD = re.compile(rb'\s*\{\s*"format"\s*:\s*"([^"]+)"')


def saved_kind_of(head: bytes) -> str | None:
    """``saved_kind`` for the first bytes of a (decompressed) file."""
    match = _FORMAT_HEAD.match(head)
    name = match.group(1).decode("utf-8", "replace") if match else None
    return name if name in (TRACE_FORMAT, BUNDLE_FORMAT) else None


@collection_in_batches()
def load_trace(path: str | os.PathLike[str], *, verify: bool = False) -> Trace:
    """Read a trace written by :func:`save_trace`; the result has ``finish()`` called.

    Raises :class:`TraceFormatError` for another format or a newer version and
    :class:`TraceCorruptError` for a damaged file. ``verify=True`` also re-hashes every
    message against its key (slower; for files that may have been edited by hand).
    """
    doc, _ = _read_doc(path)
    _check_header(path, doc, TRACE_FORMAT)
    try:
        messages = _decode_messages(doc.get("messages", {}))
        if verify:
            _verify_keys(messages)
        keys = list(messages)
        tokens = _decode_tokens(doc.get("tokens", {}), keys)
        return _decode_run(doc, messages, tokens, keys)
    except _DECODE_ERRORS as exc:
        raise TraceCorruptError(path, f"corrupt trace: {_describe(exc)}") from None
    except RecursionError:
        raise TraceCorruptError(path, "corrupt trace: a value is nested too deeply") from None
    except MemoryError:
        raise TraceCorruptError(path, "not enough memory to load this trace") from None


@collection_in_batches()
def load_bundle(path: str | os.PathLike[str], *, verify: bool = False) -> tuple[list[Trace], dict[str, Any]]:
    """Read a comparison bundle written by :func:`save_bundle`: (traces, bundle meta)."""
    doc, _ = _read_doc(path)
    _check_header(path, doc, BUNDLE_FORMAT)
    try:
        messages = _decode_messages(doc.get("messages", {}))
        if verify:
            _verify_keys(messages)
        keys = list(messages)
        tokens = _decode_tokens(doc.get("tokens", {}), keys)
        runs = doc.get("runs", [])
        _expect(isinstance(runs, list), "'runs' is not a list")
        traces: list[Trace] = []
        for n, run in enumerate(runs):
            _expect(isinstance(run, dict), f"run {n} is not an object")
            own = {}
            for key in _run_keys(run.get("keys", []), keys, f"run {n}"):
                _expect(key in messages, f"run {n} refers to unknown message {key!r}")
                own[key] = messages[key]
            own_tokens: dict[str, dict[str, int]] = {}
            overrides = run.get("tokens", {})
            _expect(isinstance(overrides, dict), f"run {n} tokens are not an object")
            for key in _run_keys(run.get("token_keys", []), keys, f"run {n} tokens"):
                own_tokens[key] = {**tokens.get(key, {}), **overrides.get(key, {})}
            traces.append(_decode_run(run, own, own_tokens, keys))
        meta = doc.get("meta") or {}
        _expect(isinstance(meta, dict), "bundle 'meta' is not an object")
        return traces, meta
    except _DECODE_ERRORS as exc:
        raise TraceCorruptError(path, f"corrupt comparison bundle: {_describe(exc)}") from None
    except RecursionError:
        raise TraceCorruptError(path, "corrupt comparison bundle: a value is nested too deeply") from None
    except MemoryError:
        raise TraceCorruptError(path, "not enough memory to load this comparison") from None


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
