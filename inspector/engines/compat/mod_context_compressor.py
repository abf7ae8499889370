"""Stand-in for ``agent.context_compressor``.

``ContextCompressor`` and the summary prefixes come from the built-in engine, imported lazily
on first attribute access: a plugin that only needs ``resolve_model_threshold`` must keep
working even when the built-in compressor fails to import.
"""

from __future__ import annotations

import importlib
from typing import Any

from inspector.engines.contract import resolve_model_threshold
from inspector.tokens.rough import estimate_messages_tokens_rough

_LAZY = ("ContextCompressor", "SUMMARY_PREFIX", "LEGACY_SUMMARY_PREFIX")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        try:
            compressor = importlib.import_module("inspector.engines.compressor")
        except Exception as exc:  # report why, as an AttributeError so `from … import` says ImportError
            raise AttributeError(f"agent.context_compressor.{name} unavailable: the built-in compressor failed to import ({exc})") from exc
        try:
            return getattr(compressor, name)
        except AttributeError as exc:
            raise AttributeError(f"agent.context_compressor has no attribute {name!r}") from exc
    raise AttributeError(f"agent.context_compressor has no attribute {name!r}")


__all__ = ["estimate_messages_tokens_rough", "resolve_model_threshold", *_LAZY]
EAGER = ["estimate_messages_tokens_rough", "resolve_model_threshold"]
