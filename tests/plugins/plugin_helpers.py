"""Synthetic coding transcripts for the engine tests (deterministic, our own text)."""

from __future__ import annotations

import json
from typing import Any


def tool_round(turn: int, step: int, size: int = 2400, tag: str = "") -> list[dict[str, Any]]:
    """An assistant tool call and its result; ``size`` chars of result text."""
    call_id = f"call_{tag}{turn}_{step}"
    path = f"src/module_{turn}_{step}.py"
    call = {"id": call_id, "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}
    lines = []
    i = 0
    while sum(len(x) + 1 for x in lines) < size:
        lines.append(f"def helper_{tag}{turn}_{step}_{i}(value):  # marker-{tag}{turn}-{step}-{i}")
        lines.append(f"    return value * {i + 1} + {turn}")
        i += 1
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": "\n".join(lines)},
    ]


def turn(index: int, *, rounds: int = 2, size: int = 2400, tag: str = "", topic: str = "") -> list[dict[str, Any]]:
    """One user turn: question, some tool rounds, an answer."""
    subject = topic or f"feature {index}"
    msgs: list[dict[str, Any]] = [{"role": "user", "content": f"[{tag}] Turn {index}: please work on {subject}."}]
    for step in range(rounds):
        msgs.extend(tool_round(index, step, size, tag))
    msgs.append({"role": "assistant", "content": f"[{tag}] Done with turn {index} about {subject}."})
    return msgs


def transcript(turns: int, *, rounds: int = 2, size: int = 2400, tag: str = "",
               topics: dict[int, str] | None = None) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    for i in range(turns):
        msgs.extend(turn(i, rounds=rounds, size=size, tag=tag, topic=(topics or {}).get(i, "")))
    return msgs


def rough(messages: list[dict[str, Any]]) -> int:
    return (sum(len(str(m)) for m in messages) + 3) // 4


def wire_key(message: dict[str, Any]) -> str:
    """Identity used to compare messages regardless of host bookkeeping keys."""
    ident = {k: message.get(k) for k in ("role", "content", "tool_calls", "tool_call_id", "name")
             if message.get(k) is not None}
    return json.dumps(ident, sort_keys=True)


def pairs_intact(messages: list[dict[str, Any]]) -> bool:
    """Every tool result follows its call, and every call has its result."""
    pending: set[str] = set()
    for msg in messages:
        if msg.get("role") == "assistant":
            if pending:
                return False
            pending = {c["id"] for c in msg.get("tool_calls") or []}
        elif msg.get("role") == "tool":
            if msg.get("tool_call_id") not in pending:
                return False
            pending.discard(msg.get("tool_call_id"))
        elif pending:
            return False
    return not pending
