"""The persistent token-count cache: counts survive the process, are shared, and never go wrong."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from inspector.tokens import persistent
from inspector.tokens.counter import TokenCounter
from inspector.tokens.persistent import TokenCache, default_path, open_cache, user_cache_dir


@pytest.fixture(autouse=True)
def _fresh_caches():
    yield
    persistent.forget_open_caches()


def _messages(n: int, tag: str = "m") -> list[dict]:
    return [{"role": "user", "content": f"{tag} message {i}: " + "word " * (i % 7 + 1)} for i in range(n)]


def test_the_cache_lives_in_the_user_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(persistent.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "xdg" / "context-inspector"
    assert default_path({}) == tmp_path / "xdg" / "context-inspector" / persistent.FILE_NAME
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_path({}) == tmp_path / "home" / ".cache" / "context-inspector" / persistent.FILE_NAME


def test_environment_and_config_choose_the_file_or_turn_it_off(monkeypatch, tmp_path):
    monkeypatch.delenv(persistent.ENV_VAR, raising=False)
    assert default_path({"inspector": {"token_cache": str(tmp_path / "c.sqlite")}}) == tmp_path / "c.sqlite"
    assert default_path({"inspector": {"token_cache": False}}) is None
    assert default_path({"inspector": {"token_cache": "off"}}) is None
    monkeypatch.setenv(persistent.ENV_VAR, str(tmp_path / "env.sqlite"))
    assert default_path({"inspector": {"token_cache": str(tmp_path / "c.sqlite")}}) == tmp_path / "env.sqlite"
    monkeypatch.setenv(persistent.ENV_VAR, "off")
    assert open_cache({}) is None


def test_a_second_counter_reads_the_counts_instead_of_tokenising(tmp_path, monkeypatch):
    path = tmp_path / "tc.sqlite"
    messages = _messages(40)
    first = TokenCounter("cl100k_base", persistent=TokenCache(path))
    counts = [first.count_message(m) for m in messages]
    first.flush()

    second = TokenCounter("cl100k_base", persistent=TokenCache(path))

    def no_tokenising(*_a, **_k):
        raise AssertionError("tokenised although the count was stored")

    monkeypatch.setattr(second, "_message_tokens", no_tokenising)
    assert [second.count_message(m) for m in messages] == counts
    assert second.count_messages(messages) == counts
    assert second.persistent.hits >= len(messages)


def test_a_batch_of_keys_is_looked_up_at_once_stored_and_pending_alike(tmp_path, monkeypatch):
    monkeypatch.setattr(persistent, "LOOKUP_CHUNK", 7)  # several queries, one ending part-way
    cache = TokenCache(tmp_path / "tc.sqlite")
    cache.write([("ns", f"k{i}", i) for i in range(20)])
    cache.put("ns", "pending", 99)
    cache.write([("other", "k21", 5)])
    found = cache.get_many("ns", [f"k{i}" for i in range(25)] + ["pending", "k3"])
    assert found == {**{f"k{i}": i for i in range(20)}, "pending": 99}
    assert (cache.hits, cache.misses) == (20, 5)  # the pending count is not a lookup


def test_a_counter_recalls_a_batch_and_then_counts_without_a_lookup_per_message(tmp_path, monkeypatch):
    path = tmp_path / "tc.sqlite"
    messages = _messages(30)
    first = TokenCounter("cl100k_base", persistent=TokenCache(path))
    keys = [f"{i:020x}" for i in range(30)]
    counts = [first.count_message(m, key=k) for m, k in zip(messages[:20], keys[:20])]  # two thirds stored
    first.flush()

    second = TokenCounter("cl100k_base", persistent=TokenCache(path))
    second.recall(keys)

    def no_single_lookup(*_a, **_k):
        raise AssertionError("looked up one key although the batch was recalled")

    monkeypatch.setattr(second.persistent, "get", no_single_lookup)
    fresh = TokenCounter("cl100k_base")
    assert [second.count_message(m, key=k) for m, k in zip(messages, keys)] == counts + [
        fresh.count_message(m) for m in messages[20:]]


def test_stored_counts_equal_fresh_counts_for_every_shape(tmp_path):
    messages = _messages(5) + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                              "function": {"name": "read", "arguments": "{\"p\": 1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "out"}, {"type": "image_url"}]},
    ]
    tools = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
    plain = TokenCounter("cl100k_base")
    cached = TokenCounter("cl100k_base", persistent=TokenCache(tmp_path / "tc.sqlite"))
    assert [cached.count_message(m) for m in messages] == [plain.count_message(m) for m in messages]
    assert cached.count_tools(tools) == plain.count_tools(tools)
    cached.flush()
    again = TokenCounter("cl100k_base", persistent=TokenCache(tmp_path / "tc.sqlite"))
    assert [again.count_message(m) for m in messages] == [plain.count_message(m) for m in messages]
    assert again.count_tools(tools) == plain.count_tools(tools)


def test_rows_are_stored_under_the_tokenizer_and_the_counting_rules(tmp_path):
    path = tmp_path / "tc.sqlite"
    text = {"role": "user", "content": "naïve façade — ünïcödé " * 20}
    a = TokenCounter("cl100k_base", persistent=TokenCache(path))
    a.count_message(text, key="k")
    a.flush()
    conn = sqlite3.connect(path)
    namespaces = {row[0] for row in conn.execute("SELECT namespace FROM counts")}
    conn.close()
    assert namespaces == {f"cl100k_base:{persistent.rules_hash()}"}


def test_a_row_from_other_counting_rules_is_never_used(tmp_path):
    path = tmp_path / "tc.sqlite"
    cache = TokenCache(path)
    cache.put("cl100k_base:older-rules", "k", 999_999)
    cache.flush()
    counter = TokenCounter("cl100k_base", persistent=TokenCache(path))
    assert counter.count_message({"role": "user", "content": "hi"}, key="k") < 100


def test_an_unwritable_folder_turns_the_cache_off_and_counting_goes_on(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = TokenCache(blocker / "sub" / "tc.sqlite")
    assert not cache.enabled and "not used" in cache.problem
    counter = TokenCounter("cl100k_base", persistent=cache)
    assert counter.persistent is None
    assert counter.count_message({"role": "user", "content": "still counted"}) > 0


def test_a_damaged_file_turns_the_cache_off(tmp_path):
    path = tmp_path / "tc.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    cache = TokenCache(path)
    assert not cache.enabled
    assert path.read_bytes() == b"this is not sqlite" * 100  # left as it was


def _writer(path: str, tag: str, n: int, queue) -> None:
    counter = TokenCounter("cl100k_base", persistent=TokenCache(path))
    # Shared messages (every process counts them) and its own.
    counts = [counter.count_message(m) for m in _messages(n, "shared") + _messages(n, tag)]
    counter.flush()
    queue.put((tag, counts, counter.persistent.problem))


def test_several_processes_write_at_once_and_every_count_is_kept(tmp_path):
    path = str(tmp_path / "tc.sqlite")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    n = 300
    procs = [ctx.Process(target=_writer, args=(path, f"p{i}", n, queue)) for i in range(4)]
    for p in procs:
        p.start()
    outputs = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    assert all(problem is None for _, _, problem in outputs)
    fresh = TokenCounter("cl100k_base")
    for tag, counts, _ in outputs:
        assert counts == [fresh.count_message(m) for m in _messages(n, "shared") + _messages(n, tag)]
    cache = TokenCache(path)
    assert cache.size() == n + 4 * n  # the shared messages once, each process's own once
    reader = TokenCounter("cl100k_base", persistent=cache)
    for tag, counts, _ in outputs:
        assert [reader.count_message(m) for m in _messages(n, "shared") + _messages(n, tag)] == counts
    assert cache.misses == 0


def test_threads_sharing_one_cache_lose_no_count(tmp_path, monkeypatch):
    import threading

    monkeypatch.setattr(persistent, "FLUSH_EVERY", 50)  # flushes while the others put
    cache = TokenCache(tmp_path / "tc.sqlite")
    errors = []

    def work(t: int) -> None:
        try:
            for i in range(500):
                cache.put("ns", f"{t}-{i}", i)
                if i % 97 == 0:
                    cache.flush()
        except Exception as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    cache.flush()
    assert errors == [] and cache.problem is None
    assert cache.size() == 2000
    assert cache.get("ns", "3-499") == 499
