"""What fills the context window at an event, part by part (Qt-free), like Claude Code's ``/context``.

The request is the one in force at the cursor, or — on a turn's start and on the hooks that
prepare a provider call — the call being prepared (:func:`inspector.ui.explain.prepared_request`),
so a turn node shows the request that turn sends, not the previous turn's. Token figures are the
tokenizer's per-message counts the host stored (``Trace.store.tokens``); the tool schemas are
``Request.tokens["tools"]``. The hidden prefix is what the provider counts beyond the messages
(a system prompt the client adds); it is shown only when the trace records it.
"""

from __future__ import annotations

from dataclasses import dataclass

from inspector.trace import model as tm
from inspector.trace.diff import is_summary
from inspector.trace.model import Request, Trace
from inspector.ui.explain import prepared_request, prepares

# the parts in the order they fill the window; the colours are the panel's
PARTS = ("system prompt", "tool schemas", "hidden prefix", "summaries", "history", "incoming message")
FREE = "free before compaction"
RESERVE = "reserve (above the compaction threshold)"


@dataclass(frozen=True, slots=True)
class Composition:
    """Tokens per part of one request, and the window around them."""

    request: int
    parts: dict[str, int]
    context_length: int
    threshold: int
    prepared: bool  # the request is the one being prepared at the cursor (it is sent later)

    @property
    def used(self) -> int:
        return sum(self.parts.values())

    @property
    def free(self) -> int:
        """Room left below the compaction threshold (negative: over it)."""
        limit = self.threshold or self.context_length
        return limit - self.used

    @property
    def reserve(self) -> int:
        """The window above the threshold: what compaction keeps free for the reply and growth."""
        return max(0, self.context_length - self.threshold) if self.threshold else 0

    def rows(self) -> list[tuple[str, int]]:
        return [*self.parts.items(), (FREE, self.free), (RESERVE, self.reserve)]


def request_for_cursor(trace: Trace, k: int) -> tuple[Request | None, bool]:
    """(the request the cursor is about, whether it is still being prepared at ``k``)."""
    if not len(trace):
        return None, False
    k = trace.clamp(k)
    ev = trace.events[k]
    if ev.kind != tm.EV_REQUEST:
        ahead = prepared_request(trace, k) if ev.kind == tm.EV_TURN or prepares(ev) else None
        if ahead is not None and 0 <= ahead < len(trace.requests):
            return trace.requests[ahead], True
    return trace.request_at(k), False


def hidden_prefix(trace: Trace, req: Request) -> int:
    """Tokens the provider adds before the messages, if the trace records them (else 0)."""
    for source in (req.tokens, trace.meta):
        value = source.get("hidden_prefix") or source.get("hidden_prefix_tokens")
        if isinstance(value, int) and value > 0:
            return value
    return 0


def composition(trace: Trace, k: int) -> Composition | None:
    """The parts of the request at event ``k`` (None before the first request)."""
    req, prepared = request_for_cursor(trace, k)
    if req is None:
        return None
    keys = trace.store.lists[req.selected] if 0 <= req.selected < len(trace.store.lists) else ()
    tokens = trace.store.tokens
    messages = trace.store.messages
    last_user = max((i for i, key in enumerate(keys) if messages.get(key, {}).get("role") == "user"
                     and not is_summary(messages[key])), default=-1)
    parts = dict.fromkeys(PARTS, 0)
    for i, key in enumerate(keys):
        msg = messages.get(key, {})
        n = tokens.get(key, {}).get("tiktoken", 0)
        if msg.get("role") == "system" and i == 0:
            parts["system prompt"] += n
        elif is_summary(msg):
            parts["summaries"] += n
        elif i == last_user:
            parts["incoming message"] += n
        else:
            parts["history"] += n
    parts["tool schemas"] = int(req.tokens.get("tools", 0) or 0)
    parts["hidden prefix"] = hidden_prefix(trace, req)
    state = trace.state_at(req.event)
    return Composition(req.index, parts, int(state["context_length"]), int(state["threshold_tokens"]), prepared)
