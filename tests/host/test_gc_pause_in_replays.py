"""Automatic garbage collection is paused during replays, yet cyclic garbage is still reclaimed."""

from __future__ import annotations

import gc
import threading
import weakref

from inspector.gc_pause import collection_in_batches
from inspector.host.replay import PREPARE_TURNS, replay

from .conftest import CountingEngine, coding_session


def test_collection_is_paused_inside_and_restored_after_even_when_nested_across_threads():
    assert gc.isenabled()
    inside = threading.Event()
    release = threading.Event()

    def other_replay():
        with collection_in_batches():
            inside.set()
            release.wait(5)

    worker = threading.Thread(target=other_replay)
    with collection_in_batches():
        assert not gc.isenabled()
        worker.start()
        inside.wait(5)
    assert not gc.isenabled()  # the other replay still runs
    release.set()
    worker.join(5)
    assert gc.isenabled()


def test_a_user_who_disabled_collection_keeps_it_disabled():
    gc.disable()
    try:
        with collection_in_batches():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_cycles_an_engine_leaves_behind_are_reclaimed_during_the_replay(config, nocache):
    freed: list[int] = []

    class Leaky(CountingEngine):
        def update_from_response(self, usage):
            super().update_from_response(usage)
            node: dict = {}
            node["self"] = node  # unreachable once this returns, but only a collection frees it
            holder = type("Holder", (), {})()
            holder.cycle = node
            node["holder"] = holder
            weakref.finalize(holder, freed.append, 1)

    seen_during: list[int] = []

    class Watching(Leaky):
        def on_turn_complete(self, messages, **kwargs):
            seen_during.append(len(freed))

    replay(coding_session(PREPARE_TURNS * 2 + 2, tool_chars=200), Watching(), config, simulator=nocache)
    assert seen_during[-1] > 0  # collected between batches, before the replay ended


def test_a_run_abandoned_inside_its_block_no_longer_keeps_collection_paused():
    from inspector.gc_pause import release_thread

    inside, release = threading.Event(), threading.Event()

    def stuck_replay():
        with collection_in_batches():
            inside.set()
            release.wait(5)  # blocked, as a hook that never returns

    worker = threading.Thread(target=stuck_replay)
    worker.start()
    inside.wait(5)
    assert not gc.isenabled()
    release_thread(worker.ident)  # what abandoning the run does
    assert gc.isenabled()
    release.set()
    worker.join(5)
    assert gc.isenabled()  # its late exit changes nothing
