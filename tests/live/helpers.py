"""A tiny context engine with one tool, and config for pointing a live session at the fake server."""

from __future__ import annotations

import json
from typing import Any

from inspector.config import load_config
from inspector.engines.contract import ContextEngine

TEST_KEY_ENV = "INSPECTOR_LIVE_TEST_KEY"


class NotesEngine(ContextEngine):
    """Keeps notes the model can read back through one engine tool; records every usage dict."""

    name = "notes"

    def __init__(self) -> None:
        self.usages: list[dict[str, Any]] = []
        self.tool_calls: list[tuple[str, dict[str, Any]]] = []
        self.selects = 0
        self.notes = {"deadline": "Friday 17:00"}

    def update_from_response(self, usage: dict) -> None:
        self.usages.append(dict(usage))
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens") or 0)
        self.last_total_tokens = self.last_prompt_tokens + self.last_completion_tokens

    def should_compress(self, prompt_tokens: int = None) -> bool:  # type: ignore[assignment]
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        self.compression_count += 1
        summary = {"role": "user", "content": f"[CONTEXT SUMMARY]: earlier talk (focus: {focus_topic})"}
        return [summary] + [dict(m) for m in messages[-2:]]

    def select_context(self, request_messages, *, conversation_messages=None, incoming_message=None, budget_tokens=0):  # type: ignore[no-untyped-def]
        self.selects += 1
        return None

    def get_tool_schemas(self) -> list[dict]:
        return [{
            "name": "read_note",
            "description": "Read a stored note by key.",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
        }]

    def handle_tool_call(self, name: str, args: dict, **kwargs: Any) -> str:
        self.tool_calls.append((name, dict(args)))
        if name != "read_note":
            return json.dumps({"error": f"unknown tool {name}"})
        return json.dumps({"key": args.get("key"), "note": self.notes.get(str(args.get("key")), None)})


def live_config(base_url: str, **live: Any) -> dict[str, Any]:
    """Config for a live session against ``base_url`` with fast retries (tests must stay quick)."""
    settings = {
        "base_url": base_url,
        "model": "fake-model",
        "api_key_env": TEST_KEY_ENV,
        "timeout": 5,
        "max_attempts": 3,
        "retry_base_delay": 0.05,
        "retry_max_delay": 0.2,
        "max_retry_after": 5,
    }
    settings.update(live)
    return load_config(None, {"inspector": {"live": settings, "cache_profile": "openai"}})
