"""Hermes' built-in compressor, replayed from the state.db the real 0.19.0 agent wrote, compacts where it did."""

from __future__ import annotations

from inspector.engines.discovery import load_engine
from inspector.host.replay import replay
from inspector.sessions.readers import hermes_db
from inspector.trace.summary import is_committed_compression

from .agent_scenarios import BUILTIN, host_config, provider_usage


def _real_compaction_turns(calls: list[dict]) -> list[int]:
    turns, turn = [], -1
    for c in calls:
        if c["hook"] == "TURN":
            turn += 1
        elif c["hook"] == "COMPACTION" and c["after"] < c["before"] and turn not in turns:
            turns.append(turn)
    return turns


def test_the_builtin_compressor_compacts_at_the_real_agents_turns(real_runs, monkeypatch):
    real = real_runs(BUILTIN.name)
    expected = _real_compaction_turns(real["calls"])
    assert len(expected) >= 2, "the scenario must make the real agent compact more than once"
    session = hermes_db.load(real["db"])
    assert len(session.turns) == len(BUILTIN.turns)
    config = host_config(BUILTIN)
    loaded = load_engine("compressor", config)
    try:
        provider_usage(real["usages"], monkeypatch)
        trace = replay(session, loaded, config)
    finally:
        loaded.close()
    ours = sorted({e.turn for e in trace.events if is_committed_compression(e)})
    assert ours == expected
    assert len(trace.requests) == sum(r["api_calls"] for r in real["results"])
