"""The Session model every reader produces and the host replays (docs/formats.md §1).

A session is what happened: ordered OpenAI-format messages, the provider calls that produced
the assistant messages (with recorded usage where the source has it), turn boundaries, and the
compactions the original agent performed. Bookkeeping lives in ``x_``-prefixed keys so a
message stays a plain OpenAI dict; :func:`wire_message` strips them before an engine sees it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ReaderError(Exception):
    """A transcript could not be read. Always names the source and, where known, the place."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None, row: Any = None):
        self.path = path
        self.line = line
        self.row = row
        where = []
        if path:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if row is not None:
            where.append(f"row {row}")
        prefix = (":".join(where) + ": ") if where else ""
        super().__init__(prefix + message)
        self.detail = message


@dataclass(slots=True)  # one per request or turn: a long session holds tens of thousands
class Usage:
    """Recorded usage of one provider call, in Hermes' canonical convention.

    ``prompt_tokens`` is all input (uncached + cache read + cache write); cache figures are
    subsets of it, never added on top (the double-counting bug the normaliser guards against).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_1h_tokens: int = 0
    source: str = "reported"  # reported | estimated | aggregate-only | synthesised

    @property
    def input_tokens(self) -> int:
        return max(0, self.prompt_tokens - self.cache_read_tokens - self.cache_write_tokens)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_hermes_dict(self) -> dict[str, int]:
        """The dict Hermes passes to ``update_from_response`` (agent/conversation_loop.py:2187-2249 of hermes-agent 0.19.0)."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "input_tokens": self.input_tokens,
            "output_tokens": self.completion_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }

    def to_recorded_dict(self) -> dict[str, int]:
        """The Hermes dict plus what it has no field for: the 1-hour part of the cache writes."""
        out = self.to_hermes_dict()
        out["cache_write_1h_tokens"] = self.cache_write_1h_tokens
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cache_write_1h_tokens": self.cache_write_1h_tokens,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Usage:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(slots=True)  # one per request or turn: a long session holds tens of thousands
class ApiCall:
    """One model request: the assistant message it produced and what the provider reported."""

    message_index: int
    usage: Usage | None = None
    timestamp: float | None = None
    model: str | None = None


@dataclass(slots=True)  # one per request or turn: a long session holds tens of thousands
class Turn:
    """A span of messages started by a genuine user input (docs/formats.md §1.4).

    ``start`` is the index of the first message of the turn (normally the user message),
    ``end`` is exclusive. ``user_index`` is None for a turn that starts without a user message
    (e.g. a session that opens with an assistant message). ``ended`` is set when the source
    itself marks the turn finished (a Codex ``task_complete``, a Claude Code ``turn_duration``
    or final stop reason, a Hermes ``finish_reason`` of ``stop``): in a file still being written,
    the model's part of the turn is over (what may still be added is context, such as the output
    of a local command, not another reply).
    """

    index: int
    start: int
    end: int
    user_index: int | None = None
    meta: bool = False
    interrupted: bool = False
    turn_id: str | None = None
    ended: bool = False


@dataclass
class Compaction:
    """Where the original agent compacted: the new context starts at ``message_index``."""

    message_index: int
    kind: str  # hermes-summary | hermes-rotation | claude-compact-boundary | codex-compacted | trajectory-summary
    summary: str | None = None
    tokens_before: int | None = None
    timestamp: float | None = None


@dataclass
class Session:
    """A transcript mapped onto ordered OpenAI-format messages with turns and usage."""

    id: str
    source_format: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    api_calls: list[ApiCall] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    title: str | None = None
    model: str | None = None
    started_at: float | None = None
    cwd: str | None = None
    source_path: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    children: list[Session] = field(default_factory=list)
    # Session-level totals when the source has no per-call usage (Hermes state.db/export).
    aggregate_usage: Usage | None = None
    # The model's context window as the source recorded it (Codex ``model_context_window``), else None.
    context_window: int | None = None

    def usage_for(self, message_index: int) -> Usage | None:
        for call in self.api_calls:
            if call.message_index == message_index:
                return call.usage
        return None

    def system_prompt(self) -> str | None:
        """The leading system message's text, which Hermes keeps outside ``messages``."""
        if self.messages and self.messages[0].get("role") == "system":
            content = self.messages[0].get("content")
            return content if isinstance(content, str) else message_text(self.messages[0])
        return None


def wire_message(message: dict[str, Any]) -> dict[str, Any]:
    """The message as an engine sees it: ``x_`` bookkeeping removed, timestamp kept as Hermes does."""
    out = {k: v for k, v in message.items() if not k.startswith("x_")}
    ts = message.get("x_timestamp")
    if ts is not None and "timestamp" not in out:
        out["timestamp"] = ts
    return out


def message_text(message: dict[str, Any]) -> str:
    """Readable text of a message: string content, or the text parts of list content."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
                elif part.get("type") in ("image_url", "image", "input_image"):
                    parts.append("[image]")
                else:
                    parts.append(f"[{part.get('type', 'part')}]")
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return str(content)


def compute_turns(messages: list[dict[str, Any]]) -> list[Turn]:
    """Default turn split: a turn starts at each user message not flagged meta/summary.

    Readers with explicit turn records (Codex, Claude Code) build their own turns; this is the
    rule for plain OpenAI lists and the fallback for others.
    """
    turns: list[Turn] = []
    start: int | None = None
    user_index: int | None = None
    for i, msg in enumerate(messages):
        if msg.get("role") == "system" and i == 0:
            continue
        flags = msg.get("x_flags") or {}
        genuine_user = msg.get("role") == "user" and not (
            flags.get("meta") or flags.get("compaction_summary") or flags.get("synthetic")
        )
        if genuine_user:
            if start is not None:
                turns.append(Turn(index=len(turns), start=start, end=i, user_index=user_index))
            start, user_index = i, i
        elif start is None:
            start, user_index = i, None
    if start is not None:
        turns.append(Turn(index=len(turns), start=start, end=len(messages), user_index=user_index))
    return turns


def is_replayable(message: dict[str, Any]) -> bool:
    """False for messages that are not new conversation and must not be replayed as such.

    Compaction summaries, the head/tail copies a compaction re-inserted (``compaction_copy``:
    Hermes in-place/rotation, Codex replacement history) and rows the user undid (``inactive``:
    Hermes ``/rewind``) stay in ``Session.messages`` so the UI can show them, but a replay that
    fed them to an engine would duplicate history. Archived pre-compaction rows (``archived``)
    ARE real history and replay normally. Hermes' background-review prompts and the curator's
    reply (``harness``) are stripped by Hermes itself before a conversation is rebuilt.
    """
    flags = message.get("x_flags") or {}
    return not (flags.get("compaction_summary") or flags.get("compaction_copy") or flags.get("inactive")
                or flags.get("harness"))
