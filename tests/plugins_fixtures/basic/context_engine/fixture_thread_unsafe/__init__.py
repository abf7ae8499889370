"""Keeps the messages being compressed on self: two sessions at once cross their results."""

import threading
import time

from agent.context_engine import ContextEngine


class UnsafeEngine(ContextEngine):
    def __init__(self):
        self._owner = threading.get_ident()

    @property
    def name(self):
        return "fixture_thread_unsafe"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return bool(self.threshold_tokens) and (prompt_tokens or 0) >= self.threshold_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        self._working = messages
        time.sleep(0.2)
        last_user = max(i for i, m in enumerate(self._working) if m.get("role") == "user")
        return [{"role": "assistant", "content": "summary"}] + self._working[last_user:]
