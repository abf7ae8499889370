"""How the host copies the transcript values it hands engines, and renders what it records.

Hermes hands some hooks structural clones and ``compress`` a deep copy; the trace records every
argument and result in a small JSON-safe form. Each part of the host (the recorder, request
assembly, compaction, the loop) copies and renders the same way, so the rules live here once.
"""

from __future__ import annotations

import copy
from typing import Any

# Leaf types jsonable returns unchanged: a dict of only these (with str keys) is copied as is.
SCALARS = frozenset({str, int, float, bool, type(None)})


def clone(value: Any) -> Any:
    """Hermes' structural clone: dicts and lists copied recursively, scalar leaves shared.

    Hermes clones the whole transcript for ``on_turn_complete`` and every request for
    ``select_context``; most messages are flat, and a flat dict is copied in one C call.
    """
    t = type(value)
    if t is dict:
        if SCALARS.issuperset(map(type, value.values())):
            return dict(value)
        return {k: clone(v) for k, v in value.items()}
    if t is list:
        return [v if type(v) in SCALARS else clone(v) for v in value]
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


def snapshot(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """``copy.deepcopy`` of a transcript, with the JSON containers copied directly.

    Same result as ``copy.deepcopy`` (new dicts and lists, shared immutable leaves, aliasing
    preserved through the shared memo); anything that is not a plain dict, list or scalar is
    handed to ``copy.deepcopy`` itself. It skips deepcopy's per-object dispatch, which is most
    of the cost of copying a long history before every compression.
    """
    if memo is None:
        memo = {}
    t = type(value)
    if t in SCALARS:
        return value
    if t is dict:
        done = memo.get(id(value))
        if done is not None:
            return done
        out: dict[Any, Any] = {}
        memo[id(value)] = out
        for k, v in value.items():
            if type(k) not in SCALARS:
                k = copy.deepcopy(k, memo)
            out[k] = v if type(v) in SCALARS else snapshot(v, memo)
        return out
    if t is list:
        done = memo.get(id(value))
        if done is not None:
            return done
        items: list[Any] = []
        memo[id(value)] = items
        for v in value:
            items.append(v if type(v) in SCALARS else snapshot(v, memo))
        return items
    return copy.deepcopy(value, memo)


def as_int(value: Any) -> int:
    """An engine attribute as the int the host needs, 0 when it is not one."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def jsonable(value: Any, depth: int = 0) -> Any:
    """Small JSON-safe rendering of a hook argument or result for the trace."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > 6:
        return repr(value)[:200]
    if isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    return repr(value)[:500]
