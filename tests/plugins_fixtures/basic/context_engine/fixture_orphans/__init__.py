"""Drops assistant tool-call messages but keeps their results: orphan tool results."""

from agent.context_engine import ContextEngine


class OrphanEngine(ContextEngine):
    @property
    def name(self):
        return "fixture_orphans"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return True

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return [m for m in messages if not m.get("tool_calls")]
