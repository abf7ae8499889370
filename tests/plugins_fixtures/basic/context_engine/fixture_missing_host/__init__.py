"""Imports host modules the inspector does not provide (one guarded, one not)."""

from agent.context_engine import ContextEngine

try:
    from agent.auxiliary_client import get_text_auxiliary_client  # noqa: F401
except ImportError:
    get_text_auxiliary_client = None


def _later():
    from agent.memory_manager import normalize_tool_schema  # noqa: F401


class MissingHostEngine(ContextEngine):
    @property
    def name(self):
        return "fixture_missing_host"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return messages
