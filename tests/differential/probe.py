"""The recording probe engine of the differential tests, for either host.

One definition serves both sides: the Hermes interpreter builds it on Hermes' ``ContextEngine``
(``agent_driver.py``), the test builds it on our stand-in (``inspector.engines.contract``), so the
real agent and our host drive the very same engine code. It imports only the standard library.

It records every hook call as ``{"hook", "thread", ...key arguments}``; "thread" is "main" on the
thread that drives the loop and "pool" elsewhere. It compresses when the prompt figure reaches a
fixed threshold, keeping the first message, a summary and the last ``keep_last`` messages, either
as a new list or (``mode: in_place``) by rewriting the list it was handed and returning it.
"""

from __future__ import annotations

import json
import threading
from typing import Any


def roles(messages: Any) -> list[str]:
    return [str(m.get("role")) for m in messages or [] if isinstance(m, dict)]


def make_probe(base: type, spec: dict[str, Any], calls: list[dict[str, Any]], loop_thread: int) -> Any:
    """An instance of a probe engine subclassing ``base`` that appends its calls to ``calls``."""

    def record(hook: str, **args: Any) -> None:
        calls.append({"hook": hook, "thread": "main" if threading.get_ident() == loop_thread else "pool", **args})

    class Probe(base):  # type: ignore[misc, valid-type]
        threshold_percent = 0.5

        def __init__(self) -> None:
            self.keep_last = int(spec.get("keep_last", 2))
            self.mode = spec.get("mode", "new")
            self.fixed_threshold = int(spec["threshold_tokens"])
            self.tool_names = list(spec.get("tools") or [])
            self.tool_result_chars = int(spec.get("tool_result_chars", 0))

            self.made: set[int] = set()  # summaries this probe wrote (not conversation rows)
            self.keep: list[Any] = []  # every row journaled, kept alive so ids are never reused
            self.seen: set[int] = set()
            self.rows: list[dict[str, Any]] = []

        def journal(self, messages: Any) -> None:
            """Remember the conversation's rows in the order they first appear in a list the host hands over."""
            for m in messages or []:
                if isinstance(m, dict) and id(m) not in self.seen and id(m) not in self.made:
                    self.seen.add(id(m))
                    self.keep.append(m)
                    self.rows.append(m)

        @property
        def name(self) -> str:
            return "probe"

        def update_model(self, model, context_length, base_url="", api_key="", provider="", api_mode="") -> None:
            record("update_model", model=model, context_length=context_length, api_mode=api_mode)
            self.context_length = context_length
            self.threshold_tokens = self.fixed_threshold

        def bind_session_state(self, session_db=None, session_id="") -> None:
            record("bind_session_state", has_db=session_db is not None)

        def get_tool_schemas(self) -> list:
            record("get_tool_schemas")
            return [{"name": t, "description": "probe tool", "parameters": {"type": "object", "properties": {}}}
                    for t in self.tool_names]

        def on_session_start(self, session_id: str, **kwargs: Any) -> None:
            record("on_session_start", kwargs=sorted(kwargs), boundary_reason=kwargs.get("boundary_reason"))

        def on_session_end(self, session_id: str, messages: list) -> None:
            record("on_session_end", count=len(messages), roles=roles(messages))

        def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
            record("should_defer_preflight_to_real_usage", tokens=rough_tokens)
            return False

        def should_compress(self, prompt_tokens: int = None) -> bool:
            verdict = bool(prompt_tokens is not None and prompt_tokens >= self.threshold_tokens)
            record("should_compress", tokens=prompt_tokens, result=verdict)
            return verdict

        def update_from_response(self, usage: dict) -> None:
            record("update_from_response", keys=sorted(usage), prompt_tokens=usage.get("prompt_tokens"))
            self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)
            self.last_completion_tokens = int(usage.get("completion_tokens") or 0)
            self.awaiting_real_usage_after_compression = False

        def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
            record("compress", count=len(messages), roles=roles(messages), current_tokens=current_tokens,
                   kwargs=sorted(k for k, v in (("focus_topic", focus_topic), ("force", force)) if v is not None))
            self.journal(messages)
            self.compression_count += 1
            # The last keep_last messages (no orphan tool result first) after a summary whose role
            # alternates with the tail's first message: neither host then has a role sequence to
            # repair, and a summary in a user row reads as a real user turn to both.
            start = max(0, len(messages) - self.keep_last)
            while start < len(messages) - 1 and messages[start].get("role") == "tool":
                start += 1
            tail = list(messages[start:])
            role = "assistant" if tail and tail[0].get("role") == "user" else "user"
            summary = {"role": role, "content": f"Summary of the earlier turns (compaction {self.compression_count})."}
            kept = [summary] + tail
            self.made.add(id(summary))
            self.keep.append(summary)
            if self.mode == "in_place":
                messages[:] = kept
                return messages
            return kept

        def handle_tool_call(self, name: str, args: dict, **kwargs: Any) -> str:
            messages = kwargs.get("messages")
            record("handle_tool_call", name=name, kwargs=sorted(kwargs), count=len(messages or []),
                   roles=roles(messages))
            return json.dumps({"ok": name, "pad": "x" * self.tool_result_chars})

        def get_status(self) -> dict:
            record("get_status")
            return super().get_status()

    return Probe()
