"""select_context never returns in time: the doctor must time out, not hang."""

import time

from agent.context_engine import ContextEngine


class HangEngine(ContextEngine):
    @property
    def name(self):
        return "fixture_hang"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return messages

    def select_context(self, request_messages, *, conversation_messages=None, incoming_message=None, budget_tokens=0):
        time.sleep(3)
        return None
