"""A trace's interned key lists, most stored as a prefix of an earlier one plus a tail.

A replay records a list per request, and each is nearly always the previous one with a few
messages appended: written whole, the lists of a 10,000-turn replay hold some 6.6 million
references (once the largest part of its memory). Stored as deltas they hold little more than
the appended keys.

Reading a list rebuilds it from the deltas between it and a whole list, at most
:data:`KeyLists.MAX_DEPTH` of them; the lists read last are kept, so walking them in order
(saving, the window's plots) costs a copy each. To keep that bound without storing a growing
history whole again and again, deltas come in runs: a list extends the one before it for
:data:`KeyLists.STEP` lists, then the next one starts a new run as a delta of the run's first
list (its *anchor*), whose tail is the messages of the run; anchors chain until the bound, and
only then is a list stored whole. A whole list every 13 requests was 4.5 MiB of a 10,000-turn
replay (issue 23); one every 144 costs a tenth of that, and the anchors' tails about as much again.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from inspector.trace.prefix import common_prefix_len


class _Delta(tuple):
    """A key list stored as a prefix of an earlier list (``base``) plus its own tail; ``depth``:
    deltas between it and a whole list; ``anchor``: the first list of its run (see the module).

    One tuple ``(base, prefix, depth, anchor, *tail)``: an object with these as attributes and
    the tail a tuple of its own cost half as much again (1.1 MiB of a 10,000-turn replay)."""

    __slots__ = ()

    base = property(itemgetter(0))
    prefix = property(itemgetter(1))
    depth = property(itemgetter(2))
    anchor = property(itemgetter(3))

    @property
    def tail(self) -> tuple[str, ...]:
        return tuple(self[4:])


class KeyLists:
    """The interned key lists of a trace (see the module). Reads as a sequence of tuples, and
    compares equal to a list of the same tuples."""

    MAX_DEPTH = 24  # deltas between any list and a whole one
    STEP = 12  # lists in a run after its anchor
    MIN_SHARED = 8  # a shorter shared prefix is not worth a delta
    RECENT = 64
    CANDIDATES = 4  # the latest lists tried as a base (a request's list follows a turn's short input list)

    def __init__(self, lists: Any = ()) -> None:
        self._items: list[tuple[str, ...] | _Delta] = []
        self._recent: dict[int, tuple[str, ...]] = {}
        for tup in lists:
            self.append(tuple(tup))

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):  # a run of lists, e.g. what a worker streams in one batch
            return [self[i] for i in range(*index.indices(len(self._items)))]
        if index < 0:
            index += len(self._items)
        item = self._items[index]
        if type(item) is tuple:
            return item
        found = self._recent.get(index)
        if found is not None:
            return found
        base_index, prefix = item[0], item[1]
        base = self[base_index]
        tail = tuple(item[4:])
        out = base[:prefix] + tail if prefix < len(base) else base + tail
        self._remember(index, out)
        return out

    def _remember(self, index: int, tup: tuple[str, ...]) -> None:
        recent = self._recent
        if len(recent) >= self.RECENT:
            try:
                del recent[next(iter(recent))]
            except (KeyError, RuntimeError, StopIteration):  # another reader's thread evicted it first
                pass
        recent[index] = tup

    def __iter__(self):
        for i in range(len(self._items)):
            yield self[i]

    def stored_delta(self, index: int) -> tuple[int, int, tuple[str, ...]] | None:
        """``(base, prefix, tail)`` when list ``index`` is stored as the first ``prefix`` keys of list
        ``base`` followed by ``tail``; None when it is stored whole. What a stream of the lists can
        send as it is, instead of comparing each list with the ones before it again."""
        item = self._items[index]
        if type(item) is tuple:
            return None
        return item[0], item[1], tuple(item[4:])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (KeyLists, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"KeyLists({len(self)} lists)"

    def copy(self) -> KeyLists:
        """A copy sharing the (immutable) stored lists: cheap, for a snapshot read on another thread."""
        out = KeyLists()
        out._items = list(self._items)
        return out

    def append(self, tup: tuple[str, ...]) -> None:
        """Store ``tup`` as the next list: a delta on a recent list it mostly extends (or on that
        list's anchor, once its run is :data:`STEP` long), else whole."""
        items = self._items
        if len(tup) >= self.MIN_SHARED:
            for like in range(len(items) - 1, max(-1, len(items) - 1 - self.CANDIDATES), -1):
                item = items[like]
                if type(item) is tuple:
                    depth, anchor, anchor_depth = 0, like, 0
                else:
                    depth, anchor = item[2], item[3]
                    first = items[anchor]
                    anchor_depth = 0 if type(first) is tuple else first[2]
                if depth - anchor_depth < self.STEP:
                    base, new_depth, new_anchor = like, depth + 1, anchor  # the run goes on
                elif anchor_depth + 1 + self.STEP <= self.MAX_DEPTH:
                    base, new_depth, new_anchor = anchor, anchor_depth + 1, len(items)  # a new run
                else:
                    continue
                shared = common_prefix_len(self[base], tup)
                if shared >= self.MIN_SHARED and shared * 2 >= len(tup):
                    items.append(_Delta((base, shared, new_depth, new_anchor, *tup[shared:])))
                    self._remember(len(items) - 1, tup)
                    return
        items.append(tup)
