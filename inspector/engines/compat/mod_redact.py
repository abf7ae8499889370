"""Stand-in for ``agent.redact``."""

from __future__ import annotations

from inspector.engines.redact import redact_sensitive_text

__all__ = ["redact_sensitive_text"]
