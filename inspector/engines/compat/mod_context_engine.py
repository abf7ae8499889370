"""Stand-in for ``agent.context_engine``: the inspector's ABC and helpers under Hermes' name."""

from __future__ import annotations

from typing import Any

from inspector.engines.contract import (
    ContextEngine,
    ContextSelectionBlocked,
    engine_overrides_hook,
    sanitize_memory_context,
)


def automatic_compaction_status_message(engine: Any, *, phase: str, default_message: str, **context: Any) -> str | None:
    """Hermes' status helper (§1.1): silent engines and blank messages give ``None``."""
    if not getattr(engine, "emit_automatic_compaction_status", True):
        return None
    getter = getattr(engine, "get_automatic_compaction_status_message", None)
    message = getter(phase=phase, default_message=default_message, **context) if callable(getter) else default_message
    if not isinstance(message, str) or not message.strip():
        return None
    return message


__all__ = [
    "ContextEngine",
    "ContextSelectionBlocked",
    "sanitize_memory_context",
    "automatic_compaction_status_message",
    "engine_overrides_hook",
]
