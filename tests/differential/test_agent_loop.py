"""Our host under ``hermes-0.19.0`` calls an engine exactly as the real Hermes 0.19.0 ``AIAgent`` does.

Each scenario runs twice: the real agent (in the Hermes interpreter, against a scripted provider on
127.0.0.1) and our host replaying the conversation the agent kept, fed the usage the provider
reported. The probe engine records every call on both sides; the sequences must agree in hook
names, order, thread and key arguments (message counts and roles, token figures, keyword names,
usage keys, whether a compaction committed). Differences that remain are listed with their reason
in the trace's ``host_differences``.
"""

from __future__ import annotations

import pytest

from .agent_scenarios import (
    ALL,
    DB_MARKER,
    NO_DB,
    diff,
    plugin_kwargs,
    replay_ours,
    residual,
    sequence,
    session_from_rows,
)


@pytest.mark.parametrize("name", list(ALL))
def test_hook_sequences_agree_with_the_real_agent(name, real_runs, monkeypatch):
    scenario = ALL[name]
    real = real_runs(name)
    calls, trace = replay_ours(scenario, session_from_rows(real), real["usages"], monkeypatch)
    ours, theirs = residual(scenario, sequence(calls), sequence(real["calls"]))
    assert ours == theirs, f"{name}: real agent | our host\n{diff(theirs, ours)}"
    assert plugin_kwargs(calls) == plugin_kwargs(real["calls"])
    assert any(NO_DB in d for d in trace.meta["host_differences"])
    assert not scenario.with_db or any(DB_MARKER in d for d in trace.meta["host_differences"])
    assert trace.meta["host_profile"] == "hermes-0.19.0"


def test_the_scenarios_exercise_what_they_are_named_for(real_runs):
    """The comparisons above are only worth what the scenarios make the agent do."""
    def hooks(name):
        return [c for c in real_runs(name)["calls"] if c["hook"] != "TURN"]

    def compactions(name):
        return [c for c in hooks(name) if c["hook"] == "on_session_start" and c.get("boundary_reason")]

    assert len(compactions("one_compaction")) == 1
    assert len(compactions("two_compactions")) == 2
    assert len(compactions("in_place")) == 1
    tools = [c for c in hooks("tool_batch_preflight") if c["hook"] == "handle_tool_call"]
    assert [c["roles"].count("tool") for c in tools] == [0, 1]  # each result joins before the next call
    assert all(c["kwargs"] == ["messages"] for c in tools)
    calls = [c["hook"] for c in real_runs("tool_batch_preflight")["calls"]]
    second = calls[[i for i, h in enumerate(calls) if h == "TURN"][1]:]
    # The second turn's preflight compacted: before the turn's pre_llm_call, which follows the preflight.
    assert "compress" in second[:second.index("plugin:pre_llm_call")]
    post = [c for c in hooks("engine_tools_post_tool") if c["hook"] == "compress"]
    assert post and post[0]["current_tokens"] == 3200
    assert all(c["thread"] == "main" for name in ALL for c in hooks(name))
    assert not any(c["hook"] == "get_status" for name in ALL for c in hooks(name))
    stopped = real_runs("interrupted")
    assert stopped["results"][0]["interrupted"] is True
    assert [c["hook"] for c in hooks("interrupted")].count("plugin:post_llm_call") == 1
