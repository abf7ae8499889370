"""Sanitised transcripts' placeholders count as the text they stand for."""

from __future__ import annotations

from inspector.tokens.counter import TokenCounter
from inspector.tokens.redacted import split_placeholders


def test_a_placeholder_is_removed_and_its_length_kept():
    assert split_placeholders("a [REDACTED_TEXT len=3017 sha=f3ffd0ed] b") == ("a  b", 3017)
    assert split_placeholders("plain text") == ("plain text", 0)


def test_a_placeholder_counts_as_its_length_in_characters():
    counter = TokenCounter("approx")
    assert counter.count_text("[REDACTED_TEXT len=4000 sha=ab12cd34]") == 1000
    exact = TokenCounter("cl100k_base")
    many = ["[REDACTED_CODE len=400 sha=0a]"] * 3 + [f"word {i}" for i in range(40)]
    assert exact.count_texts(many)[0] == 100, "the batch path counts placeholders the same way"
    assert exact.count_text("x [REDACTED_TEXT len=40]") == exact.count_text("x ") + 10
