"""Live chat against the fake endpoint through the real ``openai`` SDK."""

from __future__ import annotations

import json
import threading
import time

import pytest

from inspector.live.responder import LiveCancelled, LiveError, retry_after_seconds
from inspector.live.session import LiveSession
from inspector.trace.model import EV_NOTE, EV_REQUEST, EV_RESPONSE, EV_SELECT, EV_TOOL
from tests.live.fake_openai import Fail, FakeOpenAI, Plain, Reply
from tests.live.helpers import NotesEngine, live_config

TOOL_CALL = {"id": "call_note_1", "name": "read_note", "arguments": '{"key": "deadline"}'}


def make_session(server: FakeOpenAI, engine: NotesEngine | None = None, **live) -> tuple[LiveSession, NotesEngine]:
    engine = engine or NotesEngine()
    session = LiveSession(engine, live_config(server.base_url, **live), system_prompt="You are a terse assistant.")
    assert session.started
    return session, engine


def notes(session: LiveSession) -> list[str]:
    return [ev.note or "" for ev in session.trace.events if ev.kind == EV_NOTE]


def test_chat_turn_streams_and_feeds_real_usage(server, secret_key):
    server.add(Reply("Hello there, how can I help?", prompt_tokens=120, completion_tokens=7, cached_tokens=64))
    session, engine = make_session(server)
    deltas: list[str] = []
    reply = session.send("hi", on_delta=deltas.append)
    assert reply == "Hello there, how can I help?"
    assert len(deltas) > 1 and "".join(deltas) == reply  # streamed in pieces, in order
    # The request really streamed, asked for usage, and carried the key from the environment.
    seen = server.requests[0]
    assert seen.body["stream"] is True and seen.body["stream_options"] == {"include_usage": True}
    assert seen.body["messages"][0] == {"role": "system", "content": "You are a terse assistant."}
    assert seen.headers["authorization"] == f"Bearer {secret_key}"
    # The provider's usage (cached tokens included) reached update_from_response unchanged.
    responses = [ev for ev in session.trace.events if ev.kind == EV_RESPONSE]
    assert len(responses) == 1
    usage = responses[0].args["usage"]
    assert usage["prompt_tokens"] == 120 and usage["cache_read_tokens"] == 64 and usage["input_tokens"] == 56
    assert engine.usages == [usage]
    assert session.trace.requests[0].usage == usage
    assert engine.last_prompt_tokens == 120
    assert session.history[-1] == {"role": "assistant", "content": reply}


def test_engine_tool_round_trip(server, secret_key):
    server.add(Reply("", tool_calls=[TOOL_CALL]), Reply("The deadline is Friday 17:00."))
    session, engine = make_session(server)
    reply = session.send("When is the deadline?")
    assert reply == "The deadline is Friday 17:00."
    assert engine.tool_calls == [("read_note", {"key": "deadline"})]
    first, second = (r.body for r in server.requests)
    # The engine's tool was offered to the model...
    assert [t["function"]["name"] for t in first["tools"]] == ["read_note"]
    # ...and its result went back as the tool message, after the assembled tool call.
    calls = second["messages"][-2]["tool_calls"]
    assert calls[0]["id"] == "call_note_1" and json.loads(calls[0]["function"]["arguments"]) == {"key": "deadline"}
    tool_msg = second["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_note_1"
    assert json.loads(tool_msg["content"]) == {"key": "deadline", "note": "Friday 17:00"}
    kinds = [ev.kind for ev in session.trace.events]
    assert kinds.count(EV_REQUEST) == 2 and kinds.count(EV_TOOL) == 1
    assert len(engine.usages) == 2


def test_unknown_tool_gets_json_error_and_round_limit_holds(server, secret_key):
    shell = {"id": "call_sh", "name": "shell", "arguments": '{"cmd": "ls"}'}
    server.add(Reply("", tool_calls=[shell]), Reply("", tool_calls=[dict(shell, id="call_sh2")]))
    session, engine = make_session(server, max_tool_rounds=1)
    assert session.send("list files") == ""
    assert len(server.requests) == 2  # one tool round allowed, then the loop stops
    tool_msg = server.requests[1].body["messages"][-1]
    assert tool_msg["tool_call_id"] == "call_sh" and "Unknown tool" in json.loads(tool_msg["content"])["error"]
    assert engine.tool_calls == []
    assert any("tool-call rounds" in n for n in notes(session))


def test_429_retry_after_is_honoured(server, secret_key):
    server.add(Fail(429, "slow down", headers={"Retry-After": "0.5"}), Reply("ok"))
    session, _ = make_session(server)
    retries: list[tuple[str, str]] = []
    assert session.send("hi", on_notice=lambda k, t: retries.append((k, t))) == "ok"
    assert len(server.requests) == 2
    gap = server.requests[1].at - server.requests[0].at
    assert gap >= 0.45  # the backoff alone would have waited ~0.05 s
    assert retries and retries[0][0] == "retry" and "429" in retries[0][1]
    assert any("rate limited" in n for n in notes(session))


def test_retry_after_longer_than_the_limit_is_reported_not_shortened(server, secret_key):
    server.add(Fail(429, "quota", headers={"Retry-After": "120"}))
    session, _ = make_session(server)
    t0 = time.monotonic()
    with pytest.raises(LiveError) as info:
        session.send("hi")
    assert time.monotonic() - t0 < 3
    assert info.value.kind == "rate_limit" and "120" in str(info.value)
    assert len(server.requests) == 1


def test_retry_after_parsing():
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "nonsense"}) is None
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= retry_after_seconds({"retry-after": date}) <= 31


def test_500_backs_off_exponentially_then_succeeds(server, secret_key):
    server.add(Fail(500), Fail(503), Reply("recovered"))
    session, engine = make_session(server, retry_base_delay=0.15, retry_max_delay=2, max_attempts=4)
    assert session.send("hi") == "recovered"
    at = [r.at for r in server.requests]
    assert len(at) == 3
    assert at[1] - at[0] >= 0.14 and at[2] - at[1] >= 0.29  # 0.15 s, then 0.30 s
    # Retries reuse the selected request: select_context ran once for this call.
    assert engine.selects == 1
    assert server.requests[0].body["messages"] == server.requests[2].body["messages"]


def test_exhausted_retries_raise_live_error_and_keep_the_conversation(server, secret_key):
    server.add(Reply("first answer"), Fail(500), Fail(500), Fail(500), Reply("second answer"))
    session, _ = make_session(server, max_attempts=3)
    assert session.send("one") == "first answer"
    with pytest.raises(LiveError) as info:
        session.send("two")
    err = info.value
    assert err.kind == "server" and err.attempts == 3 and "gave up after 3 attempts" in str(err)
    # Nothing is lost: the history, the transcript and the trace keep the failed turn's user message.
    assert [m["content"] for m in session.history if m["role"] == "user"] == ["one", "two"]
    assert [m["content"] for m in session.transcript if m["role"] == "user"] == ["one", "two"]
    assert any("turn ended without a reply" in n for n in notes(session))
    assert len(session.trace.requests) == 1
    # The chat goes on; the next request carries both user messages (Hermes keeps user;user rows).
    assert session.send("three") == "second answer"
    sent = [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "user"]
    assert sent == ["one", "two", "three"]


@pytest.mark.parametrize("clean", [False, True], ids=["chunked-broken", "connection-closed"])
def test_dropped_stream_is_retried_with_the_same_request(server, secret_key, clean):
    text = "This reply will be cut off half way through."
    server.add(Reply(text, drop_after=3, drop_clean=clean), Reply(text))
    session, engine = make_session(server)
    notices: list[tuple[str, str]] = []
    assert session.send("tell me", on_notice=lambda k, t: notices.append((k, t))) == text
    assert [k for k, _ in notices] == ["retry"]
    # A torn chunked body surfaces as a connection error; a cleanly closed one ends without a finish reason.
    assert ("broke off" in notices[0][1]) if clean else ("connection" in notices[0][1])
    assert len(server.requests) == 2 and engine.selects == 1
    assert server.requests[0].body == server.requests[1].body
    assert session.history[-1]["content"] == text  # the partial attempt left no trace in the history


def test_an_endpoint_that_does_not_stream_is_named_and_not_retried(server, secret_key):
    server.add(Plain("a whole body at once"), Reply("never reached"))
    session, _ = make_session(server, max_attempts=4)
    with pytest.raises(LiveError) as info:
        session.send("hi")
    assert info.value.kind == "stream" and "without streaming" in str(info.value)
    assert len(server.requests) == 1  # retrying would get the same answer


def test_a_torn_stream_event_is_retried(server, secret_key):
    text = "A reply whose second event arrives torn."
    server.add(Reply(text, torn_after=1), Reply(text))
    session, _ = make_session(server)
    notices: list[tuple[str, str]] = []
    assert session.send("go", on_notice=lambda k, t: notices.append((k, t))) == text
    assert [k for k, _ in notices] == ["retry"] and "malformed event" in notices[0][1]
    assert len(server.requests) == 2


def test_timeout_is_retried(server, secret_key):
    server.add(Reply("late", first_byte_delay=1.5), Reply("on time"))
    session, _ = make_session(server, timeout=0.5)
    assert session.send("hi") == "on time"
    assert any("did not answer within the timeout" in n for n in notes(session))


def test_cancel_stops_the_request_in_flight(server, secret_key):
    server.add(Reply("word " * 200, chunk_size=5, chunk_delay=0.05), Reply("after cancel"))
    session, _ = make_session(server)
    cancel = threading.Event()
    first_delta = threading.Event()
    outcome: dict[str, object] = {}

    def on_delta(text: str) -> None:
        first_delta.set()

    def run() -> None:
        try:
            session.send("long story please", on_delta=on_delta, cancel=cancel)
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion below
            outcome["error"] = exc
        outcome["done"] = time.monotonic()

    worker = threading.Thread(target=run)
    worker.start()
    assert first_delta.wait(5)
    t_cancel = time.monotonic()
    cancel.set()
    worker.join(5)
    assert not worker.is_alive()
    assert isinstance(outcome["error"], LiveCancelled)
    assert outcome["done"] - t_cancel < 1.0  # did not wait for the 10-second stream
    deadline = time.monotonic() + 5
    while not server.disconnects and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.disconnects and not server.completed  # the server saw the client go away
    assert session.history[-1] == {"role": "user", "content": "long story please"}
    assert session.send("go on") == "after cancel"


def test_api_key_never_reaches_transcript_or_trace(server, secret_key, tmp_path):
    from inspector.trace.io import save_trace

    server.add(Reply("", tool_calls=[TOOL_CALL]), Reply("done"), Fail(401, "bad key"))
    session, _ = make_session(server)
    session.send("check the deadline")
    with pytest.raises(LiveError) as info:
        session.send(f"my key is {secret_key}, is it valid?")  # even pasted into the chat
    assert info.value.kind == "auth" and secret_key not in str(info.value)
    assert server.requests[0].headers["authorization"] == f"Bearer {secret_key}"
    transcript = session.save_transcript(tmp_path / "live.jsonl")
    trace_path = tmp_path / "live.trace.json"
    save_trace(session.close(), trace_path)
    assert secret_key not in transcript.read_text(encoding="utf-8")
    assert secret_key.encode() not in trace_path.read_bytes()
    meta = json.dumps(session.trace.meta)
    assert "INSPECTOR_LIVE_TEST_KEY" in meta and secret_key not in meta  # the variable's name, never its value


def test_saved_transcript_replays_with_the_same_requests_and_recorded_usage(server, secret_key, tmp_path):
    from inspector.host.replay import replay
    from inspector.sessions import load_session

    server.add(Reply("Hi!", prompt_tokens=50, cached_tokens=0),
               Reply("", tool_calls=[TOOL_CALL], prompt_tokens=80, cached_tokens=48),
               Reply("Friday 17:00.", prompt_tokens=120, cached_tokens=64))
    session, _ = make_session(server)
    session.send("hello")
    session.send("deadline?")
    path = session.save_transcript(tmp_path / "chat.jsonl")
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["role"] == "system"
    assistants = [x for x in lines if x["role"] == "assistant"]
    assert all("usage" in a and "timestamp" in a for a in assistants)
    loaded = load_session(path)
    config = live_config(server.base_url)
    trace = replay(loaded, NotesEngine(), config)
    live = session.trace
    assert len(trace.requests) == len(live.requests) == 3
    assert [r.recorded["cache_read_tokens"] for r in trace.requests] == [0, 48, 64]
    assert [r.recorded["prompt_tokens"] for r in trace.requests] == [r.usage["prompt_tokens"] for r in live.requests]


def test_manual_compress_and_busy_guard(server, secret_key):
    server.add(Reply("a"), Reply("b"))
    session, engine = make_session(server)
    session.send("one")
    session.send("two")
    assert session.compress("deadlines") is True
    assert engine.compression_count == 1
    assert session.history[0]["content"].startswith("[CONTEXT SUMMARY]: earlier talk (focus: deadlines)")
    # One request at a time.
    assert session._lock.acquire()
    try:
        with pytest.raises(LiveError) as info:
            session.send("three")
        assert info.value.kind == "busy"
    finally:
        session._lock.release()


def test_select_context_runs_once_per_provider_call(server, secret_key):
    server.add(Reply("", tool_calls=[TOOL_CALL]), Reply("done"))
    session, engine = make_session(server)
    session.send("deadline?")
    kinds = [ev.kind for ev in session.trace.events]
    assert kinds.count(EV_SELECT) == 2 == engine.selects


def test_missing_endpoint_is_a_clear_error():
    from inspector.config import load_config

    with pytest.raises(LiveError) as info:
        LiveSession(NotesEngine(), load_config(None, {"inspector": {"live": {"base_url": "", "model": "m"}},
                                                      "model": {"base_url": ""}}))
    assert info.value.kind == "config" and "base_url" in str(info.value)


def test_endpoint_without_stream_usage_falls_back_and_synthesises(server, secret_key):
    server.add(Fail(400, "Unrecognized request argument supplied: stream_options"), Reply("fine", send_usage=False))
    session, engine = make_session(server)
    assert session.send("hi") == "fine"
    assert "stream_options" in server.requests[0].body and "stream_options" not in server.requests[1].body
    assert session.trace.requests[0].usage["prompt_tokens"] > 0  # synthesised from token counts
    assert any("sent no usage" in n for n in notes(session))


def test_named_builtin_engine_is_loaded_and_released(server, secret_key):
    server.add(Reply("hello from the compressor run", prompt_tokens=70, cached_tokens=16))
    session = LiveSession("compressor", live_config(server.base_url))
    try:
        assert session.started and session.trace.meta["engine"]["name"] == "compressor"
        assert session.send("hi") == "hello from the compressor run"
        usage = [ev.args["usage"] for ev in session.trace.events if ev.kind == EV_RESPONSE]
        assert usage[0]["prompt_tokens"] == 70 and usage[0]["cache_read_tokens"] == 16
        assert session.engine.last_prompt_tokens == 70
    finally:
        trace = session.close()
    assert trace.events[-1].kind == "on_session_end"
