"""What a worker is doing, readable by its supervisor from a shared file, and only the worker's own word."""

from __future__ import annotations

import os
import sys

import pytest

from inspector.worker import tracker


def test_a_hook_shows_while_it_runs_and_is_gone_when_it_ends(tmp_path):
    path = str(tmp_path / "activity")
    tracker.create(path)
    writer = tracker.Tracker(path)
    writer.begin(tracker.INLINE, "should_compress", "engine.py:12 in should_compress", 30.0)
    (active,) = tracker.read(path)
    assert (active.slot, active.label, active.where, active.allowed) == (
        tracker.INLINE, "should_compress", "engine.py:12 in should_compress", 30.0)
    writer.end(tracker.INLINE)
    assert tracker.read(path) == []
    writer.begin(tracker.INLINE, "should_compress", "engine.py:12 in should_compress", 30.0)  # the label again
    assert [a.label for a in tracker.read(path)] == ["should_compress"]


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs os.fork")
def test_a_fork_of_the_worker_does_not_write_the_file(tmp_path):
    path = str(tmp_path / "activity")
    tracker.create(path)
    writer = tracker.Tracker(path)
    pid = os.fork()
    if pid == 0:  # engine code that forks: its child must not speak for the worker
        writer.begin(tracker.INLINE, "from the child")
        os._exit(0)
    os.waitpid(pid, 0)
    assert tracker.read(path) == []
