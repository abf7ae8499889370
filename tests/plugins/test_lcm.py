"""The lcm engine: lossless storage, DAG compaction, tools, thresholds, lifecycle."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tests.plugins.plugin_helpers import pairs_intact, rough, transcript, turn, wire_key

SESSION = "20260302_091400_abc123"


def make_engine(lcm_module, home, **kwargs):
    """A small-threshold engine whose store lives under ``home``.

    The home is passed explicitly because other suites (the doctor) may have installed a
    ``hermes_constants`` stand-in that points somewhere else for the rest of the process.
    """
    engine = lcm_module.LcmEngine(leaf_tokens=kwargs.pop("leaf_tokens", 1500), use_llm=kwargs.pop("use_llm", False),
                                  hermes_home=home, **kwargs)
    engine.update_model("test-model", 64_000)
    engine.threshold_tokens = 12_000  # small, so a short synthetic session compacts many times
    return engine


def run_session(engine, turns: int, tag: str = "", rounds: int = 2, size: int = 2400):
    """Drive the engine like a host: append turns, compress when over threshold."""
    history: list[dict] = []
    originals: list[dict] = []
    compactions = 0
    for i in range(turns):
        new = turn(i, rounds=rounds, size=size, tag=tag)
        originals.extend(copy.deepcopy(new))
        history.extend(new)
        engine.on_turn_complete(copy.deepcopy(history))
        if engine.should_compress(rough(history)):
            out = engine.compress(copy.deepcopy(history), current_tokens=rough(history))
            if out is not history and rough(out) < rough(history):
                compactions += 1
            history = out
    return history, originals, compactions


def expand_all(engine, node_id: str, messages=None) -> list[dict]:
    out: list[dict] = []
    offset = 0
    while offset is not None:
        res = json.loads(engine.handle_tool_call("lcm_expand", {"node_id": node_id, "offset": offset, "limit": 500},
                                                 messages=messages))
        assert "error" not in res, res
        out.extend(item["message"] for item in res["messages"])
        offset = res["next_offset"]
    return out


def node_ids_in(lcm_module, messages) -> list[str]:
    from importlib import import_module

    layout = import_module(lcm_module.__name__ + ".layout")
    return [ref.node_id for ref in (layout.parse_node(m) for m in messages) if ref is not None]


def test_plugin_layout_and_registration(lcm_module):
    manifest = yaml.safe_load((Path(lcm_module.__file__).parent / "plugin.yaml").read_text())
    assert manifest["name"] == "lcm" and manifest["version"] and manifest["description"]
    registered = []
    lcm_module.register(SimpleNamespace(register_context_engine=registered.append))
    assert len(registered) == 1 and registered[0].name == "lcm"
    from agent.context_engine import ContextEngine

    assert isinstance(registered[0], ContextEngine)
    assert copy.deepcopy(registered[0]).name == "lcm"  # Hermes deep-copies registry engines


def test_nothing_is_lost_after_several_compactions(lcm_module, hermes_home):
    engine = make_engine(lcm_module, hermes_home)
    engine.on_session_start(SESSION, hermes_home=str(hermes_home))
    history, originals, compactions = run_session(engine, 30)
    assert compactions >= 4
    assert engine.compression_count == compactions
    assert (hermes_home / "lcm" / f"{SESSION}.db").exists()

    recovered: list[dict] = []
    for msg in history:
        ids = node_ids_in(lcm_module, [msg])
        if ids:
            recovered.extend(expand_all(engine, ids[0], history))
        else:
            recovered.append(msg)
    assert [wire_key(m) for m in recovered] == [wire_key(m) for m in originals]

    # lcm_grep finds text that only exists in compacted turns, and points at the nodes.
    res = json.loads(engine.handle_tool_call("lcm_grep", {"query": "marker-1-0-3"}, messages=history))
    assert res["message_matches"] == 1
    hit = res["results"][0]
    assert hit["compacted"] and hit["covered_by"]
    assert not any("marker-1-0-3" in str(m.get("content")) for m in history)


def test_dag_condenses_leaves(lcm_module, hermes_home):
    engine = make_engine(lcm_module, hermes_home, fanout=3)
    engine.on_session_start(SESSION)
    history, _orig, _n = run_session(engine, 30)
    desc = json.loads(engine.handle_tool_call("lcm_describe", {}, messages=history))
    assert desc["levels"].get("0", 0) >= 3 and desc["levels"].get("1", 0) >= 1
    condensed = next(n for n in desc["nodes"] if n["level"] >= 1)
    full = json.loads(engine.handle_tool_call("lcm_describe", {"node_id": condensed["node_id"]}))["node"]
    assert full["source_refs"] and all(ref["kind"] == "node" for ref in full["source_refs"])
    # Expanding a condensed node is the concatenation of its children's expansions.
    children = [ref["ref"] for ref in full["source_refs"]]
    assert [wire_key(m) for m in expand_all(engine, condensed["node_id"])] == [
        wire_key(m) for child in children for m in expand_all(engine, child)
    ]
    for child in children:
        assert condensed["node_id"] in json.loads(engine.handle_tool_call("lcm_describe", {"node_id": child}))["node"]["parents"]


def test_compress_always_shrinks_and_converges(lcm_module, hermes_home):
    engine = make_engine(lcm_module, hermes_home)
    engine.on_session_start(SESSION)
    messages = [{"role": "system", "content": "You are a coding agent."}] + transcript(12, rounds=3)
    sizes = [rough(messages)]
    for _ in range(50):
        out = engine.compress(copy.deepcopy(messages), current_tokens=sizes[-1], force=True)
        if out == messages:
            break
        assert rough(out) < sizes[-1]
        assert out[0] == messages[0]  # the system prompt is kept as is
        assert pairs_intact([m for m in out if m.get("role") != "system"])
        assert any(m.get("role") == "user" and "Turn 11" in m["content"] for m in out)  # latest instruction kept
        messages = out
        sizes.append(rough(out))
    else:
        pytest.fail("compress never reached a fixed point")
    assert len(sizes) >= 3 and sizes[-1] < sizes[0] // 3


def test_tool_pairs_stay_together(lcm_module, hermes_home):
    engine = make_engine(lcm_module, hermes_home)
    engine.on_session_start(SESSION)
    history, _orig, compactions = run_session(engine, 20, rounds=4, size=1200)
    assert compactions >= 2
    assert pairs_intact(history)


def test_focus_topic_shapes_the_summary(lcm_module, hermes_home):
    engine = make_engine(lcm_module, hermes_home, leaf_tokens=100_000)  # one leaf over the whole span
    engine.on_session_start(SESSION)
    msgs = transcript(10, topics={2: "the sqlite locking bug"})
    out = engine.compress(copy.deepcopy(msgs), focus_topic="sqlite locking")
    first_node = next(m for m in out if m.get("_lcm_node"))
    body = first_node["content"]
    assert "Focus: sqlite locking" in body
    assert body.index("sqlite locking bug") < body.index("Turn 1:")  # focus lines come first


def test_llm_summary_used_and_rejected_when_not_shorter(lcm_module, hermes_home, monkeypatch):
    import agent.auxiliary_client as aux

    calls = []

    def short(task=None, **kw):
        calls.append(task)
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="Model summary: read modules."))])

    monkeypatch.setattr(aux, "call_llm", short, raising=False)
    engine = make_engine(lcm_module, hermes_home, use_llm=True)
    engine.on_session_start(SESSION)
    out = engine.compress(transcript(10))
    assert calls and all(t == "compression" for t in calls)
    assert any("Model summary" in str(m.get("content")) for m in out)
    assert engine._last_summary_fallback_used is False

    monkeypatch.setattr(aux, "call_llm", lambda task=None, **kw: {"choices": [{"message": {"content": "x" * 10**6}}]},
                        raising=False)
    engine2 = make_engine(lcm_module, hermes_home, use_llm=True)
    engine2.on_session_start("other-session")
    out2 = engine2.compress(transcript(10))
    assert rough(out2) < rough(transcript(10)) and engine2._last_summary_fallback_used is True


def test_failed_compaction_publishes_nothing(lcm_module, hermes_home, monkeypatch):
    import importlib

    engine = make_engine(lcm_module, hermes_home)
    engine.on_session_start(SESSION)
    msgs = transcript(10)
    summarize = importlib.import_module(lcm_module.__name__ + ".summarize")
    calls = {"n": 0}
    real = summarize.fallback_leaf

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk on fire")
        return real(*args, **kwargs)

    monkeypatch.setattr(lcm_module, "fallback_leaf", flaky)
    with pytest.raises(OSError):
        engine.compress(copy.deepcopy(msgs))
    assert engine.compression_count == 0
    assert json.loads(engine.handle_tool_call("lcm_describe", {}))["node_count"] == 0
    monkeypatch.setattr(lcm_module, "fallback_leaf", real)
    out = engine.compress(copy.deepcopy(msgs))
    assert engine.compression_count == 1 and rough(out) < rough(msgs)
    # A discarded result (host timeout) followed by a retry reuses the same nodes.
    again = engine.compress(copy.deepcopy(msgs))
    assert node_ids_in(lcm_module, again) == node_ids_in(lcm_module, out)


def test_stored_messages_are_immutable(lcm_module, hermes_home):
    engine = make_engine(lcm_module, hermes_home)
    engine.on_session_start(SESSION)
    engine.on_turn_complete(transcript(2))
    with sqlite3.connect(hermes_home / "lcm" / f"{SESSION}.db") as conn:
        with pytest.raises(sqlite3.DatabaseError, match="immutable"):
            conn.execute("UPDATE messages SET text = 'x'")
        with pytest.raises(sqlite3.DatabaseError, match="immutable"):
            conn.execute("DELETE FROM messages")


def test_repeated_ingest_does_not_duplicate(lcm_module, hermes_home):
    engine = make_engine(lcm_module, hermes_home)
    engine.on_session_start(SESSION)
    msgs = transcript(3)
    for k in range(1, len(msgs) + 1):
        engine.on_turn_complete(copy.deepcopy(msgs[:k]))
    engine.on_session_end(SESSION, copy.deepcopy(msgs))
    # The same text twice in a row is two messages, not one.
    msgs += [{"role": "user", "content": "again"}, {"role": "assistant", "content": "ok"},
             {"role": "user", "content": "again"}]
    engine.on_turn_complete(copy.deepcopy(msgs))
    assert json.loads(engine.handle_tool_call("lcm_describe", {}))["messages_stored"] == len(msgs)


def test_tool_results_and_errors_are_json(lcm_module, hermes_home):
    engine = make_engine(lcm_module, hermes_home)
    engine.on_session_start(SESSION)
    history, _o, _n = run_session(engine, 12)
    schemas = engine.get_tool_schemas()
    assert {s["name"] for s in schemas} == {"lcm_grep", "lcm_describe", "lcm_expand"}
    assert all(isinstance(s["parameters"], dict) for s in schemas)
    ok = json.loads(engine.handle_tool_call("lcm_grep", {"query": r"marker-\d-0-0", "regex": True, "limit": 3},
                                            messages=history))
    assert ok["truncated"] and len([r for r in ok["results"] if r["type"] == "message"]) == 3
    cases = [
        ("lcm_nope", {}),
        ("lcm_grep", {}),
        ("lcm_grep", {"query": "("}),  # literal search: fine
        ("lcm_grep", {"query": "(", "regex": True}),
        ("lcm_grep", {"query": "x", "scope": "everything"}),
        ("lcm_grep", {"query": "x", "limit": "many"}),
        ("lcm_expand", {}),
        ("lcm_expand", {"node_id": "L9-9999"}),
        ("lcm_describe", {"node_id": "nope"}),
        ("lcm_expand", "not json"),
        ("lcm_expand", ["a", "list"]),
    ]
    for name, args in cases:
        raw = engine.handle_tool_call(name, args, messages=history)
        data = json.loads(raw)
        if args == {"query": "("}:
            assert "error" not in data
        else:
            assert isinstance(data.get("error"), str) and data["error"], (name, args, data)


def test_model_thresholds_and_status(lcm_module, hermes_home):
    engine = lcm_module.LcmEngine()
    engine.model_thresholds = {"gpt-4o": 0.5, "openrouter:gpt-4o-mini": 0.6}
    engine.update_model("openai/gpt-4o-mini", 128_000, provider="openai")
    assert engine.threshold_tokens == 64_000
    engine.update_model("openai/gpt-4o-mini", 128_000, provider="openrouter")
    assert engine.threshold_tokens == int(128_000 * 0.6)
    engine.update_model("anthropic/claude-sonnet", 200_000)
    assert engine.threshold_percent == pytest.approx(0.75) and engine.threshold_tokens == 150_000
    assert engine.should_compress(150_000) and not engine.should_compress(149_999)
    engine.update_from_response({})  # Hermes may pass an empty dict
    engine.update_from_response({"prompt_tokens": 1000, "completion_tokens": 50})
    status = engine.get_status()
    assert status["last_prompt_tokens"] == 1000 and engine.last_total_tokens == 1050


def test_session_reset_keeps_history(lcm_module, hermes_home):
    engine = make_engine(lcm_module, hermes_home)
    engine.on_session_start(SESSION)
    history, _o, compactions = run_session(engine, 14)
    assert compactions >= 1 and engine.compression_count >= 1
    engine.update_from_response({"prompt_tokens": 5000, "completion_tokens": 10})
    engine.on_session_reset()
    assert (engine.last_prompt_tokens, engine.last_completion_tokens, engine.last_total_tokens,
            engine.compression_count) == (0, 0, 0, 0)
    # The store is never discarded: the old session is still searchable.
    assert json.loads(engine.handle_tool_call("lcm_grep", {"query": "marker-0-0-0"}, session_id=SESSION))["message_matches"] == 1
    # A new session (Hermes /new binds the new id) starts clean and counts from zero.
    engine.bind_session_state(None, "20260302_120000_fffff1")
    history2, _o2, compactions2 = run_session(engine, 14, tag="n")
    assert compactions2 >= 1 and engine.compression_count == compactions2
    res = json.loads(engine.handle_tool_call("lcm_grep", {"query": "marker-0-0-0"}, messages=history2))
    assert res["message_matches"] == 0  # the new session's store holds only its own messages


def test_store_location_follows_hermes_home(lcm_module, hermes_home, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "hermes_constants", None)  # not installed: fall back to HERMES_HOME
    engine = lcm_module.LcmEngine(use_llm=False)
    engine.on_session_start("sess/with odd:chars")
    engine.on_turn_complete(transcript(1))
    assert list((hermes_home / "lcm").glob("sess_with_odd_chars.db"))
