import threading

from agent.context_engine import ContextEngine


class NoCopyEngine(ContextEngine):
    def __init__(self):
        self._lock = threading.Lock()

    @property
    def name(self):
        return "fixture_nocopy"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        with self._lock:
            return messages


def register(ctx):
    ctx.register_context_engine(NoCopyEngine())
