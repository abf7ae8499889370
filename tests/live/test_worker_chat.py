"""A live chat whose engine runs in a worker process: the real ``openai`` SDK in the worker against
the scripted endpoint on 127.0.0.1, the conversation and the trace on this side.

A hostile engine (``tests/live/chat_engines.py``) freezes in C or exits the worker on cue; the
turn then ends as a located fault within its bound, and the next message goes on in a new
worker with the conversation so far.
"""

from __future__ import annotations

import base64
import os
import sys
import threading
import time

import pytest

from inspector.live.responder import LiveCancelled, LiveError
from inspector.live.worker_chat import FAULT, WorkerChat
from inspector.trace.model import EV_REQUEST
from tests.live.chat_engines import EXIT_TOKENS, FREEZE_TOKENS, LEAK_TOKENS
from tests.live.fake_openai import Reply
from tests.live.helpers import live_config

BOUND = 20.0  # seconds a faulting turn may take (hook timeout 1 s, grace 2 s, a loaded machine)
TOOL_CALL = {"id": "call_1", "name": "read_note", "arguments": '{"key": "deadline"}'}


def _chat(server, chat_plugins, engine: str = "live_notes") -> WorkerChat:
    config = live_config(server.base_url)
    config["inspector"]["hook_timeout_seconds"] = 1
    return WorkerChat(engine, config, plugin_dirs=[chat_plugins], system_prompt="Be brief.")


def _texts(trace) -> str:
    return "\n".join(str(m) for m in trace.store.messages.values()) + "\n".join(
        f"{e.note} {e.args} {e.result} {e.output}" for e in trace.events)


def test_the_turn_runs_in_the_worker_and_streams_back(server, chat_plugins, secret_key):
    server.add(Reply("Hello from the model.", chunk_size=3, chunk_delay=0.01, prompt_tokens=90, cached_tokens=32),
               Reply("", tool_calls=[TOOL_CALL]), Reply("Friday."))
    chat = _chat(server, chat_plugins)
    try:
        deltas: list[str] = []
        assert chat.send("hello", on_delta=deltas.append) == "Hello from the model."
        assert len(deltas) > 2 and "".join(deltas) == "Hello from the model."
        mid_turn: list[int] = []
        assert chat.send("deadline?", on_request=lambda: mid_turn.append(len(chat.snapshot().requests))) == "Friday."
        assert mid_turn == [2]  # the tool call's request was in the trace before the turn ended
        trace = chat.snapshot()
        assert len(trace.requests) == 3 and trace.requests[0].usage["cache_read_tokens"] == 32
        assert trace.meta["mode"] == "live" and trace.meta["worker"]["isolation"] in ("bubblewrap", "process")
        # the engine was never imported here, and the endpoint saw the worker's SDK with the key
        assert not any("live_notes" in name for name in sys.modules)
        assert server.requests[0].headers.get("authorization") == f"Bearer {secret_key}"
        assert [m["content"] for m in chat.history if m["role"] == "user"] == ["hello", "deadline?"]
        assert [m["role"] for m in chat.history][-3:] == ["assistant", "tool", "assistant"]
    finally:
        final = chat.close()
    assert final is not None and final.events[-1].kind == "on_session_end"
    assert chat.workers_started == 1 and chat.faults == []


def test_a_key_echoed_by_the_endpoint_or_printed_by_the_engine_is_masked_in_everything_that_comes_back(
        server, chat_plugins, secret_key, tmp_path, capfd):
    server.add(Reply(f"Your key is {secret_key} and again {secret_key}.", chunk_size=5, prompt_tokens=LEAK_TOKENS))
    chat = _chat(server, chat_plugins, "live_hostile")
    try:
        deltas: list[str] = []
        reply = chat.send(f"echo my key {secret_key}", on_delta=deltas.append)
        saved = chat.save_transcript(tmp_path / "chat.jsonl").read_text(encoding="utf-8")
    finally:
        final = chat.close()
    out, err = capfd.readouterr()
    printed = base64.b64encode(secret_key.encode()).decode()
    for text in ("".join(deltas), reply, saved, _texts(final), out, err):
        assert secret_key not in text and printed not in text
    assert "Your key is" in "".join(deltas) and "[redacted API key]" in saved
    assert any((e.output or "").startswith("key: ***") for e in final.events)  # recorded with the hook, masked
    assert "from a thread: ***" in err  # the worker's stderr, passed through masked


def test_a_frozen_engine_ends_the_turn_as_a_fault_and_the_chat_goes_on_in_a_new_worker(server, chat_plugins,
                                                                                        secret_key):
    server.add(Reply("first answer"), Reply("frozen", prompt_tokens=FREEZE_TOKENS), Reply("second answer"))
    chat = _chat(server, chat_plugins, "live_hostile")
    try:
        assert chat.send("one") == "first answer"
        start = time.monotonic()
        with pytest.raises(LiveError) as caught:
            chat.send("two")
        assert time.monotonic() - start < BOUND
        assert caught.value.kind == FAULT and "update_from_response ran past its 1 s timeout" in str(caught.value)
        frozen = chat.snapshot()
        last = frozen.events[-1]
        assert last.fault is not None and last.fault.kind == "timeout"
        assert last.turn == 1  # the frozen turn's events came back before it froze
        # ... up to the hook that froze: its provider call is recorded, with the response
        assert [e.kind for e in frozen.events if e.turn == 1][-2:] == [EV_REQUEST, "update_from_response"]
        assert frozen.requests[-1].turn == 1
        assert "context_engine/live_hostile/__init__.py" in last.fault.where
        assert chat.send("three") == "second answer"
        assert chat.workers_started == 2
        resumed = chat.snapshot()
        carried = [e for e in resumed.events if e.kind == "host_note" and "carried over" in (e.note or "")]
        assert carried and carried[0].args.get("resumed") == 3  # one, first answer, two
        assert [m["content"] for m in chat.history if m["role"] == "user"] == ["one", "two", "three"]
    finally:
        chat.close()


def test_an_engine_that_exits_the_worker_is_a_fault_with_its_exit_status(server, chat_plugins, secret_key):
    server.add(Reply("dies", prompt_tokens=EXIT_TOKENS), Reply("alive again"))
    chat = _chat(server, chat_plugins, "live_hostile")
    try:
        with pytest.raises(LiveError) as caught:
            chat.send("go")
        assert caught.value.kind == FAULT and "died during update_from_response (exit status 3)" in str(caught.value)
        assert chat.faults and chat.snapshot().events[-1].kind == "fault"
        assert chat.send("again") == "alive again" and chat.workers_started == 2
    finally:
        chat.close()


def test_cancel_stops_the_turn_and_keeps_the_worker(server, chat_plugins, secret_key):
    server.add(Reply("token " * 400, chunk_size=6, chunk_delay=0.02), Reply("still here"))
    chat = _chat(server, chat_plugins)
    try:
        cancel = threading.Event()
        seen: list[str] = []

        def on_delta(text: str) -> None:
            seen.append(text)
            cancel.set()

        with pytest.raises(LiveCancelled):
            chat.send("long", on_delta=on_delta, cancel=cancel)
        assert seen and chat.send("next") == "still here"
        assert chat.workers_started == 1
    finally:
        chat.close()


def test_an_engine_that_does_not_load_is_a_clear_error(server, chat_plugins, secret_key):
    chat = _chat(server, chat_plugins, "no_such_engine")
    try:
        with pytest.raises(LiveError) as caught:
            chat.send("hi")
        assert caught.value.kind == "config" and "no_such_engine" in str(caught.value)
    finally:
        chat.close()
    assert os.getpid()  # this process is fine


def test_what_a_turn_counted_reaches_the_token_cache_before_the_chat_ends(server, chat_plugins, tmp_path,
                                                                          monkeypatch):
    import sqlite3

    from inspector.tokens import persistent

    path = tmp_path / "tc.sqlite"
    monkeypatch.setenv(persistent.ENV_VAR, str(path))
    persistent.forget_open_caches()
    server.add(Reply("Hello from the model.", prompt_tokens=90))
    chat = _chat(server, chat_plugins)
    try:
        assert chat.send("hello") == "Hello from the model."
        conn = sqlite3.connect(path)
        try:
            stored = conn.execute("SELECT COUNT(*) FROM counts").fetchone()[0]
        finally:
            conn.close()
        assert stored >= 2  # the system prompt and the user's message at least, written after the turn
    finally:
        chat.close()
        persistent.forget_open_caches()


def test_a_worker_that_dies_while_the_chat_is_idle_is_told_at_once_and_the_next_message_goes_on(
        server, chat_plugins, secret_key):
    import signal

    server.add(Reply("first answer"), Reply("after the death"))
    chat = _chat(server, chat_plugins)
    told = threading.Event()
    heard: list[tuple[str, object]] = []
    chat.on_idle_end = lambda text, trace: (heard.append((text, trace)), told.set())
    try:
        assert chat.send("one") == "first answer"
        os.kill(chat._worker.proc.pid, signal.SIGKILL)  # the OOM killer, say, between two messages
        assert told.wait(BOUND), "nobody was told the worker died"
        text, trace = heard[0]
        assert "worker died" in text and "SIGKILL" in text
        assert trace is not None and len(trace.requests) == 1  # the trace so far, for the window
        assert chat.send("two") == "after the death" and chat.workers_started == 2
    finally:
        chat.close()
