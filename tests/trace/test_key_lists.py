"""The trace's interned key lists: stored as deltas, read back exactly, interned as before."""

from __future__ import annotations

import random

from inspector.trace.model import KeyLists, MessageStore, _Delta


def _history_like(n: int, seed: int = 3) -> list[tuple[str, ...]]:
    """Lists as a replay makes them: growing histories, short turn inputs, and compactions."""
    rng = random.Random(seed)
    out, history = [], ["sys"]
    for i in range(n):
        history = history + [f"m{i}a", f"m{i}b"]
        out.append((f"in{i}",))
        out.append(tuple(history))
        if rng.random() < 0.05:
            history = ["sys", f"summary{i}"] + history[-4:]
            out.append(tuple(history))
    return out


def test_every_list_reads_back_as_it_was_put():
    lists = _history_like(300)
    store = MessageStore()
    ids = [store.put_list(lst) for lst in lists]
    assert [store.get_list(i) for i in ids] == lists
    assert list(store.lists) == [lst for i, lst in enumerate(lists) if lists.index(lst) == i]
    # Random access, far from the last list read, too.
    for i in random.Random(1).sample(range(len(ids)), 50):
        assert store.get_list(ids[i]) == lists[i]


def test_an_equal_list_gets_the_id_it_had():
    store = MessageStore()
    a = store.put_list(("s", "x", "y"))
    b = store.put_list(["s", "x", "y", "z"])
    assert store.put_list(["s", "x", "y"]) == a and store.put_list(("s", "x", "y", "z")) == b
    assert len(store.lists) == 2


def test_most_lists_are_stored_as_deltas_of_a_bounded_depth():
    kept = KeyLists(_history_like(400))
    deltas = [item for item in kept._items if isinstance(item, _Delta)]
    long_lists = [lst for lst in kept if len(lst) >= KeyLists.MIN_SHARED]
    assert len(deltas) >= 0.8 * len(long_lists)
    assert max(d.depth for d in deltas) <= KeyLists.MAX_DEPTH
    stored = sum(len(item.tail) if isinstance(item, _Delta) else len(item) for item in kept._items)
    assert stored < 0.2 * sum(len(lst) for lst in kept)


def test_key_lists_compare_equal_to_the_plain_lists_and_copy_cheaply():
    lists = _history_like(50)
    kept = KeyLists(lists)
    assert kept == lists and kept == KeyLists(lists)
    copy = kept.copy()
    copy.append(("new",) * 10)
    assert len(copy) == len(kept) + 1 and kept == lists


def test_a_store_given_a_plain_list_of_tuples_keeps_working():
    store = MessageStore()
    store.lists = [("a", "b"), ("c",)]  # as older callers and tests assign it
    assert store.put_list(("c",)) == 1
    assert store.put_list(("d",)) == 2 and store.get_list(0) == ("a", "b")


def test_a_history_growing_for_hundreds_of_requests_is_rarely_stored_whole_and_reads_within_the_bound():
    history, lists = ["sys"], []
    for i in range(600):
        history = history + [f"m{i}a", f"m{i}b"]
        lists.append((f"in{i}",))
        lists.append(tuple(history))
    kept = KeyLists(lists)
    assert list(kept) == lists
    long_whole = [item for item in kept._items if type(item) is tuple and len(item) >= KeyLists.MIN_SHARED]
    runs = KeyLists.STEP * (KeyLists.MAX_DEPTH - KeyLists.STEP)  # lists between two whole ones at least
    assert len(long_whole) <= 600 // runs + 1
    assert max(d.depth for d in kept._items if isinstance(d, _Delta)) <= KeyLists.MAX_DEPTH
    stored = sum(len(item.tail) if isinstance(item, _Delta) else len(item) for item in kept._items)
    assert stored < 6 * 2 * 600  # the appended keys twice (a run's anchor repeats its run's) and the few whole lists
