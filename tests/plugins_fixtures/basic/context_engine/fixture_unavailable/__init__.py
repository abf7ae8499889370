"""A working engine whose is_available() says no (a missing API key, as real plugins check it)."""

import os

from agent.context_engine import ContextEngine


class UnavailableEngine(ContextEngine):
    @property
    def name(self):
        return "fixture_unavailable"

    def is_available(self):
        return bool(os.environ.get("FIXTURE_UNAVAILABLE_API_KEY"))

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return list(messages)
