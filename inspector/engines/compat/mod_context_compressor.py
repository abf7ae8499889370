"""Stand-in for ``agent.context_compressor``: Hermes 0.19.0's public names (see ``api_additions``).

``ContextCompressor``, the summary prefixes and the heading constants come from the built-in
engine, imported lazily on first attribute access: a plugin that only needs
``resolve_model_threshold`` or ``estimate_messages_tokens_rough`` must keep working even when
the built-in compressor fails to import. The names Hermes' module re-exports from its own imports
(``call_llm``, ``ContextEngine``, ``get_model_context_length``, ``classify_api_error``…) are the
inspector's versions, the same objects the other stand-ins expose.
"""

from __future__ import annotations

import importlib
from typing import Any

from inspector.engines.compat.mod_error_classifier import FailoverReason, classify_api_error
from inspector.engines.compat.mod_model_metadata import MINIMUM_CONTEXT_LENGTH, get_model_context_length
from inspector.engines.contract import ContextEngine, resolve_model_threshold, sanitize_memory_context
from inspector.engines.redact import redact_sensitive_text
from inspector.llm.aux import aux_interrupt_protection, call_llm
from inspector.tokens.rough import estimate_messages_tokens_rough


def drop_stale_api_content(msg: dict[str, Any]) -> None:
    """A row whose content was rewritten loses its ``api_content`` sidecar (the bytes sent before)."""
    msg.pop("api_content", None)


_LAZY = (
    "ContextCompressor", "SUMMARY_PREFIX", "LEGACY_SUMMARY_PREFIX", "COMPRESSED_SUMMARY_METADATA_KEY",
    "HISTORICAL_TASK_HEADING", "HISTORICAL_IN_PROGRESS_HEADING", "HISTORICAL_PENDING_ASKS_HEADING",
    "HISTORICAL_REMAINING_WORK_HEADING",
)


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


__all__ = [
    "ContextEngine", "FailoverReason", "MINIMUM_CONTEXT_LENGTH", "aux_interrupt_protection", "call_llm",
    "classify_api_error", "drop_stale_api_content",
    "estimate_messages_tokens_rough", "get_model_context_length", "redact_sensitive_text", "resolve_model_threshold",
    "sanitize_memory_context", *_LAZY,
]
EAGER = [name for name in __all__ if name not in _LAZY]
