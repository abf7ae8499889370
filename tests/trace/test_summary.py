"""Per-turn rows: one for every turn the trace played, answered or not."""

from __future__ import annotations

from inspector.config import load_config
from inspector.engines.discovery import load_engine
from inspector.host.replay import replay
from inspector.sessions.model import Session, compute_turns
from inspector.trace.io import load_trace, save_trace
from inspector.trace.summary import per_turn_rows


def _replayed(messages):
    session = Session(id="s", source_format="test", messages=messages)
    session.turns = compute_turns(messages)
    config = load_config(None)
    return replay(session, load_engine("compressor", config), config)


def test_a_turn_the_agent_never_answered_keeps_its_place_between_answered_ones(tmp_path):
    trace = _replayed([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "first question"}, {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "a question left hanging"},  # user;user: no assistant row persisted
        {"role": "user", "content": "third question"}, {"role": "assistant", "content": "third answer"},
    ])
    save_trace(trace, tmp_path / "t.json.gz")
    for t in (trace, load_trace(tmp_path / "t.json.gz")):  # a saved trace reads the same
        rows = per_turn_rows(t)
        assert len(rows) == t.turn_count == 3
        assert [(r["turn"], r["reply"], r["requests"]) for r in rows] == [(0, True, 1), (1, False, 0), (2, True, 1)]
        silent = rows[1]
        assert silent["prompt"] is None and silent["recorded"] is None and silent["cache_read"] == 0
        assert silent["threshold"] == rows[0]["threshold"] > 0 and silent["compression_count"] == 0


def _rows_from_every_event(trace):
    """The rows as a direct reading of the definition: each event of a turn overwrites its state."""
    rows = {r["turn"]: dict(r) for r in per_turn_rows(trace)}
    for r in rows.values():
        r["compression_count"], r["faults"] = None, 0
    for r in trace.requests:
        rows[r.turn]["threshold"] = trace.state_at(r.event)["threshold_tokens"]
    for e in trace.events:
        if e.turn in rows:
            state = trace.state_at(e.index)
            rows[e.turn]["compression_count"] = state["compression_count"]
            if not rows[e.turn]["reply"]:
                rows[e.turn]["threshold"] = state["threshold_tokens"]
            rows[e.turn]["faults"] += e.fault is not None
    return [rows[k] for k in sorted(rows)]


def test_each_turn_gets_the_state_its_last_event_left_and_its_faults():
    from ..host.conftest import NoCache
    from ..quality.conftest import KeepLastTwo, url_session

    class Flaky(KeepLastTwo):
        after = 4

        def update_from_response(self, usage):
            super().update_from_response(usage)
            if self.responses % 3 == 0:
                raise RuntimeError("flaky")

        def should_compress(self, prompt_tokens=None):
            return self.responses % 4 == 0

    config = load_config(None, {"model": {"context_length": 64000}})
    trace = replay(url_session(16), Flaky(), config, simulator=NoCache())
    rows = per_turn_rows(trace)
    assert rows == _rows_from_every_event(trace)
    assert sum(r["faults"] for r in rows) >= 4 and len({r["compression_count"] for r in rows}) >= 3
