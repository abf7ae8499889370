"""Gets the contract wrong in small ways: mutates inputs, float tokens, system mid-list, bad select."""

from agent.context_engine import ContextEngine


class SloppyEngine(ContextEngine):
    @property
    def name(self):
        return "fixture_sloppy"

    def update_from_response(self, usage):
        self.last_prompt_tokens = float(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or 0) > 0.8 * self.context_length

    def select_context(self, request_messages, *, conversation_messages=None, incoming_message=None, budget_tokens=0):
        return {"not": "a list"}

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        messages.pop(0)
        return [{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                {"role": "system", "content": "late system prompt"}] + [
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c9", "type": "function",
                 "function": {"name": "x", "arguments": "{}"}}]}]
