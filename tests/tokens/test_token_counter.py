"""Chat-message token counts (OpenAI cookbook rules), caching and batching."""

from __future__ import annotations

import time

import pytest

from inspector.tokens import TokenCounter, make_counter
from inspector.tokens.counter import IMAGE_TOKENS, REPLY_PRIMING, TOKENS_PER_MESSAGE, TOKENS_PER_TOOL_CALL


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter("cl100k_base")


def test_known_text_counts(counter):
    assert counter.name == "cl100k_base"
    assert counter.exact
    assert counter.count_text("hello world") == 2
    assert counter.count_text("") == 0
    # Special-token strings in a transcript are ordinary text, never an error.
    assert counter.count_text("<|endoftext|>") > 1


def test_simple_message(counter):
    msg = {"role": "user", "content": "hello world"}
    assert counter.count_message(msg) == TOKENS_PER_MESSAGE + 1 + 2  # overhead + "user" + text
    assert counter.count_request([msg]) == 6 + REPLY_PRIMING


def test_cookbook_example_matches_published_count(counter):
    # openai-cookbook "How to count tokens with tiktoken": 129 prompt tokens for gpt-4 / gpt-3.5-turbo-0613+.
    messages = [
        {
            "role": "system",
            "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English.",
        },
        {
            "role": "system",
            "name": "example_user",
            "content": "New synergies will help drive top-line growth.",
        },
        {
            "role": "system",
            "name": "example_assistant",
            "content": "Things working well together will increase revenue.",
        },
        {
            "role": "system",
            "name": "example_user",
            "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.",
        },
        {
            "role": "system",
            "name": "example_assistant",
            "content": "Let's talk later when we're less busy about how to do better.",
        },
        {
            "role": "user",
            "content": "This late pivot means we don't have time to boil the ocean for the client deliverable.",
        },
    ]
    assert counter.count_request(messages) == 129


def test_name_costs_one_extra_token(counter):
    base = {"role": "user", "content": "hi"}
    named = {"role": "user", "content": "hi", "name": "bob"}
    assert counter.count_message(named) == counter.count_message(base) + counter.count_text("bob") + 1


def test_text_parts_and_images(counter):
    huge_b64 = "data:image/png;base64," + "A" * 200_000
    msg = {
        "role": "user",
        "content": [
            {"type": "text", "text": "hello world"},
            {"type": "image_url", "image_url": {"url": huge_b64}},
            {"type": "input_image", "image_url": huge_b64},
        ],
    }
    assert counter.count_message(msg) == TOKENS_PER_MESSAGE + 1 + 2 + 2 * IMAGE_TOKENS


def test_tool_calls_and_tool_results(counter):
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            }
        ],
    }
    expected = (
        TOKENS_PER_MESSAGE
        + counter.count_text("assistant")
        + TOKENS_PER_TOOL_CALL
        + counter.count_text("read_file")
        + counter.count_text('{"path": "a.py"}')
    )
    assert counter.count_message(call) == expected
    result = {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"}
    assert counter.count_message(result) == (
        TOKENS_PER_MESSAGE
        + counter.count_text("tool")
        + counter.count_text("print(1)")
        + counter.count_text("call_1")
    )


def test_bookkeeping_keys_are_not_counted(counter):
    plain = {"role": "user", "content": "hi"}
    noisy = {
        "role": "user",
        "content": "hi",
        "x_timestamp": 123.0,
        "timestamp": 123.0,
        "x_flags": {"meta": True},
    }
    assert counter.count_message(noisy) == counter.count_message(plain)


def test_cache_by_key_and_by_content():
    c = TokenCounter("cl100k_base")
    msg = {"role": "user", "content": "some text " * 50}
    n = c.count_message(msg, key="k1")
    # A cached key answers without looking at the message again.
    assert c.count_message({"role": "user", "content": "x"}, key="k1") == n
    # Without a key, equal content in a different object hits the same cache entry.
    c.count_message(dict(msg))
    c.count_message(dict(msg))
    assert c.cache_sizes()["messages"] == 2


def test_batch_equals_single(counter):
    msgs = [
        {"role": "user" if i % 2 else "assistant", "content": f"message number {i} " * (i % 7 + 1)}
        for i in range(40)
    ]
    fresh = TokenCounter("cl100k_base")
    batch = fresh.count_messages(msgs, [f"k{i}" for i in range(40)])
    assert batch == [counter.count_message(m) for m in msgs]
    with pytest.raises(ValueError):
        fresh.count_messages(msgs, ["only-one"])


def test_count_tools_is_cached_and_positive(counter):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    n = counter.count_tools(tools)
    assert n > counter.count_text("read_file")
    assert counter.count_tools([dict(tools[0])]) == n
    assert counter.count_tools([]) == 0


def test_approx_is_hermes_rough():
    from inspector.tokens import rough

    approx = TokenCounter("approx")
    assert not approx.exact
    msg = {"role": "user", "content": "hello world, it's True"}
    assert approx.count_message(msg) == rough.estimate_messages_tokens_rough([msg])
    assert approx.count_text("abcde") == 2
    tools = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}]
    assert approx.count_tools(tools) == rough.estimate_tools_tokens_rough(tools)


def test_make_counter_fallback(monkeypatch, tmp_path):
    from inspector.tokens import encodings

    monkeypatch.setattr(encodings, "_loaded", dict(encodings._loaded))
    encodings._loaded.pop("o200k_base", None)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    counter, warning = make_counter("o200k_base", fallback=True)
    assert counter.name == "cl100k_base"
    assert warning and "o200k_base" in warning and "cl100k_base instead" in warning


def test_distinct_messages_counted_fast(counter):
    # The host counts each distinct message once; 2,000 messages of ~2 KB must be quick.
    msgs = [
        {
            "role": "tool",
            "tool_call_id": f"c{i}",
            "content": f"line {i}: " + "lorem ipsum dolor sit amet " * 80,
        }
        for i in range(2000)
    ]
    fresh = TokenCounter("cl100k_base")
    start = time.perf_counter()
    fresh.count_messages(msgs, [f"k{i}" for i in range(2000)])
    first = time.perf_counter() - start
    start = time.perf_counter()
    for i, m in enumerate(msgs):
        fresh.count_message(m, f"k{i}")
    again = time.perf_counter() - start
    assert first < 5.0
    assert again < first


@pytest.mark.parametrize("backend", ["", "tiktoken"])
def test_a_long_text_is_encoded_once_per_process_whichever_counter_asks(monkeypatch, backend):
    # Every replay, comparison run and panel makes its own counter; a 10 MB tool output must not
    # be encoded again by each of them.
    from inspector.tokens import bpe_fast
    from inspector.tokens import counter as counter_mod

    encoded: list[int] = []
    first = TokenCounter("cl100k_base", backend=backend)
    if first.backend == "rs-bpe":
        real_count = bpe_fast.fast_counter("cl100k_base")
        monkeypatch.setitem(bpe_fast._loaded, "cl100k_base", lambda t: encoded.append(len(t)) or real_count(t))
        first = TokenCounter("cl100k_base", backend=backend)
    else:
        real = type(first._enc).encode_ordinary
        monkeypatch.setattr(type(first._enc), "encode_ordinary",
                            lambda self, t: encoded.append(len(t)) or real(self, t))
        first = TokenCounter("cl100k_base", backend=backend)
    monkeypatch.setattr(counter_mod, "_shared_counts", {})
    long_text = "a distinct long tool output " * 5000
    n = first.count_text(long_text)
    again = [TokenCounter("cl100k_base", backend=backend) for _ in range(3)]
    assert [c.count_text(long_text) for c in again] == [n] * 3
    assert [c.count_messages([{"role": "tool", "content": long_text}] * 20)[0] for c in again] == [n + 4] * 3
    assert encoded.count(len(long_text)) == 1
    assert first.count_text(long_text + "and then some") > n  # keyed by content: another text is counted anew
    assert encoded.count(len(long_text) + 13) == 1


# -- counting ahead on another thread (tiktoken's: it encodes without the interpreter lock) ---

@pytest.fixture
def idle_core(monkeypatch):
    """Counting ahead runs only beside the replay, on a core nobody uses: say there is one."""
    import inspector.tokens.counter as counter_module

    monkeypatch.setattr(counter_module, "spare_core", lambda: True)


def test_counting_ahead_gives_the_counts_counting_in_turn_gives(idle_core):
    import time

    messages = [{"role": "user", "content": f"  message {i} " + "text " * (i % 50)} for i in range(400)]
    ahead = TokenCounter("cl100k_base", backend="tiktoken")
    ahead.prefetch(messages, form=lambda m: {**m, "content": m["content"].strip()})
    deadline = time.monotonic() + 30
    while len(ahead.cache_sizes()) and ahead.cache_sizes()["texts"] < 401 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ahead.cache_sizes()["texts"] == 401  # every stripped content, and the role
    plain = TokenCounter("cl100k_base", backend="tiktoken")
    stripped = [{**m, "content": m["content"].strip()} for m in messages]
    assert [ahead.count_message(m) for m in stripped] == [plain.count_message(m) for m in stripped]


def test_counting_ahead_stops_when_asked(idle_core):
    import time

    messages = [{"role": "user", "content": "word " * 2000 + str(i)} for i in range(3000)]
    counter = TokenCounter("cl100k_base", backend="tiktoken")
    counter.prefetch(messages)
    counter.stop_prefetch()
    time.sleep(0.2)
    first = counter.cache_sizes()["texts"]
    time.sleep(0.2)
    assert counter.cache_sizes()["texts"] == first < 3000


def test_a_replay_counting_ahead_records_what_one_counting_in_turn_records(idle_core):
    from inspector.bench.host_bench import DropOldest, make_session
    from inspector.config import load_config
    from inspector.host.replay import make_simulator, replay

    session = make_session(120, seed=5)
    config = load_config(None, {"model": {"context_length": 64000}})
    traces = []
    for ahead in (True, False):
        counter = TokenCounter("cl100k_base", backend="tiktoken")
        counter.count_ahead = ahead
        traces.append(replay(session, DropOldest(), config, counter=counter, simulator=make_simulator(config)))
    with_thread, without = traces
    assert [r.tokens for r in with_thread.requests] == [r.tokens for r in without.requests]
    assert [r.usage for r in with_thread.requests] == [r.usage for r in without.requests]
    assert len(with_thread.compress_events) == len(without.compress_events) > 0


def test_there_is_no_counting_ahead_without_an_idle_core(monkeypatch):
    import time

    import inspector.tokens.counter as counter_module

    monkeypatch.setattr(counter_module.os, "getloadavg", lambda: (64.0, 64.0, 64.0))
    assert counter_module.spare_core() is False
    counter = TokenCounter("cl100k_base", backend="tiktoken")
    counter.prefetch([{"role": "user", "content": f"text {i}"} for i in range(100)])
    time.sleep(0.1)
    assert counter.cache_sizes()["texts"] == 0


def test_counting_ahead_stops_once_the_counts_come_from_the_persistent_cache(tmp_path):
    import threading

    from inspector.tokens.persistent import TokenCache

    messages = [{"role": "user", "content": "word " * 50 + str(i)} for i in range(600)]
    first = TokenCounter("cl100k_base", persistent=TokenCache(tmp_path / "tc.sqlite"), backend="tiktoken")
    for m in messages[:100]:
        first.count_message(m)
    first.flush()
    warm = TokenCounter("cl100k_base", persistent=TokenCache(tmp_path / "tc.sqlite"), backend="tiktoken")
    for m in messages[:40]:  # the replay's first counts are hits
        warm.count_message(m)
    warm._prefetch_run(messages, None, threading.Event())  # the thread's body, run here to completion
    assert warm.cache_sizes()["texts"] == 0  # it gave up instead of tokenising the session
    cold = TokenCounter("cl100k_base", persistent=TokenCache(tmp_path / "other.sqlite"), backend="tiktoken")
    cold._prefetch_run(messages, None, threading.Event())
    assert cold.cache_sizes()["texts"] == 601  # every content, and the role


def test_a_long_text_is_counted_without_being_kept_and_a_short_one_is_kept():
    counter = TokenCounter("cl100k_base")
    long_text, short = "tool output line\n" * 40, "read_file"
    first = counter.count_text(long_text)
    assert counter.count_text(long_text) == first  # counted again, the same
    assert long_text not in counter._texts  # its message's count is kept under the message's key instead
    counter.count_text(short)
    assert short in counter._texts
    message = {"role": "tool", "tool_call_id": "c1", "content": long_text}
    assert counter.count_message(message, key="k" * 20) == counter.count_message(message, key="k" * 20)
