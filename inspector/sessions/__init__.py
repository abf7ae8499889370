"""Sessions: transcripts of what an agent did, read from every format users have on disk.

``load_session(path_or_spec)`` returns a :class:`Session` (ordered OpenAI messages, API calls
with recorded usage, turns, compaction markers); ``list_sessions(path)`` summarises each session
in a source; ``FORMATS`` names the formats ``--format`` accepts. Readers load lazily.
"""

from __future__ import annotations

from inspector.sessions.api import FORMATS, list_sessions, load_session, require_conversation, split_spec
from inspector.sessions.model import ApiCall, Compaction, ReaderError, Session, Turn, Usage
from inspector.sessions.summary import SessionSummary

__all__ = [
    "FORMATS",
    "ApiCall",
    "Compaction",
    "ReaderError",
    "Session",
    "SessionSummary",
    "Turn",
    "Usage",
    "list_sessions",
    "load_session",
    "require_conversation",
    "split_spec",
]
