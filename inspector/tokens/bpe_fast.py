"""Counting cl100k_base tokens with GitHub's linear-time BPE (the ``rs-bpe`` package).

Counting is most of a cold replay: tiktoken encodes code-like tool output at about 6 MB/s on
this project's machines, so the 126 MB of tool output in a 150 MB Claude Code session took
14.5 s of a 23 s replay. ``rs-bpe`` binds the ``bpe-openai`` crate of github/rust-gems, whose
tokenizer gives tiktoken's tokens for the same text, and counts without building the token
list: 3.5 times tiktoken's speed on the same text, 25 ms to load instead of 200 ms, and less
memory. Only the count is taken from it: tokens themselves are never needed here.

Counts must equal tiktoken's to the token (every figure the host feeds an engine comes from
them), so it is used only for the encoding it was checked against, cl100k_base
(``tests/tokens/test_bpe_fast.py`` compares the two on generated and corpus text), and tiktoken
stays the reference and the fallback: for o200k_base, where ``rs-bpe`` is not installed (it
publishes wheels for CPython 3.10–3.13), or when a caller asks for tiktoken by name.

Unlike tiktoken, ``rs-bpe`` holds the interpreter lock while it counts, so counting ahead on
another thread (``TokenCounter.prefetch``) gains nothing with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

# The encodings whose counts were checked equal to tiktoken's (see the module docstring).
CHECKED = ("cl100k_base",)

_loaded: dict[str, Callable[[str], int]] = {}
_lock = threading.Lock()


def fast_counter(name: str) -> Callable[[str], int] | None:
    """``text -> len(tiktoken encoding.encode_ordinary(text))`` for ``name``, or None where only
    tiktoken can count it (another encoding, or ``rs-bpe`` not installed)."""
    count = _loaded.get(name)
    if count is not None or name not in CHECKED:
        return count
    with _lock:
        count = _loaded.get(name)
        if count is None:
            try:
                from rs_bpe.bpe import openai
            except ImportError:
                return None
            count = _loaded[name] = _counting(openai.cl100k_base())
    return count


def _counting(tokenizer: Any) -> Callable[[str], int]:
    raw = tokenizer.count

    def count(text: str) -> int:
        try:
            return raw(text)
        except UnicodeEncodeError:
            # A lone surrogate: tiktoken counts the text with it replaced (tiktoken/core.py,
            # Encoding.encode_ordinary), and so must we.
            return raw(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))

    return count
