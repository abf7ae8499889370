"""A state.db the real Hermes 0.19.0 agent wrote reloads as the conversation it had, and replays as it ran.

In-place compaction soft-archives the summarised rows and inserts the engine's list after them;
the reader must not take that list for new turns. Replayed through our host under
``hermes-0.19.0``, the reloaded session gives the real agent's hook sequence again.
"""

from __future__ import annotations

import pytest

from inspector.sessions.readers import hermes_db

from .agent_scenarios import SAME_PROMPT, WITH_DB, diff, replay_ours, residual, sequence


@pytest.mark.parametrize("name", list(WITH_DB))
def test_a_real_state_db_reloads_with_its_turns_requests_and_compactions(name, real_runs, monkeypatch):
    scenario = WITH_DB[name]
    real = real_runs(name)
    session = hermes_db.load(real["db"])
    boundaries = [c for c in real["calls"] if c["hook"] == "on_session_start" and c.get("boundary_reason")]
    assert len(session.turns) == len(real["results"])
    assert len(session.compactions) == len(boundaries)
    calls, trace = replay_ours(scenario, session, real["usages"], monkeypatch)
    assert len(trace.requests) == sum(r["api_calls"] for r in real["results"])
    ours, theirs = residual(scenario, sequence(calls), sequence(real["calls"]))
    assert ours == theirs, f"{name}: real agent | our host replaying its state.db\n{diff(theirs, ours)}"
    assert any(SAME_PROMPT in d for d in trace.meta["host_differences"])
