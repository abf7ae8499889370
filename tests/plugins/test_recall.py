"""The recall engine: per-request selection that never touches the persisted history."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace

import yaml

from tests.plugins.plugin_helpers import pairs_intact, rough, transcript, turn

SYSTEM = {"role": "system", "content": "You are a coding agent working on a bookkeeping CLI."}
TOPICS = {4: "the sqlite migration bug", 11: "timezone parsing in the importer", 19: "rounding of split shares"}


def make_engine(recall_module, **kwargs):
    engine = recall_module.RecallEngine(**kwargs)
    engine.update_model("test-model", 128_000)
    return engine


def request_for(history, question):
    incoming = {"role": "user", "content": question}
    conversation = history + [incoming]
    return [copy.deepcopy(SYSTEM)] + copy.deepcopy(conversation), conversation, incoming


def select(engine, req, conversation, incoming, budget=40_000):
    return engine.select_context(req, conversation_messages=copy.deepcopy(conversation),
                                 incoming_message=copy.deepcopy(incoming), budget_tokens=budget)


def test_plugin_layout_and_registration(recall_module):
    manifest = yaml.safe_load((Path(recall_module.__file__).parent / "plugin.yaml").read_text())
    assert manifest["name"] == "recall" and manifest["version"] and manifest["description"]
    got = []
    recall_module.register(SimpleNamespace(register_context_engine=got.append))
    assert got[0].name == "recall" and copy.deepcopy(got[0]).name == "recall"


def test_returns_none_when_the_request_fits(recall_module):
    engine = make_engine(recall_module)
    req, conv, inc = request_for(transcript(3), "What next?")
    assert select(engine, req, conv, inc, budget=128_000) is None
    assert engine.select_context(req, budget_tokens=0) is None or engine.context_length  # falls back to context_length
    assert make_engine(recall_module).select_context([SYSTEM], budget_tokens=1000) is None  # no user message


def test_never_mutates_request_or_history(recall_module):
    engine = make_engine(recall_module)
    history = transcript(30, size=3000, topics=TOPICS)
    for k in (10, 20, 30):
        engine.on_turn_complete(history[: k * 6])
    persisted = copy.deepcopy(history)
    req, conv, inc = request_for(history, "Go back to the sqlite migration bug please.")
    req_before, conv_before = copy.deepcopy(req), copy.deepcopy(conv)
    ids_before = [id(m) for m in req]
    out = engine.select_context(req, conversation_messages=conv, incoming_message=inc, budget_tokens=40_000)
    assert out is not None and out is not req
    assert req == req_before and [id(m) for m in req] == ids_before
    assert conv == conv_before and history == persisted
    assert all(any(o is m for m in req) for o in out)  # only the request's own message objects


def test_selection_respects_budget_keeps_pairs_and_retrieves_relevant_turns(recall_module):
    engine = make_engine(recall_module, tail_turns=2)
    history = transcript(30, size=3000, topics=TOPICS)
    req, conv, inc = request_for(history, "Go back to the sqlite migration bug please.")
    budget = 40_000
    out = select(engine, req, conv, inc, budget)
    assert rough(req) > budget // 2
    assert rough(out) <= int(budget * engine.budget_fraction)
    assert out[0] is req[0] and out[-1] is req[-1]  # system prompt and incoming message
    assert pairs_intact(out[1:])
    users = [m["content"] for m in out if m["role"] == "user"]
    assert any("sqlite migration bug" in u for u in users)  # retrieved by relevance
    assert any("Turn 28" in u for u in users) and any("Turn 29" in u for u in users)  # recent tail
    positions = [req.index(m) for m in out]
    assert positions == sorted(positions)  # chronological, never reordered


def test_selection_is_stable_while_routing_is_unchanged(recall_module):
    engine = make_engine(recall_module)
    history = transcript(30, size=3000, topics=TOPICS)
    req, conv, inc = request_for(history, "Look at timezone parsing again.")
    first = select(engine, req, conv, inc)
    # The same turn continues with tool rounds: the earlier selection must be a prefix of the new one.
    for step in range(3):
        extra = turn(100 + step, rounds=1, size=1500)[1:3]
        req = req + copy.deepcopy(extra)
        conv = conv + extra
        nxt = select(engine, req, conv, inc)
        assert [id(m) for m in nxt[: len(first)]] == [id(m) for m in first]
        assert nxt[len(first):] == extra
        first = nxt
    # A new user message changes the routing, and with it the retrieved set.
    req2, conv2, inc2 = request_for(history, "Now the rounding of split shares.")
    other = select(engine, req2, conv2, inc2)
    assert any("rounding of split shares" in m["content"] for m in other if m["role"] == "user")


def test_skeleton_keeps_pairs_when_a_turn_is_too_big(recall_module):
    engine = make_engine(recall_module, recency_fill=False, tail_turns=1)
    history = transcript(6, size=800)
    history += turn(50, rounds=8, size=6000, topic="the huge ledger import")
    history += transcript(2, size=800, tag="t")
    req, conv, inc = request_for(history, "What happened with the huge ledger import?")
    out = select(engine, req, conv, inc, budget=16_000)
    assert out is not None and pairs_intact(out[1:])
    assert any("huge ledger import" in str(m["content"]) for m in out if m["role"] == "user")
    assert engine.last_selection["skeletons"] == 1


def test_compress_drops_oldest_units_only_at_the_ceiling(recall_module):
    engine = make_engine(recall_module)
    assert engine.threshold_tokens == int(128_000 * 0.95)
    assert not engine.should_compress(100_000) and engine.should_compress(121_600)
    msgs = [copy.deepcopy(SYSTEM)] + transcript(60, rounds=3, size=3000)
    before = copy.deepcopy(msgs)
    out = engine.compress(msgs, current_tokens=rough(msgs))
    assert msgs == before  # input untouched
    assert out[0] == SYSTEM and rough(out) < rough(msgs) and rough(out) <= int(engine.threshold_tokens * 0.6) + 10
    assert pairs_intact(out[2:]) and out[-1] == msgs[-1]
    assert any(m["role"] == "user" and not m.get("_compressed_summary") for m in out)
    assert engine.compression_count == 1
    small = [copy.deepcopy(SYSTEM)] + transcript(1)
    assert engine.compress(small) is small


def test_session_reset_forgets_routing(recall_module):
    engine = make_engine(recall_module)
    engine.on_session_start("s-1")
    history = transcript(30, size=3000, topics=TOPICS)
    req, conv, inc = request_for(history, "Look at timezone parsing again.")
    select(engine, req, conv, inc)
    engine.update_from_response({"prompt_tokens": 900, "completion_tokens": 20, "total_tokens": 920})
    assert engine._routes
    engine.on_session_reset()
    assert not engine._routes
    assert (engine.last_prompt_tokens, engine.last_total_tokens, engine.compression_count) == (0, 0, 0)
