"""Where assistant messages come from: a recorded transcript (replay) or a model (live).

The host's agent loop is the same in both modes; a responder answers three questions for it:
what non-assistant input arrives before the next call, what the provider answers, and which
tool results follow an assistant message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from inspector.sessions.model import ApiCall, Session, Usage, wire_message


@dataclass
class ProviderResponse:
    """One provider answer. ``usage`` is real usage (live); None means "synthesise it"."""

    message: dict[str, Any]
    usage: Usage | None = None
    recorded: Usage | None = None
    timestamp: float | None = None
    source_index: int | None = None  # index in Session.messages (replay)
    raw_usage: Any = None
    # When the request was sent (what a prompt cache's TTL counts from); None = ``timestamp``.
    sent_at: float | None = None


class Responder(Protocol):
    def wants_request(self) -> bool:
        """Is another provider call due? Checked before assembling, so no hook runs for nothing."""

    def pending_inputs(self) -> list[dict[str, Any]]:
        """Messages to append to the transcript before the next request (meta user rows...)."""

    def respond(self, request: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ProviderResponse | None:
        """The assistant message for this request, or None when the turn is over."""

    def tool_results(self, assistant: dict[str, Any], engine_results: dict[str, str]) -> list[dict[str, Any]]:
        """Tool messages answering ``assistant``'s calls, in order."""

    # Optional: ``tool_result(assistant, call, engine_result) -> dict | None``, the message answering one
    # call, for hosts that append each result of a batch before making the next call.


class WireMessages:
    """The engine-facing form of each transcript message, built once per replay.

    Handing the host the same object for a message every time it is asked lets the host's
    per-object caches (shaping, hashing, counting) work ahead of the turn that needs them.
    """

    def __init__(self, session: Session) -> None:
        self._messages = session.messages
        self._forms: dict[int, dict[str, Any]] = {}
        # id(form) -> (key, repr length) of its sent form, made by sent_form, for the host's
        # RequestAssembly.prepare to take instead of hashing the message again
        self.measured: dict[int, tuple[str, int | None]] = {}

    def __getitem__(self, index: int) -> dict[str, Any]:
        form = self._forms.get(index)
        if form is None:
            form = self._forms[index] = wire_message(self._messages[index])
        return form

    def release(self, indices: range) -> None:
        """Forget the forms of messages the replay has fed (a played turn's): the host keeps those
        it still needs, and a 10,000-turn replay no longer ends holding a form of every message
        it played (12.6 MiB). A form asked for again is made again, equal but a new object."""
        forms, measured = self._forms, self.measured
        for index in indices:
            form = forms.pop(index, None)
            if form is not None:  # its measured entry goes too: a later form may reuse its id
                measured.pop(id(form), None)

    def sent_form(self, index: int) -> tuple[dict[str, Any], str]:
        """The message as the host sends it (shaped and sanitised) and its trace key, kept in
        :attr:`measured`: the calibration counts every message before the replay does."""
        from inspector.host.calibration import sent_form_of

        form = self[index]
        wire, measured = sent_form_of(form)
        self.measured[id(form)] = measured
        return wire, measured[0]


class ReplayResponder:
    """Teacher forcing: the transcript's own assistant and tool messages, in order."""

    def __init__(self, session: Session, indices: list[int], calls: dict[int, ApiCall] | None = None,
                 wire: WireMessages | None = None, sent_hint: float | None = None,
                 on_reach: Callable[[int], None] | None = None) -> None:
        self._session = session
        # Told each transcript index just before it is fed (the replay places compaction markers with it).
        self._on_reach = on_reach
        self._indices = indices
        self._pos = 0
        # The latest timestamp of a message before the next call: the request went out then, not
        # when its answer was recorded (a long generation must not look like an idle cache).
        self._last_ts = sent_hint
        self._calls = calls if calls is not None else {c.message_index: c for c in session.api_calls}
        self._wire = wire if wire is not None else WireMessages(session)

    def _peek(self) -> dict[str, Any] | None:
        if self._pos < len(self._indices):
            return self._session.messages[self._indices[self._pos]]
        return None

    def wants_request(self) -> bool:
        msg = self._peek()
        due = msg is not None and msg.get("role") == "assistant"
        if due:
            self._reach()  # before the request is assembled, so a marker precedes its events
        return due

    def _reach(self) -> None:
        if self._on_reach is not None and self._pos < len(self._indices):
            self._on_reach(self._indices[self._pos])

    def _consumed(self, msg: dict[str, Any]) -> None:
        ts = msg.get("x_timestamp")
        if isinstance(ts, int | float) and (self._last_ts is None or ts > self._last_ts):
            self._last_ts = float(ts)

    def pending_inputs(self) -> list[dict[str, Any]]:
        out = []
        while (msg := self._peek()) is not None and msg.get("role") != "assistant":
            self._reach()
            out.append(self._wire[self._indices[self._pos]])
            self._consumed(msg)
            self._pos += 1
        return out

    def respond(self, request: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ProviderResponse | None:
        msg = self._peek()
        if msg is None or msg.get("role") != "assistant":
            return None
        self._reach()
        index = self._indices[self._pos]
        self._pos += 1
        call = self._calls.get(index)
        stamp = call.timestamp if call and call.timestamp is not None else msg.get("x_timestamp")
        sent = self._last_ts
        if stamp is not None and sent is not None and sent > stamp:
            sent = None  # clocks that disagree: trust the answer's own time
        self._consumed(msg)
        if stamp is not None and (self._last_ts is None or stamp > self._last_ts):
            self._last_ts = float(stamp)
        return ProviderResponse(
            message=self._wire[index],
            recorded=call.usage if call else None,
            timestamp=stamp,
            source_index=index,
            sent_at=sent,
        )

    def tool_results(self, assistant: dict[str, Any], engine_results: dict[str, str]) -> list[dict[str, Any]]:
        out = []
        while (msg := self._peek()) is not None and msg.get("role") == "tool":
            self._reach()
            out.append(self._wire[self._indices[self._pos]])
            self._consumed(msg)
            self._pos += 1
        return out

    def tool_result(self, assistant: dict[str, Any], call: dict[str, Any], engine_result: str | None) -> dict[str, Any] | None:
        """The recorded result that follows next (one call of a batch answered at a time), or None."""
        msg = self._peek()
        if msg is None or msg.get("role") != "tool":
            return None
        out = self._wire[self._indices[self._pos]]
        self._consumed(msg)
        self._pos += 1
        return out

    def timestamp_hint(self) -> float | None:
        msg = self._peek()
        return msg.get("x_timestamp") if msg else None
