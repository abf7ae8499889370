"""Follow mode: a writer process appends to a JSONL file or a state.db while the follower polls."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inspector.config import load_config
from inspector.live.follow import Follower
from tests.live.helpers import NotesEngine

WRITER = Path(__file__).with_name("writer.py")
TURNS = 4


def follow_while_writing(mode: str, target: Path, result: Path, *, pause: float = 0.4) -> tuple[Follower, list[int]]:
    """Start the writer, poll until it is done and everything is replayed; returns the follower and the played counts seen."""
    from inspector.host.replay import make_counter

    config = load_config(None, {"inspector": {"cache_profile": "openai"}})
    # Built before the writer starts so the first poll is not slowed by loading the tokenizer.
    follower = Follower(target, NotesEngine(), config, interval=0.1, counter=make_counter(config))
    proc = subprocess.Popen([sys.executable, str(WRITER), mode, str(target), str(TURNS), str(pause), str(result)])
    seen: list[int] = []
    deadline = time.monotonic() + 40
    try:
        while time.monotonic() < deadline:
            follower.poll()
            seen.append(follower.played)
            if proc.poll() is not None and follower.played >= TURNS:
                break
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
    return follower, seen


def check_incremental(follower: Follower, seen: list[int]) -> None:
    assert follower.played == TURNS, follower.last_error
    assert seen == sorted(seen)  # never goes back
    # Turns appeared while the writer was still writing, not all at the end.
    assert len({n for n in seen if 0 < n < TURNS}) >= 2, seen
    trace = follower.trace
    assert trace is not None and trace.meta["mode"] == "follow"
    # Every turn was replayed whole: two provider calls each (tool call, then the answer). A turn
    # replayed before its final answer was written would have one.
    assert [sum(1 for r in trace.requests if r.turn == t) for t in range(TURNS)] == [2] * TURNS


def test_follow_growing_jsonl(tmp_path):
    target, result = tmp_path / "live.jsonl", tmp_path / "result.json"
    follower, seen = follow_while_writing("jsonl", target, result)
    check_incremental(follower, seen)
    assert json.loads(result.read_text())["commits"] == TURNS * 4
    # Nothing new: polling again adds nothing and replays nothing twice.
    assert follower.poll() == 0 and follower.played == TURNS
    trace = follower.close()
    assert trace is not None and trace.events[-1].kind == "on_session_end"


def test_follow_hermes_state_db_without_blocking_the_writer(tmp_path):
    from inspector.sessions import load_session

    target, result = tmp_path / "state.db", tmp_path / "result.json"
    follower, seen = follow_while_writing("db", target, result)
    outcome = json.loads(result.read_text())
    assert outcome["errors"] == []  # no write was ever refused while we read
    assert outcome["commits"] == TURNS * 4
    check_incremental(follower, seen)
    assert follower.polls >= 10
    # The follower read what the writer wrote, through the ordinary reader.
    session = load_session(target)
    assert session.source_format == "hermes-db" and len(session.turns) == TURNS
    follower.close()


def test_last_turn_waits_for_a_quiet_interval(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    follower = Follower(path, NotesEngine(), load_config(None), interval=0.05)
    assert follower.poll() == 0  # just read: the writer may still be adding to this turn
    assert follower.poll() == 1  # unchanged for one interval and ends with a final answer
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"role": "user", "content": "run the tool"}) + "\n")
        fh.write(json.dumps({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_note", "arguments": "{\"key\": \"deadline\"}"}}]}) + "\n")
    assert follower.poll() == 0 and follower.poll() == 0  # pending tool call: not complete however quiet
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"role": "tool", "tool_call_id": "c1", "content": "Friday"}) + "\n")
        fh.write(json.dumps({"role": "user", "content": "thanks"}) + "\n")
    assert follower.poll() == 1  # the next user message completes the previous turn at once
    assert follower.played == 2
    follower.close()


def test_missing_source_is_retried_not_fatal(tmp_path):
    follower = Follower(tmp_path / "not-yet.jsonl", NotesEngine(), load_config(None), interval=0.05)
    assert follower.poll() == 0
    assert follower.last_error and "not-yet.jsonl" in follower.last_error
    follower.close()


def test_a_source_that_breaks_mid_follow_is_reported_in_the_trace_and_to_the_caller(tmp_path):
    import threading

    path = tmp_path / "t.jsonl"
    rows = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "again"}, {"role": "assistant", "content": "sure"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    follower = Follower(path, NotesEngine(), load_config(None), interval=0.02)
    follower.poll()
    follower.poll()
    assert follower.played == 2
    path.unlink()
    reported: list[str | None] = []
    stop = threading.Event()
    follower.run(stop, on_error=reported.append, max_seconds=0.2)
    assert len(reported) == 1 and "t.jsonl" in reported[0]  # once, not once per poll
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    follower.run(stop, on_error=reported.append, max_seconds=0.2)
    assert reported[1:] == [None]  # readable again
    notes = [e.note for e in follower.trace.events if e.kind == "host_note" and "follow:" in (e.note or "")]
    assert len(notes) == 2 and "cannot be read" in notes[0] and "readable again" in notes[1]
    follower.close()


def test_cli_follow_fails_when_the_source_is_gone_at_the_end(tmp_path, capsys):
    from inspector.cli import main

    code = main(["follow", str(tmp_path / "never.jsonl"), "--engine", "compressor", "--interval", "0.05",
                 "--max-seconds", "0.3"])
    assert code == 1 and "never.jsonl" in capsys.readouterr().err


def test_cli_follow_prints_one_line_per_turn(tmp_path, capsys):
    from inspector.cli import main

    path = tmp_path / "done.jsonl"
    rows = []
    for k in range(3):
        rows += [{"role": "user", "content": f"q{k}"}, {"role": "assistant", "content": f"a{k}"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code = main(["follow", str(path), "--engine", "compressor", "--interval", "0.05", "--max-seconds", "1"])
    out = capsys.readouterr()
    assert code == 0, out.err
    lines = [x for x in out.out.splitlines() if x.startswith("turn ")]
    assert [x.split(":")[0] for x in lines] == ["turn 0", "turn 1", "turn 2"]
    assert all("prompt" in x and "compressions 0" in x and "cache read" in x for x in lines)


@pytest.mark.parametrize("interval", [0.05])
def test_run_loop_stops_and_reports_updates(tmp_path, interval):
    import threading

    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "q"}) + "\n" + json.dumps({"role": "assistant", "content": "a"}) + "\n",
                    encoding="utf-8")
    follower = Follower(path, NotesEngine(), load_config(None), interval=interval)
    updates: list[int] = []
    stop = threading.Event()
    total = follower.run(stop, lambda trace, added: updates.append(len(trace.requests)), max_seconds=0.5)
    assert total == 1 and updates == [1]
    follower.close()


def test_cli_follow_writes_the_trace_when_it_ends(tmp_path, capsys):
    from inspector.cli import main
    from inspector.trace.io import load_trace

    path = tmp_path / "done.jsonl"
    rows = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "follow.json.gz"
    assert main(["follow", str(path), "--engine", "compressor", "--interval", "0.05", "--max-seconds", "0.5",
                 "--out", str(out)]) == 0
    trace = load_trace(out)
    assert trace.meta["mode"] == "follow" and len(trace.requests) == 1
    assert main(["follow", str(path), "--out", str(tmp_path / "no" / "t.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def _pairs(numbers: list[int]) -> str:
    rows = []
    for n in numbers:
        rows += [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": f"answer {n}"}]
    return "".join(json.dumps(r) + "\n" for r in rows)


def _asked(follower: Follower) -> list[str]:
    trace = follower.trace
    assert trace is not None
    return [trace.request_messages(r)[-1]["content"] for r in trace.requests]


def test_a_rewritten_or_replaced_source_goes_on_with_its_new_turns(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(_pairs([1, 2, 3]) + json.dumps({"role": "user", "content": "question 4"}) + "\n", encoding="utf-8")
    follower = Follower(path, NotesEngine(), load_config(None), interval=0.05)
    assert follower.poll() == 3
    path.write_text(_pairs([1, 2, 7, 8]) + json.dumps({"role": "user", "content": "question 9"}) + "\n",
                    encoding="utf-8")  # rewritten in place: the first two kept, then new turns
    follower.poll()
    assert _asked(follower) == [f"question {n}" for n in (1, 2, 3, 7, 8)], "turns after the rewrite are not skipped"
    path.write_text(_pairs([100, 101]) + json.dumps({"role": "user", "content": "question 102"}) + "\n",
                    encoding="utf-8")  # a rotated log: a different file at the same path
    follower.poll()
    assert _asked(follower)[-2:] == ["question 100", "question 101"]
    notes = [e.note for e in follower.trace.events if e.kind == "host_note"]
    assert any("rewritten or replaced" in (n or "") for n in notes)
    follower.close()


def test_lines_the_reader_skipped_are_noted_as_a_replay_warns(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(_pairs([1]) + '{"role": "user", "content": "torn\n' + _pairs([2, 3]), encoding="utf-8")
    follower = Follower(path, NotesEngine(), load_config(None), interval=0.05)
    follower.poll()
    notes = [e.note or "" for e in follower.trace.events if e.kind == "host_note"]
    assert any(n.startswith("reading the source: line 3: skipped, not valid JSON") for n in notes)
    follower.close()
