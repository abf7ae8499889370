"""Stand-in for ``agent.context_engine``: the inspector's ABC and helpers under Hermes' name.

Hermes 0.19.0's public names, plus the seed contract's later ones listed in
:mod:`inspector.engines.compat.api_additions` (plugins probe for optional names with ``try:
import``, so every extra name is deliberate, listed there and checked against the real module).
"""

from __future__ import annotations

from typing import Any

from inspector.engines.contract import MEMORY_CONTEXT_MAX_CHARS, ContextEngine, sanitize_memory_context
from inspector.engines.redact import redact_sensitive_text


def automatic_compaction_status_message(engine: Any, *, phase: str, default_message: str, **context: Any) -> str | None:
    """Hermes' status helper (docs/host-contract.md §1.1): silent engines and blank messages give ``None``."""
    if not getattr(engine, "emit_automatic_compaction_status", True):
        return None
    getter = getattr(engine, "get_automatic_compaction_status_message", None)
    message = getter(phase=phase, default_message=default_message, **context) if callable(getter) else default_message
    if not isinstance(message, str) or not message.strip():
        return None
    return message


__all__ = [
    "MEMORY_CONTEXT_MAX_CHARS",
    "ContextEngine",
    "automatic_compaction_status_message",
    "redact_sensitive_text",
    "sanitize_memory_context",
]
