"""register(ctx) uses a method Hermes' directory collector lacks: falls back to the subclass scan."""

from agent.context_engine import ContextEngine


class ScannedEngine(ContextEngine):
    made_by = "subclass scan"

    @property
    def name(self):
        return "fixture_ctx_methods"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return messages


def register(ctx):
    ctx.register_skill("fixture-skill", "a skill")  # AttributeError in Hermes' directory collector
    engine = ScannedEngine()
    engine.made_by = "register"
    ctx.register_context_engine(engine)
