"""One line per session in a source: what ``sessions`` prints and the GUI's session picker shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from inspector.sessions.model import Session


@dataclass
class SessionSummary:
    """Identity, provenance and size of one session, without its messages."""

    id: str
    format: str
    title: str | None = None
    source: str | None = None  # where the agent ran (Hermes ``sessions.source``, Codex originator, …)
    model: str | None = None
    started: float | None = None
    message_count: int = 0
    api_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    usage_source: str = "none"  # reported (per call) | aggregate-only (session totals) | none
    segments: list[str] = field(default_factory=list)  # rotated Hermes lineage, root first

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def summarize(session: Session) -> SessionSummary:
    """Summary of a loaded session; token totals from per-call usage, else the aggregates."""
    s = SessionSummary(
        id=session.id,
        format=session.source_format,
        title=session.title,
        source=session.meta.get("source") if isinstance(session.meta.get("source"), str) else None,
        model=session.model,
        started=session.started_at,
        message_count=sum(1 for m in session.messages if m.get("role") != "system" or m is not session.messages[0]),
        api_calls=len(session.api_calls),
        segments=list(session.meta.get("segments_ids") or []),
    )
    reported = [c.usage for c in session.api_calls if c.usage is not None]
    if reported:
        s.usage_source = "reported"
        s.prompt_tokens = sum(u.prompt_tokens for u in reported)
        s.completion_tokens = sum(u.completion_tokens for u in reported)
        s.cache_read_tokens = sum(u.cache_read_tokens for u in reported)
        s.cache_write_tokens = sum(u.cache_write_tokens for u in reported)
    elif session.aggregate_usage is not None:
        u = session.aggregate_usage
        s.usage_source = "aggregate-only"
        s.prompt_tokens, s.completion_tokens = u.prompt_tokens, u.completion_tokens
        s.cache_read_tokens, s.cache_write_tokens = u.cache_read_tokens, u.cache_write_tokens
    return s
