"""Reader registry: format name -> ``read(source, session_id)`` and optional ``list`` functions.

Imported lazily by :mod:`inspector.sessions.api` so importing the model never pulls every reader
(and the usage normaliser, which itself imports the model) in.
"""

from __future__ import annotations

from collections.abc import Callable

from inspector.sessions.model import Session
from inspector.sessions.readers import claude_code, codex, hermes_export, openai_chat, trajectory
from inspector.sessions.source import Source
from inspector.sessions.summary import SessionSummary

Reader = Callable[..., Session]
Lister = Callable[[Source], list[SessionSummary]]

READERS: dict[str, Reader] = {
    **openai_chat.READERS,
    **trajectory.READERS,
    **claude_code.READERS,
    **codex.READERS,
    **hermes_export.READERS,
}
LISTERS: dict[str, Lister] = {**openai_chat.LISTERS, **trajectory.LISTERS, **hermes_export.LISTERS}
