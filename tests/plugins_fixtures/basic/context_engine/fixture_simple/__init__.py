"""Directory engine found by the subclass scan; imports every stand-in host module."""

from agent.context_engine import ContextEngine, sanitize_memory_context  # noqa: F401
from agent.model_metadata import estimate_messages_tokens_rough, get_model_context_length  # noqa: F401
from agent.redact import redact_sensitive_text
from hermes_cli.config import cfg_get, load_config
from hermes_constants import get_hermes_home

from .summary import one_line_summary


class SimpleEngine(ContextEngine):
    def __init__(self):
        self.home_at_init = str(get_hermes_home())
        self.threshold_from_config = cfg_get(load_config(), "compression", "threshold")

    @property
    def name(self):
        return "fixture_simple"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens", 0) or 0)
        self.last_total_tokens = self.last_prompt_tokens + self.last_completion_tokens

    def should_compress(self, prompt_tokens=None):
        return bool(self.threshold_tokens) and (prompt_tokens or 0) >= self.threshold_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        summary = redact_sensitive_text(one_line_summary(messages[:last_user]))
        self.compression_count += 1
        return [{"role": "assistant", "content": summary}] + [dict(m) for m in messages[last_user:]]
