"""JSON written in C where it is exact: ``orjson`` for the common case, the standard library for the rest.

Traces and worker frames are written as JSON, and the standard library's encoder was a large
part of a worker's hand-back and of saving a long trace (``inspector.bench.worker_bench``);
``orjson`` writes the same values about six times faster. It refuses some of what we must keep
(lone surrogates from a transcript decoded with ``surrogateescape``, integers past 64 bits),
and whatever it refuses is written by the standard library instead, so the text reads back as
what ``json`` wrote. Two differences in the text: a float may be spelt otherwise (``1e-05``
as ``0.00001``: the same float), and ``NaN`` or infinity is written as ``null`` (strict JSON)
where ``json`` writes the non-standard ``NaN``.

Reading: ``orjson`` reads an integer past 64 bits as a float, so it only reads what
:func:`dumps_fast` wrote (worker frames). Any other JSON is read by ``msgspec``
(:func:`loads`), exact for integers of any size and about twice as fast as ``json`` on a long
trace; what it refuses (lone surrogate escapes, ``NaN``, a malformed document) is parsed again by
``json``, so the value, or the error with its line and column, is what ``json.loads`` gives.
Without these libraries installed, everything goes through the standard library.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency; the standard library serves without it
    orjson = None  # type: ignore[assignment]

try:
    import msgspec
except ImportError:  # pragma: no cover - a dependency; the standard library serves without it
    msgspec = None  # type: ignore[assignment]

Default = Callable[[Any], Any] | None
_DECODER = msgspec.json.Decoder() if msgspec is not None else None

_OPTIONS = 0 if orjson is None else (orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS
                                     | orjson.OPT_PASSTHROUGH_DATETIME)
_ENCODERS: dict[Any, json.JSONEncoder] = {}


def _stdlib_encoder(default: Default) -> json.JSONEncoder:
    found = _ENCODERS.get(default)
    if found is None:
        found = _ENCODERS[default] = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=default)
    return found


def dumps_fast(value: Any, default: Default = None) -> bytes | None:
    """Compact UTF-8 JSON of ``value`` by ``orjson``, or None where it refuses (or is not installed)."""
    if orjson is None:
        return None
    try:
        return orjson.dumps(value, default=default, option=_OPTIONS)
    except (orjson.JSONEncodeError, OverflowError):
        return None


def loads_fast(data: bytes | bytearray | memoryview) -> Any:
    """Parse what :func:`dumps_fast` wrote (nothing else: see the module docstring)."""
    if orjson is None:
        return json.loads(bytes(data).decode("utf-8"))
    return orjson.loads(data)


def dumps_bytes(value: Any, default: Default = None) -> bytes:
    """:func:`dumps_text` as UTF-8 bytes (lone surrogates kept, ``surrogatepass``), without its
    decoding of what ``orjson`` wrote: a trace's save writes bytes."""
    fast = dumps_fast(value, default)
    if fast is not None:
        return fast
    return _stdlib_encoder(default).encode(value).encode("utf-8", "surrogatepass")


def dumps_text(value: Any, default: Default = None) -> str:
    """Compact JSON text of ``value`` (``ensure_ascii=False``) that reads back as ``json``'s does."""
    fast = dumps_fast(value, default)
    if fast is not None:
        return fast.decode("utf-8")
    return _stdlib_encoder(default).encode(value)


def loads(data: bytes | bytearray | memoryview) -> Any:
    """Parse UTF-8 JSON bytes as ``json.loads(data.decode("utf-8", "surrogatepass"))`` would.

    Raises what that raises (``UnicodeDecodeError``, ``json.JSONDecodeError`` with its line and
    column, ``RecursionError``): a document ``msgspec`` refuses is parsed again by ``json``.
    """
    if _DECODER is not None:
        try:
            return _DECODER.decode(data)
        except (msgspec.DecodeError, RecursionError):
            pass
    return json.loads(bytes(data).decode("utf-8", "surrogatepass"))


def loads_text(text: str) -> Any:
    """``json.loads(text)``, by ``msgspec`` where it can (the lines of a 150 MB Claude Code
    session: 0.88-1.42 s by ``json``, 0.70-0.74 s by ``msgspec``); what it refuses, and text with a
    lone surrogate (which has no UTF-8 form for it to read), is parsed by ``json``, errors included."""
    if _DECODER is not None:
        try:
            return _DECODER.decode(text)
        except (msgspec.DecodeError, RecursionError, UnicodeEncodeError):
            pass
    return json.loads(text)
