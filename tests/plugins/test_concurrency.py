"""One engine instance shared by concurrent sessions, with hooks arriving on pool threads.

Mirrors docs/host-contract.md §4.3: each session's agent runs on its own thread, compression runs on a
shared pool with the caller's context variables propagated, passes for one session never overlap
but passes for different sessions do.
"""

from __future__ import annotations

import contextvars
import copy
import json
from concurrent.futures import ThreadPoolExecutor

from tests.plugins.plugin_helpers import pairs_intact, rough, turn, wire_key

SESSIONS = [f"20260302_1000{i:02d}_c0ffee" for i in range(6)]


def drive_lcm(engine, sid: str, tag: str, pool: ThreadPoolExecutor) -> tuple[list, list, int]:
    engine.on_session_start(sid, platform="cli")
    history: list[dict] = []
    originals: list[dict] = []
    compactions = 0
    for i in range(16):
        new = turn(i, rounds=2, size=2400, tag=tag)
        originals.extend(copy.deepcopy(new))
        history.extend(new)
        engine.on_turn_complete(copy.deepcopy(history))
        if engine.should_compress(rough(history)):
            snapshot = copy.deepcopy(history)
            ctx = contextvars.copy_context()
            out = pool.submit(ctx.run, engine.compress, snapshot, rough(history)).result()
            if rough(out) < rough(history):
                compactions += 1
                history = out
    return history, originals, compactions


def test_lcm_sessions_stay_separate_under_concurrency(lcm_module, hermes_home):
    from tests.plugins.test_lcm import expand_all, make_engine, node_ids_in

    engine = make_engine(lcm_module, hermes_home)
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="compress-ctx") as compress_pool, \
            ThreadPoolExecutor(max_workers=len(SESSIONS), thread_name_prefix="agent") as agents:
        futures = {sid: agents.submit(contextvars.copy_context().run, drive_lcm, engine, sid, f"s{k}x", compress_pool)
                   for k, sid in enumerate(SESSIONS)}
        results = {sid: f.result() for sid, f in futures.items()}

    for k, sid in enumerate(SESSIONS):
        history, originals, compactions = results[sid]
        assert compactions >= 2
        assert pairs_intact(history)
        assert all(f"[s{k}x]" in m["content"] or m.get("role") != "user" or m.get("_lcm_node")
                   for m in history)
        recovered = []
        for msg in history:
            ids = node_ids_in(lcm_module, [msg])
            recovered.extend(expand_all(engine, ids[0], history) if ids else [msg])
        assert [wire_key(m) for m in recovered] == [wire_key(m) for m in originals], sid
        # Each store holds its own session only.
        other = f"s{(k + 1) % len(SESSIONS)}x"
        res = json.loads(engine.handle_tool_call("lcm_grep", {"query": f"[{other}]"}, messages=history))
        assert res["message_matches"] == 0
        assert (hermes_home / "lcm" / f"{sid}.db").exists()


def drive_recall(engine, sid: str, tag: str) -> list[list[tuple[str, str]]]:
    engine.on_session_start(sid)
    history: list[dict] = []
    picks = []
    for i in range(24):
        new = turn(i, rounds=2, size=2400, tag=tag, topic="ledger rounding" if i % 7 == 3 else "")
        request = [{"role": "system", "content": "sys"}] + copy.deepcopy(history) + [copy.deepcopy(new[0])]
        out = engine.select_context(request, conversation_messages=copy.deepcopy(history + new[:1]),
                                    incoming_message=copy.deepcopy(new[0]), budget_tokens=24_000)
        chosen = out if out is not None else request
        picks.append([(m["role"], str(m.get("content"))[:60]) for m in chosen])
        assert all(f"[{tag}]" in m["content"] for m in chosen if m["role"] == "user")
        history.extend(new)
        engine.on_turn_complete(copy.deepcopy(history))
    return picks


def test_recall_sessions_match_sequential_runs(recall_module):
    shared = recall_module.RecallEngine()
    shared.update_model("test-model", 128_000)
    with ThreadPoolExecutor(max_workers=len(SESSIONS)) as pool:
        futures = {sid: pool.submit(contextvars.copy_context().run, drive_recall, shared, sid, f"r{k}")
                   for k, sid in enumerate(SESSIONS)}
        concurrent = {sid: f.result() for sid, f in futures.items()}
    for k, sid in enumerate(SESSIONS):
        alone = recall_module.RecallEngine()
        alone.update_model("test-model", 128_000)
        sequential = contextvars.copy_context().run(drive_recall, alone, sid, f"r{k}")
        assert concurrent[sid] == sequential
        assert len(sequential[-1]) < 1 + 6 * 23 + 1  # selection actually happened on late turns
