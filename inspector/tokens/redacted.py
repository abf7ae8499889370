"""Placeholders a sanitised transcript left where text was (``[REDACTED_TEXT len=3017 sha=f3ffd0ed]``).

Public Codex rollouts are published with every free text replaced by such a placeholder, which
keeps the original length. Counting the placeholder's own dozen characters would make the
context look a fraction of what the provider saw, so a placeholder counts as its ``len``
characters' worth of ordinary text: Hermes' own rule of four characters a token
(``estimate_tokens_rough``, agent/model_metadata.py of hermes-agent 0.19.0).
"""

from __future__ import annotations

import re

PLACEHOLDER = re.compile(r"\[REDACTED_[A-Z_]*\s+len=(\d+)(?:\s+sha=[0-9a-fA-F]+)?\]")
CHARS_PER_TOKEN = 4


def split_placeholders(text: str) -> tuple[str, int]:
    """The text without its placeholders, and the characters they stand for."""
    if "[REDACTED_" not in text:
        return text, 0
    hidden = 0

    def drop(match: re.Match[str]) -> str:
        nonlocal hidden
        hidden += int(match.group(1))
        return ""

    return PLACEHOLDER.sub(drop, text), hidden


def placeholder_tokens(chars: int) -> int:
    """Tokens ``chars`` characters of hidden text are worth."""
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
