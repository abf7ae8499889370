"""Keeps the last turn but puts its tool results before the call that made them.

Every result still answers a call somewhere, so Hermes' sanitiser neither drops nor stubs
anything, and the provider rejects the request it sends.
"""

from agent.context_engine import ContextEngine


class MisplacedEngine(ContextEngine):
    @property
    def name(self):
        return "fixture_misplaced"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return True

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        turn = [dict(m) for m in messages[last_user:]]
        calls = [m for m in turn if m.get("tool_calls")]
        results = [m for m in turn if m.get("role") == "tool"]
        others = [m for m in turn if m not in calls and m not in results]
        return others + results + calls
