"""The original agent's compactions are marked at the request where they happened."""

from __future__ import annotations

from inspector.host.replay import replay
from inspector.sessions.model import Compaction, Session, compute_turns
from inspector.trace.model import EV_MARKER, EV_REQUEST

from .conftest import CountingEngine


def _session_compacted_mid_turn() -> Session:
    msgs = [{"role": "system", "content": "agent"}, {"role": "user", "content": "do three things"}]
    for k in range(3):
        if k == 2:  # the agent compacted before its third call of the turn
            msgs.append({"role": "user", "content": "summary of work", "x_flags": {"compaction_summary": True}})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "run", "arguments": "{}"}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"result {k}"})
    msgs.append({"role": "assistant", "content": "done"})
    s = Session(id="mid", source_format="test", messages=msgs)
    s.turns = compute_turns(msgs)
    s.compactions = [Compaction(message_index=6, kind="claude-compact-boundary", tokens_before=1234)]
    return s


def test_a_compaction_between_two_requests_of_a_turn_is_marked_before_the_later_one(config, nocache):
    s = _session_compacted_mid_turn()
    assert len(s.turns) == 1
    trace = replay(s, CountingEngine(), config, simulator=nocache)
    kinds = [(e.kind, e.request) for e in trace.events if e.kind in (EV_MARKER, EV_REQUEST)]
    assert kinds == [(EV_REQUEST, 0), (EV_REQUEST, 1), (EV_MARKER, None), (EV_REQUEST, 2), (EV_REQUEST, 3)]
    [marker] = [e for e in trace.events if e.kind == EV_MARKER]
    assert marker.args["before_request"] == 2 and marker.args["tokens_before"] == 1234
    assert marker.turn == 0
