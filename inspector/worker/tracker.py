"""What a worker is doing right now, readable by its supervisor even when the worker is frozen.

A hook blocked inside C code holds the interpreter lock, so no thread of the worker can report
anything. Before each hook the worker writes the hook's name, where it is defined, when it
started and its soft timeout into a small shared memory file; the supervisor reads that file
whenever it likes. Three slots: the job's phase (loading a plugin, replaying), the inline hook
(the watchdog's ``arm``/``disarm``, :mod:`inspector.host.guard`), the compress pool's hook.
A write costs a struct pack and a slice copy, so the tens of thousands of hooks of a replay
cost milliseconds.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
import weakref
from dataclasses import dataclass
from typing import Any

SLOT = 1024
PHASE, INLINE, POOL = 0, 1, 2
SLOTS = 3
SIZE = SLOT * SLOTS
_HEAD = struct.Struct("<QddI")  # sequence (odd: active), started (epoch s), allowed seconds (0: none), label length
_SEQ = struct.Struct("<Q")


@dataclass(frozen=True, slots=True)
class Activity:
    slot: int
    label: str  # "select_context" or "import plugin 'x'"
    where: str  # "path:line in function" of the hook's definition, or ""
    started: float
    allowed: float  # the soft timeout, 0 when none

    def overdue(self, now: float, grace: float) -> bool:
        return self.allowed > 0 and now - self.started > self.allowed + grace


def create(path: str) -> None:
    """The supervisor makes the file (zeros: every slot idle) before the worker starts."""
    with open(path, "wb") as fh:
        fh.write(b"\0" * SIZE)


def _after_fork_in_child() -> None:
    for tracker in list(_TRACKERS):
        tracker._forked = True


_TRACKERS: weakref.WeakSet[Tracker] = weakref.WeakSet()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Tracker:
    """The worker's writer."""

    def __init__(self, path: str) -> None:
        fd = os.open(path, os.O_RDWR)
        try:
            self._mm = mmap.mmap(fd, SIZE)
        finally:
            os.close(fd)
        self._seq = [0] * SLOTS
        self._texts: dict[tuple[str, str], bytes] = {}  # a label as the slot holds it, encoded once
        # A fork of the worker does not speak for it (told at the fork: no pid check per hook).
        self._forked = False
        _TRACKERS.add(self)

    def begin(self, slot: int, label: str, where: str = "", allowed: float = 0.0) -> None:
        if self._forked:
            return
        text = self._texts.get((label, where))
        if text is None:
            text = f"{label}\t{where}".encode("utf-8", "replace")[:SLOT - _HEAD.size]
            if len(self._texts) < 4096:
                self._texts[(label, where)] = text
        seq = self._seq[slot] = (self._seq[slot] | 1) + 2
        base = slot * SLOT
        self._mm[base + _HEAD.size:base + _HEAD.size + len(text)] = text
        self._mm[base:base + _HEAD.size] = _HEAD.pack(seq, time.time(), float(allowed or 0.0), len(text))

    def end(self, slot: int) -> None:
        if self._forked:
            return
        seq = self._seq[slot] = (self._seq[slot] | 1) + 1
        base = slot * SLOT
        self._mm[base:base + 8] = _SEQ.pack(seq)


def read(path: str) -> list[Activity]:
    """The supervisor's view: every active slot."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(SIZE)
    except OSError:
        return []
    out = []
    for slot in range(SLOTS):
        base = slot * SLOT
        if len(data) < base + _HEAD.size:
            break
        seq, started, allowed, size = _HEAD.unpack_from(data, base)
        if not seq & 1:
            continue
        label, _, where = data[base + _HEAD.size:base + _HEAD.size + size].decode("utf-8", "replace").partition("\t")
        out.append(Activity(slot, label, where, started, allowed))
    return out


def hook_label(fn: Any) -> tuple[str, str]:
    """(name, ``file:line in name``) of a hook callable, for the slot."""
    name = getattr(fn, "__name__", None) or type(fn).__name__
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    where = f"{code.co_filename}:{code.co_firstlineno} in {name}" if code is not None else ""
    return str(name), where
