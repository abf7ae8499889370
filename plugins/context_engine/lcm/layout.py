"""How the lcm engine reads a transcript: message identity, summary-node markers, units, sizes.

Kept free of storage and threading so the planning rules (what is a node, where the fresh tail
starts, which messages travel together) can be read and tested on their own.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

# Keys that define what a message *says*. Hosts add and drop bookkeeping (timestamps, ``_``
# flags, ``api_content`` sidecars) between calls, so identity must ignore everything else or the
# same message would be stored twice.
IDENTITY_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")

NODE_KEY = "_lcm_node"
SUMMARY_FLAG = "_compressed_summary"
NODE_HEADER = "[LCM summary node {node_id} | level {level} | messages {first}-{last} ({count} messages) | session {session}]"
NODE_MARKER = re.compile(
    r"\[LCM summary node (?P<id>L\d+-\d+) \| level (?P<level>\d+) \| messages (?P<first>\d+)-(?P<last>\d+)"
    r" \((?P<count>\d+) messages\) \| session (?P<session>[^\]\n]*)\]"
)


def rough_tokens(message: dict[str, Any]) -> int:
    """Hermes' rough estimate for one message (repr length / 4).

    Using the host's own measure is what makes "compress always shrinks" hold in the figure the
    host actually compares, not just in ours.
    """
    return (len(str(message)) + 3) // 4


def rough_total(messages: list[dict[str, Any]]) -> int:
    return (sum(len(str(m)) for m in messages) + 3) // 4


def digest(message: dict[str, Any]) -> str:
    """Content identity of a message, stable across host bookkeeping changes."""
    ident = {k: message.get(k) for k in IDENTITY_KEYS if message.get(k) is not None}
    blob = json.dumps(ident, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha1(blob.encode("utf-8", "surrogatepass")).hexdigest()


def message_text(message: dict[str, Any]) -> str:
    """Searchable text of a message: content plus tool-call names and arguments."""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
    elif content is not None:
        parts.append(str(content))
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {}) if isinstance(call, dict) else {}
        if isinstance(fn, dict):
            parts.append(f"{fn.get('name', '')}({fn.get('arguments', '')})")
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class NodeRef:
    """A summary node as it appears in a transcript (parsed from its header line)."""

    node_id: str
    level: int
    first_seq: int
    last_seq: int
    session: str


def parse_node(message: dict[str, Any]) -> NodeRef | None:
    """Recognise one of our summary messages.

    The header in the text is authoritative because underscore keys do not survive every host
    (a reloaded Hermes session keeps only wire fields); the ``_lcm_node`` key is a fast hint.
    """
    content = message.get("content")
    if not isinstance(content, str) or "[LCM summary node " not in content[:400]:
        return None
    match = NODE_MARKER.search(content[:400])
    if not match:
        return None
    return NodeRef(
        node_id=match.group("id"),
        level=int(match.group("level")),
        first_seq=int(match.group("first")),
        last_seq=int(match.group("last")),
        session=match.group("session").strip(),
    )


def unit_starts(messages: list[dict[str, Any]]) -> list[int]:
    """Indices where a self-contained unit begins.

    A unit is a user message, or an assistant message together with the tool results that
    answer it. Cutting only at unit starts is what keeps every tool call next to its result.
    """
    starts: list[int] = []
    for i, msg in enumerate(messages):
        if msg.get("role") == "tool" and i > 0:
            continue
        starts.append(i)
    return starts


def align_to_unit(messages: list[dict[str, Any]], index: int) -> int:
    """Move a cut index backwards until it does not separate tool results from their call."""
    while 0 < index < len(messages) and messages[index].get("role") == "tool":
        index -= 1
    return index


def safe_session_label(session_id: str) -> str:
    """A session id as it may appear inside a node header (no brackets or newlines)."""
    return re.sub(r"[\]\[\n\r|]", "_", session_id or "default")[:120]
