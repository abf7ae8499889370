"""Small dicts of a trace held as tuples, and read back as the dicts they were.

A replay records about ten events per turn, and most carry a few small dicts: hook arguments
(``{"prompt_tokens": n, "site": "pre_api", "figure": "rough"}``), references
(``{"messages": {"$list": 17}}``), the engine's ``get_status()``. As dicts they cost 180 to 360
bytes each, and a reference another 180 for its inner dict: tens of MiB of a 10,000-turn replay
(issue 23). Packed, such a dict is one tuple: its shape (the keys, and which values are
``$list``/``$msg`` references) and then its values, the very objects the dict held.
:func:`unpack` builds an equal dict again.

A packed value is a plain tuple whose first item is a shape's handle, a ``bytes`` object made
here: no recorded value is a tuple headed by bytes (they are JSON values), and bytes, unlike an
instance of a class of ours, are nothing the garbage collector tracks, so a packed tuple of
numbers and strings is left alone by it, as the dict it replaces was. The host writes the
frequent ones as tuple displays, e.g. ``(SHOULD_COMPRESS_ARGS, tokens, site, figure)``: cheaper
than the dict they replace. Only the holder knows it holds one:
:class:`inspector.trace.model.Event` unpacks on attribute access, so whatever reads a trace
(panels, saving, the worker's stream) sees dicts. A packed value reads as a new dict each time:
whoever changes one must assign a new dict, not edit the one read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

VALUE, LIST, MSG = 0, 1, 2  # how a packed value is held: as it is, or as a list id / message key

# handle -> (keys, tags, plain, make): ``make`` builds the dict of a shape whose values are not
# all held (see made_shape); (keys, tags) -> handle
_layouts: dict[bytes, tuple[tuple[str, ...], tuple[int, ...], bool, Callable[[tuple], dict] | None]] = {}
_handles: dict[tuple[tuple[str, ...], tuple[int, ...]], bytes] = {}
# The handle a key set was first packed with, or None for keys that are not all strings: packing
# a dict of keys seen before costs a lookup and a check of its reference values, not a walk.
_by_keys: dict[tuple[Any, ...], bytes | None] = {}
_plain: dict[tuple[str, ...], bytes] = {}  # the key sets of _by_keys whose shape holds every value as it is
_STR = frozenset({str})
_REMEMBERED = 4096  # key sets remembered (an engine's status may name new keys all the time)
_making = threading.Lock()


def shape_of(keys: tuple[str, ...], tags: tuple[int, ...] | None = None) -> bytes:
    """The handle of the shape with these keys and tags (:data:`VALUE`, :data:`LIST`, :data:`MSG` per key)."""
    tags = tags if tags is not None else (VALUE,) * len(keys)
    handle = _handles.get((keys, tags))
    if handle is None:
        with _making:  # replays on two threads must not number two shapes alike
            handle = _handles.get((keys, tags))
            if handle is None:
                handle = b"shape %d" % len(_layouts)
                _layouts[handle] = (keys, tags, not any(tags), None)
                _handles[(keys, tags)] = handle
    return handle


def made_shape(name: str, keys: tuple[str, ...], make: Callable[[tuple], dict]) -> bytes:
    """The handle of a shape whose packed values hold only what the rest of the dict is made of:
    ``make(packed)`` builds the dict (with ``keys``, in order). Whoever packs one checks first
    that ``make`` gives back exactly the dict (see :func:`pack_usage`)."""
    handle = b"made " + name.encode()
    with _making:
        if handle not in _layouts:
            _layouts[handle] = (keys, (VALUE,) * len(keys), False, make)
    return handle


def is_packed(value: Any) -> bool:
    return type(value) is tuple and bool(value) and type(value[0]) is bytes


def _ref(value: Any) -> tuple[int, Any]:
    """(tag, id or key) of a ``{"$list": int}`` or ``{"$msg": str}`` dict, else (VALUE, value)."""
    if type(value) is dict and len(value) == 1:
        ref = value.get("$list")
        if type(ref) is int:
            return LIST, ref
        ref = value.get("$msg")
        if type(ref) is str:
            return MSG, ref
    return VALUE, value


def _pack_walked(value: dict[Any, Any], keys: tuple[Any, ...]) -> Any:
    """:func:`pack` by looking at every value; the shape found is remembered for the keys."""
    if not _STR.issuperset(map(type, keys)):
        if len(_by_keys) < _REMEMBERED:
            _by_keys[keys] = None
        return value
    values = list(value.values())
    tags = [VALUE] * len(values)
    for i, v in enumerate(values):
        if type(v) is dict:
            tags[i], values[i] = _ref(v)
    if len(_layouts) >= _REMEMBERED and (keys, tuple(tags)) not in _handles:
        return value  # a dict of yet another shape: kept as it is
    handle = shape_of(keys, tuple(tags))
    if len(_by_keys) < _REMEMBERED:
        _by_keys.setdefault(keys, handle)
        if _by_keys[keys] is handle and _layouts[handle][2]:
            _plain[keys] = handle
    return (handle, *values)


def pack(value: Any) -> Any:
    """``value`` packed when it is a non-empty dict with string keys, else ``value`` itself.

    Values are held as they are (a nested list or dict stays the same object), except one-key
    ``$list``/``$msg`` references where the key set's shape expects one, which keep only their
    id or key (a reference where none is expected is held as the dict it is: equal either way).
    """
    if type(value) is not dict or not value:
        return value
    keys = tuple(value)
    handle = _plain.get(keys)
    if handle is not None and _STR.issuperset(map(type, keys)):  # (an equal str subclass is not the key)
        return (handle, *value.values())
    handle = _by_keys.get(keys, _by_keys)
    if handle is None or not _STR.issuperset(map(type, keys)):
        return value
    if handle is _by_keys:
        return _pack_walked(value, keys)
    _, tags, plain, _ = _layouts[handle]
    if plain:
        return (handle, *value.values())
    values = list(value.values())
    for i, tag in enumerate(tags):
        if tag:
            held, values[i] = _ref(values[i])
            if held != tag:
                return _pack_walked(value, keys)
    return (handle, *values)


def unpack(value: Any) -> Any:
    """The dict a packed value holds, as a new dict; anything else as it is."""
    if type(value) is not tuple or not value or type(value[0]) is not bytes:
        return value
    keys, tags, plain, make = _layouts[value[0]]
    if plain:
        return dict(zip(keys, value[1:]))
    if make is not None:
        return make(value)
    out = {}
    for k, tag, v in zip(keys, tags, value[1:]):
        out[k] = v if tag == VALUE else {"$list": v} if tag == LIST else {"$msg": v}
    return out


# Hermes' usage dict (Usage.to_hermes_dict), held as the five numbers the other three are made of.
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens",
              "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
_INT = frozenset({int})


def _usage(held: tuple) -> dict[str, int]:
    _, p, c, cr, cw, r = held
    return dict(zip(USAGE_KEYS, (p, c, p + c, max(0, p - cr - cw), c, cr, cw, r)))


_USAGE = made_shape("usage", USAGE_KEYS, _usage)


def pack_usage(usage: Any) -> Any:
    """A usage dict packed: as its five numbers when the other three are what they are made of
    (a request's, 25,000 in a 10,000-turn replay), else as :func:`pack` holds it. The test is
    the one a saved trace applies to write the same five numbers (inspector.trace.io)."""
    if type(usage) is dict and len(usage) == 8 and tuple(usage) == USAGE_KEYS:
        values = tuple(usage.values())
        if _INT.issuperset(map(type, values)):
            p, c, total, given, output, cr, cw, r = values
            if total == p + c and given == max(0, p - cr - cw) and output == c:
                return (_USAGE, p, c, cr, cw, r)
    return pack(usage)


def usage_numbers(held: Any) -> list[int] | None:
    """``[prompt, completion, cache_read, cache_write, reasoning]`` of a usage :func:`pack_usage`
    held as them, else None (what a saved trace writes for it: inspector.trace.io)."""
    if type(held) is tuple and held and held[0] is _USAGE:
        return list(held[1:])
    return None


def read_through(cls: type, name: str, derive: Callable[[Any, Any], Any] | None = None) -> None:
    """Make field ``name`` of slotted dataclass ``cls`` read what its slot holds as the value it
    stands for: a packed value unpacked; with ``derive``, any other value ``held`` that is not JSON
    (one of the trace's own objects, say a request) as ``derive(self, held)``. Writes through ``name`` store
    what they are given. The slot stays reachable as ``<name>_held`` (the member descriptor under
    a second name), for code that writes many objects and must not pay for the property;
    ``fields()``, equality and repr see the values read."""
    slot = cls.__dict__[name]
    get_slot = slot.__get__
    plain = _PLAIN

    def read(self: Any) -> Any:
        value = get_slot(self, cls)
        kind = type(value)
        if kind in plain:
            return value
        if kind is tuple:
            return unpack(value)
        return value if derive is None else derive(self, value)

    setattr(cls, name + "_held", slot)
    setattr(cls, name, property(read, slot.__set__, doc=f"{cls.__name__}.{name}, as the value it stands for"))


# What a read-through slot holds as it is (a JSON value; tuples are packed values).
_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})


def keys_of(value: Any) -> Any:
    """The keys of a dict or of the dict a packed value holds (what a recorder filters on)."""
    return _layouts[value[0]][0] if is_packed(value) else value
