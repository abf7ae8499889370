"""Follow mode: a writer process appends to a JSONL file or a state.db while the follower polls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inspector.config import load_config
from inspector.live.follow import Follower
from inspector.sessions import load_session
from tests.live.growing import ClaudeCodeLog, CodexLog, FakeClock, JsonlLog, pause
from tests.live.helpers import NotesEngine

WRITER = Path(__file__).with_name("writer.py")
TURNS = 4


def follow_while_writing(mode: str, target: Path, result: Path, *, pause: float = 0.4) -> tuple[Follower, list[int]]:
    """Start the writer, poll until it is done and everything is replayed; returns the follower and the played counts seen."""
    from inspector.host.replay import make_counter

    config = load_config(None, {"inspector": {"cache_profile": "openai"}})
    # Built before the writer starts so the first poll is not slowed by loading the tokenizer.
    follower = Follower(target, NotesEngine(), config, interval=0.1, settle=0.5, counter=make_counter(config))
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


def _quiet_notes(follower: Follower) -> list[str]:
    return [e.note or "" for e in follower.trace.events if e.kind == "host_note" and "quiet rule" in (e.note or "")]


def test_a_last_turn_with_no_end_mark_waits_for_the_settle_period(tmp_path):
    log = JsonlLog(tmp_path / "t.jsonl")  # OpenAI messages: nothing in the format marks a turn's end
    log.write({"role": "user", "content": "hi"})
    log.write({"role": "assistant", "content": "hello"})
    clock = FakeClock()
    # Times in eighths of a second add up exactly on the fake clock.
    follower = Follower(log.path, NotesEngine(), load_config(None), interval=0.125, settle=1.0, clock=clock)
    assert follower.poll() == 0  # just written: the writer may still be adding to this turn
    pause(follower, clock, 0.875)
    assert follower.played == 0  # quiet for many polls, but not for the settle period
    pause(follower, clock, 0.125)
    assert follower.played == 1
    notes = _quiet_notes(follower)
    assert len(notes) == 1 and "settle period 1 s" in notes[0]
    assert [e.turn for e in follower.trace.events if "quiet rule" in (e.note or "")] == [0]
    log.write({"role": "user", "content": "run the tool"})
    log.write({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_note", "arguments": "{\"key\": \"deadline\"}"}}]})
    pause(follower, clock, 3.0)
    assert follower.played == 1  # pending tool call: not complete however quiet
    log.write({"role": "tool", "tool_call_id": "c1", "content": "Friday"})
    log.write({"role": "user", "content": "thanks"})
    assert follower.poll() == 1  # the next user message completes the previous turn at once
    assert follower.played == 2 and len(_quiet_notes(follower)) == 1  # that one needed no quiet rule
    follower.close()


def test_a_file_finished_long_ago_is_quiet_already(tmp_path):
    log = JsonlLog(tmp_path / "t.jsonl")
    log.write({"role": "user", "content": "hi"})
    log.write({"role": "assistant", "content": "hello"})
    hour_ago = time.time() - 3600
    os.utime(log.path, (hour_ago, hour_ago))
    follower = Follower(log.path, NotesEngine(), load_config(None), interval=0.05, settle=60)
    assert follower.poll() == 1  # its last write was an hour ago: no need to wait another minute
    [note] = [e for e in follower.trace.events if "quiet rule" in (e.note or "")]
    assert note.args["quiet_seconds"] >= 3600
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
    follower = Follower(path, NotesEngine(), load_config(None), interval=0.02, settle=0)
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
    notes = [e.note for e in follower.trace.events if e.kind == "host_note" and "follow: the source" in (e.note or "")]
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
    code = main(["follow", str(path), "--engine", "compressor", "--interval", "0.05", "--settle", "0",
                 "--max-seconds", "1"])
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
    follower = Follower(path, NotesEngine(), load_config(None), interval=interval, settle=0)
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
    assert main(["follow", str(path), "--engine", "compressor", "--interval", "0.05", "--settle", "0",
                 "--max-seconds", "0.5", "--out", str(out)]) == 0
    trace = load_trace(out)
    assert trace.meta["mode"] == "follow" and len(trace.requests) == 1
    assert main(["follow", str(path), "--out", str(tmp_path / "no" / "t.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["follow", str(path), "--settle", "-1"]) == 2
    assert "--settle -1: must be zero or more seconds" in capsys.readouterr().err


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


def test_a_half_written_last_line_is_pending_not_a_permanent_skipped_line_note(tmp_path):
    # The writer is in the middle of line 5: it has no newline yet. The next poll reads it whole.
    path = tmp_path / "t.jsonl"
    whole = json.dumps({"role": "user", "content": "question 3"}) + "\n"
    path.write_text(_pairs([1, 2]) + whole[:20], encoding="utf-8")
    follower = Follower(path, NotesEngine(), load_config(None), interval=0.05)
    follower.poll()
    path.write_text(_pairs([1, 2]) + whole, encoding="utf-8")
    follower.poll()
    notes = [e.note or "" for e in follower.trace.events if e.kind == "host_note"]
    assert not any("line 5" in n or "skipped" in n or "incomplete" in n for n in notes), notes
    follower.close()
    assert "question 3" in [m.get("content") for m in load_session(str(path)).messages]


def test_a_reader_says_an_unterminated_last_line_is_incomplete_not_invalid(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(_pairs([1]) + '{"role": "user", "cont', encoding="utf-8")
    warnings = load_session(str(path)).warnings
    assert any(w.startswith("line 3: the last line is incomplete") for w in warnings), warnings
    assert not any("skipped, not valid JSON" in w for w in warnings)


# -- a turn is played once, complete, however the writer pauses ------------------------------------

def _responses(follower: Follower, turn: int) -> list[dict]:
    """The assistant messages the replayed turn's provider calls returned, in order."""
    trace = follower.trace
    return [trace.store.get(r.response_key) for r in trace.requests if r.turn == turn]


def _claude_code_turn(log: ClaudeCodeLog, follower: Follower, clock: FakeClock, gap: float, *,
                      stop_reason: str | None = None) -> None:
    """A question, a reply in three block lines ending in a tool call, its result, a two-block answer."""
    log.user("When is the deadline?")
    for block in ({"type": "thinking", "thinking": "The notes will say.", "signature": "sig"},
                  {"type": "text", "text": "Let me check the notes."},
                  {"type": "tool_use", "id": "toolu_1", "name": "read_note", "input": {"key": "deadline"}}):
        pause(follower, clock, gap)
        log.block("msg_1", block)
    pause(follower, clock, gap)
    log.result("toolu_1", "Friday 17:00")
    pause(follower, clock, gap)
    log.block("msg_2", {"type": "text", "text": "The deadline is"})
    pause(follower, clock, gap)
    log.block("msg_2", {"type": "text", "text": "Friday at 17:00."}, stop_reason=stop_reason, output_tokens=42)


def test_a_claude_code_reply_is_not_played_between_its_block_lines(tmp_path):
    log, clock = ClaudeCodeLog(tmp_path / "s.jsonl"), FakeClock()
    follower = Follower(log.path, NotesEngine(), load_config(None), interval=0.05, settle=2.0, clock=clock)
    # Each block line comes after a pause several poll intervals long (Claude Code writes a
    # block when it has streamed); after the thinking or the text block the reply looks final.
    _claude_code_turn(log, follower, clock, gap=0.5)
    pause(follower, clock, 0.5)
    assert follower.played == 0
    log.user("And the venue?")  # a later turn has begun: the first is complete
    assert follower.poll() == 1
    replies = _responses(follower, 0)
    assert [r.get("content") for r in replies] == ["Let me check the notes.", "The deadline is\nFriday at 17:00."]
    assert [c["function"]["name"] for c in replies[0]["tool_calls"]] == ["read_note"]
    assert follower.trace.requests[-1].recorded["completion_tokens"] == 42  # the last line's usage
    assert _quiet_notes(follower) == []
    pause(follower, clock, 0.5)
    assert follower.played == 1  # played once
    follower.close()


@pytest.mark.parametrize("mark", ["stop_reason", "turn_duration"])
def test_a_claude_code_turn_the_source_marks_ended_plays_at_once(tmp_path, mark):
    log, clock = ClaudeCodeLog(tmp_path / "s.jsonl"), FakeClock()
    follower = Follower(log.path, NotesEngine(), load_config(None), interval=0.05, settle=30.0, clock=clock)
    _claude_code_turn(log, follower, clock, gap=0.5, stop_reason="end_turn" if mark == "stop_reason" else None)
    if mark == "turn_duration":
        assert follower.poll() == 0  # stop_reason is null on every line, as Claude Code 2.1 writes it
        log.system("turn_duration", durationMs=2500)
    assert follower.poll() == 1  # long before the settle period
    assert len(_responses(follower, 0)) == 2 and _quiet_notes(follower) == []
    follower.close()


def test_a_codex_turn_waits_for_task_complete(tmp_path):
    log, clock = CodexLog(tmp_path / "rollout.jsonl"), FakeClock()
    follower = Follower(log.path, NotesEngine(), load_config(None), interval=0.05, settle=30.0, clock=clock)
    log.prompt("t1", "When is the deadline?")
    # Codex writes each response item as it streams: a commentary message first looks like a final reply.
    for write in (lambda: log.item("reasoning", summary=[{"type": "summary_text", "text": "Check the notes."}]),
                  lambda: log.say("Let me check the notes.", "commentary"),
                  lambda: log.item("function_call", name="read_note", arguments='{"key": "deadline"}', call_id="c1"),
                  lambda: log.usage(1000),
                  lambda: log.item("function_call_output", call_id="c1", output="Friday 17:00"),
                  lambda: log.say("The deadline is Friday at 17:00.", "final_answer"),
                  lambda: log.usage(1100)):
        write()
        pause(follower, clock, 0.5)
    assert follower.played == 0
    log.event("task_complete", turn_id="t1", last_agent_message="The deadline is Friday at 17:00.")
    assert follower.poll() == 1
    replies = _responses(follower, 0)
    assert replies[0]["tool_calls"][0]["function"]["name"] == "read_note"
    assert replies[1]["content"] == "The deadline is Friday at 17:00."
    assert [r.recorded["prompt_tokens"] for r in follower.trace.requests] == [1000, 1100]
    follower.close()


# -- a played turn that changes later is noticed ----------------------------------------------

def _tool_turn(k: int, answer: str) -> list[dict]:
    call = {"id": f"c{k}", "type": "function", "function": {"name": "read_note", "arguments": "{\"key\": \"deadline\"}"}}
    return [{"role": "user", "content": f"question {k}"}, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": f"note {k}"}, {"role": "assistant", "content": answer}]


def test_a_rewritten_later_message_of_a_played_turn_is_noticed(tmp_path):
    log = JsonlLog(tmp_path / "t.jsonl")
    log.rewrite(_tool_turn(1, "answer 1") + _tool_turn(2, "answer 2") + [{"role": "user", "content": "question 3"}])
    follower = Follower(log.path, NotesEngine(), load_config(None), interval=0.05)
    assert follower.poll() == 2
    rewritten = log.records[:]
    rewritten[3] = {"role": "assistant", "content": "answer 1, revised at length"}  # turn 0's last message
    log.rewrite(rewritten)
    assert follower.poll() == 0  # turn 1, the last one replayed, is unchanged: nothing to replay again
    notes = [e for e in follower.trace.events if e.kind == "host_note" and "rewritten" in (e.note or "")]
    assert len(notes) == 1 and "its turn 0 differs from the one replayed" in notes[0].note
    assert notes[0].args["changed"] == 0 and notes[0].args["new_from"] == 2
    log.write({"role": "assistant", "content": "answer 3"})
    log.write({"role": "user", "content": "question 4"})
    assert follower.poll() == 1 and follower.played == 3  # following goes on with the new turns
    follower.close()


def test_a_turn_played_on_the_quiet_rule_that_grows_is_replayed_whole(tmp_path):
    log, clock = ClaudeCodeLog(tmp_path / "s.jsonl"), FakeClock()
    follower = Follower(log.path, NotesEngine(), load_config(None), interval=0.05, settle=1.0, clock=clock)
    log.user("When is the deadline?")
    log.block("msg_1", {"type": "text", "text": "Let me check the notes."})
    pause(follower, clock, 1.5)  # the writer stalls longer than the settle period
    assert follower.played == 1 and len(_quiet_notes(follower)) == 1
    log.block("msg_1", {"type": "tool_use", "id": "toolu_1", "name": "read_note", "input": {"key": "deadline"}})
    log.result("toolu_1", "Friday 17:00")
    log.block("msg_2", {"type": "text", "text": "Friday at 17:00."}, stop_reason="end_turn")
    assert follower.poll() == 1
    notes = [e for e in follower.trace.events if "has changed since" in (e.note or "")]
    assert len(notes) == 1 and notes[0].note.startswith("turn 0, replayed on the quiet rule, has changed since")
    assert notes[0].args["changed"] == 0 and notes[0].args["new_from"] == 0
    assert [len(_responses(follower, t)) for t in (0, 1)] == [1, 2]  # the whole turn, played again
    follower.close()


def test_messages_added_after_a_turn_ended_are_fed_with_the_next_turn(tmp_path):
    from inspector.host.replay import replay
    from inspector.sessions import load_session

    log, clock = ClaudeCodeLog(tmp_path / "s.jsonl"), FakeClock()
    follower = Follower(log.path, NotesEngine(), load_config(None), interval=0.05, settle=30.0, clock=clock)
    log.user("When is the deadline?")
    log.block("msg_1", {"type": "text", "text": "Friday."}, stop_reason="end_turn")
    assert follower.poll() == 1
    # The user runs a slash command: Claude Code adds its records to the turn that had ended.
    log.user("<local-command-caveat>Caveat: generated by a local command.</local-command-caveat>")
    log.user("<command-name>/cost</command-name>")
    log.user("<local-command-stdout>Total cost: $0.01</local-command-stdout>")
    pause(follower, clock, 0.5)
    log.user("And the venue?")
    log.block("msg_2", {"type": "text", "text": "Room 4."}, stop_reason="end_turn")
    assert follower.poll() == 1 and follower.played == 2
    assert not [e for e in follower.trace.events if "rewritten" in (e.note or "") or "changed" in (e.note or "")]
    # Each request holds what a replay of the finished file sends: the command's output included.
    full = replay(load_session(log.path), NotesEngine(), load_config(None))
    trace = follower.trace
    assert [trace.request_messages(r) for r in trace.requests] == [full.request_messages(r) for r in full.requests]
    assert "Total cost" in str(trace.request_messages(trace.requests[-1]))
    follower.close()
