"""Follow shows a long agent turn as it grows: each provider call once it is certain, not the turn at its end.

The test appends Claude Code records to a file one at a time and polls between them with a fake
clock (no end-of-turn mark until the test writes one), so what the follower saw at each poll is fixed.
"""

from __future__ import annotations

import threading

from inspector.config import load_config
from inspector.host.replay import replay
from inspector.live.follow import Follower
from inspector.sessions import load_session
from tests.live.growing import ClaudeCodeLog, FakeClock, pause
from tests.live.helpers import NotesEngine


def _tool_call(log: ClaudeCodeLog, n: int) -> None:
    log.block(f"msg_{n}", {"type": "text", "text": f"Step {n}: reading a note."})
    log.block(f"msg_{n}", {"type": "tool_use", "id": f"toolu_{n}", "name": "read_note", "input": {"key": f"k{n}"}})


def _follower(log: ClaudeCodeLog, clock: FakeClock, **kwargs) -> Follower:  # noqa: ANN003
    return Follower(log.path, NotesEngine(), load_config(None), interval=0.05, settle=30.0, clock=clock, **kwargs)


def test_each_call_of_a_turn_still_being_written_is_shown_once_it_is_certain(tmp_path):
    log, clock = ClaudeCodeLog(tmp_path / "s.jsonl"), FakeClock()
    follower = _follower(log, clock)
    log.user("Collect the three notes, then summarise them.")
    _tool_call(log, 1)
    pause(follower, clock, 0.3)
    # The reply may still gain blocks (or its usage) until something follows it: nothing yet.
    assert follower.trace is not None and len(follower.trace.requests) == 0
    log.result("toolu_1", "note one")
    assert follower.poll() == 0 and follower.grew  # no turn complete, but one request more
    assert len(follower.trace.requests) == 1 and follower.played == 0
    _tool_call(log, 2)
    assert follower.poll() == 0 and not follower.grew  # its second call is not certain yet
    log.result("toolu_2", "note two")
    _tool_call(log, 3)
    log.result("toolu_3", "note three")
    assert follower.poll() == 0 and follower.grew
    assert len(follower.trace.requests) == 3
    assert {r.turn for r in follower.trace.requests} == {0}  # one turn, still open
    log.block("msg_4", {"type": "text", "text": "Notes one, two and three."}, stop_reason="end_turn")
    assert follower.poll() == 1 and follower.played == 1  # the source marks it ended: the answer, and the turn ends
    trace = follower.trace
    # What was played piece by piece is what a replay of the finished file sends.
    full = replay(load_session(log.path), NotesEngine(), load_config(None))
    assert len(trace.requests) == len(full.requests) == 4
    assert [trace.request_messages(r) for r in trace.requests] == [full.request_messages(r) for r in full.requests]
    assert [e.kind for e in trace.events if e.kind.startswith("on_turn")] == \
        [e.kind for e in full.events if e.kind.startswith("on_turn")]
    # The next turn is played as usual, after the one that grew.
    log.user("Thanks.")
    log.block("msg_5", {"type": "text", "text": "You are welcome."}, stop_reason="end_turn")
    assert follower.poll() == 1 and follower.played == 2
    assert not [e for e in trace.events if "rewritten" in (e.note or "")]
    follower.close()


def test_without_grow_nothing_shows_until_the_turn_ends(tmp_path):
    log, clock = ClaudeCodeLog(tmp_path / "s.jsonl"), FakeClock()
    follower = _follower(log, clock, grow=False)
    log.user("Collect the note.")
    _tool_call(log, 1)
    log.result("toolu_1", "note one")
    pause(follower, clock, 0.3)
    assert len(follower.trace.requests) == 0  # the old behaviour, kept behind the switch
    follower.close()


def test_stopping_during_a_growing_turn_finalises_it_with_the_calls_so_far(tmp_path):
    log, clock = ClaudeCodeLog(tmp_path / "s.jsonl"), FakeClock()
    follower = _follower(log, clock)
    log.user("Collect the notes.")
    for n in (1, 2):
        _tool_call(log, n)
        log.result(f"toolu_{n}", f"note {n}")
    follower.poll()
    assert len(follower.trace.requests) == 2
    trace = follower.close()
    assert trace is not None and trace.events[-1].kind == "on_session_end"
    notes = [e.note for e in trace.events if "still being written" in (e.note or "")]
    assert notes == ["follow: stopped while this turn was still being written; it was finalised with the "
                     "2 provider calls played so far"]
    assert follower.played == 1 and trace.meta["session"]["turns"] == 1


def test_a_turn_rewritten_while_it_grows_ends_there_and_the_rewrite_is_noted(tmp_path):
    log, clock = ClaudeCodeLog(tmp_path / "s.jsonl"), FakeClock()
    follower = _follower(log, clock)
    log.user("Collect the notes.")
    _tool_call(log, 1)
    log.result("toolu_1", "note one")
    follower.poll()
    assert len(follower.trace.requests) == 1
    # The writer replaces the file: a different conversation.
    other = ClaudeCodeLog(tmp_path / "other.jsonl")
    other.user("Something else entirely.")
    other.block("msg_9", {"type": "text", "text": "Sure."}, stop_reason="end_turn")
    log.rewrite(other.records)
    assert follower.poll() == 2  # the partial turn is closed, the new one played
    notes = [e.note for e in follower.trace.events if "rewritten or replaced" in (e.note or "")]
    assert len(notes) == 1
    assert [r.turn for r in follower.trace.requests] == [0, 1]
    follower.close()


def test_the_run_loop_reports_the_growing_turn_to_its_caller(tmp_path):
    """As the window's follow dock gets it: ``on_update`` after each poll that grew the open turn."""
    log = ClaudeCodeLog(tmp_path / "s.jsonl")
    log.user("Collect the notes.")
    follower = Follower(log.path, NotesEngine(), load_config(None), interval=0.05, settle=30.0)
    seen: list[tuple[int, int]] = []
    grown = threading.Event()

    def on_update(snapshot, added):  # noqa: ANN001, ANN202
        seen.append((len(snapshot.requests), added))
        grown.set()

    stop = threading.Event()
    thread = threading.Thread(target=follower.run, args=(stop, on_update), daemon=True)
    thread.start()
    try:
        for n in (1, 2):
            grown.clear()
            _tool_call(log, n)
            log.result(f"toolu_{n}", f"note {n}")
            assert grown.wait(20), seen
        grown.clear()
        log.block("msg_3", {"type": "text", "text": "Done."}, stop_reason="end_turn")
        assert grown.wait(20), seen
    finally:
        stop.set()
        thread.join(20)
    assert seen == [(1, 0), (2, 0), (3, 1)]
    follower.close()


def test_through_the_worker_the_window_receives_each_request_of_the_growing_turn(tmp_path):
    """The follow dock's path: the follower in a worker process, its trace streamed to the window."""
    from inspector.worker.commands import follow_in_worker

    log = ClaudeCodeLog(tmp_path / "s.jsonl")
    log.user("Collect the notes.")
    following, update = threading.Event(), threading.Event()
    frames: list[tuple[int, int]] = []  # (turns added, requests the window's copy of the trace holds)

    def on_frame(worker, frame):  # noqa: ANN001, ANN202
        if frame.get("type") == "following":
            following.set()
        elif frame.get("type") == "update":
            frames.append((int(frame.get("added") or 0), len(worker.assembler.trace.requests)))
            update.set()

    stop = threading.Event()
    job = {"source": str(log.path), "engine": "compressor", "interval": 0.05, "settle": 30.0, "max_seconds": 120}
    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(
        follow_in_worker(job, load_config(None), stop=stop, on_frame=on_frame)), daemon=True)
    thread.start()
    try:
        assert following.wait(60), "the worker did not start following"
        for n in (1, 2):
            update.clear()
            _tool_call(log, n)
            log.result(f"toolu_{n}", f"note {n}")
            assert update.wait(60), frames
        update.clear()
        log.block("msg_3", {"type": "text", "text": "Done."}, stop_reason="end_turn")
        assert update.wait(60), frames
    finally:
        stop.set()
        thread.join(60)
    assert frames == [(0, 1), (0, 2), (1, 3)]
    assert outcome and outcome[0].error is None and outcome[0].trace is not None
    assert len(outcome[0].trace.requests) == 3
