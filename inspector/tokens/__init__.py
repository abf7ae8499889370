"""Token counting: offline tiktoken encodings, Hermes' rough estimator, per-message count cache."""

from inspector.tokens.counter import APPROX, TokenCounter, available_tokenizers, make_counter
from inspector.tokens.encodings import TokenizerUnavailable

__all__ = ["APPROX", "TokenCounter", "TokenizerUnavailable", "available_tokenizers", "make_counter"]
