"""Cyclic garbage collection paused while a replay builds its trace, or a trace is read or written.

A replay allocates hundreds of thousands of long-lived objects (events, message forms). With
automatic collection each is traversed by a young collection and again by the next older one,
and full collections re-walk the growing trace: together several per cent of a long replay.
While replays run, automatic collection is paused and the replay collects the young
generations itself between batches of turns, so cyclic garbage (from engines, tracebacks) is
still reclaimed, just less often. Replays may run concurrently (comparisons), hence the count.

Reading a saved trace builds the same objects from a parsed document of millions more, and
writing one makes as many short-lived containers (freed by their reference counts, no cycles):
automatic collection walked that heap over and over, a third of reopening the 150 MB session's
trace and a fifth of saving it (``inspector.bench.large_session``). ``inspector.trace.io``
pauses it for both, and ``inspector.quality.analysis.compute`` while it builds the lifetimes.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders: dict[int, int] = {}  # thread id -> how deeply it is inside collection_in_batches
_restore = False


@contextmanager
def collection_in_batches() -> Iterator[None]:
    """Pause automatic collection for the duration (process-wide, nested and thread-safe)."""
    global _restore
    tid = threading.get_ident()
    with _lock:
        if not _holders:
            _restore = gc.isenabled()
            gc.disable()
        _holders[tid] = _holders.get(tid, 0) + 1
    try:
        yield
    finally:
        with _lock:
            depth = _holders.get(tid)
            if depth is not None:  # None: its run was abandoned and its pause released already
                if depth > 1:
                    _holders[tid] = depth - 1
                else:
                    del _holders[tid]
                    if not _holders and _restore:
                        gc.enable()


def release_thread(tid: int) -> None:
    """End the pause of a run abandoned on thread ``tid``: it may never leave its block."""
    with _lock:
        if _holders.pop(tid, None) is not None and not _holders and _restore:
            gc.enable()


def collect_batch() -> None:
    """Reclaim the cyclic garbage of the youngest generation (what automatic collection does most often).

    Only generation 0: collecting generation 1 too promotes the trace's objects to the oldest
    generation batch after batch, and each explicit collection counts towards a full one, so
    the first automatic collection after the pause walked the whole heap (47 of a 1,000-turn
    replay's 460 ms in ``inspector.bench.host_bench``). Garbage that outlives one batch is
    reclaimed when automatic collection resumes.
    """
    gc.collect(0)
