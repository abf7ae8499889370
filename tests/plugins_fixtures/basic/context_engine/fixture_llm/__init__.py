"""Summarises through agent.auxiliary_client.call_llm with keywords old and new."""

from agent.auxiliary_client import aux_interrupt_protection, call_llm
from agent.context_engine import ContextEngine


class LlmEngine(ContextEngine):
    last_reply = None
    last_error = None

    @property
    def name(self):
        return "fixture_llm"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return bool(self.threshold_tokens) and (prompt_tokens or 0) >= self.threshold_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        text = "Summarise this."
        try:
            with aux_interrupt_protection():
                response = call_llm(
                    "compression",
                    messages=[{"role": "user", "content": text}],
                    max_tokens=200,
                    temperature=0.2,
                    timeout=30,
                    extra_body={"x": 1},
                    reasoning_config={"effort": "low"},
                    some_future_keyword="ignored",
                    session_id="abc",
                )
            self.last_reply = response.choices[0].message.content
        except RuntimeError as exc:
            self.last_error = str(exc)
            self.last_reply = "fallback summary"
        self.compression_count += 1
        return [{"role": "assistant", "content": self.last_reply}] + messages[last_user:]
