"""Our host under ``hermes-0.19.0`` calls an engine exactly as the real Hermes 0.19.0 ``AIAgent`` does.

Each scenario runs twice: the real agent (in the Hermes interpreter, against a scripted provider on
127.0.0.1) and our host replaying the conversation the agent kept, fed the usage the provider
reported. The probe engine records every call on both sides; the sequences must agree in hook
names, order, thread and key arguments (message counts and roles, token figures, keyword names,
usage keys, whether a compaction committed). Differences that remain are listed with their reason
in the trace's ``host_differences``.
"""

from __future__ import annotations

import itertools

import pytest

from .agent_scenarios import Scenario, plugin_kwargs, replay_ours, run_real_agent, sequence, session_from_rows

WORDS = "word " * 100  # 500 characters, 125 rough tokens


def _reply(content: str | None = None, prompt: int = 800, calls: list | None = None) -> dict:
    out = {"content": content, "usage": {"prompt_tokens": prompt, "completion_tokens": 7}}
    if calls:
        out["tool_calls"] = [{"id": c, "name": n, "args": {"q": c}} for c, n in calls]
    return out


SCENARIOS = {
    # The third request crosses the threshold; compaction drops the first two replies.
    "one_compaction": Scenario("one_compaction", probe={"threshold_tokens": 1700, "keep_last": 2}, turns=[
        {"user": "hello", "replies": [_reply("first " + WORDS * 3)]},
        {"user": "go on", "replies": [_reply("second " + WORDS * 6, prompt=1500)]},
        {"user": "and now?", "replies": [_reply("fine", prompt=1300)]},
    ]),
    # Two engine tools in one batch (each sees the result before it), then a big final answer that
    # the next turn's preflight compacts.
    "tool_batch_preflight": Scenario("tool_batch_preflight", probe={
        "threshold_tokens": 2000, "keep_last": 1, "tools": ["probe_a", "probe_b"], "tool_result_chars": 400}, turns=[
        {"user": "look things up", "replies": [_reply(None, calls=[("c1", "probe_a"), ("c2", "probe_b")]),
                                               _reply("found " + WORDS * 17, prompt=1100)]},
        {"user": "thanks", "replies": [_reply("ok", prompt=900)]},
    ]),
    "two_compactions": Scenario("two_compactions", probe={"threshold_tokens": 1700, "keep_last": 2}, turns=[
        {"user": "one", "replies": [_reply("a " + WORDS * 4)]},
        {"user": "two", "replies": [_reply("b " + WORDS * 6, prompt=1500)]},
        {"user": "three", "replies": [_reply("c " + WORDS * 6, prompt=1600)]},
        {"user": "four", "replies": [_reply("d", prompt=1700)]},
        {"user": "five", "replies": [_reply("e", prompt=1700)]},
    ]),
    # The engine rewrites the list it is handed and returns it: 0.19.0 commits that.
    "in_place": Scenario("in_place", probe={"threshold_tokens": 1700, "keep_last": 2, "mode": "in_place"}, turns=[
        {"user": "hello", "replies": [_reply("first " + WORDS * 3)]},
        {"user": "go on", "replies": [_reply("second " + WORDS * 6, prompt=1500)]},
        {"user": "and now?", "replies": [_reply("fine", prompt=1300)]},
    ]),
    # An engine tool call whose reply reports a prompt over the threshold: the post-tool check
    # compresses with last_prompt_tokens as current_tokens.
    "engine_tools_post_tool": Scenario("engine_tools_post_tool", probe={
        "threshold_tokens": 3000, "keep_last": 2, "tools": ["probe_a"], "tool_result_chars": 50}, turns=[
        {"user": "hello", "replies": [_reply("hi " + WORDS * 2)]},
        {"user": "search", "replies": [_reply(None, prompt=3200, calls=[("c1", "probe_a")]),
                                       _reply("done", prompt=1000)]},
    ]),
    # The user stops the turn while its tool runs: no post_llm_call for it.
    "interrupted": Scenario("interrupted", probe={"threshold_tokens": 5000, "tools": ["probe_a", "probe_stop"]},
                            turns=[
        {"user": "start", "replies": [_reply(None, calls=[("c1", "probe_stop")])], "interrupt_on_tool": "probe_stop"},
        {"user": "again", "replies": [_reply("here", prompt=900)]},
    ]),
}
WITH_DB = {f"{name}_db": Scenario(f"{name}_db", turns=s.turns, probe=s.probe, with_db=True)
           for name, s in SCENARIOS.items() if name in ("one_compaction", "in_place", "tool_batch_preflight",
                                                        "interrupted")}
ALL = {**SCENARIOS, **WITH_DB}

# Our host has no session database; what that changes is said in host_differences (see HOST_DIFFERENCES).
NO_DB = "No SessionDB: bind_session_state gets session_db=None"
DB_MARKER = "stamps `_db_persisted: True` on every row it has written"
# Where a rough token figure sits in a sequence row (see agent_scenarios.KEYS), and what one row's
# marker adds to it: len(", '_db_persisted': True") / 4.
ROUGH_AT = {"should_defer_preflight_to_real_usage": 2, "should_compress": 2, "compress": 4}
MARKER_TOKENS = 6


def _residual(scenario: Scenario, ours: list[tuple], theirs: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    """Both sequences with the differences our host documents taken out (and only those)."""
    if scenario.with_db:
        # bind_session_state(session_db=...) is a SessionDB in the agent, None in our host; the agent's
        # rough figures count the `_db_persisted` marker on the rows it wrote (DB_MARKER).
        def plain(rows: list[tuple]) -> list[tuple]:
            out = []
            for r in rows:
                if r[0] == "bind_session_state":
                    r = r[:2]
                elif r[0] in ROUGH_AT:
                    i = ROUGH_AT[r[0]]
                    r = (*r[:i], None, *r[i + 1:])
                out.append(r)
            return out

        for a, b in zip(ours, theirs):
            if a[0] == b[0] in ROUGH_AT and isinstance(a[ROUGH_AT[a[0]]], int):
                gap = b[ROUGH_AT[a[0]]] - a[ROUGH_AT[a[0]]]
                assert -MARKER_TOKENS <= gap <= MARKER_TOKENS * 10, f"{a} vs {b}: more than the markers explain"
        return plain(ours), plain(theirs)
    # Without a database the agent calls only on_session_start at a compaction boundary; our host
    # emulates the compaction Hermes does with one (on_session_end first).
    kept = []
    for i, row in enumerate(ours):
        nxt = ours[i + 1] if i + 1 < len(ours) else None
        if row[0] == "on_session_end" and nxt is not None and nxt[0] == "on_session_start" and nxt[-1] == "compression":
            continue
        kept.append(row)
    return kept, theirs


def _diff(theirs: list[tuple], ours: list[tuple]) -> str:
    lines = []
    for a, b in itertools.zip_longest(theirs, ours):
        lines.append(("   " if a == b else "!! ") + f"{a}   |   {b if a != b else ''}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    cache: dict[str, dict] = {}

    def get(name: str) -> dict:
        if name not in cache:
            cache[name] = run_real_agent(ALL[name], tmp_path_factory.mktemp(name))
        return cache[name]

    return get


@pytest.mark.parametrize("name", list(ALL))
def test_hook_sequences_agree_with_the_real_agent(name, real_runs, monkeypatch):
    scenario = ALL[name]
    real = real_runs(name)
    calls, trace = replay_ours(scenario, session_from_rows(real), real["usages"], monkeypatch)
    ours, theirs = _residual(scenario, sequence(calls), sequence(real["calls"]))
    assert ours == theirs, f"{name}: real agent | our host\n{_diff(theirs, ours)}"
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
    calls = hooks("tool_batch_preflight")
    turn2 = [c["hook"] for c in calls[calls.index(next(c for c in calls if c["hook"] == "plugin:post_llm_call")):]]
    assert "compress" in turn2  # the second turn's preflight compacted
    post = [c for c in hooks("engine_tools_post_tool") if c["hook"] == "compress"]
    assert post and post[0]["current_tokens"] == 3200
    assert all(c["thread"] == "main" for name in ALL for c in hooks(name))
    assert not any(c["hook"] == "get_status" for name in ALL for c in hooks(name))
    stopped = real_runs("interrupted")
    assert stopped["results"][0]["interrupted"] is True
    assert [c["hook"] for c in hooks("interrupted")].count("plugin:post_llm_call") == 1
