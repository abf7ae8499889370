"""Transcripts a test writes a record at a time, the way the agents write them, and a fake clock.

Follow tests drive the follower themselves: the test appends a record, then lets the fake clock
run through a writer's pause while polling once per interval (:func:`pause`), so what the
follower sees at each poll is fixed, whatever the machine's load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class FakeClock:
    """Wall-clock seconds that move only when told. Far below real file times, so a file's
    modification time never makes it look quiet: only the polls the test makes count."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def pause(follower: Any, clock: FakeClock, seconds: float) -> None:
    """The writer pauses ``seconds``; the follower polls once per interval meanwhile."""
    for _ in range(max(1, round(seconds / follower.interval))):
        clock.now += follower.interval
        follower.poll()


class JsonlLog:
    """A JSONL file written one line at a time, flushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")

    def rewrite(self, records: list[dict[str, Any]]) -> None:
        """Replace the whole file (a writer that rewrote or truncated it)."""
        self.records = list(records)
        self.path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


class ClaudeCodeLog(JsonlLog):
    """Claude Code session records (docs/formats.md §4): one ``assistant`` line per content block of a
    reply, all with the reply's ``message.id`` and ``requestId``, chained by ``parentUuid``."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.parent: str | None = None

    def _record(self, kind: str, **fields: Any) -> None:
        uuid = f"uuid-{len(self.records):03d}"
        self.write({"type": kind, "uuid": uuid, "parentUuid": self.parent, "isSidechain": False,
                    "sessionId": "cc-session", "timestamp": f"2026-01-01T12:{len(self.records):02d}:00.000Z",
                    **fields})
        self.parent = uuid

    def user(self, text: str) -> None:
        self._record("user", message={"role": "user", "content": text})

    def block(self, message_id: str, block: dict[str, Any], *, stop_reason: str | None = None,
              output_tokens: int = 10) -> None:
        self._record("assistant", requestId=f"req-{message_id}", message={
            "model": "claude-test", "id": message_id, "type": "message", "role": "assistant", "content": [block],
            "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100,
                      "output_tokens": output_tokens}})

    def result(self, tool_use_id: str, text: str) -> None:
        self._record("user", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}]})

    def system(self, subtype: str, **fields: Any) -> None:
        self._record("system", subtype=subtype, **fields)


class CodexLog(JsonlLog):
    """Codex rollout lines (docs/formats.md §5): ``{timestamp, type, payload}``, one response item a line."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.total = 0
        self._line("session_meta", {"id": "codex-session", "timestamp": "2026-01-01T12:00:00.000Z", "cwd": "/w"})

    def _line(self, kind: str, payload: dict[str, Any]) -> None:
        self.write({"timestamp": f"2026-01-01T12:00:{len(self.records):02d}.000Z", "type": kind, "payload": payload})

    def event(self, kind: str, **fields: Any) -> None:
        self._line("event_msg", {"type": kind, **fields})

    def item(self, kind: str, **fields: Any) -> None:
        self._line("response_item", {"type": kind, **fields})

    def prompt(self, turn_id: str, text: str) -> None:
        self.event("task_started", turn_id=turn_id)
        self.item("message", role="user", content=[{"type": "input_text", "text": text}])
        self.event("user_message", message=text)

    def say(self, text: str, phase: str) -> None:
        self.item("message", role="assistant", content=[{"type": "output_text", "text": text}], phase=phase)

    def usage(self, prompt: int) -> None:
        """The call's token_count, as Codex writes it after the call's items."""
        self.total += prompt + 10
        last = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 10, "reasoning_output_tokens": 0,
                "total_tokens": prompt + 10}
        self.event("token_count", info={"last_token_usage": last, "total_token_usage": {"total_tokens": self.total}})
