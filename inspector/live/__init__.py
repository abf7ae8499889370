"""Live modes: drive a real model through the engine under test, or follow a running session.

Both feed the same incremental :class:`~inspector.host.host.Host` and trace as a replay, so
every panel works unchanged. ``responder`` talks to an OpenAI-compatible endpoint,
``session`` owns a host for a chat, ``follow`` replays turns another program is writing.
Nothing here imports Qt; the chat panel lives in ``inspector.ui.panels.chat``.
"""

from __future__ import annotations

from inspector.live.responder import LiveCancelled, LiveError, LiveResponder, LiveSettings, RetryPolicy

#: Seconds a followed session must stay unchanged before a last turn it marks no end for counts as
#: complete (``follow``); here rather than in ``follow`` so the window can show it without loading the host.
DEFAULT_SETTLE_SECONDS = 10.0

__all__ = ["DEFAULT_SETTLE_SECONDS", "LiveCancelled", "LiveError", "LiveResponder", "LiveSettings", "RetryPolicy"]
