"""The fast cl100k_base count gives tiktoken's count for every text, so it can stand in for it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.tokens.bpe_fast import fast_counter
from inspector.tokens.counter import TokenCounter
from inspector.tokens.encodings import load_encoding
from tests.sessions.conftest import CORPUS

FAST = fast_counter("cl100k_base")
pytestmark = pytest.mark.skipif(FAST is None, reason="rs-bpe is not installed here (it has wheels for "
                                "CPython 3.10-3.13); tiktoken counts alone")
TIKTOKEN = load_encoding("cl100k_base")


def reference(text: str) -> int:
    return len(TIKTOKEN.encode_ordinary(text))


# What the pre-tokeniser treats specially: contractions in both cases, every kind of whitespace
# (the pattern's \s+(?!\S) and \s++$ branches), digits in runs of any length and script, letters
# that change length when case-folded, marks, emoji sequences, special-token texts (ordinary text
# here) and code.
PIECES = ["a", "Z", "é", "ß", "ǅ", "ﬁ", "İ", "ı", "K", "ſ", " ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0",
          "\u2028", "\u3000", "\u200b", "\x0b", "\x0c", "'s", "'S", "'t", "'re", "'VE", "'m", "'ll", "'D", "'",
          "\"", "’s", "0", "12", "123", "1234", "٣", "²", "Ⅻ", ".", ",", "!", "?", "...", "->", "==", "#",
          "@", "$", "%", "_", "中", "文字", "日本語", "한국어", "ру", "العربية", "עברית", "हिन्दी", "ไทย",
          "😀", "👍🏽", "🇫🇷", "\u0301", "e\u0301", "\ufeff", "<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>",
          "def ", "return ", "    ", "        x", "\\", "\x00", "\x1b[0m", "http://x.y/z?q=1", "CamelCase",
          "ALLCAPS", "snake_case", " the", " The", "{\"a\": [1, 2.5e-3]}"]
tricky = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)


@settings(max_examples=3000, deadline=None)
@given(tricky)
def test_text_built_from_what_the_pre_tokeniser_treats_specially_counts_as_tiktoken_counts_it(text):
    assert FAST(text) == reference(text)


@settings(max_examples=2000, deadline=None)
@given(st.text(max_size=300))
def test_any_text_counts_as_tiktoken_counts_it(text):
    assert FAST(text) == reference(text)


@pytest.mark.parametrize("text", [
    "", " ", "\n" * 5000, " " * 10_000 + "x", "x" + " " * 10_000, "9" * 10_000, "a" * 100_000,
    "abc\ud800def", "\udfff", "lone \ud83d surrogate then text", "'s" * 3000,
    "    indented = code(1)\n" * 20_000,
])
def test_long_runs_and_lone_surrogates_count_as_tiktoken_counts_them(text):
    assert FAST(text) == reference(text)


def test_every_text_of_the_corpus_counts_as_tiktoken_counts_it():
    if not CORPUS.is_dir():
        pytest.skip(f"sample corpus not found at {CORPUS} (it lives next to the repo, in ../shared/corpus)")
    texts: set[str] = set()

    def collect(value):
        if isinstance(value, str):
            texts.add(value)
        elif isinstance(value, dict):
            for v in value.values():
                collect(v)
        elif isinstance(value, list):
            for v in value:
                collect(v)

    for path in sorted(p for p in CORPUS.rglob("*") if p.suffix in (".jsonl", ".json")):
        lines = path.read_text(encoding="utf-8").splitlines() if path.suffix == ".jsonl" else [path.read_text()]
        for line in lines:
            if line.strip():
                collect(json.loads(line))
    assert len(texts) > 1000
    assert [FAST(t) for t in sorted(texts)] == [reference(t) for t in sorted(texts)]


def test_a_counter_uses_the_fast_count_unless_asked_for_tiktoken_and_both_count_alike():
    fast, plain = TokenCounter("cl100k_base"), TokenCounter("cl100k_base", backend="tiktoken")
    assert (fast.backend, plain.backend) == ("rs-bpe", "tiktoken")
    messages = [{"role": "user", "content": "  Hello, wörld! 'll 123456 \n\n"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"p": "é"}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "x" * 70_000}]}]
    assert fast.count_messages(messages) == plain.count_messages(messages)
    assert fast.count_tools([{"type": "function", "function": {"name": "f", "parameters": {}}}]) == \
        plain.count_tools([{"type": "function", "function": {"name": "f", "parameters": {}}}])


def test_only_the_encoding_it_was_checked_against_is_counted_fast():
    assert fast_counter("o200k_base") is None
