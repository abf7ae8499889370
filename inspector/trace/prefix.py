"""The length of the common prefix of two key lists: the one rule the cache simulator, the trace
codec, the diff and the lifetime pass all ask (a request extends the previous one, or breaks it
at some position)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def common_prefix_len(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items ``a`` and ``b`` share, by slice comparisons (done in C): one
    comparison in the common case where one list extends the other, a binary search otherwise."""
    n = min(len(a), len(b))
    if type(a) is not type(b):  # a list slice never equals a tuple slice
        a, b = list(a[:n]), list(b[:n])
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] holds, a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo
